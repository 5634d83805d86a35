// What Marathon's own clients send and read, on the wire (issue 13): go-marathon's partial updates
// with null fields, a second kill of a task already being killed with scale=true, the group
// listing's key, POST /v2/groups with Marathon's documented root example. The event stream's 405
// is in test/orchestrator/events/events-stream.test.ts.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killPids, pidsMatching, stopAll } from './helpers/process.ts';
import { removeTaskCgroups, startOrchestrator, type StartedOrchestrator } from './helpers/orchestrator.ts';
import { waitFor } from './helpers/wait.ts';

// Tasks that ignore SIGTERM carry this marker, so that the test can remove what it started.
const MARKER = `sleep 7${process.pid % 1000}31`;

let o: StartedOrchestrator;
beforeAll(async () => {
  o = await startOrchestrator([
    '--enable_features=task_killing',
    '--local-port-min=12600',
    '--local-port-max=12700',
    '--task-port-min=40000',
    '--task-port-max=40199',
  ]);
}, 30_000);
afterAll(async () => {
  await o?.proc.stop('SIGTERM');
  await stopAll();
  // The SIGTERM-ignoring tasks may outlive their grace period when the orchestrator stops first.
  killPids(pidsMatching(MARKER)); // only if a failure left them
  if (o) await removeTaskCgroups(o.dataDir);
});

const settled = (id: string) =>
  waitFor(
    async () => {
      const app = (await o.call('GET', `/v2/apps${id}`)).body.app;
      return app.deployments.length === 0 && app.tasksRunning === app.instances ? app : undefined;
    },
    { timeoutMs: 20_000, message: `${id} settled` },
  );

describe('go-marathon', () => {
  it('scales with {"instances": n, "ports": null, "dependencies": null}: no restart, ports and names kept', async () => {
    const create = await o.call('POST', '/v2/apps', {
      id: '/gm/web',
      cmd: 'sleep 1000',
      instances: 1,
      portDefinitions: [{ port: 0, name: 'http' }],
      labels: { team: 'a' },
    });
    expect(create.status).toBe(201);
    const before = await settled('/gm/web');
    const scale = await o.call('PUT', '/v2/apps/gm/web', { instances: 2, ports: null, dependencies: null, labels: null, cmd: null, env: null });
    expect(scale.status).toBe(200);
    const after = await settled('/gm/web');
    expect(after.instances).toBe(2);
    expect(after.versionInfo.lastConfigChangeAt).toBe(before.versionInfo.lastConfigChangeAt);
    expect(after.ports).toEqual(before.ports);
    expect(after.portDefinitions).toEqual(before.portDefinitions);
    expect(after.portDefinitions[0].name).toBe('http');
    expect(after.labels).toEqual({ team: 'a' });
    expect(after.cmd).toBe('sleep 1000');
    // The task that ran before the scale still runs: nothing was restarted.
    expect(after.tasks.map((t: any) => t.id)).toContain(before.tasks[0].id);
  });

  it('keeps labels on {"labels": null}, also in a multi-app PUT', async () => {
    const one = await o.call('PUT', '/v2/apps/gm/web', { labels: null });
    expect(one.status).toBe(200);
    expect((await o.call('GET', '/v2/apps/gm/web')).body.app.labels).toEqual({ team: 'a' });
    const batch = await o.call('PUT', '/v2/apps', [{ id: '/gm/web', labels: null, ports: null, instances: 2 }]);
    expect(batch.status).toBe(200);
    const app = await settled('/gm/web');
    expect(app.labels).toEqual({ team: 'a' });
    expect(app.portDefinitions[0].name).toBe('http');
  });
});

describe('task kills with scale=true', () => {
  it('does not scale down again for a task already in TASK_KILLING', async () => {
    const cmd = `trap '' TERM; exec ${MARKER}`;
    expect((await o.call('POST', '/v2/apps', { id: '/kill/slow', cmd, instances: 3, taskKillGracePeriodSeconds: 20 })).status).toBe(201);
    const app = await settled('/kill/slow');
    // A task is running once spawned, but it ignores SIGTERM only from its `trap` on: wait until
    // every shell has exec'd the marker (its command line is then exactly the marker), or a kill
    // sent before the trap ends it at once (seen on a loaded machine).
    await waitFor(() => pidsMatching(`^${MARKER}$`).length === 3, { message: 'the three tasks trap SIGTERM' });
    const victim = app.tasks[0].id;
    const first = await o.call('DELETE', `/v2/apps/kill/slow/tasks/${victim}?scale=true`);
    expect(first.status).toBe(200);
    await waitFor(async () => ((await o.call('GET', '/v2/apps/kill/slow/tasks')).body.tasks as any[]).find((t) => t.id === victim)?.state === 'TASK_KILLING', {
      message: 'the victim is TASK_KILLING',
    });
    expect((await o.call('GET', '/v2/apps/kill/slow')).body.app.instances).toBe(2);
    // Again, through both kill endpoints (force: the first scale's deployment waits for the kill).
    expect((await o.call('DELETE', `/v2/apps/kill/slow/tasks/${victim}?scale=true&force=true`)).status).toBe(200);
    expect((await o.call('POST', '/v2/tasks/delete?scale=true&force=true', { ids: [victim] })).status).toBe(200);
    expect((await o.call('GET', '/v2/apps/kill/slow')).body.app.instances).toBe(2);
  });
});

describe('groups', () => {
  it('POST /v2/groups with id "/" is 409 as in Marathon', async () => {
    const r = await o.call('POST', '/v2/groups', { id: '/', apps: [] });
    expect(r.status).toBe(409);
    expect(r.body).toEqual({ message: 'Group / is already created. Use PUT to change this group.' });
  });

  it('GET /v2/apps/{group}/* lists under "apps"', async () => {
    const r = await o.call('GET', '/v2/apps/gm/*');
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['apps']);
    expect(r.body.apps.map((a: any) => a.id)).toEqual(['/gm/web']);
  });
});
