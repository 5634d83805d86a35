// Rolling restarts with several upgrade strategies: the capacity bounds hold at every moment
// (the task list is polled continuously while the deployment runs).
/* eslint-disable @typescript-eslint/no-explicit-any */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopAll } from '../../helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { waitFor } from '../../helpers/wait.ts';

let o: StartedOrchestrator;
beforeAll(async () => {
  o = await startOrchestrator(['--task-port-min=35000', '--task-port-max=35999']);
}, 30_000);
afterAll(async () => {
  await o?.proc.stop('SIGTERM');
  await stopAll();
});

const settled = (id: string, n: number, cmd: string) =>
  waitFor(
    async () => {
      const app = (await o.call('GET', `/v2/apps${id}`)).body.app;
      return app.deployments.length === 0 &&
        app.tasks.length === n &&
        app.tasks.every((t: any) => t.state === 'TASK_RUNNING' && t.version >= app.versionInfo.lastConfigChangeAt) &&
        app.cmd === cmd
        ? app
        : undefined;
    },
    { timeoutMs: 30_000, message: `${id} settled` },
  );

const cases: [number, number, number][] = [
  // [minimumHealthCapacity, maximumOverCapacity, instances]
  [1, 1, 4],
  [1, 0, 4],
  [0.5, 0, 4],
  [0.5, 0.5, 4],
  [0, 0, 3],
];

describe('rolling restart', () => {
  for (const [mhc, moc, n] of cases) {
    it(`minimumHealthCapacity=${mhc} maximumOverCapacity=${moc} with ${n} instances`, async () => {
      const id = `/roll/m${String(mhc).replace('.', '')}-o${String(moc).replace('.', '')}`;
      const cmd1 = 'exec sleep 1001';
      expect(
        (await o.call('POST', '/v2/apps', { id, cmd: cmd1, instances: n, upgradeStrategy: { minimumHealthCapacity: mhc, maximumOverCapacity: moc } })).status,
      ).toBe(201);
      const before = await settled(id, n, cmd1);
      const minHealthy = Math.ceil(n * mhc);
      let maxCapacity = Math.floor(n * (1 + moc));
      if (minHealthy === maxCapacity) maxCapacity += 1;
      const cmd2 = 'exec sleep 1002';
      const put = await o.call('PUT', `/v2/apps${id}`, { cmd: cmd2 });
      expect(put.status).toBe(200);
      const dep = ((await o.call('GET', '/v2/deployments')).body as any[]).find((d) => d.id === put.body.deploymentId);
      if (dep) expect(dep.steps).toEqual([{ actions: [{ action: 'RestartApplication', app: id }] }]);
      let samples = 0;
      let peak = 0;
      let low = Infinity;
      for (;;) {
        const app = (await o.call('GET', `/v2/apps${id}`)).body.app;
        const tasks = app.tasks as any[];
        const up = tasks.filter((t) => t.state === 'TASK_RUNNING').length;
        samples++;
        peak = Math.max(peak, tasks.length);
        low = Math.min(low, up);
        expect(tasks.length, `at sample ${samples}`).toBeLessThanOrEqual(maxCapacity);
        expect(up, `at sample ${samples}`).toBeGreaterThanOrEqual(minHealthy);
        if (app.deployments.length === 0) break;
      }
      const after = await settled(id, n, cmd2);
      expect(after.tasks.every((t: any) => !before.tasks.some((b: any) => b.id === t.id))).toBe(true);
      expect(samples).toBeGreaterThan(0);
      expect(low).toBeGreaterThanOrEqual(minHealthy);
      await o.call('DELETE', `/v2/apps${id}`);
    }, 60_000);
  }

  it('restart endpoint replaces every task; scale down kills the youngest first', async () => {
    const id = '/roll/again';
    await o.call('POST', '/v2/apps', { id, cmd: 'exec sleep 1003', instances: 3 });
    const before = await settled(id, 3, 'exec sleep 1003');
    const r = await o.call('POST', `/v2/apps${id}/restart`);
    expect(r.status).toBe(200);
    const after = await settled(id, 3, 'exec sleep 1003');
    expect(after.tasks.some((t: any) => before.tasks.some((b: any) => b.id === t.id))).toBe(false);
    expect(after.versionInfo.lastConfigChangeAt).toBe(r.body.version);
    const sorted = [...after.tasks].sort((a: any, b: any) => a.stagedAt.localeCompare(b.stagedAt));
    await o.call('PUT', `/v2/apps${id}`, { instances: 1 });
    const scaled = await settled(id, 1, 'exec sleep 1003');
    expect(scaled.tasks[0].id).toBe(sorted[0].id);
  }, 60_000);
});
