// Kubernetes NetworkPolicy v1 (networking.k8s.io/v1) as Starmap reads it, and the cluster model a
// policy is judged against (namespaces, pods, their labels, addresses and named ports).
//
// These are the wire types of the Kubernetes API, not Starmap's own: a manifest that `kubectl`
// accepts maps onto them one to one, so a scenario can later be exported to a real cluster. The
// two consumers of these types are deliberately independent of each other: the nftables renderer
// (orchestrator/isolation/) and the evaluator (shared/netpol/) each implement the semantics on
// their own, so that each can catch the other's mistakes. Only these types and the validation that
// turns a manifest into them are shared.

export type Protocol = 'TCP' | 'UDP' | 'SCTP';
export const PROTOCOLS: readonly Protocol[] = ['TCP', 'UDP', 'SCTP'];

export type PolicyType = 'Ingress' | 'Egress';

/** metav1.LabelSelectorRequirement */
export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  /** Non-empty for In and NotIn, absent or empty for Exists and DoesNotExist. */
  values?: string[];
}

/** metav1.LabelSelector: both parts must match (AND); an empty selector matches everything. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export interface IPBlock {
  /** A CIDR such as 10.0.0.0/8 or 2001:db8::/64; host bits are accepted and ignored (v1 API). */
  cidr: string;
  /** CIDRs inside `cidr` that are not allowed. */
  except?: string[];
}

/**
 * networking/v1 NetworkPolicyPeer. Exactly one of ipBlock or (podSelector and/or namespaceSelector):
 * podSelector alone selects pods of the policy's own namespace; namespaceSelector alone selects
 * every pod of the matching namespaces; both together select matching pods in matching namespaces.
 */
export interface NetworkPolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: IPBlock;
}

export interface NetworkPolicyPort {
  /** Default TCP. */
  protocol?: Protocol;
  /** A number, or the name of a container port of the destination pod. Absent: every port. */
  port?: number | string;
  /** Last port of a range starting at the numeric `port` (inclusive). */
  endPort?: number;
}

export interface NetworkPolicyIngressRule {
  /** Absent or empty: from everywhere. */
  from?: NetworkPolicyPeer[];
  /** Absent or empty: every port and protocol. */
  ports?: NetworkPolicyPort[];
}

export interface NetworkPolicyEgressRule {
  /** Absent or empty: to everywhere. */
  to?: NetworkPolicyPeer[];
  ports?: NetworkPolicyPort[];
}

export interface NetworkPolicySpec {
  /** Selects the pods of the policy's namespace it applies to; {} selects all of them. */
  podSelector: LabelSelector;
  ingress?: NetworkPolicyIngressRule[];
  egress?: NetworkPolicyEgressRule[];
  /** Default: ["Ingress"], plus "Egress" when `egress` is present. */
  policyTypes?: PolicyType[];
}

export interface NetworkPolicyObject {
  apiVersion: 'networking.k8s.io/v1';
  kind: 'NetworkPolicy';
  metadata: { name: string; namespace: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: NetworkPolicySpec;
}

/** A container port a pod declares (`ports[].name` of its containers). */
export interface NamedPort {
  name: string;
  port: number;
  protocol: Protocol;
}

export interface NamespaceInfo {
  name: string;
  /** Includes `kubernetes.io/metadata.name: <name>`, as every Kubernetes namespace has. */
  labels: Record<string, string>;
}

export interface PodInfo {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  /** IPv4 or IPv6 address; undefined while not yet known (ipBlock peers cannot match it then). */
  ip?: string;
  ports: NamedPort[];
  /**
   * A pod on its node's network: it has its node's address. No policy selects it (its own sides are
   * never isolated), pod and namespace selectors never match it; ipBlocks and `networks` match it by
   * its address, and admin-tier `nodes` peers by its node's labels (tiers.ts).
   */
  hostNetwork?: boolean;
  /** The node it runs on (a NodeInfo's name); a hostNetwork pod without one is on the cluster's only node. */
  node?: string;
  /**
   * A host outside the cluster (a scenario's `externals:`): no policy selects it, so its own sides
   * are never isolated, and pod or namespace selectors never match it; only ipBlocks (by its ip) do.
   */
  external?: boolean;
}

/**
 * A node of the cluster (core/v1 Node as far as policies see it): its name, its labels (admin-tier
 * `nodes` peers select them; every node has `kubernetes.io/hostname: <name>`) and its address, which
 * its hostNetwork pods share.
 */
export interface NodeInfo {
  name: string;
  labels: Record<string, string>;
  ip?: string;
}

/** The node a scenario's cluster has when it declares none. */
export const DEFAULT_NODE_NAME = 'starmap-node-0';
export const NODE_HOSTNAME_LABEL = 'kubernetes.io/hostname';

/** A node's labels as the kubelet sets them on this machine's kind of node, its own given ones over them. */
export function nodeLabels(name: string, labels: Record<string, string> = {}): Record<string, string> {
  return { [NODE_HOSTNAME_LABEL]: name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', ...labels };
}

/** `namespace/name`, the id a policy or a pod goes by in reports and in the orchestrator's API. */
export function objectId(o: { namespace: string; name: string }): string {
  return `${o.namespace}/${o.name}`;
}

export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';
