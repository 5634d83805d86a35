// Automatic externals beyond IPv4 NetworkPolicy ipBlocks (issue 29 "Coverage",
// model/coverage-externals.ts): one inside each admin-tier egress `networks` entry
// (ClusterNetworkPolicy v1alpha2, AdminNetworkPolicy / BaselineAdminNetworkPolicy v1alpha1) and
// inside IPv6 CIDRs; IPv6 externals get their computed cells but cannot exist on packets in a run's
// layout (every task has one IPv4 address), so run marks their cells not run and deploys nothing
// for them. Rule coverage (model/cluster-coverage.ts) lists the admin tiers' rules with the cells
// that reach them, and names the dead ones.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { plannedAddresses } from '../../../scenarios/model/addresses.ts';
import { coverageAddress, coverageExternals, v6 } from '../../../scenarios/model/coverage-externals.ts';
import { ruleCoverage } from '../../../scenarios/model/coverage.ts';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { IPV6_NOT_RUN } from '../../../scenarios/model/externals.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import type { ResolvedScenario } from '../../../scenarios/model/resolve.ts';
import { planApps } from '../../../scenarios/run/deploy-plan.ts';
import { notRunCells } from '../../../scenarios/run/steps.ts';
import { parseBlock } from '../../../shared/netpol/cidr.ts';
import { validateClusterPolicy, type ClusterPolicy } from '../../../shared/netpol/cluster-policy.ts';
import type { NetworkPolicyObject } from '../../../shared/netpol/types.ts';
import { removeTempDirs, tempDir } from '../../helpers/process.ts';

afterAll(removeTempDirs);

const SUBNET = '10.213.0.0/24';
const b = (text: string) => parseBlock(text)!;

function clusterPolicy(doc: unknown): ClusterPolicy {
  const r = validateClusterPolicy(doc);
  if ('errors' in r) throw new Error(JSON.stringify(r.errors));
  return r.policy;
}

const cnpDoc = (name: string, egress: unknown[], priority = 10, tier = 'Admin') => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name },
  spec: { tier, priority, subject: { namespaces: {} }, egress },
});

function load(text: string): ResolvedScenario {
  const file = join(tempDir('starmap-admin-ext-'), 's.yaml');
  writeFileSync(file, text);
  return loadScenario(file);
}

describe('automatic externals: IPv6 blocks and admin-tier networks', () => {
  it('an IPv6 address in short form, and a coverage address inside an IPv6 block: the documentation prefix first, never reserved', () => {
    expect(v6(0n)).toBe('::');
    expect(v6(1n)).toBe('::1');
    expect(v6((0x2001n << 112n) | (0xdb8n << 96n) | 1n)).toBe('2001:db8::1');
    expect(v6((0x2001n << 112n) | (0xdb8n << 96n) | (1n << 64n) | 1n)).toBe('2001:db8:0:1::1');
    expect(coverageAddress(b('::/0'), [], SUBNET)).toBe('2001:db8::1');
    expect(coverageAddress(b('::/0'), [b('2001:db8::/32')], SUBNET)).toBe('::1:0:0'); // past ::/96 (unspecified, loopback, IPv4-compatible)
    expect(coverageAddress(b('2001:db8::/32'), [b('2001:db8::/48')], SUBNET)).toBe('2001:db8:1::');
    expect(coverageAddress(b('2001:db8:5::7/128'), [], SUBNET)).toBe('2001:db8:5::7');
    expect(coverageAddress(b('fd00::/8'), [], SUBNET)).toBe('fd00::1');
    expect(coverageAddress(b('fe80::/10'), [], SUBNET)).toBeUndefined(); // link-local: no host outside
    expect(coverageAddress(b('ff02::/16'), [], SUBNET)).toBeUndefined(); // multicast
  });

  it('an IPv6 ipBlock gets one external inside its cidr and one inside each except, as IPv4 ones do', () => {
    const policy: NetworkPolicyObject = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'out6', namespace: 'shop' },
      spec: {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [{ to: [{ ipBlock: { cidr: '2001:db8::/32', except: ['2001:db8::/48'] } }], ports: [{ port: 443 }] }],
      },
    };
    expect(coverageExternals([policy], [], SUBNET)).toEqual([
      { name: 'out6-e0p0', address: '2001:db8:1::', ports: [{ name: '', port: 443, protocol: 'TCP' }], covers: 'shop/out6 /spec/egress/0/to/0/ipBlock/cidr' },
      {
        name: 'out6-e0p0x0',
        address: '2001:db8::1',
        ports: [{ name: '', port: 443, protocol: 'TCP' }],
        covers: 'shop/out6 /spec/egress/0/to/0/ipBlock/except/0',
      },
    ]);
  });

  it('admin-tier egress networks: one external inside each network, serving the rule’s ports, named after policy, rule, peer and network', () => {
    const cnp = clusterPolicy(
      cnpDoc('egress-out', [
        { name: 'deny-lb', action: 'Deny', to: [{ networks: ['198.51.100.0/24'] }], protocols: [{ tcp: { destinationPort: { number: 8443 } } }] },
        { action: 'Accept', to: [{ networks: ['0.0.0.0/0', '::/0'] }], protocols: [{ udp: { destinationPort: { range: { start: 5000, end: 5100 } } } }] },
      ]),
    );
    const made = coverageExternals([], [], SUBNET, [cnp]);
    expect(made).toEqual([
      // The one made for 198.51.100.0/24 is inside 0.0.0.0/0 too: it stands in for both, serving both rules' ports.
      {
        name: 'egress-out-e0p0n0',
        address: '198.51.100.1',
        ports: [
          { name: '', port: 8443, protocol: 'TCP' },
          { name: '', port: 5000, protocol: 'UDP' },
        ],
        covers: 'cnp/egress-out /spec/egress/0/to/0/networks/0',
      },
      {
        name: 'egress-out-e1p0n1',
        address: '2001:db8::1',
        ports: [{ name: '', port: 5000, protocol: 'UDP' }],
        covers: 'cnp/egress-out /spec/egress/1/to/0/networks/1',
      },
    ]);
    // An external already inside a network stands in for it; a name taken gets the kind first.
    const again = coverageExternals([], [{ name: 'egress-out-e0p0n0', address: '203.0.113.5', ports: [] }], SUBNET, [cnp]);
    expect(again.map((e) => [e.name, e.address])).toEqual([
      ['cnp-egress-out-e0p0n0', '198.51.100.1'],
      ['egress-out-e1p0n1', '2001:db8::1'],
    ]);
  });

  it('v1alpha1 AdminNetworkPolicy and BaselineAdminNetworkPolicy networks are covered too', () => {
    const anp = clusterPolicy({
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'AdminNetworkPolicy',
      metadata: { name: 'lb' },
      spec: { priority: 5, subject: { namespaces: {} }, egress: [{ name: 'to-lb', action: 'Allow', to: [{ networks: ['10.50.0.0/16'] }] }] },
    });
    const banp = clusterPolicy({
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'BaselineAdminNetworkPolicy',
      metadata: { name: 'default' },
      spec: { subject: { namespaces: {} }, egress: [{ name: 'no-v6', action: 'Deny', to: [{ networks: ['fd00::/8'] }] }] },
    });
    expect(coverageExternals([], [], SUBNET, [anp, banp]).map((e) => [e.name, e.address, e.covers])).toEqual([
      ['lb-e0p0n0', '10.50.0.1', 'anp/lb /spec/egress/0/to/0/networks/0'],
      ['default-e0p0n0', 'fd00::1', 'banp/default /spec/egress/0/to/0/networks/0'],
    ]);
  });
});

const SCENARIO = `name: v6
apps:
  - { name: web, namespace: shop, kind: probe, labels: { app: web }, ports: [{ name: http, port: 8080 }], probes: [shop/api] }
  - { name: api, namespace: shop, kind: probe, labels: { app: api }, ports: [{ name: http, port: 8080 }], probes: [] }
policies:
  - apiVersion: policy.networking.k8s.io/v1alpha2
    kind: ClusterNetworkPolicy
    metadata: { name: edge }
    spec:
      tier: Admin
      priority: 10
      subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: web } } } }
      egress:
        - { name: deny-v6, action: Deny, to: [{ networks: ["2001:db8::/32"] }] }
        - { name: never, action: Accept, to: [{ networks: ["2001:db8:7::/48"] }] }
        - { name: wrong-port, action: Accept, to: [{ pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: api } } } }], protocols: [{ tcp: { destinationPort: { number: 1 } } }] }
        - { name: lb, action: Accept, to: [{ networks: ["198.51.100.0/24"] }, { networks: ["203.0.113.0/24"] }] }
  - apiVersion: policy.networking.k8s.io/v1alpha2
    kind: ClusterNetworkPolicy
    metadata: { name: nobody }
    spec:
      tier: Baseline
      priority: 10
      subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: none } } } }
      egress:
        - { action: Deny, to: [{ networks: ["0.0.0.0/0"] }] }
steps:
  - { name: one, policies: [cnp/edge, cnp/nobody], expect: computed }
`;

describe('a scenario with admin-tier networks and IPv6 externals', () => {
  it('the automatic externals are pods with computed cells; run marks the IPv6 ones not run and deploys nothing for them', () => {
    const s = load(SCENARIO);
    expect(s.pods.filter((p) => p.external).map((p) => [p.id, p.external])).toEqual([
      ['external:edge-e0p0n0', '2001:db8::1'],
      ['external:edge-e1p0n0', '2001:db8:7::1'],
      ['external:edge-e3p0n0', '198.51.100.1'],
      ['external:edge-e3p1n0', '203.0.113.1'],
      // cnp/nobody's 0.0.0.0/0 already holds an external (198.51.100.1): none of its own
    ]);
    const exp = expectStep(s, s.steps[0]!, plannedAddresses(s.pods));
    const computed = (key: string) => exp.cells.find((c) => c.cell.key === key)?.computed;
    // The Deny for 2001:db8::/32 comes first: both IPv6 externals are denied to web, computed all the same.
    expect(computed('shop/web>external:edge-e0p0n0@80/TCP')).toBe(false);
    expect(computed('shop/web>external:edge-e1p0n0@80/TCP')).toBe(false);
    expect(computed('shop/web>external:edge-e3p0n0@80/TCP')).toBe(true);
    expect(computed('shop/api>external:edge-e0p0n0@80/TCP')).toBe(true); // api is no subject of edge

    const notRun = notRunCells(exp, true);
    const v6Cells = exp.cells.filter((c) => /external:edge-e[01]p0n0/.test(c.cell.key)).map((c) => c.cell.key);
    expect(v6Cells.length).toBeGreaterThan(0);
    for (const key of v6Cells) expect(notRun.get(key)).toBe(IPV6_NOT_RUN);
    expect(IPV6_NOT_RUN).toBe('not run: IPv6 externals are not supported by this layout');
    expect(notRun.has('shop/web>external:edge-e3p0n0@80/TCP')).toBe(false);
    expect(notRun.has('shop/web>shop/api@8080/TCP')).toBe(false);

    const apps = planApps(s, { probe: ['probe'], collector: ['collector'] }, { isolated: true }, () => 'resources.json');
    expect(apps.map((a) => a.pod.id)).not.toContain('external:edge-e0p0n0');
    expect(apps.map((a) => a.pod.id)).toContain('external:edge-e3p0n0');
    const urls = apps.flatMap((a) => [...a.targets.keys()]);
    expect(urls.some((u) => u.includes('2001:db8'))).toBe(false);
    expect(urls).toContain('tcp://198.51.100.1:80');
  });

  it('rule coverage lists the admin-tier rules with the cells that reach them, and says why a rule is dead', () => {
    const s = load(SCENARIO);
    const exp = expectStep(s, s.steps[0]!, plannedAddresses(s.pods));
    const rules = ruleCoverage(exp).filter((r) => r.policy.startsWith('cnp/'));
    const byRule = new Map(rules.map((r) => [`${r.policy} ${r.direction}[${r.rule}]`, r]));
    expect([...byRule.keys()]).toEqual(['cnp/edge egress[0]', 'cnp/edge egress[1]', 'cnp/edge egress[2]', 'cnp/edge egress[3]', 'cnp/nobody egress[0]']);
    const deny = byRule.get('cnp/edge egress[0]')!;
    expect(deny.dead).toBeUndefined();
    expect(deny.cells).toEqual(expect.arrayContaining(['shop/web>external:edge-e0p0n0@80/TCP', 'shop/web>external:edge-e1p0n0@80/TCP']));
    expect(byRule.get('cnp/edge egress[1]')!.dead).toBe(
      'dead: every cell it matches is decided before it (by an earlier rule, or a policy of a lower priority value)',
    );
    expect(byRule.get('cnp/edge egress[2]')!.dead).toBe('dead: its peers match, but no cell is on its ports');
    const lb = byRule.get('cnp/edge egress[3]')!;
    expect(lb.peers.map((p) => p.cells)).toEqual([['shop/web>external:edge-e3p0n0@80/TCP'], ['shop/web>external:edge-e3p1n0@80/TCP']]);
    expect(byRule.get('cnp/nobody egress[0]')!.dead).toMatch(/^dead: the policy selects no pod with an egress cell/);
  });

  it('externals: {auto: false} leaves the admin-tier ones out too', () => {
    const s = load(SCENARIO.replace('policies:\n', 'externals: { auto: false }\npolicies:\n'));
    expect(s.pods.filter((p) => p.external)).toEqual([]);
  });
});

describe('NetworkPolicy rule coverage with externals', () => {
  it('a second ipBlock peer that matches an external behind the first is found on its own, not called dead', () => {
    const s = load(`name: peers
apps:
  - { name: web, namespace: shop, kind: probe, labels: { app: web }, probes: [] }
policies:
  - apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: { name: out, namespace: shop }
    spec:
      podSelector: {}
      policyTypes: [Egress]
      egress: [{ to: [{ ipBlock: { cidr: 192.0.2.0/24 } }, { ipBlock: { cidr: 0.0.0.0/0 } }] }]
steps:
  - { name: one, policies: [shop/out], expect: computed }
`);
    // 0.0.0.0/0 is stood in by the external made for 192.0.2.0/24 (it is inside both).
    expect(s.pods.filter((p) => p.external).map((p) => p.id)).toEqual(['external:out-e0p0']);
    const rule = ruleCoverage(expectStep(s, s.steps[0]!, plannedAddresses(s.pods))).find((r) => r.policy === 'shop/out' && r.direction === 'egress')!;
    expect(rule.cells).toEqual(['shop/web>external:out-e0p0@80/TCP']);
    expect(rule.peers).toEqual([
      { peer: 0, cells: ['shop/web>external:out-e0p0@80/TCP'] },
      { peer: 1, cells: ['shop/web>external:out-e0p0@80/TCP'] },
    ]);
  });
});
