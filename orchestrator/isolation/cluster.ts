// The Kubernetes view of the isolated tasks: every task of an app with ipAddress is a pod.
// - namespace: the app label `starmap.namespace`, else "default";
// - pod name: the app label `starmap.pod`, else the last segment of the app id (all instances of
//   an app share the pod name; each has its own address);
// - labels NetworkPolicy selectors see: the app's labels without `starmap.*` keys (bookkeeping of
//   the scenario runner), unless replaced through the pod-labels API (no restart);
// - labels the dialect's selectors see: the app's labels as they are (the runner scopes dialect
//   policies by `starmap.scenario`/`starmap.group`), with a pod-labels replacement applied to the
//   non-bookkeeping part;
// - named ports: the app's ipAddress.discovery.ports ({number, name, protocol tcp|udp|sctp}).
// Namespaces: those stored through the namespaces API plus those only implied by tasks; every one
// carries kubernetes.io/metadata.name, as in Kubernetes.
import { NAMESPACE_NAME_LABEL, objectId, type NamedPort, type NamespaceInfo, type Protocol } from '../../shared/netpol/types.ts';
import type { TaskNetInfo } from './policy.ts';

export const NAMESPACE_APP_LABEL = 'starmap.namespace';
export const POD_APP_LABEL = 'starmap.pod';
const BOOKKEEPING_PREFIX = 'starmap.';
export const DEFAULT_NAMESPACE = 'default';

/** What the rule compiler knows of one isolated task. */
export interface PodNet {
  taskId: string;
  appId: string;
  netns: string;
  ip: string;
  namespace: string;
  pod: string;
  /** Labels NetworkPolicy selectors match. */
  labels: Record<string, string>;
  /** Labels dialect selectors match. */
  dialectLabels: Record<string, string>;
  /** Marathon ipAddress.groups (network groups, dialect). */
  groups: string[];
  ports: NamedPort[];
}

/**
 * Named ports from Marathon's ipAddress.discovery.ports. Entries without a usable number are
 * skipped; a protocol list such as "udp,tcp" declares the port once per protocol.
 */
export function parseDiscoveryPorts(raw: unknown): NamedPort[] {
  if (!Array.isArray(raw)) return [];
  const out: NamedPort[] = [];
  for (const p of raw.slice(0, 1000) as unknown[]) {
    if (typeof p !== 'object' || p === null) continue;
    const { number, name, protocol } = p as Record<string, unknown>;
    if (typeof number !== 'number' || !Number.isInteger(number) || number < 1 || number > 65535) continue;
    const protocols = (typeof protocol === 'string' ? protocol : 'tcp').split(',').map((x) => x.trim().toUpperCase());
    for (const proto of protocols) {
      if (proto !== 'TCP' && proto !== 'UDP' && proto !== 'SCTP') continue;
      out.push({ name: typeof name === 'string' ? name : '', port: number, protocol: proto as Protocol });
    }
  }
  return out;
}

/** A task's namespace and pod name (see the top of this file). */
export function podIdentity(appId: string, appLabels: Record<string, string>): { namespace: string; pod: string } {
  const segments = appId.split('/').filter(Boolean);
  return {
    namespace: appLabels[NAMESPACE_APP_LABEL] || DEFAULT_NAMESPACE,
    pod: appLabels[POD_APP_LABEL] || segments[segments.length - 1] || appId,
  };
}

function withoutBookkeeping(labels: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(labels).filter(([k]) => !k.startsWith(BOOKKEEPING_PREFIX)));
}

/** The pod a task is, with a pod-labels replacement (keyed `ns/pod`) applied when there is one. */
export function podOf(task: TaskNetInfo, overrides: ReadonlyMap<string, Record<string, string>>): PodNet {
  const { namespace, pod } = podIdentity(task.appId, task.labels);
  const override = overrides.get(objectId({ namespace, name: pod }));
  const bookkeeping = Object.fromEntries(Object.entries(task.labels).filter(([k]) => k.startsWith(BOOKKEEPING_PREFIX)));
  return {
    taskId: task.taskId,
    appId: task.appId,
    netns: task.netns,
    ip: task.ip,
    namespace,
    pod,
    labels: override ? { ...override } : withoutBookkeeping(task.labels),
    dialectLabels: override ? { ...bookkeeping, ...override } : task.labels,
    groups: task.groups,
    ports: task.ports ?? [],
  };
}

/** A namespace's labels: the stored ones (if any) with kubernetes.io/metadata.name forced to its name. */
export function namespaceLabels(name: string, stored?: Record<string, string>): Record<string, string> {
  return { ...(stored ?? {}), [NAMESPACE_NAME_LABEL]: name };
}

/** Every namespace: stored ones and those only implied by pods, sorted by name. */
export function namespacesOf(stored: ReadonlyMap<string, Record<string, string>>, pods: readonly PodNet[]): NamespaceInfo[] {
  const names = new Set([...stored.keys(), ...pods.map((p) => p.namespace)]);
  return [...names].sort().map((name) => ({ name, labels: namespaceLabels(name, stored.get(name)) }));
}
