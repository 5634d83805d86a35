// What labels and env may hold beyond their types. Two kinds of rule:
// - NUL (U+0000) in any label map or env entry, key or value: labels become the task's
//   MARATHON_APP_LABEL_* environment, and no process environment can carry a NUL, so every launch
//   of the app failed for ever while the app stayed accepted. Refused at admission, and a stored
//   definition that has one launches nothing and says why (bounds.ts definitionProblem, through
//   definitionViolations).
// - Pod identity, as Kubernetes admission checks it (isolation/cluster.ts turns an app into pods):
//   `starmap.namespace` is the pods' namespace, an RFC 1123 label; `starmap.pod` their name, an
//   RFC 1123 subdomain (what the pod-labels API and policy ids accept); empty means the default
//   (namespace "default", pod the last segment of the app id). In an app with ipAddress (its
//   tasks are pods under --isolation=netns) the labels NetworkPolicy selectors see, every key
//   outside `starmap.*`, are Kubernetes labels: qualified-name keys and 63-character values. A
//   label without that syntax could never be selected; an app without ipAddress is no pod, so its
//   labels keep Marathon's freedom (HAPROXY_* values with commas, spaces, ...). These rules are
//   for admission only: a stored definition that breaks them still loads and runs as before, and
//   its next update must follow them.
import { dns1123LabelErrors, dns1123SubdomainErrors, labelKeyErrors, labelValueErrors } from '../../../shared/netpol/names.ts';
import { NAMESPACE_APP_LABEL, POD_APP_LABEL } from '../../isolation/cluster.ts';
import type { AppDefinition, Violation } from './types.ts';
import type { Violations } from './violations.ts';

const NUL = '\u0000';
const BOOKKEEPING_PREFIX = 'starmap.';
const NUL_MESSAGE = 'must not contain a NUL character (\\u0000): no process environment can carry one';

/** How a value shows in a message: JSON-quoted (so control characters are visible), cut at 100 characters. */
const shown = (s: string) => JSON.stringify(s.length > 100 ? `${s.slice(0, 100)}…` : s);

/** NUL in a key or value of any label map or of env (also a secret reference's name). */
export function nulViolations(app: AppDefinition): Violation[] {
  const out: Violation[] = [];
  const map = (path: string, m: Record<string, unknown> | undefined) => {
    for (const [k, v] of Object.entries(m ?? {})) {
      if (k.includes(NUL)) out.push({ path, errors: [`key ${shown(k)} ${NUL_MESSAGE}`] });
      const value = typeof v === 'string' ? v : v && typeof v === 'object' ? (v as { secret?: unknown }).secret : undefined;
      if (typeof value === 'string' && value.includes(NUL)) out.push({ path: `${path}/${k}`, errors: [NUL_MESSAGE] });
    }
  };
  map('/env', app.env);
  map('/labels', app.labels);
  (app.portDefinitions ?? []).forEach((p, i) => map(`/portDefinitions(${i})/labels`, p.labels));
  app.container?.docker?.portMappings.forEach((m, i) => map(`/container/docker/portMappings(${i})/labels`, m.labels));
  if (app.ipAddress) map('/ipAddress/labels', app.ipAddress.labels);
  return out;
}

/** The labels that become pod identity and pod labels, with Kubernetes' messages. */
export function validatePodLabels(app: AppDefinition, v: Violations): void {
  const identity: [string, (s: string) => string[]][] = [
    [NAMESPACE_APP_LABEL, dns1123LabelErrors],
    [POD_APP_LABEL, dns1123SubdomainErrors],
  ];
  for (const [key, errorsOf] of identity) {
    const value = app.labels[key];
    if (value === undefined || value === '' || value.includes(NUL)) continue;
    for (const e of errorsOf(value)) v.add(`/labels/${key}`, `Invalid value: ${shown(value)}: ${e}`);
  }
  if (!app.ipAddress) return;
  for (const [key, value] of Object.entries(app.labels)) {
    if (key.startsWith(BOOKKEEPING_PREFIX) || key.includes(NUL) || value.includes(NUL)) continue;
    for (const e of labelKeyErrors(key)) v.add(`/labels/${key}`, `Invalid label key ${shown(key)}: ${e}`);
    for (const e of labelValueErrors(value)) v.add(`/labels/${key}`, `Invalid value: ${shown(value)}: ${e}`);
  }
}

/** Named ports of one task are unique (Kubernetes refuses a pod whose ports share a name: a rule for the name would open each number). */
export function validateDiscoveryPortNames(app: AppDefinition, v: Violations): void {
  const seen = new Map<string, unknown>();
  for (const p of app.ipAddress?.discovery.ports ?? []) {
    const { name, number } = p as { name?: unknown; number?: unknown };
    if (typeof name !== 'string' || name === '') continue;
    if (seen.has(name))
      v.add('/ipAddress/discovery/ports', `Port names must be unique: ${shown(name)} is the name of ports ${String(seen.get(name))} and ${String(number)}`);
    else seen.set(name, number);
  }
}
