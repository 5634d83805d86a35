// DNS in a scenario's model (issue 31). The cluster's DNS endpoint, `kube-system/kube-dns`
// (shared/netpol/dns.ts), is added to the evaluator's cluster only when the scenario needs names:
// an external declares `names:`, or an admin-tier policy in force has a `domainNames` peer. So
// scenarios that do not use DNS keep their pods, cells and tables as they were. It is no pod of the
// scenario (no cells of its own, no probe): the lookups it serves are judged through the cells to
// named externals (shared/netpol/tiers.ts).
// Its address in the model is fixed, the pod subnet's last host address (10.213.0.254 in the
// default 10.213.0.0/24), as a cluster's DNS service address is fixed, so that `networks` rules
// decide the lookup before anything runs. Pure.
import { parseBlock } from '../../shared/netpol/cidr.ts';
import { KUBE_DNS_ID } from '../../shared/netpol/dns.ts';
import type { PodSpec, ResolvedStep } from './resolved.ts';

/** Whether a scenario needs the cluster's DNS: a named external, or a `domainNames` peer in force. */
export function needsDns(pods: readonly PodSpec[], steps: readonly ResolvedStep[]): boolean {
  if (pods.some((p) => p.names !== undefined && p.names.length > 0)) return true;
  return steps.some((s) => (s.clusterPolicies ?? []).some((p) => p.egress.some((r) => r.peers.some((peer) => 'domainNames' in peer))));
}

/** The kube-dns address in the model: the pod subnet's last host address (see the top); undefined for a subnet too small or not IPv4. */
export function kubeDnsAddress(podSubnet: string): string | undefined {
  const b = parseBlock(podSubnet);
  if (!b || b.family !== 4 || b.prefix > 30) return undefined;
  const last = b.network + (1n << BigInt(32 - b.prefix)) - 2n;
  return [24n, 16n, 8n, 0n].map((s) => String((last >> s) & 255n)).join('.');
}

export { KUBE_DNS_ID };
