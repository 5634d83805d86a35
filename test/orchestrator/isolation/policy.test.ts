// The policy model, IPAM, names, the policy engine and the /v2/starmap/policies endpoint, without
// touching the machine: a recording target stands in for the namespaces (the root tests in
// test/orchestrator/isolation/netns.test.ts apply the same rulesets to real ones).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import yargs from 'yargs';
import { isolationOptions, prefixFlag, subnetFlag } from '../../../orchestrator/isolation/flags.ts';
import { Ipam, parseSubnet } from '../../../orchestrator/isolation/ipam.ts';
import { checkPrefix, namesFor, ownedName } from '../../../orchestrator/isolation/names.ts';
import { allows, computeRules, renderRuleset, validatePolicy, type NetworkPolicy, type TaskNetInfo } from '../../../orchestrator/isolation/policy.ts';
import { PolicyEngine, type RulesetTarget } from '../../../orchestrator/isolation/policy-engine.ts';
import { policyPlugin, POLICY_PATH } from '../../../orchestrator/isolation/policy-routes.ts';
import { policyId } from '../../../orchestrator/isolation/policy-store.ts';

const GW = '10.213.0.1';
const task = (taskId: string, ip: string, labels: Record<string, string> = {}, groups: string[] = []): TaskNetInfo => ({
  taskId,
  appId: `/${taskId}`,
  labels,
  groups,
  ip,
  netns: `ns-${taskId}`,
});

function ok(body: unknown, id?: string): NetworkPolicy {
  const v = validatePolicy(body, id);
  if ('errors' in v) throw new Error(JSON.stringify(v.errors));
  return v.policy;
}

describe('subnets, addresses and names', () => {
  it('parses private subnets and refuses others with a reason', () => {
    expect(parseSubnet('10.213.0.0/24').cidr).toBe('10.213.0.0/24');
    expect(() => parseSubnet('10.213.0.5/24')).toThrow(/host bits must be zero \(did you mean 10\.213\.0\.0\/24\?\)/);
    expect(() => parseSubnet('8.8.8.0/24')).toThrow(/private range/);
    expect(() => parseSubnet('10.0.0.0/8')).toThrow(/between 16 and 29/);
    expect(() => parseSubnet('nope')).toThrow(/a\.b\.c\.d\/len/);
  });

  it('allocates distinct addresses after the gateway, reuses late, releases and restores', () => {
    const ipam = new Ipam(parseSubnet('10.213.0.0/29'));
    expect(ipam.gateway).toBe('10.213.0.1');
    const got = ['a', 'b', 'c', 'd', 'e'].map((t) => ipam.allocate(t).ip);
    expect(got).toEqual(['10.213.0.2', '10.213.0.3', '10.213.0.4', '10.213.0.5', '10.213.0.6']);
    expect(ipam.allocate('a').ip).toBe('10.213.0.2');
    expect(() => ipam.allocate('f')).toThrow(/no free address/);
    ipam.release('c');
    expect(ipam.allocate('f').ip).toBe('10.213.0.4');
    const again = new Ipam(parseSubnet('10.213.0.0/29'));
    again.restore(ipam.all());
    expect(again.get('f')).toEqual({ taskId: 'f', ip: '10.213.0.4', index: 4 });
  });

  it('derives every name from the prefix, within the interface name limit', () => {
    const n = namesFor('smap');
    expect([n.bridge, n.netns(2), n.hostVeth(253), n.peerVeth(65533), n.guardTable]).toEqual(['smap-br', 'smap-t2', 'smap-v253', 'smap-p65533', 'smap_guard']);
    expect(namesFor('abcdef').hostVeth(9_999_999).length).toBeLessThanOrEqual(15);
    expect(() => checkPrefix('Bad-')).toThrow(/invalid isolation prefix/);
    expect(ownedName('sm', 'sm-t2')).toBe(true);
    expect(ownedName('sm', 'sm2-t2')).toBe(false);
  });
});

describe('isolation flags', () => {
  it('have defaults and name the flag in errors', async () => {
    const parse = (argv: string[]) => isolationOptions(yargs(argv).exitProcess(false).strict()).parseAsync();
    expect(await parse([])).toMatchObject({ isolation: 'off', netnsSubnet: '10.213.0.0/24', netnsPrefix: 'smap' });
    expect(await parse(['--isolation=netns', '--netns_subnet=10.77.0.0/16', '--netns-prefix=sm2'])).toMatchObject({
      isolation: 'netns',
      netnsSubnet: '10.77.0.0/16',
      netnsPrefix: 'sm2',
    });
    expect(() => subnetFlag('netns-subnet')('1.2.3.0/24')).toThrow(/^invalid value for --netns-subnet: .*private range/);
    expect(() => prefixFlag('netns-prefix')('Bad')).toThrow(/^invalid value for --netns-prefix: "Bad"/);
  });
});

describe('policy validation', () => {
  it('accepts the documented shape and normalises it', () => {
    expect(
      ok({ id: 'p1', selector: { matchLabels: { role: 'db' } }, ingress: [{ from: [{ labels: { role: 'api' } }, { group: 'g' }], ports: [{ port: 5432 }] }] }),
    ).toEqual({
      id: 'p1',
      selector: { labels: { role: 'db' } },
      ingress: [{ from: [{ labels: { role: 'api' } }, { group: 'g' }], ports: [{ port: 5432, protocol: 'tcp' }] }],
    });
    expect(ok({ selector: {}, ingress: [] }, 'from-path').id).toBe('from-path');
  });

  it('names every problem with its path', () => {
    const v = validatePolicy({
      id: 'x y',
      selector: { labels: { role: 3 } },
      ingress: [
        {
          from: [{}],
          ports: [
            { port: 70000, protocol: 'sctp' },
            { port: 80, protocol: 'udp', endPort: 10 },
          ],
        },
        'nope',
      ],
      extra: 1,
    });
    expect('errors' in v && v.errors).toEqual([
      { path: '/extra', errors: [expect.stringContaining('unknown property')] },
      { path: '/id', errors: [expect.stringContaining('letters, digits')] },
      { path: '/selector/labels/role', errors: ['label value must be a string'] },
      { path: '/ingress/0/from/0', errors: [expect.stringContaining('labels and/or group')] },
      { path: '/ingress/0/ports/0/port', errors: ['must be an integer from 1 to 65535'] },
      { path: '/ingress/0/ports/1/endPort', errors: ['must be an integer from port to 65535'] },
      { path: '/ingress/1', errors: ['must be an object'] },
    ]);
    expect(validatePolicy('x')).toEqual({ errors: [{ path: '/', errors: ['must be a JSON object'] }] });
    expect(validatePolicy({ id: 'a', selector: {}, ingress: [] }, 'b')).toEqual({
      errors: [{ path: '/id', errors: ['does not match the id in the path (b)'] }],
    });
    expect(validatePolicy({ id: 'a' })).toEqual({
      errors: [
        { path: '/selector', errors: [expect.stringContaining('is required')] },
        { path: '/ingress', errors: [expect.stringContaining('is required')] },
      ],
    });
  });
});

describe('policy evaluation (Kubernetes ingress semantics + network groups)', () => {
  const fe = task('fe', '10.213.0.2', { role: 'frontend' });
  const be = task('be', '10.213.0.3', { role: 'backend' });
  const cl = task('cl', '10.213.0.4', { role: 'client' });
  const ui = task('ui', '10.213.0.5', { role: 'ui' });
  const rulesOf = (tasks: TaskNetInfo[], policies: NetworkPolicy[], id: string) => computeRules(tasks, policies, GW).find((r) => r.taskId === id)!;

  it('tasks selected by no policy are open; a selecting policy with no rules denies all but the host', () => {
    const all = [fe, be, cl];
    expect(rulesOf(all, [], 'be').restricted).toBe(false);
    const deny = ok({ id: 'deny', selector: { labels: { role: 'backend' } }, ingress: [] });
    const r = rulesOf(all, [deny], 'be');
    expect(allows(r, fe.ip, 80, 'tcp')).toBe(false);
    expect(allows(r, GW, 80, 'tcp')).toBe(true);
    expect(rulesOf(all, [deny], 'fe').restricted).toBe(false);
  });

  it('rules allow from peers on ports; policies add up', () => {
    const all = [fe, be, cl, ui];
    const p1 = ok({ id: 'p1', selector: { labels: { role: 'backend' } }, ingress: [{ from: [{ labels: { role: 'frontend' } }], ports: [{ port: 6379 }] }] });
    const p2 = ok({ id: 'p2', selector: { labels: { role: 'backend' } }, ingress: [{ from: [{ labels: { role: 'ui' } }] }] });
    const r = rulesOf(all, [p1, p2], 'be');
    expect(allows(r, fe.ip, 6379, 'tcp')).toBe(true);
    expect(allows(r, fe.ip, 6379, 'udp')).toBe(false);
    expect(allows(r, fe.ip, 80, 'tcp')).toBe(false);
    expect(allows(r, cl.ip, 6379, 'tcp')).toBe(false);
    expect(allows(r, ui.ip, 1, 'udp')).toBe(true);
    // No `from`: from anywhere, on the given ports.
    const p3 = ok({ id: 'p3', selector: {}, ingress: [{ ports: [{ port: 9000, endPort: 9001 }] }] });
    const r3 = rulesOf(all, [p3], 'cl');
    expect(allows(r3, fe.ip, 9001, 'tcp')).toBe(true);
    expect(allows(r3, fe.ip, 9002, 'tcp')).toBe(false);
  });

  it('network groups restrict sources on their own and together with policies', () => {
    const a = task('a', '10.213.0.10', { role: 'x' }, ['g1']);
    const b = task('b', '10.213.0.11', { role: 'y' }, ['g1', 'g2']);
    const c = task('c', '10.213.0.12', { role: 'y' }, ['g2']);
    const d = task('d', '10.213.0.13', { role: 'y' });
    const all = [a, b, c, d];
    const ra = rulesOf(all, [], 'a');
    expect([b, c, d].map((t) => allows(ra, t.ip, 1, 'tcp'))).toEqual([true, false, false]);
    expect(rulesOf(all, [], 'd').restricted).toBe(false);
    const fromY = ok({ id: 'y', selector: { labels: { role: 'x' } }, ingress: [{ from: [{ labels: { role: 'y' } }] }] });
    const both = rulesOf(all, [fromY], 'a');
    expect([b, c, d].map((t) => allows(both, t.ip, 1, 'tcp'))).toEqual([true, false, false]);
    const byGroup = ok({ id: 'g', selector: { labels: { role: 'y' } }, ingress: [{ from: [{ group: 'g2' }] }] });
    const rd = rulesOf(all, [byGroup], 'd');
    expect([a, b, c].map((t) => allows(rd, t.ip, 1, 'tcp'))).toEqual([false, true, true]);
  });

  it('renders one atomic nftables transaction per namespace', () => {
    const p = ok({
      id: 'p',
      selector: { labels: { role: 'backend' } },
      ingress: [{ from: [{ labels: { role: 'frontend' } }], ports: [{ port: 80 }, { port: 53, protocol: 'udp' }] }],
    });
    const text = renderRuleset(rulesOf([fe, be], [p], 'be'));
    // Declared (no-op when present), flushed and filled again in one transaction: the drop
    // counters survive a change of rules.
    expect(text).toBe(
      [
        'table inet starmap {',
        '  set ingress_drops { type ipv4_addr . inet_proto . inet_service . mark; flags dynamic,timeout; timeout 10m; size 16384; counter; }',
        '  set egress_drops { type ipv4_addr . inet_proto . inet_service . mark; flags dynamic,timeout; timeout 10m; size 16384; counter; }',
        '  chain input { type filter hook input priority 0; policy accept; }',
        '  chain output { type filter hook output priority 0; policy accept; }',
        '  chain ingress_drop { }',
        '  chain egress_drop { }',
        '}',
        'flush chain inet starmap input',
        'flush chain inet starmap ingress_drop',
        'flush chain inet starmap output',
        'flush chain inet starmap egress_drop',
        'table inet starmap {',
        '  chain input {',
        '    type filter hook input priority 0; policy drop;',
        '    iif "lo" accept',
        '    ct state established ct direction reply accept',
        '    ct state related accept',
        '    ip saddr 10.213.0.1 accept comment "the host = the node: orchestrator and health checks"',
        // The rule's ports of both protocols as one set, so its addresses are written once.
        '    ip saddr { 10.213.0.2 } meta l4proto . th dport { tcp . 80, udp . 53 } accept comment "policy p ingress 0"',
        // Marked with the drop site's tag (the side and its isolating policies), then counted.
        '    meta mark set 0x7ab3cf58 goto ingress_drop',
        '  }',
        '  chain output {',
        '    type filter hook output priority 0; policy accept;',
        // Reads conntrack, so the kernel tracks connections from the task's first packet.
        '    ct state established,related accept comment "conntrack from the first packet, so that each connection has its true direction"',
        '  }',
        '  chain ingress_drop {',
        '    meta l4proto { tcp, udp, sctp } update @ingress_drops { ip saddr . meta l4proto . th dport . meta mark }',
        '    drop',
        '  }',
        '  chain egress_drop {',
        '    meta l4proto { tcp, udp, sctp } update @egress_drops { ip daddr . meta l4proto . th dport . meta mark }',
        '    drop',
        '  }',
        '}',
        '',
      ].join('\n'),
    );
    expect(renderRuleset(rulesOf([fe, be], [], 'be'))).toContain('policy accept;');
  });
});

describe('policy engine and the /v2/starmap/policies endpoint', () => {
  const dirs: string[] = [];
  const apps: FastifyInstance[] = [];
  afterEach(async () => {
    for (const a of apps.splice(0)) await a.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  function setup(tasks: TaskNetInfo[], dbDir?: string) {
    const applied: { netns: string; text: string }[] = [];
    const target: RulesetTarget = {
      gateway: GW,
      applyRuleset: async (netns, text) => {
        if (netns === 'ns-broken') throw new Error('nft: no such namespace');
        applied.push({ netns, text });
      },
    };
    const db = dbDir ? new DatabaseSync(join(dbDir, 'state.db')) : undefined;
    const engine = new PolicyEngine({ target, listTasks: () => tasks, ...(db ? { db } : {}) });
    const app = Fastify();
    void app.register(policyPlugin, { engine });
    apps.push(app);
    return { engine, app, applied, db };
  }

  it('creates, lists, replaces, reads and deletes policies, applying rules on each change', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'starmap-iso-'));
    dirs.push(dir);
    const tasks = [task('fe', '10.213.0.2', { role: 'frontend' }), task('be', '10.213.0.3', { role: 'backend' })];
    const { app, applied, db } = setup(tasks, dir);
    const doc = { selector: { labels: { role: 'backend' } }, ingress: [] };
    let res = await app.inject({ method: 'PUT', url: `${POLICY_PATH}/deny`, payload: doc });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ id: 'deny', ...doc });
    expect(res.headers['starmap-enforcement']).toBe('applied=2 unchanged=0 failed=0');
    expect(applied.find((a) => a.netns === 'ns-be')!.text).toContain('policy drop;');
    res = await app.inject({ method: 'PUT', url: `${POLICY_PATH}/deny`, payload: { ...doc, ingress: [{}] } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['starmap-enforcement']).toBe('applied=1 unchanged=1 failed=0');
    res = await app.inject({ method: 'POST', url: POLICY_PATH, payload: { id: 'deny', ...doc } });
    expect(res.statusCode).toBe(409);
    res = await app.inject({ method: 'POST', url: POLICY_PATH, payload: { id: 'other', selector: {}, ingress: [{}] } });
    expect(res.statusCode).toBe(201);
    res = await app.inject({ method: 'GET', url: POLICY_PATH });
    expect(res.json<{ policies: { id: string }[] }>().policies.map((p) => p.id)).toEqual(['deny', 'other']);
    expect((await app.inject({ method: 'GET', url: `${POLICY_PATH}/deny` })).json()).toMatchObject({ id: 'deny', ingress: [{}] });
    db!.close();

    // A new engine on the same database has the policies back.
    const again = setup(tasks, dir);
    expect(again.engine.list().map(policyId)).toEqual(['deny', 'other']);
    res = await again.app.inject({ method: 'DELETE', url: `${POLICY_PATH}/deny` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: 'deny', deleted: true });
    expect((await again.app.inject({ method: 'DELETE', url: `${POLICY_PATH}/deny` })).statusCode).toBe(404);
    again.db!.close();
  });

  it('answers bad input with Marathon-shaped 4xx errors', async () => {
    const { app } = setup([]);
    let res = await app.inject({ method: 'PUT', url: `${POLICY_PATH}/p`, payload: { selector: { labels: [] }, ingress: {} } });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      message: 'Object is not valid',
      details: [
        { path: '/selector/labels', errors: ['must be an object of label names to values'] },
        { path: '/ingress', errors: ['must be an array'] },
      ],
    });
    res = await app.inject({ method: 'PUT', url: `${POLICY_PATH}/bad%20id`, payload: { selector: {}, ingress: [] } });
    expect(res.statusCode).toBe(422);
    res = await app.inject({ method: 'GET', url: `${POLICY_PATH}/missing` });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ message: "Policy 'missing' does not exist" });
    res = await app.inject({ method: 'POST', url: POLICY_PATH, headers: { 'content-type': 'application/json' }, payload: '' });
    expect(res.statusCode).toBe(400);
  });

  it('reports namespaces where rules could not be applied, and retries them on the next sync', async () => {
    const tasks = [task('ok', '10.213.0.2', { r: 'x' }), { ...task('broken', '10.213.0.3', { r: 'x' }), netns: 'ns-broken' }];
    const { engine } = setup(tasks);
    const r = await engine.put(ok({ id: 'p', selector: {}, ingress: [] }));
    expect(r.sync.applied).toEqual(['ok']);
    expect(r.sync.failed).toEqual([{ taskId: 'broken', error: 'nft: no such namespace' }]);
    const again = await engine.sync();
    expect(again).toEqual({ applied: [], unchanged: ['ok'], failed: [{ taskId: 'broken', error: 'nft: no such namespace' }] });
  });

  it('concurrent syncs each cover every change made before them, and identical rulesets are applied once', async () => {
    const tasks: TaskNetInfo[] = [task('a', '10.213.0.2')];
    let calls = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const engine = new PolicyEngine({
      target: { gateway: GW, applyRuleset: async () => (calls++, gate) },
      listTasks: () => tasks,
    });
    const first = engine.sync();
    tasks.push(task('b', '10.213.0.3'));
    const second = engine.sync();
    const third = engine.sync();
    release();
    const [, s2, s3] = await Promise.all([first, second, third]);
    expect(calls).toBe(2); // a, then b (a unchanged on the second pass)
    expect(s2).toEqual({ applied: ['b'], unchanged: ['a'], failed: [] });
    // The third asked for what the second had asked for: unchanged, and answered once it is in force.
    expect(s3).toEqual({ applied: [], unchanged: ['a', 'b'], failed: [] });
  });
});
