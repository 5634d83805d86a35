// The NetworkPolicy, namespace, pod-label, changes, network and drops endpoints without touching the
// machine: a recording target stands in for the namespaces (test/orchestrator/isolation/netpol-netns.test.ts applies
// the same rulesets to real ones). Persistence is checked by opening a second engine on the same
// database, as a restart would.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { PolicyEngine, type RulesetTarget } from '../../../orchestrator/isolation/policy-engine.ts';
import { policyPlugin, STARMAP_PATHS } from '../../../orchestrator/isolation/policy-routes.ts';
import type { TaskNetInfo } from '../../../orchestrator/isolation/policy.ts';

const GW = '10.213.0.1';
const P = '/v2/starmap';

function task(taskId: string, ip: string, labels: Record<string, string>, ports: TaskNetInfo['ports'] = []): TaskNetInfo {
  return { taskId, appId: `/e2e/${labels['starmap.namespace'] ?? 'default'}/${taskId}`, labels, groups: [], ip, netns: `ns-${taskId}`, ports };
}

function netpol(namespace: string, name: string, spec: unknown): Record<string, unknown> {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec };
}

const dirs: string[] = [];
const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(tasks: TaskNetInfo[], dir?: string, drops?: string) {
  const applied: { netns: string; text: string }[] = [];
  const target: RulesetTarget = {
    gateway: GW,
    applyRuleset: async (netns, text) => void applied.push({ netns, text }),
    listRuleset: async () => drops ?? '{"nftables": []}',
  };
  const db = dir ? new DatabaseSync(join(dir, 'state.db')) : undefined;
  const engine = new PolicyEngine({ target, listTasks: () => tasks, ...(db ? { db } : {}) });
  const app = Fastify();
  void app.register(policyPlugin, { engine });
  apps.push(app);
  const call = async (method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: unknown) => {
    const res = await app.inject({ method, url, ...(payload !== undefined ? { payload: payload as object } : {}) });
    return { status: res.statusCode, body: res.body ? res.json() : undefined, enforcement: res.headers['starmap-enforcement'] };
  };
  /** The latest ruleset applied to a task's namespace. */
  const ruleset = (taskId: string) => applied.filter((a) => a.netns === `ns-${taskId}`).at(-1)?.text ?? '';
  return { engine, app, call, applied, ruleset, db };
}

const TASKS = () => [
  task('xa', '10.213.0.2', { 'starmap.namespace': 'x', 'starmap.scenario': 's', pod: 'a' }, [{ name: 'serve-80-tcp', port: 80, protocol: 'TCP' }]),
  task('xb', '10.213.0.3', { 'starmap.namespace': 'x', pod: 'b' }),
  task('ya', '10.213.0.4', { 'starmap.namespace': 'y', pod: 'a' }),
];

describe('NetworkPolicy objects at /v2/starmap/policies/{namespace}/{name}', () => {
  it('creates, reads, lists beside dialect policies, replaces and deletes them', async () => {
    const { call, ruleset } = setup(TASKS());
    const doc = netpol('x', 'deny', { podSelector: { matchLabels: { pod: 'a' } } });
    let r = await call('PUT', `${P}/policies/x/deny`, doc);
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ ...doc, spec: { podSelector: { matchLabels: { pod: 'a' } }, policyTypes: ['Ingress'] } });
    expect(r.enforcement).toBe('applied=3 unchanged=0 failed=0');
    expect(ruleset('xa')).toContain('policy drop;');
    // Missing parts come from the path; a body without apiVersion/kind is taken as a NetworkPolicy there.
    r = await call('PUT', `${P}/policies/x/deny`, { spec: { podSelector: {}, policyTypes: ['Egress'] } });
    expect(r.status).toBe(200);
    expect(r.body.metadata).toEqual({ name: 'deny', namespace: 'x' });
    expect(ruleset('xb')).toMatch(/chain output \{\n {4}type filter hook output priority 0; policy drop;/);
    expect((await call('POST', `${P}/policies`, { id: 'dialect-1', selector: {}, ingress: [{}] })).status).toBe(201);
    expect((await call('POST', `${P}/policies`, netpol('y', 'open', { podSelector: {}, ingress: [{}] }))).status).toBe(201);
    expect((await call('POST', `${P}/policies`, netpol('y', 'open', { podSelector: {} }))).status).toBe(409);
    const list = (await call('GET', `${P}/policies`)).body.policies as { id?: string; metadata?: { namespace: string; name: string } }[];
    expect(list.map((p) => p.id ?? `${p.metadata!.namespace}/${p.metadata!.name}`)).toEqual(['dialect-1', 'x/deny', 'y/open']);
    expect((await call('GET', `${P}/policies/y/open`)).body.metadata.name).toBe('open');
    expect((await call('GET', `${P}/policies/x%2Fdeny`)).status).toBe(200);
    expect(await call('DELETE', `${P}/policies/y/open`)).toMatchObject({ status: 200, body: { id: 'y/open', deleted: true } });
    expect(await call('GET', `${P}/policies/y/open`)).toMatchObject({ status: 404, body: { message: "Policy 'y/open' does not exist" } });
    expect((await call('DELETE', `${P}/policies/y/open`)).status).toBe(404);
  });

  it('refuses what the Kubernetes API server refuses, with paths, and metadata that disagrees with the path', async () => {
    const { call } = setup([]);
    let r = await call(
      'PUT',
      `${P}/policies/x/p`,
      netpol('x', 'p', {
        podSelector: { matchExpressions: [{ key: 'a', operator: 'Equals', values: ['b'] }] },
        ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }], ports: [{ port: 0 }] }],
      }),
    );
    expect(r.status).toBe(422);
    expect(r.body).toEqual({
      message: 'Object is not valid',
      details: [
        { path: '/spec/podSelector/matchExpressions/0/operator', errors: [expect.stringContaining('not a valid selector operator')] },
        { path: '/spec/ingress/0/ports/0/port', errors: ['Invalid value: 0: must be between 1 and 65535, inclusive'] },
        { path: '/spec/ingress/0/from/0/ipBlock/cidr', errors: [expect.stringContaining('must be a valid CIDR value')] },
      ],
    });
    r = await call('PUT', `${P}/policies/x/p`, netpol('y', 'q', {}));
    expect(r.body.details).toEqual([
      { path: '/metadata/name', errors: ['does not match the name in the path (p)'] },
      { path: '/metadata/namespace', errors: ['does not match the namespace in the path (x)'] },
    ]);
    expect((await call('PUT', `${P}/policies/Bad_NS/p`, netpol('Bad_NS', 'p', {}))).body.details[0].path).toBe('/metadata/namespace');
    expect((await call('PUT', `${P}/policies/one-segment`, netpol('x', 'p', {}))).body.details[0]).toEqual({
      path: '/kind',
      errors: [expect.stringContaining(`${P}/policies/x/p`)],
    });
    expect((await call('PUT', `${P}/policies/x/p`, [1])).status).toBe(422);
  });
});

describe('namespaces and pod labels', () => {
  it('lists namespaces implied by tasks, stores labels (metadata.name forced), deletes them', async () => {
    const { call, ruleset } = setup(TASKS());
    expect((await call('GET', `${P}/namespaces`)).body).toEqual({
      namespaces: [
        { name: 'x', labels: { 'kubernetes.io/metadata.name': 'x' } },
        { name: 'y', labels: { 'kubernetes.io/metadata.name': 'y' } },
      ],
    });
    // y/a accepts only from namespaces labelled team=blue.
    await call(
      'PUT',
      `${P}/policies/y/from-blue`,
      netpol('y', 'from-blue', { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'blue' } } }] }] }),
    );
    expect(ruleset('ya')).not.toContain('10.213.0.2');
    const r = await call('PUT', `${P}/namespaces/x`, { labels: { team: 'blue', 'kubernetes.io/metadata.name': 'other' } });
    expect(r).toMatchObject({
      status: 201,
      body: { name: 'x', labels: { team: 'blue', 'kubernetes.io/metadata.name': 'x' } },
      enforcement: 'applied=1 unchanged=2 failed=0',
    });
    expect(ruleset('ya')).toContain('ip saddr { 10.213.0.2, 10.213.0.3 } accept comment "y/from-blue ingress 0"');
    expect((await call('PUT', `${P}/namespaces/x`, { labels: { team: 'blue' } })).status).toBe(200);
    expect((await call('GET', `${P}/namespaces/x`)).body).toEqual({ name: 'x', labels: { team: 'blue', 'kubernetes.io/metadata.name': 'x' } });
    expect((await call('PUT', `${P}/namespaces/new-one`, { labels: {} })).status).toBe(201);
    expect((await call('GET', `${P}/namespaces`)).body.namespaces.map((n: { name: string }) => n.name)).toEqual(['new-one', 'x', 'y']);
    expect(await call('DELETE', `${P}/namespaces/x`)).toMatchObject({ status: 200, body: { name: 'x', deleted: true } });
    expect(ruleset('ya')).not.toContain('10.213.0.2');
    expect((await call('DELETE', `${P}/namespaces/x`)).status).toBe(404);
    expect((await call('GET', `${P}/namespaces/nowhere`)).status).toBe(404);
    expect((await call('PUT', `${P}/namespaces/Bad_Name`, { labels: {} })).body.details).toEqual([
      { path: '/name', errors: [expect.stringContaining('RFC 1123 label')] },
    ]);
    expect((await call('PUT', `${P}/namespaces/x`, { labels: { 'a b': 'c', d: 3 }, extra: 1 })).body.details).toEqual([
      { path: '/extra', errors: ['unknown field (expected: labels)'] },
    ]);
    expect((await call('PUT', `${P}/namespaces/x`, { labels: { 'a b': 'c', d: 3 } })).body.details).toEqual([
      { path: '/labels/a b', errors: [expect.stringContaining('name part must consist')] },
      { path: '/labels/d', errors: ['must be a string'] },
    ]);
  });

  it('replaces a pod’s labels at once (no restart) and reverts them', async () => {
    const { call, ruleset, engine } = setup(TASKS());
    await call(
      'PUT',
      `${P}/policies/x/only-b`,
      netpol('x', 'only-b', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }] }] }),
    );
    expect(ruleset('xa')).toContain('ip saddr { 10.213.0.3 } accept');
    expect((await call('GET', `${P}/pods/x/xa/labels`)).body).toEqual({ namespace: 'x', pod: 'xa', labels: { pod: 'a' }, replaced: false });
    // x/b loses pod=b: nobody may reach x/a any more.
    let r = await call('PUT', `${P}/pods/x/xb/labels`, { labels: { pod: 'other' } });
    expect(r).toMatchObject({ status: 201, body: { namespace: 'x', pod: 'xb', labels: { pod: 'other' }, tasks: ['xb'] } });
    expect(ruleset('xa')).not.toContain('10.213.0.3');
    expect((await call('GET', `${P}/pods`)).body.pods.find((p: { pod: string }) => p.pod === 'xb')).toMatchObject({
      labels: { pod: 'other' },
      replaced: true,
      tasks: [{ taskId: 'xb', ip: '10.213.0.3' }],
    });
    // x/a stops being selected: open again.
    r = await call('PUT', `${P}/pods/x/xa/labels`, { labels: {} });
    expect(ruleset('xa')).toMatch(
      /chain input \{\n {4}type filter hook input priority 0; policy accept;\n {4}ct state established,related accept comment "[^"]*"\n {2}\}/,
    );
    expect(engine.pods().find((p) => p.taskId === 'xa')!.labels).toEqual({});
    expect((await call('DELETE', `${P}/pods/x/xa/labels`)).status).toBe(200);
    expect((await call('DELETE', `${P}/pods/x/xb/labels`)).body).toEqual({ namespace: 'x', pod: 'xb', deleted: true });
    expect(ruleset('xa')).toContain('ip saddr { 10.213.0.3 } accept');
    expect((await call('DELETE', `${P}/pods/x/xb/labels`)).status).toBe(404);
    expect((await call('GET', `${P}/pods/x/nobody/labels`)).status).toBe(404);
    expect((await call('PUT', `${P}/pods/x/Bad_Pod/labels`, { labels: {} })).status).toBe(422);
  });
});

describe('POST /v2/starmap/changes', () => {
  it('validates the whole change first (prefixed paths) and applies nothing when any part is wrong', async () => {
    const { call, applied, engine } = setup(TASKS());
    const r = await call('POST', `${P}/changes`, {
      policies: {
        put: [
          netpol('x', 'ok', { podSelector: {} }),
          netpol('x', 'bad', { podSelector: {}, ingress: [{ ports: [{ port: 'Not_A_Name' }] }] }),
          { id: 'dialect', selector: {}, ingress: 'x' },
          netpol('x', 'ok', {}),
        ],
        delete: ['BAD ID', 7],
      },
      namespaces: { UPPER: { labels: {} }, y: { labels: { ok: 'yes' }, more: 1 } },
      podLabels: { nopod: { labels: {} }, 'x/a': { labels: { k: 'v v' } } },
      extra: true,
    });
    expect(r.status).toBe(422);
    expect(r.body.details.map((d: { path: string }) => d.path)).toEqual([
      '/extra',
      '/policies/put/1/spec/ingress/0/ports/0/port',
      '/policies/put/2/ingress',
      '/policies/put/3',
      '/policies/delete/0',
      '/policies/delete/1',
      '/namespaces/UPPER',
      '/namespaces/y/more',
      '/podLabels/nopod',
      '/podLabels/x~1a/labels/k',
    ]);
    expect(applied).toEqual([]);
    expect(engine.list()).toEqual([]);
  });

  it('applies policies, namespace labels and pod labels in one sync (one nft transaction per namespace)', async () => {
    const { call, applied, engine } = setup(TASKS());
    await call('POST', `${P}/policies`, { id: 'old', selector: {}, ingress: [{}] });
    applied.length = 0;
    const r = await call('POST', `${P}/changes`, {
      policies: {
        put: [
          netpol('x', 'deny-all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }),
          netpol('y', 'from-x', { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'x' } } }] }] }),
        ],
        delete: ['old', 'x/never-existed'],
      },
      namespaces: { x: { labels: { team: 'x' } }, z: null },
      podLabels: { 'x/xa': { labels: { pod: 'a2' } } },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ applied: 3, unchanged: 0, failed: [], appliedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), notFound: ['x/never-existed'] });
    expect(applied.map((a) => a.netns).sort()).toEqual(['ns-xa', 'ns-xb', 'ns-ya']);
    expect(engine.list().map((p) => ('id' in p ? p.id : `${p.metadata.namespace}/${p.metadata.name}`))).toEqual(['x/deny-all', 'y/from-x']);
    expect(engine.storedNamespace('x')).toEqual({ team: 'x' });
    expect(engine.podLabels('x/xa')).toEqual({ pod: 'a2' });
    // The same change again changes nothing.
    expect(
      (await call('POST', `${P}/changes`, { policies: { put: [netpol('x', 'deny-all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] })] } })).body,
    ).toMatchObject({ applied: 0, unchanged: 3 });
    expect((await call('POST', `${P}/changes`, {})).body).toMatchObject({ applied: 0, unchanged: 3, notFound: [] });
  });
});

describe('network, drops, persistence and bad input', () => {
  it('shows the rules in force both ways per task', async () => {
    const { call } = setup(TASKS());
    await call(
      'PUT',
      `${P}/policies/x/p`,
      netpol('x', 'p', {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }], ports: [{ port: 'serve-80-tcp' }] }],
        egress: [{ to: [{ ipBlock: { cidr: '10.213.0.0/24', except: ['10.213.0.4/32'] } }], ports: [{ port: 53, endPort: 54, protocol: 'UDP' }] }],
      }),
    );
    const net = (await call('GET', `${P}/network`)).body;
    expect(net.gateway).toBe(GW);
    const xa = net.tasks.find((t: { taskId: string }) => t.taskId === 'xa');
    expect(xa).toMatchObject({
      namespace: 'x',
      pod: 'xa',
      ip: '10.213.0.2',
      labels: { pod: 'a' },
      ports: [{ name: 'serve-80-tcp', port: 80, protocol: 'TCP' }],
      restricted: true,
    });
    expect(xa.ingress).toEqual({
      isolated: true,
      rules: [{ origin: 'x/p ingress 0', peer: { pods: ['x/xb'], ips: ['10.213.0.3'] }, ports: [{ protocol: 'TCP', port: 80 }] }],
    });
    expect(xa.egress).toEqual({
      isolated: true,
      rules: [
        {
          origin: 'x/p egress 0',
          peer: { ipBlock: { cidr: '10.213.0.0/24', except: ['10.213.0.4/32'] } },
          ports: [{ protocol: 'UDP', port: 53, endPort: 54 }],
        },
      ],
    });
    expect(net.tasks.find((t: { taskId: string }) => t.taskId === 'ya')).toMatchObject({
      restricted: false,
      ingress: { isolated: false, rules: [] },
      egress: { isolated: false, rules: [] },
    });
  });

  it('reports drops per side with the pods behind the addresses', async () => {
    const drops = JSON.stringify({
      nftables: [
        { set: { name: 'egress_drops', elem: [{ elem: { val: { concat: ['10.213.0.3', 'tcp', 80] }, counter: { packets: 2 } } }] } },
        { set: { name: 'ingress_drops', elem: [{ elem: { val: { concat: ['10.213.0.99', 'udp', 81] }, counter: { packets: 1 } } }] } },
      ],
    });
    const { call } = setup(TASKS(), undefined, drops);
    const body = (await call('GET', `${P}/drops`)).body;
    expect(body.tasks[0]).toEqual({
      taskId: 'xa',
      namespace: 'x',
      pod: 'xa',
      ip: '10.213.0.2',
      // Elements without a drop site's tag (a ruleset of an older version): no policies to name.
      egress: [{ to: '10.213.0.3', pod: 'x/xb', port: 80, protocol: 'TCP', packets: 2, policies: null }],
      ingress: [{ from: '10.213.0.99', port: 81, protocol: 'UDP', packets: 1, policies: null }],
    });
  });

  it('keeps NetworkPolicies, namespace labels and pod labels across a restart, skipping rows that no longer validate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'starmap-np-'));
    dirs.push(dir);
    const first = setup(TASKS(), dir);
    await first.call('POST', `${P}/changes`, {
      policies: { put: [netpol('x', 'p', { podSelector: {} }), { id: 'd', selector: {}, ingress: [] }] },
      namespaces: { x: { labels: { a: 'b' } } },
      podLabels: { 'x/xa': { labels: { c: 'd' } } },
    });
    first
      .db!.prepare('INSERT INTO isolation_policies (id, doc, updated_at) VALUES (?, ?, ?)')
      .run('x/poison', JSON.stringify({ kind: 'NetworkPolicy', metadata: { name: 'poison' } }), 'now');
    first.db!.prepare('INSERT INTO isolation_namespaces (name, labels, updated_at) VALUES (?, ?, ?)').run('broken', '[1]', 'now');
    first.db!.close();
    const logs: string[] = [];
    const db = new DatabaseSync(join(dir, 'state.db'));
    const engine = new PolicyEngine({ target: { gateway: GW, applyRuleset: async () => undefined }, listTasks: () => [], db, log: (m) => logs.push(m) });
    expect(engine.list().map((p) => ('id' in p ? p.id : `${p.metadata.namespace}/${p.metadata.name}`))).toEqual(['d', 'x/p']);
    expect(engine.storedNamespace('x')).toEqual({ a: 'b' });
    expect(engine.podLabels('x/xa')).toEqual({ c: 'd' });
    expect(logs).toEqual([expect.stringContaining('x/poison'), expect.stringContaining('broken')]);
    db.close();
  });

  it('answers every extension path with a 4xx or 2xx, never a 500, whatever the body', async () => {
    const { app } = setup(TASKS());
    const bodies: unknown[] = [
      null,
      0,
      'x',
      [],
      [null],
      {},
      { labels: null },
      { policies: [] },
      { policies: { put: [null, 1, 'x', []] } },
      { namespaces: [] },
      { podLabels: { '/': null } },
      { metadata: [] },
      { spec: { ingress: [{ from: [{ ipBlock: null }] }] } },
      { kind: 'NetworkPolicy', metadata: { name: 'a'.repeat(100_000) } },
    ];
    const urls = [
      `${P}/policies`,
      `${P}/policies/x`,
      `${P}/policies/x/y`,
      `${P}/namespaces/x`,
      `${P}/pods/x/y/labels`,
      `${P}/changes`,
      `${P}/network`,
      `${P}/drops`,
      `${P}/namespaces`,
      `${P}/pods`,
    ];
    for (const url of urls) {
      for (const method of ['GET', 'PUT', 'POST', 'DELETE'] as const) {
        for (const body of method === 'GET' || method === 'DELETE' ? [undefined] : bodies) {
          const res = await app.inject({
            method,
            url,
            ...(body !== undefined ? { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
          });
          expect(res.statusCode, `${method} ${url} ${JSON.stringify(body)?.slice(0, 80)}`).toBeLessThan(500);
        }
      }
    }
    expect(STARMAP_PATHS).toContain(`${P}/changes`);
  });
});
