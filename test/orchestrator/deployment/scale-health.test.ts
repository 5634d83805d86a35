// Scale deployments and health (Marathon 1.4's DeploymentActor.scaleApp): a scale-up waits for the
// tasks it starts to be healthy, never for the tasks the app already ran; a scale-down waits for its
// kills only. Each app's COMMAND check fails for a task once the test writes `sick.<task id>`, so
// one running task can be made unhealthy while new ones stay healthy.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopAll, tempDir } from '../../helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { waitFor } from '../../helpers/wait.ts';

let o: StartedOrchestrator;
const marks = tempDir('scale-health-');
beforeAll(async () => {
  o = await startOrchestrator(['--task-port-min=36000', '--task-port-max=36199']);
}, 30_000);
afterAll(async () => {
  await o?.proc.stop('SIGTERM');
  await stopAll();
});

const app = async (id: string) => (await o.call('GET', `/v2/apps${id}?embed=app.deployments`)).body.app;
const alive = (t: any): boolean | undefined => t.healthCheckResults?.[0]?.alive;
const definition = (id: string, instances: number) => ({
  id,
  cmd: 'exec sleep 1000',
  instances,
  healthChecks: [
    {
      protocol: 'COMMAND',
      command: { value: `test ! -e ${marks}/sick.$MESOS_TASK_ID` },
      intervalSeconds: 0.2,
      gracePeriodSeconds: 0,
      // Never killed for failing: the unhealthy task must stay.
      maxConsecutiveFailures: 0,
    },
  ],
});

/** Deploys `n` healthy tasks, then makes the `sick` of them (by launch order) fail their check. */
async function appWithSickTasks(id: string, n: number, sick: number): Promise<string[]> {
  expect((await o.call('POST', '/v2/apps', definition(id, n))).status).toBe(201);
  const healthy = await waitFor(
    async () => {
      const a = await app(id);
      return a.deployments.length === 0 && a.tasks.length === n && a.tasks.every((t: any) => alive(t) === true) ? a.tasks : undefined;
    },
    { timeoutMs: 20_000, message: `${id}: ${n} healthy tasks` },
  );
  const ids = (healthy as any[]).sort((x, y) => x.stagedAt.localeCompare(y.stagedAt)).map((t) => t.id as string);
  for (const t of ids.slice(0, sick)) writeFileSync(join(marks, `sick.${t}`), '');
  await waitFor(
    async () => {
      const a = await app(id);
      return ids.slice(0, sick).every((t) => a.tasks.some((x: any) => x.id === t && alive(x) === false));
    },
    { timeoutMs: 10_000, message: `${id}: ${sick} task(s) unhealthy` },
  );
  return ids;
}

/** Waits for the app's deployments to end; then the app is no longer locked (a change is accepted unforced). */
async function deploymentEnds(id: string): Promise<any> {
  const a = await waitFor(
    async () => {
      const x = await app(id);
      return x.deployments.length === 0 ? x : undefined;
    },
    { timeoutMs: 15_000, message: `${id}: scale deployment ended` },
  );
  expect((await o.call('GET', '/v2/deployments')).body.filter((d: any) => d.affectedApps.includes(id))).toEqual([]);
  expect((await o.call('PUT', `/v2/apps${id}`, { labels: { after: 'scale' } })).status).toBe(200);
  return a;
}

describe('a scale deployment of an app with an unhealthy task', () => {
  it('scale-up ends once the new task is healthy, the old one still unhealthy', async () => {
    const id = '/scale-health/up';
    const [sick] = await appWithSickTasks(id, 1, 1);
    expect((await o.call('PUT', `/v2/apps${id}`, { instances: 2 })).status).toBe(200);
    const a = await deploymentEnds(id);
    const fresh = (a.tasks as any[]).filter((t) => t.id !== sick);
    expect(a.tasks).toHaveLength(2);
    expect(fresh.map(alive)).toEqual([true]);
    expect(alive(a.tasks.find((t: any) => t.id === sick))).toBe(false);
    await o.call('DELETE', `/v2/apps${id}?force=true`);
  }, 60_000);

  it('scale-up still waits for a new task that is not healthy', async () => {
    const id = '/scale-health/up-waits';
    const [first] = await appWithSickTasks(id, 1, 0);
    const put = await o.call('PUT', `/v2/apps${id}`, { instances: 2 });
    expect(put.status).toBe(200);
    // The new task is made sick as soon as it exists: the deployment stays until it is healthy.
    const fresh = await waitFor(async () => ((await app(id)).tasks as any[]).find((t) => t.id !== first)?.id as string | undefined, {
      timeoutMs: 10_000,
      message: 'new task launched',
    });
    writeFileSync(join(marks, `sick.${fresh}`), '');
    await waitFor(async () => alive((await app(id)).tasks.find((t: any) => t.id === fresh)) === false, { timeoutMs: 10_000, message: 'new task unhealthy' });
    expect((await app(id)).deployments.map((d: any) => d.id)).toEqual([put.body.deploymentId]);
    expect((await o.call('PUT', `/v2/apps${id}`, { instances: 3 })).status).toBe(409);
    // Healthy again: the deployment ends.
    rmSync(join(marks, `sick.${fresh}`));
    await deploymentEnds(id);
    await o.call('DELETE', `/v2/apps${id}?force=true`);
  }, 60_000);

  it('scale-down waits for no health check', async () => {
    const id = '/scale-health/down';
    await appWithSickTasks(id, 2, 2);
    expect((await o.call('PUT', `/v2/apps${id}`, { instances: 1 })).status).toBe(200);
    const a = await deploymentEnds(id);
    expect(a.tasks).toHaveLength(1);
    expect(alive(a.tasks[0])).toBe(false);
    await o.call('DELETE', `/v2/apps${id}?force=true`);
  }, 60_000);
});
