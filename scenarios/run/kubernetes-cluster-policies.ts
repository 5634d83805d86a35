// An admin-tier policy as a ClusterNetworkPolicy manifest (policy.networking.k8s.io/v1alpha2) for
// `scenario export`: the one form shared/netpol/cluster-policy.ts reads every kind into, written
// back as the v1alpha2 kind (an AdminNetworkPolicy or BaselineAdminNetworkPolicy of the scenario
// becomes the ClusterNetworkPolicy of the same tier, priority and rules, as cluster-policy.ts reads
// it). Reading the manifest back gives the same policy (test/scenarios/run/kubernetes-export.test.ts).
// `{{ip ns/pod}}` templates in networks are kept as written: the caller fills them in. Pure.
import type { ClusterPeer, ClusterPolicy, ClusterProtocol, ClusterRule } from '../../shared/netpol/cluster-policy.ts';

type Json = Record<string, unknown>;

function peerDoc(p: ClusterPeer): Json {
  if ('namespaces' in p) return { namespaces: p.namespaces };
  if ('pods' in p) return { pods: { namespaceSelector: p.pods.namespaceSelector, podSelector: p.pods.podSelector } };
  if ('networks' in p) return { networks: p.networks };
  if ('nodes' in p) return { nodes: p.nodes };
  return { domainNames: p.domainNames };
}

function protocolDoc(p: ClusterProtocol): Json {
  if ('namedPort' in p) return { destinationNamedPort: p.namedPort };
  return { [p.protocol.toLowerCase()]: { destinationPort: 'number' in p.port ? { number: p.port.number } : { range: p.port.range } } };
}

function ruleDoc(r: ClusterRule, peers: 'from' | 'to'): Json {
  return {
    ...(r.name !== undefined ? { name: r.name } : {}),
    action: r.action,
    [peers]: r.peers.map(peerDoc),
    ...(r.protocols !== undefined ? { protocols: r.protocols.map(protocolDoc) } : {}),
  };
}

/** The v1alpha2 manifest of a policy, with `labels` on it. */
export function clusterPolicyManifest(p: ClusterPolicy, labels: Record<string, string>): Json {
  return {
    apiVersion: 'policy.networking.k8s.io/v1alpha2',
    kind: 'ClusterNetworkPolicy',
    metadata: { name: p.name, labels },
    spec: {
      tier: p.tier,
      priority: p.priority,
      subject: 'namespaces' in p.subject ? { namespaces: p.subject.namespaces } : { pods: p.subject.pods },
      ...(p.ingress.length > 0 ? { ingress: p.ingress.map((r) => ruleDoc(r, 'from')) } : {}),
      ...(p.egress.length > 0 ? { egress: p.egress.map((r) => ruleDoc(r, 'to')) } : {}),
    },
  };
}
