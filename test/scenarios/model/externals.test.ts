// Peers outside the cluster (issue 29, model/externals.ts): `externals:` in a scenario and
// --external, the addresses refused, the automatic externals standing in each ipBlock CIDR and
// except, and `scenario check`/`explain` showing the external:* cells with their reasons.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { addressProblem, parseExternalFlag } from '../../../scenarios/model/externals.ts';
import { coverageAddress, coverageExternals } from '../../../scenarios/model/coverage-externals.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { parseBlock } from '../../../shared/netpol/cidr.ts';
import type { NetworkPolicyObject } from '../../../shared/netpol/types.ts';
import { NODE, removeTempDirs, ROOT, tempDir } from '../../helpers/process.ts';

afterAll(removeTempDirs);

const EXAMPLE = 'examples/externals/scenario.yaml';
const SUBNET = '10.213.0.0/24';

function scenario(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(NODE, ['scenarios/main.ts', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 90_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function egress(name: string, cidr: string, except?: string[], port?: number): NetworkPolicyObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace: 'shop' },
    spec: {
      podSelector: {},
      policyTypes: ['Egress'],
      egress: [{ to: [{ ipBlock: { cidr, ...(except ? { except } : {}) } }], ...(port ? { ports: [{ port }] } : {}) }],
    },
  };
}

function write(text: string): string {
  const file = join(tempDir('starmap-ext-'), 's.yaml');
  writeFileSync(file, text);
  return file;
}

const BASE = `name: ext
apps:
  - { name: web, namespace: shop, kind: probe, probes: [] }
steps:
  - { name: one, expect: computed }
`;
/** BASE with one policy in force in its step. */
const withPolicy = (extra: string, policy: NetworkPolicyObject) =>
  `${BASE.replace('{ name: one, expect: computed }', `{ name: one, policies: [shop/${policy.metadata.name}], expect: computed }`)}${extra}policies:\n  - ${JSON.stringify(policy)}\n`;

describe('externals: the model', () => {
  it('--external name=ADDRESS[:port/proto,...]: ports default to none given (80/TCP later), bad text is named', () => {
    expect(parseExternalFlag('internet=203.0.113.7')).toEqual({ name: 'internet', address: '203.0.113.7' });
    expect(parseExternalFlag('dns=198.51.100.53:53/udp,53/tcp')).toEqual({
      name: 'dns',
      address: '198.51.100.53',
      ports: [
        { port: 53, protocol: 'UDP' },
        { port: 53, protocol: 'TCP' },
      ],
    });
    expect(parseExternalFlag('internet')).toEqual({ error: expect.stringContaining('expected name=ADDRESS[:port/proto,...]') });
    expect(parseExternalFlag('Big=1.2.3.4')).toEqual({ error: expect.stringContaining('lowercase') });
    expect(parseExternalFlag('x=1.2.3.4:70000')).toEqual({ error: expect.stringContaining('"70000" is not port') });
  });

  it('refuses an address inside the pod subnet, loopback, 0/8, multicast, or not IPv4', () => {
    expect(addressProblem('203.0.113.7', SUBNET)).toBeUndefined();
    expect(addressProblem('10.213.0.9', SUBNET)).toMatch(/inside the run's pod subnet 10.213.0.0\/24/);
    expect(addressProblem('127.0.0.2', SUBNET)).toMatch(/loopback/);
    expect(addressProblem('0.1.2.3', SUBNET)).toMatch(/0\/8/);
    expect(addressProblem('239.1.1.1', SUBNET)).toMatch(/multicast/);
    expect(addressProblem('2001:db8::1', SUBNET)).toMatch(/not an IPv4 address/);
  });

  it('a coverage address: a documentation address when the block holds one, else the first usable, never in an except or the pod subnet', () => {
    const b = (t: string) => parseBlock(t)!;
    expect(coverageAddress(b('0.0.0.0/0'), [], SUBNET)).toBe('192.0.2.1');
    expect(coverageAddress(b('0.0.0.0/0'), [b('192.0.2.0/24')], SUBNET)).toBe('198.51.100.1');
    expect(coverageAddress(b('192.0.2.0/24'), [b('192.0.2.0/25')], SUBNET)).toBe('192.0.2.128');
    expect(coverageAddress(b('10.0.0.0/8'), [], SUBNET)).toBe('10.0.0.1');
    expect(coverageAddress(b('10.213.0.0/16'), [b('10.213.1.0/24')], SUBNET)).toBe('10.213.2.0'); // a /16's .0 inside it is a host like any other
    expect(coverageAddress(b('10.213.0.0/24'), [], SUBNET)).toBeUndefined(); // the pod subnet itself: the pods are in it
    expect(coverageAddress(b('203.0.113.9/32'), [], SUBNET)).toBe('203.0.113.9');
  });

  it('automatic externals: one inside each CIDR and each except, serving the rule ports, named after policy and rule; one already inside is reused', () => {
    const made = coverageExternals([egress('allow-out', '192.0.2.0/24', ['192.0.2.0/26', '192.0.2.64/26'], 443)], [], SUBNET);
    expect(made.map((e) => [e.name, e.address, e.ports.map((p) => `${p.port}/${p.protocol}`).join(','), e.covers])).toEqual([
      ['allow-out-e0p0', '192.0.2.128', '443/TCP', 'shop/allow-out /spec/egress/0/to/0/ipBlock/cidr'],
      ['allow-out-e0p0x0', '192.0.2.1', '443/TCP', 'shop/allow-out /spec/egress/0/to/0/ipBlock/except/0'],
      ['allow-out-e0p0x1', '192.0.2.65', '443/TCP', 'shop/allow-out /spec/egress/0/to/0/ipBlock/except/1'],
    ]);
    // A declared external inside the block stands in for it: nothing more is added for that block.
    const declared = [{ name: 'internet', address: '192.0.2.200', ports: [{ name: '', port: 80, protocol: 'TCP' as const }] }];
    expect(coverageExternals([egress('allow-out', '192.0.2.0/24', ['192.0.2.0/26'])], declared, SUBNET).map((e) => e.name)).toEqual(['allow-out-e0p0x0']);
    // Templates name pods, not hosts outside: no external for them.
    expect(coverageExternals([egress('to-pod', '{{ip shop/web}}/32')], [], SUBNET)).toEqual([]);
  });

  it('a scenario: declared and automatic externals are external:<name> pods with cells both ways; auto: false leaves the automatic ones out', () => {
    const s = loadScenario(EXAMPLE);
    const ids = s.pods.filter((p) => p.external).map((p) => [p.id, p.external]);
    expect(ids).toEqual([
      ['external:internet', '203.0.113.10'],
      ['external:web-egress-e1p0', '192.0.2.1'],
      ['external:web-egress-e1p0x0', '192.0.2.129'],
      ['external:api-ingress-i1p0', '198.51.100.1'],
    ]);
    const keys = s.cells.map((c) => c.key);
    expect(keys).toContain('shop/web>external:web-egress-e1p0@80/TCP');
    expect(keys).toContain('external:api-ingress-i1p0>shop/api@9000/TCP');
    expect(keys.some((k) => /^external:[^>]*>external:/.test(k))).toBe(false);

    const off = loadScenario(
      write(withPolicy('externals: { auto: false, hosts: [{ name: internet, address: 203.0.113.10 }] }\n', egress('p', '192.0.2.0/24'))),
    );
    const on = loadScenario(write(withPolicy('externals: [{ name: internet, address: 203.0.113.10 }]\n', egress('p', '192.0.2.0/24'))));
    expect(on.pods.filter((p) => p.external).map((p) => p.id)).toEqual(['external:internet', 'external:p-e0p0']);
    expect(off.pods.filter((p) => p.external).map((p) => p.id)).toEqual(['external:internet']);
    expect(off.cells.map((c) => c.key)).toEqual(['shop/web>external:internet@80/TCP', 'external:internet>shop/web@9000/TCP']);
  });

  it('the evaluator judges external cells by the pods’ ipBlocks only: no policy isolates an external, no selector matches one', () => {
    const s = loadScenario(EXAMPLE);
    const exp = expectStep(s, s.steps[0]!);
    const at = (key: string) => exp.cells.find((c) => c.cell.key === key)!;
    expect(at('shop/web>external:web-egress-e1p0@80/TCP')).toMatchObject({
      computed: true,
      reason: expect.stringContaining('egress allowed by shop/web-egress egress rule 1'),
    });
    expect(at('shop/web>external:web-egress-e1p0x0@80/TCP')).toMatchObject({
      computed: false,
      reason: 'egress isolated by shop/web-egress, no rule allows it',
    });
    expect(at('shop/web>external:internet@443/TCP').computed).toBe(false);
    expect(at('shop/api>external:internet@443/TCP')).toMatchObject({ computed: true, reason: 'egress not isolated; ingress not isolated' });
    expect(at('external:api-ingress-i1p0>shop/api@9000/TCP')).toMatchObject({
      computed: true,
      reason: expect.stringContaining('ingress allowed by shop/api-ingress ingress rule 1'),
    });
    expect(at('external:internet>shop/api@9000/TCP')).toMatchObject({ computed: false, reason: 'ingress isolated by shop/api-ingress, no rule allows it' });
    // `podSelector: {}` in a namespaceSelector-less peer would match a pod of namespace "external": never an external.
    const all = loadScenario(
      write(
        withPolicy('externals: [{ name: internet, address: 203.0.113.10 }]\n', {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: 'from-all-namespaces', namespace: 'shop' },
          spec: { podSelector: {}, ingress: [{ from: [{ namespaceSelector: {} }] }] },
        }),
      ),
    );
    const e2 = expectStep(all, all.steps[0]!);
    expect(e2.cells.find((c) => c.cell.key === 'external:internet>shop/web@9000/TCP')!.computed).toBe(false);
  });

  it('bad externals are refused with exit 2, naming the field', () => {
    const dup = write(`${BASE}externals: [{ name: a, address: 203.0.113.1 }, { name: a, address: 203.0.113.1 }]\n`);
    expect(() => loadScenario(dup)).toThrow(/\/externals\/1\/name( \(line \d+\))?: duplicate external "a"/);
    expect(() => loadScenario(dup)).toThrow(/\/externals\/1\/address( \(line \d+\))?: 203\.0\.113\.1 is also external:a's/);
    expect(() => loadScenario(write(BASE), { externals: [{ name: 'lo', address: '127.0.0.1' }] })).toThrow(
      /--external 1\/address( \(line \d+\))?: 127\.0\.0\.1 is loopback/,
    );
    // The run's own subnet decides what is inside it.
    const lan = write(`${BASE}externals: [{ name: lan, address: 10.214.6.7 }]\n`);
    expect(() => loadScenario(lan)).not.toThrow();
    expect(() => loadScenario(lan, { podSubnet: '10.214.6.0/24' })).toThrow(/10\.214\.6\.7 is inside the run's pod subnet 10\.214\.6\.0\/24/);
    const inSubnet = scenario(['check', write(`${BASE}externals: [{ name: lan, address: 10.213.0.7 }]\n`)]);
    expect(inSubnet.code).toBe(2);
    expect(inSubnet.stderr).toMatch(/\/externals\/0\/address \(line \d+\): 10\.213\.0\.7 is inside the run's pod subnet 10\.213\.0\.0\/24/);
    const flag = scenario(['check', write(BASE), '--external', 'nope']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('--external "nope": expected name=ADDRESS[:port/proto,...]');
  }, 120_000);
});

describe('externals: scenario check and explain', () => {
  it('check: a row and a column for each external, egress allowed inside the CIDR, blocked inside the except, ingress from the ipBlock', () => {
    const r = scenario(['check', EXAMPLE, '--external', 'partner=203.0.113.77:8443']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('external:partner 203.0.113.77 serving 8443/TCP\n');
    expect(r.stdout).toContain(
      'external:web-egress-e1p0x0 192.0.2.129 serving 80/TCP (automatic, inside shop/web-egress /spec/egress/1/to/0/ipBlock/except/0)\n',
    );
    const table = r.stdout.split('\n');
    const header = table.find((l) => l.trim().startsWith('shop/web') && l.includes('external:internet'))!;
    const cols = header.trim().split(/\s+/);
    const rows = table.slice(table.indexOf(header) + 1);
    const row = (name: string) =>
      rows
        .find((l) => l.startsWith(`${name} `))!
        .trim()
        .split(/\s+/)
        .slice(1);
    const cell = (from: string, to: string) => row(from)[cols.indexOf(to)];
    expect(cols).toContain('external:partner');
    expect(cell('shop/web', 'external:web-egress-e1p0')).toBe('.');
    expect(cell('shop/web', 'external:web-egress-e1p0x0')).toBe('X');
    expect(cell('shop/web', 'external:partner')).toBe('X');
    expect(cell('shop/api', 'external:partner')).toBe('.');
    expect(cell('external:api-ingress-i1p0', 'shop/api')).toBe('.');
    expect(cell('external:partner', 'shop/api')).toBe('X');
    expect(cell('external:partner', 'shop/web')).toBe('.');
    expect(cell('external:internet', 'shop/api')).toBe('X');
    expect(cell('external:internet', 'external:partner')).toBe('-');
  }, 120_000);

  it('explain --from external:<name> and --to external:<name>:port/PROTOCOL give the reasons', () => {
    const inbound = scenario(['explain', EXAMPLE, '--step', '1', '--from', 'external:internet', '--to', 'shop/api']);
    expect(inbound.stderr).toBe('');
    expect(inbound.stdout).toContain('external:internet -> shop/api 9000/TCP: blocked');
    const outbound = scenario(['explain', EXAMPLE, '--step', '1', '--from', 'shop/web', '--to', 'external:web-egress-e1p0:80/tcp']);
    expect(outbound.stderr).toBe('');
    expect(outbound.stdout).toContain('shop/web -> external:web-egress-e1p0 80/TCP: allowed');
    expect(outbound.stdout).toMatch(/egress .*allowed by shop\/web-egress egress rule 1/);
  }, 120_000);
});
