// /v2/groups end to end with real tasks: nested groups and dependencies (steps and the order tasks
// really start in), unchanged apps left alone, changed apps restarted, removed apps stopped,
// scaleBy, rollback to a version, dry runs, force over a deployment that never finishes, readiness
// checks holding a deployment, and the 4xx answers.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopAll, tempDir } from '../../helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { waitFor } from '../../helpers/wait.ts';
import { openSse, type SseFrame } from '../../orchestrator-events-sse-client.ts';

let o: StartedOrchestrator;
beforeAll(async () => {
  o = await startOrchestrator(['--task-port-min=38000', '--task-port-max=38999']);
}, 30_000);
afterAll(async () => {
  await o?.proc.stop('SIGTERM');
  await stopAll();
});

const sleeper = (id: string, extra: Record<string, unknown> = {}) => ({ id, cmd: 'exec sleep 1000', cpus: 0.1, mem: 16, ...extra });
const tasksOf = async (id: string): Promise<any[]> => (await o.call('GET', `/v2/apps${id}/tasks`)).body.tasks;
const idle = (id: string) =>
  waitFor(async () => ((await o.call('GET', '/v2/deployments')).body as any[]).every((d) => d.id !== id), {
    timeoutMs: 30_000,
    message: `deployment ${id} finished`,
  });
const running = (appId: string, n: number) =>
  waitFor(
    async () => {
      const ts = await tasksOf(appId);
      return ts.length === n && ts.every((t) => t.state === 'TASK_RUNNING') ? ts : undefined;
    },
    { timeoutMs: 30_000, message: `${appId}: ${n} running` },
  );
const actions = (steps: any[]) => steps.map((s) => s.actions.map((a: any) => `${a.action} ${a.app}`).sort());

const shop = {
  id: '/shop',
  groups: [
    { id: 'db', apps: [sleeper('mongo')] },
    { id: 'svc', dependencies: ['../db'], apps: [sleeper('api', { instances: 2 }), sleeper('web', { dependencies: ['api'] })] },
  ],
};

describe('/v2/groups', () => {
  it('plans a nested group in dependency order (group dependencies inherited) and starts the tasks in that order', async () => {
    const dry = await o.call('PUT', '/v2/groups/shop?dryRun=true', shop);
    expect(dry.status).toBe(200);
    expect(actions(dry.body.steps)).toEqual([
      ['StartApplication /shop/db/mongo', 'StartApplication /shop/svc/api', 'StartApplication /shop/svc/web'],
      ['ScaleApplication /shop/db/mongo'],
      ['ScaleApplication /shop/svc/api'],
      ['ScaleApplication /shop/svc/web'],
    ]);
    // Marathon 1.4 answers `action`, older clients read `type`: both keys carry the action.
    expect(dry.body.steps[1].actions[0]).toEqual({ action: 'ScaleApplication', type: 'ScaleApplication', app: '/shop/db/mongo' });
    expect((await o.call('GET', '/v2/groups/shop')).status).toBe(404); // the dry run changed nothing

    const r = await o.call('POST', '/v2/groups', shop);
    expect(r.status).toBe(201);
    expect(r.headers.get('location')).toBe('/v2/groups/shop');
    expect(r.body).toEqual({ version: expect.any(String), deploymentId: expect.any(String) });
    await idle(r.body.deploymentId);
    const [mongo] = await running('/shop/db/mongo', 1);
    const api = await running('/shop/svc/api', 2);
    const [web] = await running('/shop/svc/web', 1);
    // Each layer is launched only once the layer it depends on runs.
    for (const t of api) expect(t.stagedAt >= mongo.startedAt).toBe(true);
    expect(
      web.stagedAt >=
        api
          .map((t) => t.startedAt)
          .sort()
          .at(-1),
    ).toBe(true);

    const tree = (await o.call('GET', '/v2/groups')).body;
    expect(tree.id).toBe('/');
    const shopTree = tree.groups.find((g: any) => g.id === '/shop');
    expect(shopTree).toMatchObject({ id: '/shop', version: r.body.version, apps: [], dependencies: [] });
    expect(shopTree.groups.map((g: any) => [g.id, g.dependencies, g.apps.map((a: any) => a.id)])).toEqual([
      ['/shop/db', [], ['/shop/db/mongo']],
      ['/shop/svc', ['/shop/db'], ['/shop/svc/api', '/shop/svc/web']],
    ]);
    const svc = (await o.call('GET', '/v2/groups/shop/svc')).body;
    expect(svc.apps.find((a: any) => a.id === '/shop/svc/web').dependencies).toEqual(['/shop/svc/api']);
    expect(svc.apps[0].tasks).toBeUndefined(); // apps in groups are bare unless group.apps.* asks
    const embedded = (await o.call('GET', '/v2/groups/shop/svc?embed=group.apps&embed=group.apps.tasks')).body;
    expect(embedded.groups).toBeUndefined();
    expect(embedded.apps.find((a: any) => a.id === '/shop/svc/api').tasks).toHaveLength(2);
    expect((await o.call('GET', '/v2/groups/shop/versions')).body).toEqual([r.body.version]);
    // What GET answers, sent back as it is (version included), changes nothing, for a group and the root.
    expect((await o.call('PUT', '/v2/groups/shop?dryRun=true', (await o.call('GET', '/v2/groups/shop')).body)).body).toEqual({ steps: [] });
    expect((await o.call('PUT', '/v2/groups?dryRun=true', (await o.call('GET', '/v2/groups')).body)).body).toEqual({ steps: [] });
  });

  it('leaves unchanged apps alone, restarts a changed one, stops a removed one', async () => {
    const before = new Map((await Promise.all(['/shop/db/mongo', '/shop/svc/api'].map(tasksOf))).flat().map((t) => [t.id, t.appId]));
    const same = await o.call('PUT', '/v2/groups/shop/db', { apps: [sleeper('mongo')] });
    expect(same.status).toBe(200);
    await idle(same.body.deploymentId);
    const next = { apps: [sleeper('api', { instances: 2, env: { MODE: 'v2' } })] }; // web dropped, api changed
    const dry = await o.call('PUT', '/v2/groups/shop/svc?dryRun=true', next);
    expect(actions(dry.body.steps)).toEqual([['StopApplication /shop/svc/web'], ['RestartApplication /shop/svc/api']]);
    const r = await o.call('PUT', '/v2/groups/shop/svc', next);
    expect(r.status).toBe(200);
    await idle(r.body.deploymentId);
    const [mongo] = await running('/shop/db/mongo', 1);
    expect(before.get(mongo.id)).toBe('/shop/db/mongo'); // same task: not restarted
    const api = await running('/shop/svc/api', 2);
    for (const t of api) expect(before.has(t.id)).toBe(false); // new tasks
    expect((await o.call('GET', '/v2/apps/shop/svc/web')).status).toBe(404);
    expect((await o.call('GET', '/v2/apps/shop/svc/api')).body.app.env).toEqual({ MODE: 'v2' });
  });

  it('scales by a factor (rounding up) and rolls back to an earlier version', async () => {
    const v1 = (await o.call('GET', '/v2/groups/shop')).body.version;
    const r = await o.call('PUT', '/v2/groups/shop', { scaleBy: 1.5 });
    expect(r.status).toBe(200);
    await idle(r.body.deploymentId);
    await running('/shop/db/mongo', 2); // ceil(1 × 1.5)
    await running('/shop/svc/api', 3); // ceil(2 × 1.5)
    const versions = (await o.call('GET', '/v2/groups/shop/versions')).body as string[];
    expect(versions[0]).toBe(r.body.version);
    expect((await o.call('GET', `/v2/groups/shop/versions/${r.body.version}`)).body.groups[0].apps[0].instances).toBe(2);

    const back = await o.call('PUT', '/v2/groups/shop', { version: versions.at(-1) });
    expect(back.status).toBe(200);
    await idle(back.body.deploymentId);
    await running('/shop/db/mongo', 1);
    await running('/shop/svc/api', 2);
    await running('/shop/svc/web', 1); // the first version had web
    expect((await o.call('GET', '/v2/apps/shop/svc/api')).body.app.env).toEqual({});
    expect(v1).not.toBe(back.body.version);
    const unknown = await o.call('PUT', '/v2/groups/shop', { version: '2001-01-01T00:00:00.000Z' });
    expect(unknown.status).toBe(422);
    expect(unknown.body.message).toContain('does not exist in version');
  });

  it('refuses cycles, ids that are not children, malformed ids, clashes and existing groups with clear 4xx', async () => {
    const cyc = await o.call('POST', '/v2/groups', { id: '/cyc', apps: [sleeper('a', { dependencies: ['b'] }), sleeper('b', { dependencies: ['../cyc/a'] })] });
    expect(cyc.status).toBe(422);
    expect(cyc.body).toEqual({ message: 'Object is not valid', details: [{ path: '/', errors: ['Dependency graph has cyclic dependencies.'] }] });
    const viaGroups = await o.call('POST', '/v2/groups', {
      id: '/cyc2',
      groups: [
        { id: 'x', dependencies: ['../y'], apps: [sleeper('a')] },
        { id: 'y', dependencies: ['../x'], apps: [sleeper('b')] },
      ],
    });
    expect(viaGroups.status).toBe(422);
    expect((await o.call('GET', '/v2/groups/cyc')).status).toBe(404);

    const notChild = await o.call('PUT', '/v2/groups/shop', { apps: [sleeper('/elsewhere/x')] });
    expect(notChild.status).toBe(422);
    expect(notChild.body.details).toEqual([{ path: '/apps(0)/id', errors: ['Identifier is not child of /shop. Hint: use relative paths.'] }]);
    const badId = await o.call('POST', '/v2/groups', { id: '/Bad_Id' });
    expect(badId.status).toBe(422);
    expect(badId.body.details[0].path).toBe('/id');
    const badApp = await o.call('POST', '/v2/groups', { id: '/g1', apps: [{ id: 'x', cmd: 'sleep 1', instances: 'many' }] });
    expect(badApp.status).toBe(400);
    expect(badApp.body.details).toEqual([{ path: '/apps(0)/instances', errors: ['error.expected.jsnumber'] }]);
    const badType = await o.call('PUT', '/v2/groups/g1', { apps: {} });
    expect(badType.status).toBe(400);

    expect((await o.call('POST', '/v2/groups', { id: '/shop' })).body).toEqual({ message: 'Group /shop is already created. Use PUT to change this group.' });
    const appThere = await o.call('POST', '/v2/groups', { id: '/shop/db/mongo' });
    expect([appThere.status, appThere.body.message]).toEqual([409, 'An app with the path /shop/db/mongo already exists.']);
    const clash = await o.call('PUT', '/v2/groups/shop/db/mongo', {});
    expect(clash.status).toBe(422);
    expect((await o.call('GET', '/v2/groups/nope')).body).toEqual({ message: "Group '/nope' does not exist" });
    expect((await o.call('DELETE', '/v2/groups/nope')).status).toBe(404);
    expect((await o.call('GET', '/v2/groups/shop/versions/2001-01-01T00:00:00.000Z')).status).toBe(404);
  });

  it('resolves `.` and `..` in app, group and dependency ids as Marathon does; an id that climbs to the root is refused, never stored raw', async () => {
    const noElement = { message: 'Object is not valid', details: [{ path: '/id', errors: ['Path must contain at least one path element'] }] };
    for (const id of ['/a/../..', '/a/..', '..']) {
      const up = await o.call('POST', '/v2/apps', sleeper(id, { instances: 0 }));
      expect(up.status, id).toBe(422);
      expect(up.body, id).toEqual(noElement);
    }
    expect(((await o.call('GET', '/v2/apps')).body.apps as any[]).filter((a) => a.id.includes('..') || a.id.startsWith('//'))).toEqual([]);
    // `..` at the root stays at the root (PathId.canonicalPath); `.` is dropped; dependencies too.
    const dots = await o.call('POST', '/v2/apps', sleeper('/../dots/./x/../app', { instances: 0, dependencies: ['../../../dots/./db', '/dots/x/..'] }));
    expect(dots.status).toBe(201);
    expect(dots.body.id).toBe('/dots/app');
    expect(dots.body.dependencies).toEqual(['/dots/db', '/dots']);
    expect((await o.call('GET', '/v2/apps/dots/app')).body.app.id).toBe('/dots/app');
    // Through /v2/apps a relative dependency resolves against the app's own id (Marathon's
    // AppDefinition.withCanonizedIds); in a group update, against the group (below).
    const relative = await o.call('POST', '/v2/apps', sleeper('/dots/web', { instances: 0, dependencies: ['../db', '../../top'] }));
    expect(relative.status, JSON.stringify(relative.body)).toBe(201);
    expect(relative.body.dependencies).toEqual(['/dots/db', '/top']);
    await o.call('DELETE', '/v2/apps/dots/web?force=true');

    const nested = await o.call('POST', '/v2/groups', { id: '/up', groups: [{ id: '../..', apps: [sleeper('a')] }] });
    expect(nested.status).toBe(422);
    expect(nested.body.details).toEqual([{ path: '/groups(0)/id', errors: ['Identifier is not child of /up. Hint: use relative paths.'] }]);
    const app = await o.call('POST', '/v2/groups', { id: '/up', apps: [sleeper('../..')] });
    expect(app.status).toBe(422);
    expect(app.body.details).toEqual([{ path: '/apps(0)/id', errors: ['Path must contain at least one path element'] }]);
    const climb = await o.call('POST', '/v2/groups', {
      id: '/up/../../up2/.',
      dependencies: ['../../../dots'],
      apps: [sleeper('./x/../a', { instances: 0, dependencies: ['../../../dots/app'] })],
    });
    expect(climb.status).toBe(201);
    const up2 = (await o.call('GET', '/v2/groups/up2')).body;
    expect(up2.id).toBe('/up2');
    expect(up2.dependencies).toEqual(['/dots']);
    expect(up2.apps.map((a: any) => [a.id, a.dependencies])).toEqual([['/up2/a', ['/dots/app']]]);
    expect((await o.call('GET', '/v2/groups/up')).status).toBe(404);
    await o.call('DELETE', '/v2/groups/up2?force=true');
    await o.call('DELETE', '/v2/apps/dots/app?force=true');
  });

  it('keeps a deployment whose new app never becomes healthy running; force replaces it with a fixed definition', async () => {
    const sick = {
      id: '/sick',
      apps: [
        sleeper('app', {
          portDefinitions: [{ port: 0 }],
          healthChecks: [{ protocol: 'TCP', portIndex: 0, intervalSeconds: 1, gracePeriodSeconds: 1, maxConsecutiveFailures: 0 }],
        }),
      ],
    };
    const r = await o.call('POST', '/v2/groups', sick);
    expect(r.status).toBe(201);
    await waitFor(async () => ((await o.call('GET', '/v2/deployments')).body as any[]).find((d) => d.id === r.body.deploymentId)?.currentStep === 2, {
      timeoutMs: 10_000,
      message: 'stuck at the scale step',
    });
    const locked = await o.call('PUT', '/v2/groups/sick', { apps: [sleeper('app')] });
    expect(locked.status).toBe(409);
    expect(locked.body.deployments).toEqual([{ id: r.body.deploymentId }]);
    expect((await o.call('GET', '/v2/deployments')).body.some((d: any) => d.id === r.body.deploymentId)).toBe(true);
    const fixed = await o.call('PUT', '/v2/groups/sick?force=true', { apps: [sleeper('app')] });
    expect(fixed.status).toBe(200);
    await idle(fixed.body.deploymentId);
    await running('/sick/app', 1);
    expect((await o.call('GET', '/v2/deployments')).body.some((d: any) => d.id === r.body.deploymentId)).toBe(false);
  });

  it('cancelling a group deployment rolls the group back (or, with force, leaves it as it is)', async () => {
    const stuckApp = sleeper('app', {
      portDefinitions: [{ port: 0 }],
      healthChecks: [{ protocol: 'TCP', intervalSeconds: 1, gracePeriodSeconds: 1, maxConsecutiveFailures: 0 }],
    });
    const r = await o.call('POST', '/v2/groups', { id: '/undo', dependencies: ['/shop'], apps: [stuckApp] });
    expect(r.status).toBe(201);
    const back = await o.call('DELETE', `/v2/deployments/${r.body.deploymentId}`);
    expect(back.status).toBe(200);
    await idle(back.body.deploymentId);
    expect((await o.call('GET', '/v2/groups/undo')).status).toBe(404);
    expect((await o.call('GET', '/v2/apps/undo/app')).status).toBe(404);

    const kept = await o.call('POST', '/v2/groups', { id: '/undo', apps: [stuckApp] });
    const gone = await o.call('DELETE', `/v2/deployments/${kept.body.deploymentId}?force=true`);
    expect(gone.status).toBe(202);
    expect((await o.call('GET', '/v2/groups/undo')).body.apps.map((a: any) => a.id)).toEqual(['/undo/app']);
    expect((await o.call('DELETE', '/v2/groups/undo?force=true')).status).toBe(200);
  });

  it('holds a deployment until the readiness check says ready, showing the results', async () => {
    const dir = tempDir('readiness-');
    const marker = join(dir, 'ready');
    // Answers 503 until the marker file exists, then 200.
    const server = `exec python3 -c "
import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = os.path.exists('${marker}')
        self.send_response(200 if ok else 503); self.send_header('content-type', 'text/plain'); self.end_headers()
        self.wfile.write(b'ready' if ok else b'warming up')
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', int(os.environ['PORT0'])), H).serve_forever()"`;
    const def = {
      id: '/warm',
      apps: [
        {
          id: 'app',
          cmd: server,
          cpus: 0.1,
          mem: 16,
          portDefinitions: [{ port: 0, name: 'http-api' }],
          readinessChecks: [{ intervalSeconds: 1, timeoutSeconds: 0.5, preserveLastResponse: true }],
        },
      ],
    };
    const r = await o.call('POST', '/v2/groups', def);
    expect(r.status).toBe(201);
    const waiting = await waitFor(
      async () => {
        const d = ((await o.call('GET', '/v2/deployments')).body as any[]).find((x) => x.id === r.body.deploymentId);
        return d?.currentActions[0]?.readinessCheckResults[0]?.lastResponse ? d : undefined;
      },
      { timeoutMs: 15_000, message: 'a readiness result' },
    );
    const [task] = await tasksOf('/warm/app');
    expect(waiting.currentActions[0].readinessCheckResults).toEqual([
      { name: 'readinessCheck', taskId: task.id, ready: false, lastResponse: { status: 503, contentType: 'text/plain', body: 'warming up' } },
    ]);
    expect(waiting.currentActions[0].readinessChecks).toEqual(waiting.currentActions[0].readinessCheckResults);
    const app = (await o.call('GET', '/v2/apps/warm/app?embed=app.readiness')).body.app;
    expect(app.readinessCheckResults[0].ready).toBe(false);
    writeFileSync(marker, '');
    await idle(r.body.deploymentId);
    const stored = (await o.call('GET', '/v2/apps/warm/app')).body.app;
    expect(stored.readinessChecks).toEqual([
      {
        name: 'readinessCheck',
        protocol: 'HTTP',
        path: '/',
        portName: 'http-api',
        intervalSeconds: 1,
        timeoutSeconds: 0.5,
        httpStatusCodesForReady: [200],
        preserveLastResponse: true,
      },
    ]);
    const noPort = await o.call('POST', '/v2/apps', { id: '/warm/noport', cmd: 'sleep 1', readinessChecks: [{ portName: 'web' }] });
    expect(noPort.status).toBe(422);
    expect(noPort.body.details[0].path).toBe('/readinessChecks(0)/portName');
  });

  it('deletes a group with everything in it', async () => {
    const r = await o.call('DELETE', '/v2/groups/shop');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ version: expect.any(String), deploymentId: expect.any(String) });
    await idle(r.body.deploymentId);
    expect((await o.call('GET', '/v2/groups/shop')).status).toBe(404);
    expect((await o.call('GET', '/v2/apps/shop/svc/api')).status).toBe(404);
    await waitFor(async () => ((await o.call('GET', '/v2/tasks')).body.tasks as any[]).every((t) => !t.appId.startsWith('/shop/')), {
      timeoutMs: 15_000,
      message: 'shop tasks gone',
    });
  });
});

describe('group events and restarts', () => {
  it('signals each group change when its deployment ends; failures carry the reason', async () => {
    const types = [
      'group_change_success',
      'group_change_failed',
      'deployment_info',
      'deployment_step_success',
      'deployment_step_failure',
      'deployment_success',
      'deployment_failed',
    ];
    const sse = await openSse(o.url, `/v2/events?${types.map((t) => `event_type=${t}`).join('&')}`, o.authHeaders);
    try {
      const ok = await o.call('POST', '/v2/groups', { id: '/ev', apps: [sleeper('a')] });
      const mine = (f: SseFrame) => (f.data as any).plan?.version === ok.body.version || (f.data as any).version === ok.body.version;
      await waitFor(() => sse.frames.some((f) => f.event === 'group_change_success' && mine(f)), { timeoutMs: 15_000, message: 'group_change_success' });
      const seq = sse.frames.filter(mine).map((f) => f.event);
      expect(seq).toEqual([
        'deployment_info',
        'deployment_step_success',
        'deployment_info',
        'deployment_step_success',
        'deployment_success',
        'group_change_success',
      ]);
      expect(sse.frames.find((f) => f.event === 'group_change_success' && mine(f))!.data).toEqual({
        eventType: 'group_change_success',
        timestamp: expect.any(String),
        groupId: '/ev',
        version: ok.body.version,
      });

      const bad = await o.call('PUT', '/v2/groups/ev', { apps: [sleeper('a', { dependencies: ['b'] }), sleeper('b', { dependencies: ['a'] })] });
      expect(bad.status).toBe(422);
      const failed = await waitFor(() => sse.frames.find((f) => f.event === 'group_change_failed'), { timeoutMs: 5_000, message: 'group_change_failed' });
      expect(failed.data).toEqual({
        eventType: 'group_change_failed',
        timestamp: expect.any(String),
        groupId: '/ev',
        version: expect.any(String),
        reason: 'Object is not valid: / Dependency graph has cyclic dependencies.',
      });

      // A change forced over a running deployment fails that deployment's step, it and its group change.
      const stuck = await o.call('PUT', '/v2/groups/ev', {
        apps: [
          sleeper('a', {
            portDefinitions: [{ port: 0 }],
            healthChecks: [{ protocol: 'TCP', intervalSeconds: 1, gracePeriodSeconds: 1, maxConsecutiveFailures: 0 }],
          }),
        ],
      });
      await waitFor(() => sse.frames.some((f) => f.event === 'deployment_info' && (f.data as any).plan.id === stuck.body.deploymentId), {
        timeoutMs: 5_000,
        message: 'stuck deployment started',
      });
      const forced = await o.call('PUT', '/v2/groups/ev?force=true', { apps: [sleeper('a')] });
      expect(forced.status).toBe(200);
      await waitFor(() => sse.frames.some((f) => f.event === 'group_change_success' && (f.data as any).version === forced.body.version), {
        timeoutMs: 15_000,
        message: 'forced change succeeded',
      });
      const old = sse.frames.filter(
        (f) => (f.data as any).plan?.id === stuck.body.deploymentId || (f.event === 'group_change_failed' && (f.data as any).version === stuck.body.version),
      );
      expect(old.map((f) => f.event)).toEqual(['deployment_info', 'deployment_step_failure', 'deployment_failed', 'group_change_failed']);
      expect(old[3]!.data).toMatchObject({ groupId: '/ev', version: stuck.body.version, reason: 'overridden by a forced change' });
    } finally {
      sse.close();
    }
  });

  it('keeps groups, their dependencies and versions across kill -9', async () => {
    const r = await o.call('PUT', '/v2/groups/keep', { dependencies: ['/ev'], groups: [{ id: 'inner', apps: [sleeper('x')] }] });
    expect(r.status).toBe(200);
    const before = (await o.call('GET', '/v2/groups/keep')).body;
    o.proc.child.kill('SIGKILL');
    await waitFor(() => o.proc.child.exitCode !== null || o.proc.child.signalCode !== null, { timeoutMs: 10_000, message: 'killed' });
    o = await startOrchestrator(['--task-port-min=38000', '--task-port-max=38999'], { dataDir: o.dataDir });
    expect((await o.call('GET', '/v2/groups/keep')).body).toEqual(before);
    expect((await o.call('GET', '/v2/groups/keep/versions')).body).toEqual([r.body.version]);
    await running('/keep/inner/x', 1);
  });
});
