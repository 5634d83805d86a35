// Health checks wired into the scheduler: results on tasks and counts, kill and replace on
// failures, rolling restarts that wait for new tasks to be healthy.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopAll } from '../../helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { waitFor } from '../../helpers/wait.ts';

let o: StartedOrchestrator;
beforeAll(async () => {
  o = await startOrchestrator(['--task-port-min=37000', '--task-port-max=37999']);
}, 30_000);
afterAll(async () => {
  await o?.proc.stop('SIGTERM');
  await stopAll();
});

const serve = 'exec python3 -m http.server --bind 127.0.0.1 $PORT0';
const app = async (id: string) => (await o.call('GET', `/v2/apps${id}`)).body.app;

describe('health checks', () => {
  it('an HTTP check makes the task healthy; results and counts are shown', async () => {
    const r = await o.call('POST', '/v2/apps', {
      id: '/hc/web',
      cmd: serve,
      instances: 1,
      healthChecks: [{ protocol: 'HTTP', path: '/', intervalSeconds: 1, gracePeriodSeconds: 10 }],
    });
    expect(r.status).toBe(201);
    const a = await waitFor(
      async () => {
        const x = await app('/hc/web');
        return x.tasksHealthy === 1 && x.deployments.length === 0 ? x : undefined;
      },
      { timeoutMs: 20_000, message: 'healthy' },
    );
    expect(a.tasksUnhealthy).toBe(0);
    const res = a.tasks[0].healthCheckResults[0];
    expect(res).toMatchObject({ alive: true, consecutiveFailures: 0, lastFailure: null });
    expect(res.instanceId).toMatch(/^hc_web\.marathon-/);
    expect(a.healthChecks[0]).toMatchObject({ protocol: 'HTTP', path: '/', portIndex: 0, timeoutSeconds: 20, maxConsecutiveFailures: 3 });
  });

  it('a rolling restart keeps the old task until the new one is healthy', async () => {
    const before = await app('/hc/web');
    const put = await o.call('PUT', '/v2/apps/hc/web', { cmd: 'exec sleep 1000' });
    expect(put.status).toBe(200);
    // The new task runs but never passes; after two counted failures the old one must still be there.
    await waitFor(
      async () => {
        const x = await app('/hc/web');
        const fresh = x.tasks.find((t: any) => t.id !== before.tasks[0].id);
        return fresh?.healthCheckResults?.[0]?.consecutiveFailures >= 2;
      },
      { timeoutMs: 20_000, message: 'new task failing' },
    );
    const x = await app('/hc/web');
    expect(x.tasks.map((t: any) => t.id)).toContain(before.tasks[0].id);
    expect(x.deployments).toHaveLength(1);
    // Fix it with a newer definition (force): the deployment completes.
    expect((await o.call('PUT', '/v2/apps/hc/web?force=true', { cmd: serve })).status).toBe(200);
    await waitFor(
      async () => {
        const y = await app('/hc/web');
        return y.deployments.length === 0 && y.tasks.length === 1 && y.tasksHealthy === 1;
      },
      { timeoutMs: 30_000, message: 'fixed deployment done' },
    );
  }, 60_000);

  it('kills and replaces a task whose COMMAND check keeps failing', async () => {
    await o.call('POST', '/v2/apps', {
      id: '/hc/bad',
      cmd: 'exec sleep 1000',
      instances: 1,
      healthChecks: [{ protocol: 'COMMAND', command: { value: 'exit 1' }, intervalSeconds: 0.3, gracePeriodSeconds: 0, maxConsecutiveFailures: 1 }],
    });
    const first = await waitFor(async () => (await app('/hc/bad')).tasks[0]?.id, { timeoutMs: 10_000 });
    await waitFor(
      async () => {
        const ts = (await app('/hc/bad')).tasks as any[];
        return ts.length > 0 && ts.every((t) => t.id !== first);
      },
      { timeoutMs: 20_000, message: 'unhealthy task replaced' },
    );
    // A health kill ends in TASK_KILLED: it does not grow the back-off and is not a lastTaskFailure.
    const f = (await app('/hc/bad')).lastTaskFailure;
    expect(f).toBeUndefined();
    await o.call('DELETE', '/v2/apps/hc/bad');
  }, 30_000);
});
