// `policies: - file:` given Kubernetes manifests rather than a file of NetworkPolicies only (a
// rendered chart, kubectl get -o yaml): its NetworkPolicies are taken, every other object is
// ignored and counted, as `manifests:` reads them. A file of NetworkPolicies only is read as
// before (with {{ip ns/pod}} templates); this is the fallback when that strict reading refuses it.
import { ManifestError, type LoadedPolicy } from '../../shared/netpol/manifests.ts';
import { plural } from '../../shared/plural.ts';
import { readManifestSet } from './manifests.ts';

/** The policies of a manifest file and what was ignored, or why it cannot be read as manifests either. */
export function policiesOfManifests(text: string, file: string, namespace?: string): { policies: LoadedPolicy[]; note: string } | { error: string } {
  let set;
  try {
    set = readManifestSet([{ file, text }], namespace !== undefined ? { namespace } : {});
  } catch (err) {
    if (err instanceof ManifestError) return { error: err.message };
    throw err;
  }
  const ignored = new Map<string, number>(set.ignored);
  const add = (kind: string, n = 1) => ignored.set(kind, (ignored.get(kind) ?? 0) + n);
  for (const w of set.workloads) add(w.kind);
  if (set.services.length) add('Service', set.services.length);
  if (set.namespaces.size) add('Namespace', set.namespaces.size);
  const list = [...ignored].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const total = list.reduce((n, [, c]) => n + c, 0);
  return {
    policies: set.policies,
    note: `${file}: ${plural(set.policies.length, 'NetworkPolicy', 'NetworkPolicies')} taken${total ? `; ignored ${plural(total, 'object')}: ${list.map(([k, c]) => `${c} ${k}`).join(', ')}` : ''}`,
  };
}
