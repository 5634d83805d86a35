// One hostile request or stored definition must cost bounded time and memory and get a 4xx in
// Marathon's shape (issue 16): bounded counts, bounded nesting, linear-time constraint patterns,
// path segments that do not decode twice, prototype-free labels, and a start-up that survives
// whatever the database holds.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopAll, tempDir } from './helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from './helpers/orchestrator.ts';
import { waitFor } from './helpers/wait.ts';

const ARGS = ['--local-port-min=12700', '--local-port-max=12800', '--task-port-min=40200', '--task-port-max=40399'];
let o: StartedOrchestrator;
beforeAll(async () => {
  o = await startOrchestrator(ARGS);
}, 30_000);
afterAll(async () => {
  await o?.proc.stop('SIGTERM');
  await stopAll();
});

const nested = (depth: number, inner: string, wrap: (s: string) => string) => {
  let s = inner;
  for (let i = 0; i < depth; i++) s = wrap(s);
  return s;
};

describe('bounded counts (422 Object is not valid, with paths)', () => {
  it('refuses instances beyond the limit, in an app and through scaleBy', async () => {
    const r = await o.call('POST', '/v2/apps', { id: '/big', cmd: 'sleep 1000', instances: 1e9 });
    expect(r.status).toBe(422);
    expect(r.body).toEqual({ message: 'Object is not valid', details: [{ path: '/instances', errors: ['got 1000000000, expected 10000 or less'] }] });
    expect(
      (
        await o.call('PUT', '/v2/groups/scale', {
          apps: [
            { id: 'one', cmd: 'sleep 1000', instances: 0 },
            { id: 'two', cmd: 'sleep 1000', instances: 1 },
          ],
        })
      ).status,
    ).toBe(200);
    const s = await o.call('PUT', '/v2/groups/scale?force=true', { scaleBy: 1e12 });
    expect(s.status).toBe(422);
    expect(s.body.details[0].path).toBe('/instances');
    expect(s.body.details[0].errors[0]).toMatch(/^\/scale\/two would have 1000000000000 instances, expected 10000 or less$/);
    expect((await o.call('GET', '/v2/apps/scale/two')).body.app.instances).toBe(1);
  });

  it('refuses too many ports, labels, constraints and health checks', async () => {
    const labels = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`k${i}`, 'v']));
    const r = await o.call('POST', '/v2/apps', {
      id: '/many',
      cmd: 'sleep 1',
      instances: 0,
      labels,
      portDefinitions: Array.from({ length: 101 }, () => ({ port: 0 })),
      constraints: Array.from({ length: 33 }, () => ['hostname', 'UNIQUE']),
      healthChecks: Array.from({ length: 17 }, () => ({ protocol: 'TCP', portIndex: 0 })),
    });
    expect(r.status).toBe(422);
    const byPath = Object.fromEntries((r.body.details as any[]).map((d) => [d.path, d.errors]));
    expect(byPath['/labels']).toEqual(['has size 257, expected 256 or less']);
    expect(byPath['/portDefinitions']).toEqual(['has size 101, expected 100 or less']);
    expect(byPath['/constraints']).toEqual(['has size 33, expected 32 or less']);
    expect(byPath['/healthChecks']).toEqual(['has size 17, expected 16 or less']);
  });
});

describe('bounded nesting and hostile paths (4xx, never 500)', () => {
  it('refuses a 10,000-deep secrets object and 3,000-deep groups with 400 Invalid JSON', async () => {
    const secrets = `{"id":"/deep","cmd":"sleep 1","secrets":${nested(10_000, '1', (s) => `{"a":${s}}`)}}`;
    const r = await o.call('POST', '/v2/apps', secrets);
    expect(r.status).toBe(400);
    expect(r.body.message).toBe('Invalid JSON');
    expect(r.body.details).toMatch(/nested too deep/);
    const groups = nested(3_000, '{"id":"g"}', (s) => `{"id":"g","groups":[${s}]}`);
    const g = await o.call('PUT', '/v2/groups/deep', groups);
    expect(g.status).toBe(400);
    expect(g.body.message).toBe('Invalid JSON');
    const ids = await o.call('POST', '/v2/apps', { id: '/a'.repeat(3_000), cmd: 'sleep 1' });
    expect(ids.status).toBe(422);
    expect(ids.body.details[0].path).toBe('/id');
  });

  it('answers 404 to %25 in a task id or a group version, 400 to non-string task ids', async () => {
    expect((await o.call('POST', '/v2/apps', { id: '/pct', cmd: 'sleep 1000', instances: 0 })).status).toBe(201);
    const t = await o.call('DELETE', '/v2/apps/pct/tasks/%25');
    expect(t.status).toBe(404);
    expect(t.body).toEqual({ message: "Task '%' does not exist" });
    const v = await o.call('GET', '/v2/groups/scale/versions/%25');
    expect(v.status).toBe(404);
    const d = await o.call('POST', '/v2/tasks/delete', { ids: [{ toString: 1 }, 'x'] });
    expect(d.status).toBe(400);
    expect(d.body).toEqual({ message: 'Invalid JSON', details: [{ path: '/ids(0)', errors: ['error.expected.jsstring'] }] });
  });
});

describe('constraint patterns', () => {
  it('matches LIKE in linear time: a catastrophic pattern answers at once and places nothing', async () => {
    const r = await o.call('POST', '/v2/apps', { id: '/redos', cmd: 'sleep 1000', instances: 1, constraints: [['hostname', 'LIKE', '(.*.*)*X']] });
    expect(r.status).toBe(201);
    const ok = await o.call('POST', '/v2/apps', { id: '/like', cmd: 'sleep 1000', instances: 1, constraints: [['hostname', 'LIKE', '127\\.0\\.0\\.[0-9]+']] });
    expect(ok.status).toBe(201);
    await waitFor(async () => (await o.call('GET', '/v2/apps/like')).body.app.tasksRunning === 1, { timeoutMs: 15_000, message: 'the LIKE app runs' });
    expect((await o.call('GET', '/v2/apps/redos')).body.app.tasks).toEqual([]);
    expect((await o.call('GET', '/ping')).status).toBe(200);
  });

  it('refuses what cannot match in linear time (backreferences, lookaround) with the reason', async () => {
    const r = await o.call('POST', '/v2/apps', {
      id: '/backref',
      cmd: 'sleep 1',
      constraints: [
        ['hostname', 'LIKE', '(a)\\1'],
        ['hostname', 'UNLIKE', '(?=x)'],
      ],
    });
    expect(r.status).toBe(422);
    expect(r.body.details.map((d: any) => d.path)).toEqual(['/constraints(0)', '/constraints(1)']);
    expect(r.body.details[0].errors[0]).toMatch(/is not a valid regular expression .*linear time/);
  });
});

describe('labels in prototype-free maps', () => {
  it('keeps a __proto__ label across updates and selectors on inherited names match nothing', async () => {
    const body = '{"id":"/proto","cmd":"sleep 1000","instances":0,"labels":{"__proto__":"kept","constructor":"mine"}}';
    expect((await o.call('POST', '/v2/apps', body)).status).toBe(201);
    expect((await o.call('PUT', '/v2/apps/proto?force=true', { instances: 0, env: { X: '1' } })).status).toBe(200);
    const app = (await o.call('GET', '/v2/apps/proto')).body.app;
    expect(app.labels).toEqual(JSON.parse('{"__proto__":"kept","constructor":"mine"}'));
    const ids = async (sel: string) => ((await o.call('GET', `/v2/apps?label=${encodeURIComponent(sel)}`)).body.apps as any[]).map((a) => a.id);
    expect(await ids('constructor')).toEqual(['/proto']);
    expect(await ids('toString')).toEqual([]);
    expect(await ids('hasOwnProperty')).toEqual([]);
    expect(await ids('__proto__==kept')).toEqual(['/proto']);
    expect(await ids('constructor!=x')).toEqual(['/proto']);
  });
});

describe('start-up survives whatever the database holds', () => {
  it('starts with an unhonourable and an unreadable definition; those apps fail visibly, the others run', async () => {
    const dataDir = tempDir('orch-poison-');
    const first = await startOrchestrator(ARGS, { dataDir });
    expect((await first.call('POST', '/v2/apps', { id: '/good', cmd: 'sleep 1000', instances: 1 })).status).toBe(201);
    expect((await first.call('POST', '/v2/apps', { id: '/huge', cmd: 'sleep 1000', instances: 0, constraints: [['hostname', 'LIKE', '.*']] })).status).toBe(
      201,
    );
    await first.proc.stop('SIGTERM');
    // What an older version could have stored: a billion instances and a pattern RE2 refuses; and a broken row.
    const db = new DatabaseSync(join(dataDir, 'state.db'));
    const row = db.prepare('SELECT json FROM orch_apps WHERE id = ?').get('/huge') as { json: string };
    const huge = JSON.parse(row.json);
    db.prepare('UPDATE orch_apps SET json = ? WHERE id = ?').run(
      JSON.stringify({ ...huge, instances: 1e9, constraints: [['hostname', 'LIKE', '(a)\\1']] }),
      '/huge',
    );
    db.prepare('INSERT INTO orch_apps (id, json) VALUES (?, ?)').run('/broken', '{"id": "/broken", "cmd": ');
    db.close();

    const again = await startOrchestrator(ARGS, { dataDir });
    await waitFor(async () => (await again.call('GET', '/v2/apps/good')).body.app.tasksRunning === 1, {
      timeoutMs: 15_000,
      message: '/good runs after the restart',
    });
    const bad = (await again.call('GET', '/v2/apps/huge')).body.app;
    expect(bad.instances).toBe(1e9);
    expect(bad.tasks).toEqual([]);
    const failure = await waitFor(async () => (await again.call('GET', '/v2/apps/huge')).body.app.lastTaskFailure);
    expect(failure.state).toBe('TASK_ERROR');
    expect(failure.message).toMatch(/cannot be honoured: .*\/instances got 1000000000, expected 10000 or less/);
    expect(failure.message).toMatch(/\/constraints\(0\)/);
    // The app can be fixed with an ordinary update (a partial update is validated whole: both fixes at once).
    expect((await again.call('PUT', '/v2/apps/huge?force=true', { instances: 1, constraints: [] })).status).toBe(200);
    await waitFor(async () => (await again.call('GET', '/v2/apps/huge')).body.app.tasksRunning === 1, { timeoutMs: 15_000, message: 'the fixed app runs' });
    expect((await again.call('GET', '/v2/apps/broken')).status).toBe(404);
    expect(again.proc.output()).toMatch(/stored row cannot be read/);
    await again.proc.stop('SIGTERM');
  }, 90_000);
});
