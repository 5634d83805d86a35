// clusterPolicyDoc (shared/netpol/cluster-policy-doc.ts) writes a validated admin-tier policy back
// as the upstream document of its kind, which the orchestrator validates again: every policy of the
// built-in cnp-conformance set, and one of each v1alpha1 kind, must come back unchanged through
// validateClusterPolicy. resolveClusterPolicy fills `{{ip ns/pod}}` in networks.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { validateClusterPolicy, type ClusterPolicy } from '../../shared/netpol/cluster-policy.ts';
import { clusterPolicyDoc, resolveClusterPolicy } from '../../shared/netpol/cluster-policy-doc.ts';
import { loadScenario } from '../../scenarios/model/load.ts';
import { ROOT } from '../helpers/process.ts';

function roundTrip(p: ClusterPolicy): ClusterPolicy {
  const v = validateClusterPolicy(clusterPolicyDoc(p, { 'starmap.scenario': 's' }));
  if ('errors' in v) throw new Error(`${p.id}: ${JSON.stringify(v.errors)}`);
  return v.policy;
}

describe('clusterPolicyDoc', () => {
  it('gives back every policy of the cnp-conformance set unchanged (addresses filled in)', () => {
    const dir = join(ROOT, 'scenarios/builtin/cnp-conformance');
    let n = 0;
    for (const f of readdirSync(dir).filter((x) => /^(admin|baseline)-.*\.yaml$/.test(x))) {
      const s = loadScenario(join(dir, f));
      const ips = new Map(s.pods.map((p, i) => [p.id, `10.213.1.${i + 2}`]));
      for (const step of s.steps)
        for (const p of step.clusterPolicies ?? []) {
          const resolved = resolveClusterPolicy(p, (ref) => ips.get(ref));
          expect(roundTrip(resolved), `${f} ${p.id}`).toEqual(resolved);
          n++;
        }
    }
    expect(n).toBeGreaterThan(20);
  });

  it('writes the v1alpha1 kinds as themselves (Allow, ports, no priority for the baseline)', () => {
    const anp = validateClusterPolicy({
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'AdminNetworkPolicy',
      metadata: { name: 'a' },
      spec: {
        priority: 3,
        subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'db' } } } },
        ingress: [{ name: 'r', action: 'Allow', from: [{ namespaces: {} }], ports: [{ portNumber: { protocol: 'UDP', port: 53 } }, { namedPort: 'web' }] }],
        egress: [{ name: 'e', action: 'Deny', to: [{ networks: ['10.0.0.0/8'] }], ports: [{ portRange: { protocol: 'TCP', start: 1, end: 9 } }] }],
      },
    });
    const banp = validateClusterPolicy({
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'BaselineAdminNetworkPolicy',
      metadata: { name: 'default' },
      spec: { subject: { namespaces: {} }, ingress: [{ name: 'all', action: 'Deny', from: [{ namespaces: {} }] }] },
    });
    if ('errors' in anp || 'errors' in banp) throw new Error('invalid');
    for (const p of [anp.policy, banp.policy]) expect(roundTrip(p)).toEqual(p);
    expect(clusterPolicyDoc(anp.policy)).toMatchObject({ kind: 'AdminNetworkPolicy', spec: { ingress: [{ action: 'Allow' }] } });
    expect((clusterPolicyDoc(banp.policy).spec as Record<string, unknown>).priority).toBeUndefined();
  });

  it('fills {{ip ns/pod}} in networks, and leaves out an address not known yet', () => {
    const p = validateClusterPolicy({
      apiVersion: 'policy.networking.k8s.io/v1alpha2',
      kind: 'ClusterNetworkPolicy',
      metadata: { name: 't' },
      spec: { tier: 'Admin', priority: 1, subject: { namespaces: {} }, egress: [{ action: 'Deny', to: [{ networks: ['192.0.2.1/32', '192.0.2.2/32'] }] }] },
    });
    if ('errors' in p) throw new Error('invalid');
    const templated: ClusterPolicy = { ...p.policy, egress: [{ ...p.policy.egress[0]!, peers: [{ networks: ['{{ip x/a}}/32', '{{ip x/b}}/32'] }] }] };
    const r = resolveClusterPolicy(templated, (ref) => (ref === 'x/a' ? '10.213.0.9' : undefined));
    expect(r.egress[0]!.peers).toEqual([{ networks: ['10.213.0.9/32'] }]);
  });
});
