// The policy set of the "40 valid NetworkPolicies freeze enforcement" report: `count` policies in
// one namespace, each selecting every pod there, of 28 ingress rules x 40 ipBlock /32 peers over
// TCP, UDP and SCTP. Every peer is a distinct address of 100.64.0.0/10 (shared address space, no
// test uses it): rules only, no traffic goes there.
import type { NetworkPolicyObject } from '../../shared/netpol/types.ts';

export const RULES_PER_POLICY = 28;
export const PEERS_PER_RULE = 40;

/** The address of peer `peer` of rule `rule` of policy `policy` (big-<policy>). */
export function peerAddress(policy: number, rule: number, peer: number): string {
  const v = 0x64400000 + (policy * RULES_PER_POLICY + rule) * PEERS_PER_RULE + peer;
  return [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join('.');
}

export function largePolicy(namespace: string, index: number): NetworkPolicyObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: `big-${index}`, namespace },
    spec: {
      podSelector: {},
      policyTypes: ['Ingress'],
      ingress: Array.from({ length: RULES_PER_POLICY }, (_, r) => ({
        from: Array.from({ length: PEERS_PER_RULE }, (_, p) => ({
          ipBlock: { cidr: `${peerAddress(index, r, p)}/32` },
        })),
        ports: [
          { protocol: 'TCP' as const, port: 1000 + r },
          { protocol: 'UDP' as const, port: 2000 + r },
          { protocol: 'SCTP' as const, port: 3000 + r },
        ],
      })),
    },
  };
}

export function largePolicySet(namespace: string, count: number): NetworkPolicyObject[] {
  return Array.from({ length: count }, (_, i) => largePolicy(namespace, i));
}
