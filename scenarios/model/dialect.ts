// Starmap's older policy dialect read as NetworkPolicy. A dialect policy is cluster-wide and
// ingress-only: `selector` picks apps by labels and/or `group` (a namespace), `from` sources by
// labels and/or group, anywhere when no group is given. In NetworkPolicy terms that is one policy
// of the same name in each namespace the selector can pick (its group, else every namespace),
// with `namespaceSelector: {}` for sources without a group, so the evaluator, the orchestrator and
// a real cluster all read the same objects. Pure.
import type { DialectPolicyDoc } from './schema.ts';
import { NAMESPACE_NAME_LABEL, type NetworkPolicyObject, type NetworkPolicyPeer } from '../../shared/netpol/types.ts';

function peer(sel: { labels?: Record<string, string>; group?: string }): NetworkPolicyPeer {
  return {
    ...(sel.labels && Object.keys(sel.labels).length > 0 ? { podSelector: { matchLabels: { ...sel.labels } } } : {}),
    namespaceSelector: sel.group ? { matchLabels: { [NAMESPACE_NAME_LABEL]: sel.group } } : {},
  };
}

/** The NetworkPolicies a dialect policy stands for, given the scenario's namespaces. */
export function dialectToNetworkPolicies(name: string, p: DialectPolicyDoc, namespaces: readonly string[]): NetworkPolicyObject[] {
  const targets = p.selector.group ? [p.selector.group] : namespaces;
  return targets.map((namespace) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace },
    spec: {
      podSelector: p.selector.labels && Object.keys(p.selector.labels).length > 0 ? { matchLabels: { ...p.selector.labels } } : {},
      policyTypes: ['Ingress'],
      ingress: p.ingress.map((r) => ({
        ...(r.from ? { from: r.from.map(peer) } : {}),
        ...(r.ports ? { ports: r.ports.map((x) => ({ port: x.port, protocol: (x.protocol ?? 'tcp').toUpperCase() as 'TCP' | 'UDP' })) } : {}),
      })),
    },
  }));
}
