// Tasks run for real: environment, ports, replacement with back-off, lastTaskFailure, kills.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopAll, tempDir } from '../../helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { waitFor } from '../../helpers/wait.ts';

let o: StartedOrchestrator;
let out: string;
beforeAll(async () => {
  out = tempDir('orch-out-');
  o = await startOrchestrator(['--task-port-min=34000', '--task-port-max=34999']);
}, 30_000);
afterAll(async () => {
  await o?.proc.stop('SIGTERM');
  await stopAll();
});

const running = (id: string, n: number) =>
  waitFor(
    async () => {
      const app = (await o.call('GET', `/v2/apps${id}`)).body.app;
      return app && app.tasks.length === n && app.tasks.every((t: any) => t.state === 'TASK_RUNNING') && app.deployments.length === 0 ? app : undefined;
    },
    { timeoutMs: 20_000, message: `${id} running ${n}` },
  );

describe('tasks', () => {
  it("gives each task Marathon's environment and host ports from the range", async () => {
    const r = await o.call('POST', '/v2/apps', {
      id: '/env/app',
      cmd: `env > ${out}/$MESOS_TASK_ID.env; exec sleep 1000`,
      instances: 1,
      cpus: 0.5,
      mem: 64,
      portDefinitions: [{ port: 0, name: 'http' }, { port: 0 }],
      labels: { 'my-label': 'v1' },
      env: { EXTRA: 'yes', HOST: 'overridden' },
    });
    expect(r.status).toBe(201);
    const app = await running('/env/app', 1);
    const t = app.tasks[0];
    const file = join(out, `${t.id}.env`);
    await waitFor(() => existsSync(file) && readFileSync(file, 'utf8').includes('EXTRA='), { timeoutMs: 10_000 });
    const env = Object.fromEntries(
      readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(t.ports).toHaveLength(2);
    for (const p of t.ports) expect(p >= 34000 && p <= 34999).toBe(true);
    expect(env).toMatchObject({
      PORT0: String(t.ports[0]),
      PORT1: String(t.ports[1]),
      PORT: String(t.ports[0]),
      PORTS: `${t.ports[0]},${t.ports[1]}`,
      PORT_HTTP: String(t.ports[0]),
      MESOS_TASK_ID: t.id,
      MARATHON_APP_ID: '/env/app',
      MARATHON_APP_VERSION: app.version,
      MARATHON_APP_RESOURCE_CPUS: '0.5',
      MARATHON_APP_RESOURCE_MEM: '64.0',
      MARATHON_APP_RESOURCE_DISK: '0.0',
      MARATHON_APP_LABELS: 'MY_LABEL',
      MARATHON_APP_LABEL_MY_LABEL: 'v1',
      EXTRA: 'yes',
      HOST: 'overridden',
    });
    expect(env[`PORT_${t.ports[1]}`]).toBe(String(t.ports[1]));
    expect(t.id.startsWith('env_app.')).toBe(true);
  });

  it('honours requirePorts and hostname constraints', async () => {
    const r = await o.call('POST', '/v2/apps', {
      id: '/fixed',
      cmd: 'exec sleep 1000',
      instances: 2,
      requirePorts: true,
      portDefinitions: [{ port: 34555 }],
      constraints: [['hostname', 'UNIQUE']],
    });
    expect(r.status).toBe(201);
    const app = await waitFor(
      async () => {
        const a = (await o.call('GET', '/v2/apps/fixed')).body.app;
        return a.tasksRunning === 1 ? a : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(app.tasks[0].ports).toEqual([34555]);
    expect(app.ports).toEqual([34555]);
    const q = await waitFor(async () => ((await o.call('GET', '/v2/queue')).body.queue as any[]).find((e) => e.app.id === '/fixed'), { timeoutMs: 5000 });
    expect(q.count).toBe(1);
    expect(app.deployments).toHaveLength(1);
    expect((await o.call('DELETE', '/v2/apps/fixed')).status).toBe(200);
  });

  it('replaces a task that exits, with growing back-off, and records lastTaskFailure', async () => {
    const r = await o.call('POST', '/v2/apps', {
      id: '/crashy',
      cmd: 'exit 3',
      instances: 1,
      backoffSeconds: 0.5,
      backoffFactor: 2,
      maxLaunchDelaySeconds: 10,
    });
    expect(r.status).toBe(201);
    const seen: number[] = [];
    await waitFor(
      async () => {
        const f = (await o.call('GET', '/v2/apps/crashy')).body.app.lastTaskFailure;
        if (f) {
          const ts = Date.parse(f.timestamp);
          if (!seen.includes(ts)) seen.push(ts);
        }
        return seen.length >= 4;
      },
      { timeoutMs: 20_000, intervalMs: 20, message: 'four failures' },
    );
    const gaps = seen.slice(1).map((t, i) => (t - seen[i]!) / 1000);
    // delays 0.5, 1, 2 (+ launch time)
    expect(gaps[0]).toBeGreaterThanOrEqual(0.45);
    expect(gaps[1]).toBeGreaterThanOrEqual(0.95);
    expect(gaps[2]).toBeGreaterThanOrEqual(1.95);
    expect(gaps[2]).toBeLessThan(4);
    const f = (await o.call('GET', '/v2/apps/crashy')).body.app.lastTaskFailure;
    expect(f).toMatchObject({ appId: '/crashy', state: 'TASK_FAILED', host: '127.0.0.1' });
    expect(f.message).toMatch(/exited with (code|status) 3/);
    expect(Object.keys(f).sort()).toEqual(['appId', 'host', 'message', 'slaveId', 'state', 'taskId', 'timestamp', 'version']);
    const q = await waitFor(async () => ((await o.call('GET', '/v2/queue')).body.queue as any[]).find((e) => e.app.id === '/crashy'), { timeoutMs: 10_000 });
    expect(q.count).toBe(1);
    expect(typeof q.delay.overdue).toBe('boolean');
    // A config change resets the back-off: the fixed app runs.
    expect((await o.call('PUT', '/v2/apps/crashy?force=true', { cmd: 'exec sleep 1000' })).status).toBe(200);
    await running('/crashy', 1);
  }, 40_000);

  it('a killed task is replaced at once (Killed does not grow the back-off)', async () => {
    const app = (await o.call('GET', '/v2/apps/crashy')).body.app;
    const old = app.tasks[0].id;
    await o.call('DELETE', `/v2/apps/crashy/tasks/${old}`);
    await waitFor(async () => (await o.call('GET', '/v2/apps/crashy')).body.app.tasks.every((t: any) => t.id !== old), { timeoutMs: 10_000 });
    const again = await running('/crashy', 1);
    expect(again.tasks[0].id).not.toBe(old);
    expect(((await o.call('GET', '/v2/queue')).body.queue as any[]).find((e) => e.app.id === '/crashy')).toBeUndefined();
  });

  it('deleting an app kills its tasks and their children', async () => {
    const marker = `${out}/child.pid`;
    await o.call('POST', '/v2/apps', { id: '/parent', cmd: `sh -c 'echo $$ > ${marker}; exec sleep 1000' & wait`, instances: 1 });
    await running('/parent', 1);
    await waitFor(() => existsSync(marker) && readFileSync(marker, 'utf8').trim() !== '', { timeoutMs: 10_000 });
    const child = Number(readFileSync(marker, 'utf8').trim());
    expect(() => process.kill(child, 0)).not.toThrow();
    const d = await o.call('DELETE', '/v2/apps/parent');
    expect(d.status).toBe(200);
    await waitFor(
      () => {
        try {
          process.kill(child, 0);
          return false;
        } catch {
          return true;
        }
      },
      { timeoutMs: 15_000, message: 'child process gone' },
    );
    await waitFor(async () => ((await o.call('GET', '/v2/tasks')).body.tasks as any[]).every((t) => t.appId !== '/parent'), { timeoutMs: 10_000 });
  });
});
