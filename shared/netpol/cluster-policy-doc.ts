// A validated admin-tier policy (cluster-policy.ts) back as the upstream document of its kind, and
// with its `{{ip ns/pod}}` address templates filled in: what the scenario runner sends to the
// orchestrator's policy API, which validates it again with validateClusterPolicy (so that what the
// runner sends is held to the API server's rules as any client's). validateClusterPolicy of the
// document gives the policy back unchanged (test/shared/cluster-policy-doc.test.ts). Pure.
import type { ClusterPeer, ClusterPolicy, ClusterProtocol, ClusterRule, NamespacedPodSelector } from './cluster-policy.ts';
import { hasTemplate, substitute } from './ip-template.ts';

const API = {
  ClusterNetworkPolicy: 'policy.networking.k8s.io/v1alpha2',
  AdminNetworkPolicy: 'policy.networking.k8s.io/v1alpha1',
  BaselineAdminNetworkPolicy: 'policy.networking.k8s.io/v1alpha1',
} as const;

/** The policy with each `{{ip ns/pod}}` of its networks filled in (an address not known yet: the entry is left out). */
export function resolveClusterPolicy(policy: ClusterPolicy, ipOf: (ref: string) => string | undefined): ClusterPolicy {
  const peers = (list: ClusterPeer[]): ClusterPeer[] =>
    list.map((p) =>
      'networks' in p ? { networks: p.networks.flatMap((t) => (hasTemplate(t) ? [substitute(t, ipOf)].filter((x): x is string => x !== undefined) : [t])) } : p,
    );
  const rules = (list: ClusterRule[]) => list.map((r) => ({ ...r, peers: peers(r.peers) }));
  return { ...policy, ingress: rules(policy.ingress), egress: rules(policy.egress) };
}

const pods = (s: NamespacedPodSelector) => ({ namespaceSelector: s.namespaceSelector, podSelector: s.podSelector });

function peerDoc(p: ClusterPeer): Record<string, unknown> {
  if ('namespaces' in p) return { namespaces: p.namespaces };
  if ('pods' in p) return { pods: pods(p.pods) };
  if ('networks' in p) return { networks: p.networks };
  if ('nodes' in p) return { nodes: p.nodes };
  return { domainNames: p.domainNames };
}

function protocolsV2(list: ClusterProtocol[]): unknown[] {
  return list.map((pr) => {
    if ('namedPort' in pr) return { destinationNamedPort: pr.namedPort };
    const port = 'number' in pr.port ? { number: pr.port.number } : { range: pr.port.range };
    return { [pr.protocol.toLowerCase()]: { destinationPort: port } };
  });
}

function portsV1(list: ClusterProtocol[]): unknown[] {
  return list.map((pr) => {
    if ('namedPort' in pr) return { namedPort: pr.namedPort };
    return 'number' in pr.port
      ? { portNumber: { protocol: pr.protocol, port: pr.port.number } }
      : { portRange: { protocol: pr.protocol, start: pr.port.range.start, end: pr.port.range.end } };
  });
}

/** The upstream document of the policy's own kind; `labels` go into its metadata. */
export function clusterPolicyDoc(policy: ClusterPolicy, labels: Record<string, string> = {}): Record<string, unknown> {
  const v1 = policy.kind !== 'ClusterNetworkPolicy';
  const rules = (list: ClusterRule[], key: 'from' | 'to') =>
    list.map((r) => ({
      ...(r.name !== undefined ? { name: r.name } : {}),
      action: v1 && r.action === 'Accept' ? 'Allow' : r.action,
      [key]: r.peers.map(peerDoc),
      ...(r.protocols ? { [v1 ? 'ports' : 'protocols']: v1 ? portsV1(r.protocols) : protocolsV2(r.protocols) } : {}),
    }));
  const subject = 'namespaces' in policy.subject ? { namespaces: policy.subject.namespaces } : { pods: pods(policy.subject.pods) };
  const spec: Record<string, unknown> = {
    ...(policy.kind === 'ClusterNetworkPolicy' ? { tier: policy.tier } : {}),
    ...(policy.kind !== 'BaselineAdminNetworkPolicy' ? { priority: policy.priority } : {}),
    subject,
  };
  if (policy.ingress.length > 0) spec.ingress = rules(policy.ingress, 'from');
  if (policy.egress.length > 0) spec.egress = rules(policy.egress, 'to');
  return {
    apiVersion: API[policy.kind],
    kind: policy.kind,
    metadata: { name: policy.name, ...(Object.keys(labels).length > 0 ? { labels } : {}) },
    spec,
  };
}
