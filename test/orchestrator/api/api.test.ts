// The Marathon API against a real orchestrator process: apps, versions, validation errors,
// deployments, tasks, queue, info, leader, ping, metrics.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopAll } from '../../helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { waitFor } from '../../helpers/wait.ts';

let o: StartedOrchestrator;
beforeAll(async () => {
  o = await startOrchestrator(['--local-port-min=12000', '--local-port-max=12100', '--task-port-min=33000', '--task-port-max=33500']);
}, 30_000);
afterAll(async () => {
  // Remove every app so no task survives the orchestrator's own shutdown.
  await o?.proc.stop('SIGTERM');
  await stopAll();
});

const noDeployments = (id: string) =>
  waitFor(async () => (await o.call('GET', `/v2/apps${id}`)).body.app.deployments.length === 0, { timeoutMs: 15_000, message: `deployments of ${id} done` });

describe('apps', () => {
  it('creates an app: 201, Location, deployment header, echoed body, then runs its tasks', async () => {
    const r = await o.call('POST', '/v2/apps', { id: 'web', cmd: 'sleep 1000', instances: 2, labels: { tier: 'front' } });
    expect(r.status).toBe(201);
    expect(r.headers.get('location')).toBe('/v2/apps/web');
    expect(r.headers.get('marathon-deployment-id')).toBe(r.body.deployments[0].id);
    expect(r.headers.get('cache-control')).toBe('no-cache, no-store, must-revalidate');
    expect(r.body).toMatchObject({
      id: '/web',
      cmd: 'sleep 1000',
      args: null,
      instances: 2,
      cpus: 1,
      mem: 128,
      disk: 0,
      backoffSeconds: 1,
      backoffFactor: 1.15,
      maxLaunchDelaySeconds: 3600,
      tasks: [],
      tasksRunning: 0,
    });
    expect(r.body.ports).toEqual([0]);
    expect(r.body.versionInfo).toBeUndefined();
    await noDeployments('/web');
    const app = (await o.call('GET', '/v2/apps/web')).body.app;
    expect(app.tasksRunning).toBe(2);
    expect(app.tasks).toHaveLength(2);
    expect(app.ports[0]).toBeGreaterThanOrEqual(12000);
    expect(app.versionInfo.lastConfigChangeAt).toBe(app.version);
    const t = app.tasks[0];
    expect(t.id).toMatch(/^web\.[0-9a-f-]{36}$/);
    expect(t).toMatchObject({ appId: '/web', host: '127.0.0.1', state: 'TASK_RUNNING', version: app.version, servicePorts: app.ports });
    expect(t.ports[0]).toBeGreaterThanOrEqual(33000);
  });

  it('409 on an existing id', async () => {
    const r = await o.call('POST', '/v2/apps', { id: '/web', cmd: 'sleep 1' });
    expect(r.status).toBe(409);
    expect(r.body).toEqual({ message: 'An app with id [/web] already exists.' });
  });

  it('lists with cmd, id (case-insensitive), label selectors and embeds', async () => {
    expect((await o.call('POST', '/v2/apps', { id: '/grp/api', cmd: 'sleep 2000', instances: 0, labels: { tier: 'back', env: 'prod' } })).status).toBe(201);
    const ids = async (qs: string) => ((await o.call('GET', `/v2/apps${qs}`)).body.apps as any[]).map((a) => a.id);
    expect(await ids('?cmd=SLEEP%201000')).toEqual(['/web']);
    expect(await ids('?id=GRP')).toEqual(['/grp/api']);
    expect(await ids('?label=tier==front')).toEqual(['/web']);
    expect(await ids('?label=tier')).toEqual(['/grp/api', '/web']);
    expect(await ids('?label=tier!=front')).toEqual(['/grp/api']);
    expect(await ids('?label=tier%20in%20(back,%20x),env==prod')).toEqual(['/grp/api']);
    expect(await ids('?label=tier%20notin%20(back)')).toEqual(['/web']);
    const bad = await o.call('GET', '/v2/apps?label=tier=front');
    expect(bad.status).toBe(422);
    expect(bad.body.message).toMatch(/Can not parse label selector/);
    const plain = (await o.call('GET', '/v2/apps')).body.apps[0];
    expect(plain).toHaveProperty('tasksRunning');
    expect(plain).toHaveProperty('deployments');
    expect(plain).not.toHaveProperty('tasks');
    const emb = (await o.call('GET', '/v2/apps?id=web&embed=app.tasks&embed=apps.lastTaskFailure&embed=apps.taskStats&embed=apps.readiness')).body.apps[0];
    expect(emb.tasks).toHaveLength(2);
    expect(emb.taskStats.totalSummary.stats.counts.running).toBe(2);
    expect(emb.readinessCheckResults).toEqual([]);
    const grp = await o.call('GET', '/v2/apps/grp/*');
    expect(grp.status).toBe(200);
    expect(grp.body.apps.map((a: any) => a.id)).toEqual(['/grp/api']);
    expect(grp.body).not.toHaveProperty('*');
    expect((await o.call('GET', '/v2/apps/nothing/*')).status).toBe(404);
    expect((await o.call('GET', '/v2/apps/')).body.apps.length).toBe(2);
  });

  it('gets one app, 404 for unknown', async () => {
    const r = await o.call('GET', '/v2/apps/nope');
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ message: "App '/nope' does not exist" });
  });

  it('updates: scale keeps lastConfigChangeAt; config change restarts; versions; rollback; 404 on unknown version', async () => {
    await noDeployments('/grp/api');
    const before = (await o.call('GET', '/v2/apps/grp/api')).body.app;
    const scale = await o.call('PUT', '/v2/apps/grp/api', { instances: 1 });
    expect(scale.status).toBe(200);
    expect(scale.headers.get('marathon-deployment-id')).toBe(scale.body.deploymentId);
    expect(Object.keys(scale.body)).toEqual(['version', 'deploymentId']);
    await noDeployments('/grp/api');
    const scaled = (await o.call('GET', '/v2/apps/grp/api')).body.app;
    expect(scaled.instances).toBe(1);
    expect(scaled.labels).toEqual({ tier: 'back', env: 'prod' });
    expect(scaled.versionInfo.lastConfigChangeAt).toBe(before.versionInfo.lastConfigChangeAt);
    expect(scaled.versionInfo.lastScalingAt).toBe(scale.body.version);
    expect(scaled.ports).toEqual(before.ports);
    // The same definition in full, asking for service port 0 again: it keeps its port, no config change.
    const {
      version: _v,
      versionInfo: _vi,
      tasks: _t,
      deployments: _d,
      lastTaskFailure: _l,
      tasksStaged: _s1,
      tasksRunning: _s2,
      tasksHealthy: _s3,
      tasksUnhealthy: _s4,
      ...definition
    } = scaled;
    const same = await o.call('PUT', '/v2/apps/grp/api?partialUpdate=false', {
      ...definition,
      portDefinitions: definition.portDefinitions.map((p: any) => ({ ...p, port: 0 })),
      ports: undefined,
    });
    expect(same.status).toBe(200);
    await noDeployments('/grp/api');
    const resent = (await o.call('GET', '/v2/apps/grp/api')).body.app;
    expect(resent.ports).toEqual(before.ports);
    expect(resent.versionInfo.lastConfigChangeAt).toBe(before.versionInfo.lastConfigChangeAt);
    const change = await o.call('PUT', '/v2/apps/grp/api', { cmd: 'sleep 3000' });
    expect(change.status).toBe(200);
    await noDeployments('/grp/api');
    const changed = (await o.call('GET', '/v2/apps/grp/api')).body.app;
    expect(changed.versionInfo.lastConfigChangeAt).toBe(change.body.version);
    expect(changed.tasks[0].version).toBe(change.body.version);
    const versions = (await o.call('GET', '/v2/apps/grp/api/versions')).body.versions;
    expect(versions).toHaveLength(4);
    expect(versions[0]).toBe(change.body.version);
    const v0 = await o.call('GET', `/v2/apps/grp/api/versions/${before.version}`);
    expect(v0.body.cmd).toBe('sleep 2000');
    expect((await o.call('GET', '/v2/apps/grp/api/versions/2001-01-01T00:00:00.000Z')).status).toBe(404);
    const rb = await o.call('PUT', '/v2/apps/grp/api', { version: before.version, cmd: 'ignored' });
    expect(rb.status).toBe(200);
    await noDeployments('/grp/api');
    const rolled = (await o.call('GET', '/v2/apps/grp/api')).body.app;
    expect(rolled.cmd).toBe('sleep 2000');
    expect(rolled.instances).toBe(0);
    await noDeployments('/grp/api');
    expect((await o.call('PUT', '/v2/apps/grp/api', { version: '2001-01-01T00:00:00.000Z' })).status).toBe(404);
  });

  it('PUT creates a missing app (201), partialUpdate=false replaces, PATCH never creates', async () => {
    const c = await o.call('PUT', '/v2/apps/made', { cmd: 'sleep 100', instances: 0, env: { A: '1' } });
    expect(c.status).toBe(201);
    expect(c.headers.get('location')).toBe('/v2/apps/made');
    await noDeployments('/made');
    await o.call('PUT', '/v2/apps/made?partialUpdate=false', { cmd: 'sleep 200', instances: 0 });
    expect((await o.call('GET', '/v2/apps/made')).body.app.env).toEqual({});
    await noDeployments('/made');
    const p = await o.call('PATCH', '/v2/apps/made', { env: { B: '2' } });
    expect(p.status).toBe(200);
    expect((await o.call('GET', '/v2/apps/made')).body.app.env).toEqual({ B: '2' });
    expect((await o.call('PATCH', '/v2/apps/absent', { instances: 1 })).status).toBe(404);
    await noDeployments('/made');
    const many = await o.call('PUT', '/v2/apps', [
      { id: '/made', instances: 0, cmd: 'sleep 300' },
      { id: '/made2', cmd: 'sleep 1', instances: 0 },
    ]);
    expect(many.status).toBe(200);
    expect(many.body.deploymentId).toBeTruthy();
    expect((await o.call('GET', '/v2/apps/made2')).status).toBe(200);
  });

  it('locks an app during a deployment: 409 body, force overrides; DELETE deployments rollback and force', async () => {
    // A deployment that cannot finish: the task never becomes healthy.
    const r = await o.call('POST', '/v2/apps', {
      id: '/stuck',
      cmd: 'exec sleep 1000',
      instances: 1,
      healthChecks: [{ protocol: 'COMMAND', command: { value: 'false' }, gracePeriodSeconds: 300 }],
    });
    const dep = r.body.deployments[0].id;
    const locked = await o.call('PUT', '/v2/apps/stuck', { instances: 2 });
    expect(locked.status).toBe(409);
    expect(locked.body).toEqual({
      message: "App is locked by one or more deployments. Override with the option '?force=true'. View details at '/v2/deployments/<DEPLOYMENT_ID>'.",
      deployments: [{ id: dep }],
    });
    expect((await o.call('POST', '/v2/apps/stuck/restart')).status).toBe(409);
    const list = (await o.call('GET', '/v2/deployments')).body as any[];
    const d = list.find((x) => x.id === dep);
    expect(d).toMatchObject({
      affectedApps: ['/stuck'],
      totalSteps: 2,
      steps: [{ actions: [{ action: 'StartApplication', app: '/stuck' }] }, { actions: [{ action: 'ScaleApplication', app: '/stuck' }] }],
    });
    expect(d.currentStep).toBe(2);
    expect(d.currentActions).toEqual([{ action: 'ScaleApplication', app: '/stuck', readinessCheckResults: [], readinessChecks: [] }]);
    const forced = await o.call('PUT', '/v2/apps/stuck?force=true', { instances: 2 });
    expect(forced.status).toBe(200);
    const ids = ((await o.call('GET', '/v2/deployments')).body as any[]).map((x) => x.id);
    expect(ids).not.toContain(dep);
    expect(ids).toContain(forced.body.deploymentId);
    // Rollback: a new deployment reverting to instances 1.
    const rb = await o.call('DELETE', `/v2/deployments/${forced.body.deploymentId}`);
    expect(rb.status).toBe(200);
    expect(rb.body.deploymentId).not.toBe(forced.body.deploymentId);
    expect((await o.call('GET', '/v2/apps/stuck')).body.app.instances).toBe(1);
    const f = await o.call('DELETE', `/v2/deployments/${rb.body.deploymentId}?force=true`);
    expect(f.status).toBe(202);
    expect(f.text).toBe('');
    expect((await o.call('DELETE', '/v2/deployments/nope')).body).toEqual({ message: 'DeploymentPlan nope does not exist' });
    // The queue shows a delayed app; deleting the delay gives 204.
    await o.call('POST', '/v2/apps', { id: '/crashq', cmd: 'exit 1', instances: 1, backoffSeconds: 30 });
    const q = await waitFor(
      async () => ((await o.call('GET', '/v2/queue')).body.queue as any[]).find((e) => e.app.id === '/crashq' && e.delay.overdue === false),
      { timeoutMs: 10_000 },
    );
    expect(q.count).toBe(1);
    expect(q.delay.timeLeftSeconds).toBeGreaterThan(20);
    expect(q.processedOffersSummary).toBeDefined();
    const failure = (await o.call('GET', '/v2/apps/crashq')).body.app.lastTaskFailure;
    expect(failure).toMatchObject({ appId: '/crashq', state: 'TASK_FAILED', host: '127.0.0.1' });
    expect(failure.message).toMatch(/exited with (code|status) 1/);
    expect((await o.call('DELETE', '/v2/queue/crashq/delay')).status).toBe(204);
    expect((await o.call('DELETE', '/v2/apps/crashq')).status).toBe(200);
    expect((await o.call('DELETE', '/v2/queue/web/delay')).body).toEqual({ message: 'Application /web not found in tasks queue.' });
    const del = await o.call('DELETE', '/v2/apps/stuck');
    expect(del.status).toBe(200);
    expect((await o.call('GET', '/v2/apps/stuck')).status).toBe(404);
  });
});

describe('validation', () => {
  const post = (body: unknown) => o.call('POST', '/v2/apps', body);
  it('400 Invalid JSON for malformed text and wrong types', async () => {
    const r = await post('{"id": ');
    expect(r.status).toBe(400);
    expect(r.body.message).toBe('Invalid JSON');
    expect(typeof r.body.details).toBe('string');
    const t = await post({ id: 'x', cmd: 'a', instances: 'many', labels: { a: 1 } });
    expect(t.status).toBe(400);
    expect(t.body.details).toEqual([
      { path: '/instances', errors: ['error.expected.jsnumber'] },
      { path: '/labels/a', errors: ['error.expected.jsstring'] },
    ]);
    expect((await post({ cmd: 'a' })).body.details).toEqual([{ path: '/id', errors: ['error.path.missing'] }]);
    expect((await post({ id: 'x', cmd: 'a', ports: [80, 80] })).body).toEqual({
      message: 'Invalid JSON',
      details: [{ path: '/', errors: ['Ports must be unique.'] }],
    });
    expect((await o.call('POST', '/v2/apps')).status).toBe(400);
  });
  it('422 Object is not valid with Marathon paths', async () => {
    const r = await post({
      id: 'Bad_Id',
      cmd: 'a',
      args: ['b'],
      instances: -3,
      mem: -3,
      backoffFactor: 0.5,
      portDefinitions: [{ port: 70000 }],
      upgradeStrategy: { minimumHealthCapacity: 1.2, maximumOverCapacity: -1 },
      healthChecks: [
        { protocol: 'COMMAND', command: { value: 'true' } },
        { protocol: 'COMMAND', command: { value: 'true' } },
        { protocol: 'HTTP', portIndex: 4 },
      ],
      constraints: [['host', 'SOMETIMES']],
    });
    expect(r.status).toBe(422);
    expect(r.body.message).toBe('Object is not valid');
    const byPath = Object.fromEntries((r.body.details as any[]).map((d) => [d.path, d.errors]));
    expect(byPath['/id'][0]).toMatch(/must fully match regular expression/);
    expect(byPath['/']).toEqual(
      expect.arrayContaining([
        "AppDefinition must either contain one of 'cmd' or 'args', and/or a 'container'.",
        'AppDefinition can contain at most one Mesos health check',
        'Health check port indices must address an element of the ports array or container port mappings.',
      ]),
    );
    expect(byPath['/instances']).toEqual(['got -3, expected 0 or more']);
    expect(byPath['/mem']).toEqual(['got -3.0, expected 0.0 or more']);
    expect(byPath['/backoffFactor']).toEqual(['got 0.5, expected 1.0 or more']);
    expect(byPath['/portDefinitions(0)/port']).toEqual(['got 70000, expected between 0 and 65535']);
    expect(byPath['/upgradeStrategy/minimumHealthCapacity']).toEqual(['got 1.2, expected between 0.0 and 1.0']);
    expect(byPath['/upgradeStrategy/maximumOverCapacity']).toEqual(['got -1.0, expected between 0.0 and 1.0']);
    expect(byPath['/constraints(0)']![0]).toMatch(/Constraint operator must be one of/);
    expect((await post({ id: '/', cmd: 'a' })).status).toBe(422);
    expect((await post({ id: 'x', cmd: 'a', env: { A: 1 } })).status).toBe(400);
  });
  it('never answers 500 to random input', async () => {
    const values: unknown[] = [null, true, 0, -1, 1.5, 'x', '', [], {}, [1], { a: null }, 1e308, '999999999999999999999'];
    const keys = [
      'id',
      'cmd',
      'args',
      'instances',
      'cpus',
      'ports',
      'portDefinitions',
      'healthChecks',
      'container',
      'env',
      'labels',
      'constraints',
      'upgradeStrategy',
      'ipAddress',
      'fetch',
      'uris',
      'dependencies',
      'version',
      'backoffFactor',
      'acceptedResourceRoles',
    ];
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let i = 0; i < 150; i++) {
      const body: Record<string, unknown> = { id: `/fuzz/f${i}`, cmd: 'sleep 1', instances: 0 };
      for (let k = 0; k < 3; k++) body[keys[rnd(keys.length)]!] = values[rnd(values.length)];
      const r = await post(body);
      expect(r.status, JSON.stringify(body)).toBeLessThan(500);
      const p = await o.call('PUT', `/v2/apps/fuzz/p${i}`, body);
      expect(p.status, JSON.stringify(body)).toBeLessThan(500);
    }
    for (const path of ['/v2/apps/%ZZ', '/v2/apps//x', '/v2/apps/a/b/c/versions/zz', '/v2/tasks?status=weird', '/v2/queue/x/delay', '/v2/deployments/x']) {
      for (const m of ['GET', 'DELETE', 'PUT', 'POST'])
        expect((await o.call(m, path, m === 'PUT' || m === 'POST' ? {} : undefined)).status, `${m} ${path}`).toBeLessThan(500);
    }
  }, 60_000);
});

describe('tasks', () => {
  it('lists tasks with status filters and text/plain', async () => {
    const all = (await o.call('GET', '/v2/tasks')).body.tasks as any[];
    expect(all.filter((t) => t.appId === '/web')).toHaveLength(2);
    expect(((await o.call('GET', '/v2/tasks?status=running')).body.tasks as any[]).every((t) => t.state === 'TASK_RUNNING')).toBe(true);
    expect(((await o.call('GET', '/v2/tasks?status[]=staging')).body.tasks as any[]).every((t) => t.state !== 'TASK_RUNNING')).toBe(true);
    const text = await o.call('GET', '/v2/tasks', undefined, { accept: 'text/plain' });
    expect(text.headers.get('content-type')).toMatch(/text\/plain/);
    const web = (await o.call('GET', '/v2/apps/web')).body.app;
    const line = text.text.split('\n').find((l) => l.startsWith('web\t'))!;
    expect(line).toBe(
      `web\t${web.ports[0]}\t${web.tasks.map((t: any) => `127.0.0.1:${t.ports[0]}\t`).join('')}`.replace(/\t(127[^\t]*\t)(127[^\t]*\t)$/, (m) => m) || line,
    );
    expect(line.split('\t').filter(Boolean)).toHaveLength(4);
    const appText = await o.call('GET', '/v2/apps/web/tasks', undefined, { accept: 'text/plain' });
    expect(appText.text.startsWith(`web\t${web.ports[0]}\t`)).toBe(true);
    expect((await o.call('GET', '/v2/apps/web/tasks')).body.tasks).toHaveLength(2);
    expect((await o.call('GET', '/v2/apps/*/tasks')).body.tasks.length).toBeGreaterThanOrEqual(2);
  });

  it('kills tasks: one (replaced), scale=true (deployment), host filter, wipe+scale 400, tasks/delete', async () => {
    const before = (await o.call('GET', '/v2/apps/web/tasks')).body.tasks as any[];
    const one = await o.call('DELETE', `/v2/apps/web/tasks/${before[0].id}`);
    expect(one.status).toBe(200);
    expect(one.body.task.id).toBe(before[0].id);
    await waitFor(
      async () => {
        const ts = (await o.call('GET', '/v2/apps/web/tasks')).body.tasks as any[];
        return ts.length === 2 && !ts.some((t) => t.id === before[0].id) && ts.every((t) => t.state === 'TASK_RUNNING');
      },
      { timeoutMs: 15_000, message: 'killed task replaced' },
    );
    expect((await o.call('DELETE', '/v2/apps/web/tasks/web.00000000-0000-0000-0000-000000000000')).body).toEqual({
      message: "Task 'web.00000000-0000-0000-0000-000000000000' does not exist",
    });
    expect((await o.call('DELETE', '/v2/apps/web/tasks?scale=true&wipe=true')).body).toEqual({ message: 'You cannot use scale and wipe at the same time.' });
    expect((await o.call('DELETE', '/v2/apps/web/tasks?host=elsewhere')).body).toEqual({ tasks: [] });
    const cur = (await o.call('GET', '/v2/apps/web/tasks')).body.tasks as any[];
    const sc = await o.call('DELETE', `/v2/apps/web/tasks/${cur[0].id}?scale=true`);
    expect(sc.status).toBe(200);
    expect(sc.body.deploymentId).toBeTruthy();
    expect((await o.call('GET', '/v2/apps/web')).body.app.instances).toBe(1);
    await noDeployments('/web');
    expect((await o.call('POST', '/v2/tasks/delete', { ids: ['not a task id'] })).status).toBe(400);
    const rest = (await o.call('GET', '/v2/apps/web/tasks')).body.tasks as any[];
    expect(rest).toHaveLength(1);
    const del = await o.call('POST', '/v2/tasks/delete?scale=true', { ids: [rest[0].id] });
    expect(del.status).toBe(200);
    expect(del.body.deploymentId).toBeTruthy();
    await waitFor(async () => (await o.call('GET', '/v2/apps/web')).body.app.tasks.length === 0, { timeoutMs: 15_000 });
    expect((await o.call('GET', '/v2/apps/web')).body.app.instances).toBe(0);
  });

  it("tasks/delete?scale=true with tasks of two apps: one deployment, and both apps take its version (Marathon's TaskKiller.killAndScale)", async () => {
    for (const id of ['/killscale/a', '/killscale/b']) expect((await o.call('POST', '/v2/apps', { id, cmd: 'sleep 1000', instances: 2 })).status).toBe(201);
    const running = async (id: string) => {
      const app = (await o.call('GET', `/v2/apps${id}`)).body.app;
      return app.deployments.length === 0 && app.tasks.length === 2 && app.tasks.every((t: any) => t.state === 'TASK_RUNNING') ? app : undefined;
    };
    const before = [await waitFor(() => running('/killscale/a'), { timeoutMs: 15_000 }), await waitFor(() => running('/killscale/b'), { timeoutMs: 15_000 })];
    const del = await o.call('POST', '/v2/tasks/delete?scale=true', { ids: [before[0].tasks[0].id, before[1].tasks[0].id] });
    expect(del.status).toBe(200);
    expect(Object.keys(del.body).sort()).toEqual(['deploymentId', 'version']);
    for (const [i, id] of ['/killscale/a', '/killscale/b'].entries()) {
      const app = (await o.call('GET', `/v2/apps${id}`)).body.app;
      expect(app.instances).toBe(1);
      expect(app.version).toBe(del.body.version);
      expect(app.versionInfo).toEqual({ lastScalingAt: del.body.version, lastConfigChangeAt: before[i].versionInfo.lastConfigChangeAt });
    }
    await noDeployments('/killscale/a');
    await noDeployments('/killscale/b');
    expect((await o.call('DELETE', '/v2/groups/killscale')).status).toBe(200);
  });
});

describe('info, leader, misc', () => {
  it('serves /v2/info in Marathon 1.4 shape', async () => {
    const i = (await o.call('GET', '/v2/info')).body;
    expect(i).toMatchObject({ name: 'marathon', elected: true, leader: `127.0.0.1:${o.port}`, event_subscriber: null, http_config: { http_port: o.port } });
    expect(i.marathon_config).toMatchObject({ hostname: '127.0.0.1', local_port_min: 12000, local_port_max: 12100, executor: '//cmd' });
    expect(i.zookeeper_config.zk_max_versions).toBeDefined();
    expect(typeof i.buildref).toBe('string');
    expect(typeof i.frameworkId).toBe('string');
  });
  it('abdicates and is re-elected', async () => {
    expect((await o.call('GET', '/v2/leader')).body).toEqual({ leader: `127.0.0.1:${o.port}` });
    expect((await o.call('DELETE', '/v2/leader')).body).toEqual({ message: 'Leadership abdicated' });
    await waitFor(async () => (await o.call('GET', '/v2/leader')).status === 200, { timeoutMs: 5000 });
  });
  it('ping, metrics, help, logging, unknown routes', async () => {
    const p = await o.call('GET', '/ping');
    expect(p.text).toBe('pong');
    expect((await o.call('GET', '/ping', undefined, { accept: 'application/json' })).body).toBe('pong');
    expect((await o.call('GET', '/ping', undefined, { accept: 'image/png' })).status).toBe(204);
    const m = (await o.call('GET', '/metrics')).body;
    expect(Object.keys(m).sort()).toEqual(['counters', 'gauges', 'histograms', 'meters', 'timers', 'version']);
    expect(m.gauges['service.mesosphere.marathon.app.count'].value).toBeGreaterThan(0);
    expect(m.timers['mesosphere.marathon.api.v2.requests'].count).toBeGreaterThan(10);
    expect((await o.call('GET', '/help')).headers.get('content-type')).toMatch(/text\/html/);
    expect((await o.call('GET', '/logging')).headers.get('content-type')).toMatch(/text\/html/);
    expect((await o.call('GET', '/v2/nothing')).body).toEqual({ message: 'URI not found: /v2/nothing' });
  });
});
