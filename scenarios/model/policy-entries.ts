// One entry of `policies:` (a scenario's list, or a step's), read: a `file:` (a manifest file, or
// with manifests on a directory or a file of every kind, its policies taken and the rest counted
// in a note), a List, or one policy written inline. NetworkPolicies are checked and returned;
// admin-tier ones go to `cluster`. Every problem is said with its pointer.
import { dirname, isAbsolute, join, normalize } from 'node:path';
import { checkPolicy, loadManifests, ManifestError, type LoadedPolicy } from '../../shared/netpol/manifests.ts';
import { clusterEntry, isClusterPolicyKind, readClusterPolicy, type LoadedClusterPolicy } from './cluster-policies.ts';
import { policiesOfManifests } from './policy-files.ts';
import type { Problems } from './problems.ts';
import type { ResolveIo } from './resolved.ts';
import type { ParsedScenario } from './scenario-file.ts';
import { directoryPolicies } from './scenario-manifests.ts';

/** Manifests of one `policies` entry (a file, a List, or one policy), checked, with problems reported. */
export function manifestsOf(
  entry: unknown,
  pointer: string,
  parsed: ParsedScenario,
  io: ResolveIo,
  problems: Problems,
  cluster: LoadedClusterPolicy[] = [],
): LoadedPolicy[] {
  if (entry && typeof entry === 'object' && 'file' in entry) {
    const rel = String((entry as { file: unknown }).file);
    const path = isAbsolute(rel) ? rel : normalize(join(dirname(parsed.file), rel));
    let text: string;
    try {
      text = io.readFile(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EISDIR' && io.manifests) {
        try {
          return directoryPolicies(path, io, cluster);
        } catch (e) {
          if (!(e instanceof ManifestError)) throw e;
          problems.add(`${pointer}/file`, e.message);
          return [];
        }
      }
      problems.add(`${pointer}/file`, `cannot read ${rel}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      return [];
    }
    try {
      return loadManifests(text, rel, { templates: true, other: clusterEntry(rel, cluster) });
    } catch (err) {
      // yaml throws a ReferenceError for an alias bomb, past the manifest reader's own errors.
      if (err instanceof ReferenceError && /alias/i.test(err.message))
        problems.add(`${pointer}/file`, `${rel}: its aliases (*name) expand too often (an alias bomb?)`);
      else if (err instanceof ManifestError) {
        // Manifests of every kind (a rendered chart): its policies, the rest ignored and counted.
        const taken = io.manifests ? policiesOfManifests(text, rel, io.namespace) : undefined;
        if (taken && 'policies' in taken) return (problems.notes.push(`${pointer.slice(1)}: ${taken.note}`), taken.policies);
        // Read as manifests, the file's own problems (not "a ConfigMap is no NetworkPolicy").
        problems.add(`${pointer}/file`, taken ? taken.error : err.message);
      } else throw err;
      return [];
    }
  }
  const kind = (entry as { kind?: unknown }).kind;
  const items = kind === 'List' || kind === 'NetworkPolicyList' ? ((entry as { items?: unknown }).items as unknown[] | undefined) : undefined;
  if (items !== undefined && !Array.isArray(items)) return (problems.add(pointer, `a ${String(kind)} needs an items array`), []);
  const out: LoadedPolicy[] = [];
  (items ?? [entry]).forEach((value, i) => {
    const at = items ? `${pointer}/items/${i}` : pointer;
    const k = (value as { kind?: unknown } | null)?.kind;
    if (isClusterPolicyKind((value as { apiVersion?: unknown } | null)?.apiVersion, k)) {
      const cp = readClusterPolicy(value, { templates: true }, (path, m) => problems.add(`${at}${path === '/' ? '' : path}`, m));
      if (cp) cluster.push({ policy: cp, origin: `${parsed.file} ${at}` });
      return;
    }
    if (k !== 'NetworkPolicy')
      return problems.add(
        at,
        `kind ${JSON.stringify(k ?? null)} is not a NetworkPolicy (networking.k8s.io/v1), a ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2) or an AdminNetworkPolicy / BaselineAdminNetworkPolicy (policy.networking.k8s.io/v1alpha1)`,
      );
    const r = checkPolicy(value, { templates: true });
    if ('errors' in r) for (const e of r.errors) for (const m of e.errors) problems.add(`${at}${e.path === '/' ? '' : e.path}`, m);
    else out.push({ policy: r.policy, origin: `${parsed.file} ${at}` });
  });
  return out;
}
