// DNS in the one-machine cluster, as policies see it (issue 31): the cluster's DNS endpoint is a
// pod, `kube-system/kube-dns` with the label `k8s-app: kube-dns`, serving 53/UDP and 53/TCP, so
// that NetworkPolicies and admin-tier policies allow or block lookups as they would on a cluster.
// And how a ClusterNetworkPolicy `domainNames` entry matches a name (apis/v1alpha2
// clusternetworkpolicy_types.go, DomainName):
// - `kubernetes.io` matches only `kubernetes.io`;
// - `*.kubernetes.io` matches subdomains, one or more entire labels (`www.kubernetes.io`,
//   `latest.blog.kubernetes.io`), never `kubernetes.io` itself;
// - names compare without case and without a trailing dot (DNS names are case-insensitive; the
//   CRD's pattern allows both).
// Pure: no I/O. The evaluator (tiers.ts) and the orchestrator's DNS server both read it.
import type { NamedPort, PodInfo } from './types.ts';

export const KUBE_DNS_NAMESPACE = 'kube-system';
export const KUBE_DNS_NAME = 'kube-dns';
export const KUBE_DNS_ID = `${KUBE_DNS_NAMESPACE}/${KUBE_DNS_NAME}`;
export const KUBE_DNS_LABELS: Readonly<Record<string, string>> = { 'k8s-app': 'kube-dns' };
export const DNS_PORT = 53;
export const KUBE_DNS_PORTS: readonly NamedPort[] = [
  { name: 'dns', port: DNS_PORT, protocol: 'UDP' },
  { name: 'dns-tcp', port: DNS_PORT, protocol: 'TCP' },
];
/** The cluster domain pods' and services' names end in (`<svc>.<ns>.svc.cluster.local`). */
export const CLUSTER_DOMAIN = 'cluster.local';

/** The kube-dns pod as the evaluator sees it; `ip` once the run has given it one. */
export function kubeDnsPod(ip?: string): PodInfo {
  return {
    namespace: KUBE_DNS_NAMESPACE,
    name: KUBE_DNS_NAME,
    labels: { ...KUBE_DNS_LABELS },
    ports: [...KUBE_DNS_PORTS],
    ...(ip !== undefined ? { ip } : {}),
  };
}

/** A name as compared: lowercase, no trailing dot. */
export function canonicalName(name: string): string {
  const lower = name.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/** Whether a `domainNames` entry (exact, or `*.` then a suffix) matches a host name (see the top). */
export function domainMatches(pattern: string, name: string): boolean {
  const p = canonicalName(pattern);
  const n = canonicalName(name);
  if (!p.startsWith('*.')) return p === n;
  const suffix = p.slice(1); // `.kubernetes.io`
  return n.length > suffix.length && n.endsWith(suffix);
}

/** The name of a service (`<svc>.<ns>.svc.cluster.local`). */
export function serviceName(service: string, namespace: string): string {
  return `${service}.${namespace}.svc.${CLUSTER_DOMAIN}`;
}

/** A pod's A record name as the Kubernetes DNS spec gives it: its address with dashes, `<a-b-c-d>.<ns>.pod.cluster.local`. */
export function podAddressName(ip: string, namespace: string): string {
  return `${ip.replaceAll('.', '-')}.${namespace}.pod.${CLUSTER_DOMAIN}`;
}
