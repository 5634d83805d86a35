// The admin-tier endpoints without touching the machine (a recording target stands in for the
// namespaces, as in cluster-api.test.ts): ClusterNetworkPolicy and the v1alpha1 kinds as resources
// of their own and in POST /v2/starmap/changes, validated as the API server would (422 naming the
// field), rendered into the tasks' rulesets, and kept across a restart (a second engine on the same
// database). Real packets: tiers-netns.test.ts.
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

function task(taskId: string, ip: string, labels: Record<string, string>): TaskNetInfo {
  return { taskId, appId: `/e2e/${labels['starmap.namespace']}/${taskId}`, labels, groups: [], ip, netns: `ns-${taskId}`, ports: [] };
}

const TASKS = () => [task('xa', '10.213.0.2', { 'starmap.namespace': 'x', pod: 'a' }), task('ya', '10.213.0.4', { 'starmap.namespace': 'y', pod: 'a' })];

const cnp = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name },
  spec: {
    tier: 'Admin',
    priority: 10,
    subject: { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'y' } } },
    ingress: [{ name: 'deny-x', action: 'Deny', from: [{ namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'x' } } }] }],
    ...spec,
  },
});

const dirs: string[] = [];
const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(dir?: string) {
  const applied: { netns: string; text: string }[] = [];
  const target: RulesetTarget = { gateway: GW, applyRuleset: async (netns, text) => void applied.push({ netns, text }) };
  const db = dir ? new DatabaseSync(join(dir, 'state.db')) : undefined;
  const engine = new PolicyEngine({ target, listTasks: TASKS, ...(db ? { db } : {}) });
  const app = Fastify();
  void app.register(policyPlugin, { engine });
  apps.push(app);
  const call = async (method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: unknown) => {
    const res = await app.inject({ method, url, ...(payload !== undefined ? { payload: payload as object } : {}) });
    return { status: res.statusCode, body: res.body ? res.json() : undefined };
  };
  const ruleset = (taskId: string) => applied.filter((a) => a.netns === `ns-${taskId}`).at(-1)?.text ?? '';
  return { engine, call, ruleset, db };
}

describe('admin-tier policies at /v2/starmap/clusternetworkpolicies/{name} and their v1alpha1 siblings', () => {
  it('creates, reads, lists, replaces and deletes them; the subject gets the rules, a Deny as a drop', async () => {
    const { call, ruleset } = setup();
    let r = await call('PUT', `${P}/clusternetworkpolicies/deny-x`, cnp('deny-x'));
    expect(r.status).toBe(201);
    expect(r.body.metadata.name).toBe('deny-x');
    expect(ruleset('ya')).toMatch(/ip saddr \{ 10\.213\.0\.2 \} meta mark set 0x[0-9a-f]{8} goto ingress_drop comment "Admin cnp\/deny-x ingress rule 0"/);
    expect(ruleset('ya')).not.toContain('reject');
    expect(ruleset('xa')).toContain('policy accept;');
    // apiVersion and kind may be left out; the name comes from the path.
    const { apiVersion: _a, kind: _k, metadata: _m, ...rest } = cnp('deny-x', { priority: 20 });
    r = await call('PUT', `${P}/clusternetworkpolicies/deny-x`, rest);
    expect(r.status).toBe(200);
    expect(r.body.spec.priority).toBe(20);
    expect((await call('GET', `${P}/clusternetworkpolicies/deny-x`)).body.spec.priority).toBe(20);
    const banp = {
      metadata: { name: 'default' },
      spec: { subject: { namespaces: {} }, egress: [{ name: 'all', action: 'Deny', to: [{ namespaces: {} }] }] },
    };
    expect((await call('PUT', `${P}/baselineadminnetworkpolicies/default`, banp)).status).toBe(201);
    expect(ruleset('xa')).toContain('comment "Baseline banp/default egress rule 0"');
    expect((await call('GET', `${P}/clusternetworkpolicies`)).body.items.map((d: { metadata: { name: string } }) => d.metadata.name)).toEqual(['deny-x']);
    expect((await call('GET', `${P}/baselineadminnetworkpolicies`)).body.items).toHaveLength(1);
    const network = (await call('GET', `${P}/network`)).body as { tasks: { taskId: string; ingress: { admin?: { origin: string; action: string }[] } }[] };
    expect(network.tasks.find((t) => t.taskId === 'ya')!.ingress.admin).toEqual([
      expect.objectContaining({ origin: 'Admin cnp/deny-x ingress rule 0', action: 'Deny' }),
    ]);
    expect((await call('DELETE', `${P}/clusternetworkpolicies/deny-x`)).body).toEqual({ id: 'cnp/deny-x', deleted: true });
    expect((await call('GET', `${P}/clusternetworkpolicies/deny-x`)).status).toBe(404);
    expect((await call('DELETE', `${P}/clusternetworkpolicies/deny-x`)).status).toBe(404);
    expect(ruleset('ya')).not.toContain('cnp/deny-x');
  });

  it('refuses what the API server refuses, naming the field, and a body that disagrees with the path', async () => {
    const { call, engine } = setup();
    const bad = async (url: string, body: unknown) => {
      const r = await call('PUT', url, body);
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      return (r.body.details as { path: string }[]).map((d) => d.path);
    };
    expect(await bad(`${P}/clusternetworkpolicies/p`, cnp('p', { priority: 1001 }))).toEqual(['/spec/priority']);
    expect(await bad(`${P}/clusternetworkpolicies/p`, cnp('other'))).toEqual(['/metadata/name']);
    expect(await bad(`${P}/clusternetworkpolicies/p`, { ...cnp('p'), kind: 'AdminNetworkPolicy' })).toEqual(['/kind']);
    expect(await bad(`${P}/clusternetworkpolicies/p`, cnp('p', { ingress: [{ action: 'Allow', from: [{ namespaces: {} }] }] }))).toEqual([
      '/spec/ingress/0/action',
    ]);
    expect(await bad(`${P}/clusternetworkpolicies/Bad_Name`, cnp('Bad_Name'))).toEqual(['/metadata/name']);
    const r = await call('POST', `${P}/changes`, { clusterPolicies: { put: [cnp('ok'), cnp('p', { tier: 'Middle' })], delete: ['np/x', 'cnp/ok'] } });
    expect(r.status).toBe(422);
    expect((r.body.details as { path: string }[]).map((d) => d.path)).toEqual(['/clusterPolicies/put/1/spec/tier', '/clusterPolicies/delete/0']);
    expect(engine.clusterPolicies()).toEqual([]);
  });

  it('takes them in POST /v2/starmap/changes beside NetworkPolicies, atomically, and keeps them across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'starmap-cnp-'));
    dirs.push(dir);
    const first = setup(dir);
    const r = await first.call('POST', `${P}/changes`, {
      policies: {
        put: [
          { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'open', namespace: 'y' }, spec: { podSelector: {}, ingress: [{}] } },
        ],
      },
      clusterPolicies: { put: [cnp('deny-x')] },
    });
    expect(r.status).toBe(200);
    expect(first.ruleset('ya')).toContain('goto ingress_policies');
    expect(first.ruleset('ya')).toContain('chain ingress_policies {');
    expect((await first.call('POST', `${P}/changes`, { clusterPolicies: { delete: ['cnp/gone'] } })).body.notFound).toEqual(['cnp/gone']);
    first
      .db!.prepare('INSERT INTO isolation_cluster_policies (id, doc, updated_at) VALUES (?, ?, ?)')
      .run('cnp/poison', '{"kind":"ClusterNetworkPolicy"}', 'now');
    first.db!.close();
    const logs: string[] = [];
    const db = new DatabaseSync(join(dir, 'state.db'));
    const engine = new PolicyEngine({ target: { gateway: GW, applyRuleset: async () => undefined }, listTasks: TASKS, db, log: (m) => logs.push(m) });
    expect(engine.clusterPolicies().map((p) => p.policy.id)).toEqual(['cnp/deny-x']);
    expect(engine.rules().find((t) => t.taskId === 'ya')!.ingress.admin?.[0]?.origin).toBe('Admin cnp/deny-x ingress rule 0');
    expect(logs).toEqual([expect.stringContaining('cnp/poison')]);
    db.close();
  });

  it('answers every admin-tier path with a 4xx or 2xx, never a 500, whatever the body', async () => {
    const { call } = setup();
    const bodies: unknown[] = [
      null,
      0,
      'x',
      [],
      {},
      { metadata: [] },
      { spec: null },
      { spec: { subject: null } },
      { metadata: { name: 'a'.repeat(100_000) } },
    ];
    for (const base of ['clusternetworkpolicies', 'adminnetworkpolicies', 'baselineadminnetworkpolicies']) {
      expect(STARMAP_PATHS).toContain(`${P}/${base}/*`);
      for (const body of bodies) expect((await call('PUT', `${P}/${base}/p`, body)).status, `${base} ${JSON.stringify(body)?.slice(0, 60)}`).toBeLessThan(500);
      expect((await call('POST', `${P}/changes`, { clusterPolicies: { put: bodies } })).status).toBe(422);
    }
  });
});
