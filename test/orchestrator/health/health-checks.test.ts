// Health checks (Marathon's rules, orchestrator/health/) against real local servers and real commands.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { Health } from '../../../orchestrator/health/health.ts';
import { HealthMonitor, type HealthMonitorOptions } from '../../../orchestrator/health/monitor.ts';
import { appIdOfTask, instanceIdOf } from '../../../orchestrator/tasks/ids.ts';
import { runCheck } from '../../../orchestrator/health/checks.ts';
import { healthCallbacks } from '../../../orchestrator/health/wire.ts';
import { EventBus } from '../../../orchestrator/events/bus.ts';
import { EventCatalogue } from '../../../orchestrator/events/catalogue.ts';
import type { HealthCheckDefinition } from '../../../orchestrator/health/types.ts';
import { ProcessExecutor } from '../../../orchestrator/tasks/executor.ts';
import { liveMembers } from '../../../orchestrator/tasks/process-group.ts';
import type { TaskStatusUpdate } from '../../../orchestrator/tasks/types.ts';
import { waitFor } from '../../helpers/wait.ts';
import { CLOSED_PORT, NODE, freePort, tempDir, removeTempDirs } from '../../helpers/process.ts';

function hc(over: Partial<HealthCheckDefinition>): HealthCheckDefinition {
  return {
    protocol: 'HTTP',
    path: '/health',
    portIndex: 0,
    gracePeriodSeconds: 0,
    intervalSeconds: 0.05,
    timeoutSeconds: 1,
    maxConsecutiveFailures: 0,
    ignoreHttp1xx: false,
    ...over,
  };
}

// A controllable local HTTP server: status per request, or no answer at all.
let status = 200;
let hang = false;
const hanging: http.ServerResponse[] = [];
const server = http.createServer((req, res) => {
  if (hang) {
    hanging.push(res);
    return;
  }
  res.writeHead(status, status === 302 ? { location: '/elsewhere' } : {});
  res.end(req.url);
});
let port = 0;

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as net.AddressInfo).port;
});
afterAll(async () => {
  for (const r of hanging) r.destroy();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const monitors: HealthMonitor[] = [];
afterEach(() => {
  for (const m of monitors.splice(0)) m.close();
  status = 200;
  hang = false;
  for (const r of hanging.splice(0)) r.destroy();
  removeTempDirs();
});

interface Recorded {
  failed: { cause: string; consecutiveFailures: number; at: number }[];
  changed: boolean[];
  instance: boolean[];
  kills: { reason: string }[];
  results: unknown[];
}

function monitor(extra: Partial<HealthMonitorOptions> = {}): { m: HealthMonitor; rec: Recorded } {
  const rec: Recorded = { failed: [], changed: [], instance: [], kills: [], results: [] };
  const m = new HealthMonitor({
    onFailedCheck: (e) => rec.failed.push({ cause: e.cause, consecutiveFailures: e.consecutiveFailures, at: Date.now() }),
    onHealthChanged: (e) => rec.changed.push(e.alive),
    onInstanceHealthChanged: (e) => rec.instance.push(e.healthy),
    onKill: (e) => rec.kills.push({ reason: e.reason }),
    onResult: (e) => rec.results.push(e.results),
    ...extra,
  });
  monitors.push(m);
  return { m, rec };
}

const TASK = { taskId: 'web.11111111-2222-11e4-b05e-56847afe9799', appId: '/web', version: '2026-11-21T00:00:00.000Z' };

describe("Health (Marathon's rules)", () => {
  const ctx = { running: true, runningSince: 0, gracePeriodSeconds: 10, maxConsecutiveFailures: 3 };
  it('ignores failures while not running, or before a first success during the grace period', () => {
    const h = new Health('i');
    expect(h.failure(1000, 'x', ctx)).toEqual({ counted: false, kill: false });
    expect(h.failure(20_000, 'x', { ...ctx, running: false })).toEqual({ counted: false, kill: false });
    expect(h.reported).toBe(false);
    h.success(2000);
    // after a success, failures count even within the grace period
    expect(h.failure(3000, '503 Service Unavailable', ctx).counted).toBe(true);
    expect(h.toJSON()).toMatchObject({
      alive: false,
      consecutiveFailures: 1,
      lastFailureCause: '503 Service Unavailable',
      firstSuccess: new Date(2000).toISOString(),
    });
  });

  it('resets the count on success; alive = lastSuccess later than lastFailure; kill on failure #max+1', () => {
    const h = new Health('i');
    const after = { ...ctx, gracePeriodSeconds: 0 };
    expect(h.failure(1, 'a', after)).toEqual({ counted: true, kill: false });
    expect(h.alive).toBe(false);
    h.success(2);
    expect(h.alive).toBe(true);
    expect(h.consecutiveFailures).toBe(0);
    expect(h.failure(3, 'a', after).kill).toBe(false);
    expect(h.failure(4, 'a', after).kill).toBe(false);
    expect(h.failure(5, 'a', after).kill).toBe(false);
    expect(h.failure(6, 'a', after).kill).toBe(true); // 4th = max + 1
    const noKill = new Health('j');
    for (let i = 0; i < 10; i++) expect(noKill.failure(i, 'a', { ...after, maxConsecutiveFailures: 0 }).kill).toBe(false);
  });
});

describe('runCheck against real servers', () => {
  it('HTTP: 200 and 3xx are healthy, 503 is unhealthy with the status line, path is used', async () => {
    expect(await runCheck(hc({}), { host: '127.0.0.1', ports: [port] })).toEqual({ kind: 'healthy' });
    status = 302;
    expect(await runCheck(hc({}), { host: '127.0.0.1', ports: [port] })).toEqual({ kind: 'healthy' });
    status = 503;
    expect(await runCheck(hc({}), { host: '127.0.0.1', ports: [port] })).toEqual({ kind: 'unhealthy', cause: '503 Service Unavailable' });
    status = 404;
    expect(await runCheck(hc({ path: 'x' }), { host: '127.0.0.1', ports: [port] })).toEqual({ kind: 'unhealthy', cause: '404 Not Found' });
  });

  it('HTTP: portIndex and port select the port; a closed port is refused', async () => {
    const closed = CLOSED_PORT;
    expect(await runCheck(hc({ portIndex: 1 }), { host: '127.0.0.1', ports: [closed, port] })).toEqual({ kind: 'healthy' });
    expect(await runCheck(hc({ port, portIndex: undefined }), { host: '127.0.0.1', ports: [] })).toEqual({ kind: 'healthy' });
    const r = await runCheck(hc({}), { host: '127.0.0.1', ports: [closed] });
    expect(r).toMatchObject({ kind: 'unhealthy' });
    expect((r as { cause: string }).cause).toMatch(/ECONNREFUSED/);
    expect(await runCheck(hc({ portIndex: 2 }), { host: '127.0.0.1', ports: [port] })).toEqual({ kind: 'unhealthy', cause: 'the task has no port at index 2' });
  });

  it('HTTP: a server that does not answer fails after timeoutSeconds', async () => {
    hang = true;
    const r = await runCheck(hc({ timeoutSeconds: 0.3 }), { host: '127.0.0.1', ports: [port] });
    expect(r).toEqual({ kind: 'unhealthy', cause: 'no answer within 300 ms' });
  });

  it('TCP: connect succeeds or is refused', async () => {
    expect(await runCheck(hc({ protocol: 'TCP' }), { host: '127.0.0.1', ports: [port] })).toEqual({ kind: 'healthy' });
    const r = await runCheck(hc({ protocol: 'TCP' }), { host: '127.0.0.1', ports: [await freePort()] });
    expect((r as { cause: string }).cause).toMatch(/ECONNREFUSED/);
  });

  let haveOpenssl = true;
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
  } catch {
    haveOpenssl = false;
  }
  it.skipIf(!haveOpenssl)('HTTPS: a self-signed certificate is accepted (no verification); 500 fails', async () => {
    const dir = tempDir('starmap-hc-tls-');
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem'), '-days', '1', '-subj', '/CN=localhost'],
      { stdio: 'ignore' },
    );
    let code = 200;
    const s = https.createServer({ key: readFileSync(join(dir, 'k.pem')), cert: readFileSync(join(dir, 'c.pem')) }, (_req, res) => {
      res.statusCode = code;
      res.end();
    });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    const p = (s.address() as net.AddressInfo).port;
    try {
      expect(await runCheck(hc({ protocol: 'HTTPS' }), { host: '127.0.0.1', ports: [p] })).toEqual({ kind: 'healthy' });
      code = 500;
      expect(await runCheck(hc({ protocol: 'HTTPS' }), { host: '127.0.0.1', ports: [p] })).toEqual({ kind: 'unhealthy', cause: '500 Internal Server Error' });
    } finally {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  it('COMMAND: runs in the sandbox with the task env; exit code decides', async () => {
    const dir = tempDir('starmap-hc-cmd-');
    const cmd = hc({ protocol: 'COMMAND', command: { value: '[ "$MARKER" = yes ] && test -f ok' } });
    const target = { host: '127.0.0.1', ports: [], env: { MARKER: 'yes' }, sandboxDir: dir };
    expect(await runCheck(cmd, target)).toEqual({ kind: 'unhealthy', cause: 'command exited with code 1' });
    writeFileSync(join(dir, 'ok'), '');
    expect(await runCheck(cmd, target)).toEqual({ kind: 'healthy' });
    expect(await runCheck(cmd, { ...target, env: { MARKER: 'no' } })).toEqual({ kind: 'unhealthy', cause: 'command exited with code 1' });
  });

  it('COMMAND: killed at its timeout with all its children; background leftovers of a passing check are killed too', async () => {
    const dir = tempDir('starmap-hc-cmd-');
    const slow = hc({ protocol: 'COMMAND', timeoutSeconds: 0.3, command: { value: 'echo $$ > pid; sleep 1000 & sleep 1000; wait' } });
    expect(await runCheck(slow, { host: '127.0.0.1', ports: [], sandboxDir: dir })).toEqual({ kind: 'unhealthy', cause: 'command timed out after 0.3 s' });
    expect(liveMembers(Number(readFileSync(join(dir, 'pid'), 'utf8')))).toEqual([]);
    const leaky = hc({ protocol: 'COMMAND', command: { value: 'echo $$ > pid2; sleep 1000 & exit 0' } });
    expect(await runCheck(leaky, { host: '127.0.0.1', ports: [], sandboxDir: dir })).toEqual({ kind: 'healthy' });
    expect(liveMembers(Number(readFileSync(join(dir, 'pid2'), 'utf8')))).toEqual([]);
  });
});

describe('task ids', () => {
  it('give Marathon instance ids and app ids, also when a segment of the app id holds dots', () => {
    expect(instanceIdOf('a_b.6f1c-11f1')).toBe('a_b.marathon-6f1c-11f1');
    expect(instanceIdOf('web.v2_api.6f1c-11f1')).toBe('web.v2_api.marathon-6f1c-11f1');
    expect(appIdOfTask('web.v2_api.6f1c-11f1')).toBe('/web.v2/api');
  });
});

describe('HealthMonitor', () => {
  it('a passing HTTP check: results in Marathon shape, alive and instance health events', async () => {
    const { m, rec } = monitor();
    m.add({ ...TASK, ports: [port] }, [hc({})]);
    await waitFor(() => rec.instance.length === 1);
    expect(rec.changed).toEqual([true]);
    expect(rec.instance).toEqual([true]);
    expect(m.isHealthy(TASK.taskId)).toBe(true);
    const [r] = m.healthCheckResults(TASK.taskId);
    expect(Object.keys(r!).sort()).toEqual([
      'alive',
      'consecutiveFailures',
      'firstSuccess',
      'instanceId',
      'lastFailure',
      'lastFailureCause',
      'lastSuccess',
      'taskId',
    ]);
    expect(r).toMatchObject({ alive: true, consecutiveFailures: 0, lastFailure: null, lastFailureCause: null, instanceId: instanceIdOf(TASK.taskId) });
    expect(r!.instanceId).toBe('web.marathon-11111111-2222-11e4-b05e-56847afe9799');
    expect(r!.taskId).toBe(TASK.taskId);
    expect(Date.parse(r!.firstSuccess!)).toBeLessThanOrEqual(Date.parse(r!.lastSuccess!));
    // Going bad: one counted failure flips alive and reports the status line.
    status = 503;
    await waitFor(() => rec.changed.length === 2);
    expect(rec.changed).toEqual([true, false]);
    expect(rec.instance).toEqual([true, false]);
    expect(m.healthCheckResults(TASK.taskId)[0]).toMatchObject({ alive: false, lastFailureCause: '503 Service Unavailable' });
    status = 200;
    await waitFor(() => rec.changed.length === 3);
    expect(m.healthCheckResults(TASK.taskId)[0]).toMatchObject({ alive: true, consecutiveFailures: 0 });
  });

  it('kills on failure number maxConsecutiveFailures + 1 and then stops checking', async () => {
    status = 503;
    let runs = 0;
    const { m, rec } = monitor({ runner: (d, t) => (runs++, runCheck(d, t)) });
    m.add({ ...TASK, ports: [port] }, [hc({ maxConsecutiveFailures: 2 })]);
    await waitFor(() => rec.kills.length === 1);
    expect(rec.failed.map((f) => f.consecutiveFailures)).toEqual([1, 2, 3]);
    expect(rec.kills).toEqual([{ reason: '503 Service Unavailable' }]);
    const runsAtKill = runs;
    // No more checks after the kill: wait for a check of a second task, which runs on the same timers.
    const { m: m2, rec: rec2 } = monitor();
    m2.add({ ...TASK, taskId: 'other.1', ports: [port] }, [hc({})]);
    await waitFor(() => rec2.failed.length >= 5);
    expect(runs).toBe(runsAtKill);
    expect(m.healthCheckResults(TASK.taskId)[0]).toMatchObject({ consecutiveFailures: 3, alive: false });
  });

  it('maxConsecutiveFailures 0 never kills', async () => {
    status = 503;
    const { m, rec } = monitor();
    m.add({ ...TASK, ports: [port] }, [hc({ maxConsecutiveFailures: 0 })]);
    await waitFor(() => rec.failed.length >= 6);
    expect(rec.kills).toEqual([]);
  });

  it('grace period: failures before a first success are not counted until it has passed', async () => {
    status = 503;
    let runs = 0;
    const { m, rec } = monitor({ runner: (d, t) => (runs++, runCheck(d, t)) });
    const since = Date.now();
    m.add({ ...TASK, ports: [port], runningSince: since }, [hc({ gracePeriodSeconds: 0.6, maxConsecutiveFailures: 1 })]);
    await waitFor(() => runs >= 3);
    // Checks ran inside the grace period, none was counted; nothing is shown yet.
    if (Date.now() < since + 600) {
      expect(rec.failed).toEqual([]);
      expect(m.healthCheckResults(TASK.taskId)).toEqual([]);
      expect(m.isHealthy(TASK.taskId)).toBeUndefined();
    }
    await waitFor(() => rec.kills.length === 1);
    expect(rec.failed.length).toBe(2);
    expect(rec.failed[0]!.at).toBeGreaterThanOrEqual(since + 600);
  });

  it('grace period does not protect a task that already succeeded once', async () => {
    const { m, rec } = monitor();
    m.add({ ...TASK, ports: [port] }, [hc({ gracePeriodSeconds: 300 })]);
    await waitFor(() => rec.changed.length === 1);
    status = 503;
    await waitFor(() => rec.failed.length >= 1);
    expect(rec.failed[0]!.cause).toBe('503 Service Unavailable');
  });

  it('failures are ignored while the task is not running', async () => {
    status = 503;
    let runs = 0;
    const { m, rec } = monitor({ runner: (d, t) => (runs++, runCheck(d, t)) });
    m.add({ ...TASK, ports: [port] }, [hc({})]);
    m.setRunning(TASK.taskId, false);
    await waitFor(() => runs >= 4);
    expect(rec.failed).toEqual([]);
  });

  it('several checks: the instance is healthy only when all are alive', async () => {
    const closed = await freePort();
    const { m, rec } = monitor();
    m.add({ ...TASK, ports: [port, closed] }, [hc({}), hc({ protocol: 'TCP', portIndex: 1 })]);
    await waitFor(() => m.healthCheckResults(TASK.taskId).length === 2);
    expect(m.isHealthy(TASK.taskId)).toBe(false);
    expect(rec.instance).toEqual([]);
    const srv = net.createServer((s) => s.destroy());
    await new Promise<void>((r) => srv.listen(closed, '127.0.0.1', () => r()));
    try {
      await waitFor(() => rec.instance.length === 1);
      expect(rec.instance).toEqual([true]);
    } finally {
      await new Promise((r) => srv.close(r));
    }
    m.remove(TASK.taskId);
    expect(m.healthCheckResults(TASK.taskId)).toEqual([]);
  });
});

describe('healthCallbacks (events and scheduler wiring)', () => {
  it('publishes Marathon events in order and asks for the kill', async () => {
    const events: { type: string; fields: Record<string, unknown>; ts: string | undefined }[] = [];
    const set: unknown[] = [];
    const killed: string[] = [];
    const bus = new EventBus();
    bus.subscribe(({ eventType, timestamp, ...fields }) => events.push({ type: eventType, fields, ts: timestamp }));
    const m = new HealthMonitor(
      healthCallbacks({
        events: new EventCatalogue(bus),
        setHealth: (_id, r) => set.push(r),
        kill: (id, reason) => killed.push(`${id}: ${reason}`),
        host: 'agent1',
        slaveId: 'S0',
      }),
    );
    monitors.push(m);
    m.add({ ...TASK, ports: [port] }, [hc({ maxConsecutiveFailures: 1 })]);
    await waitFor(() => events.some((e) => e.type === 'instance_health_changed_event'));
    status = 503;
    await waitFor(() => killed.length === 1);
    expect(events.map((e) => e.type)).toEqual([
      'health_status_changed_event',
      'instance_health_changed_event',
      'failed_health_check_event',
      'health_status_changed_event',
      'instance_health_changed_event',
      'failed_health_check_event',
      'unhealthy_task_kill_event',
      'unhealthy_instance_kill_event',
    ]);
    const instanceId = instanceIdOf(TASK.taskId);
    expect(events[0]!.fields).toEqual({ appId: '/web', instanceId, version: TASK.version, alive: true });
    expect(events[1]!.fields).toEqual({ instanceId, runSpecId: '/web', healthy: true, runSpecVersion: TASK.version });
    expect(events[2]!.fields).toMatchObject({ appId: '/web', taskId: TASK.taskId, instanceId, healthCheck: { protocol: 'HTTP' } });
    expect(events[7]!.fields).toEqual({
      appId: '/web',
      taskId: TASK.taskId,
      instanceId,
      version: TASK.version,
      reason: '503 Service Unavailable',
      host: 'agent1',
      slaveId: 'S0',
    });
    expect(events[7]!.ts).toBe(m.healthCheckResults(TASK.taskId)[0]!.lastFailure);
    expect(killed).toEqual([`${TASK.taskId}: 503 Service Unavailable`]);
    expect(set.length).toBeGreaterThanOrEqual(3);
  });
});

describe('health checks and the executor together', () => {
  it('a real task that turns unhealthy is killed through onKill, leaving no process', async () => {
    const ex = new ProcessExecutor();
    const updates: TaskStatusUpdate[] = [];
    ex.onStatus((u) => updates.push(u));
    const p = await freePort();
    const dir = join(tempDir('starmap-hc-task-'), 'sandbox');
    // Healthy until the file "sick" appears in the sandbox.
    const script = `require('http').createServer((q, s) => { s.statusCode = require('fs').existsSync('sick') ? 500 : 200; s.end(); }).listen(+process.env.PORT0, '127.0.0.1')`;
    ex.launch({
      taskId: 'svc.1',
      appId: '/svc',
      appVersion: 'v1',
      cmd: null,
      args: [NODE, '-e', script],
      env: { PORT0: String(p) },
      ports: [{ hostPort: p, declaredPort: 0, protocol: 'tcp' }],
      sandboxDir: dir,
      killGracePeriodSeconds: 1,
    });
    const running = await waitFor(() => updates.find((u) => u.state === 'TASK_RUNNING'));
    const kills: string[] = [];
    const { m, rec } = monitor({
      onKill: (e) => {
        kills.push(e.reason);
        void ex.kill(e.taskId, `unhealthy: ${e.reason}`);
      },
    });
    m.add({ taskId: 'svc.1', appId: '/svc', version: 'v1', ports: [p], runningSince: running.timestamp, sandboxDir: dir }, [
      hc({ path: '/', gracePeriodSeconds: 20, maxConsecutiveFailures: 1 }),
    ]);
    try {
      await waitFor(() => rec.instance[0] === true, { timeoutMs: 15_000 });
      writeFileSync(join(dir, 'sick'), '');
      const killed = await waitFor(() => updates.find((u) => u.state === 'TASK_KILLED'), { timeoutMs: 15_000 });
      expect(killed.message).toBe('Killed: unhealthy: 500 Internal Server Error');
      expect(kills).toEqual(['500 Internal Server Error']);
      expect(liveMembers(running.pid!)).toEqual([]);
      expect(existsSync(join(dir, 'stdout'))).toBe(true);
    } finally {
      await ex.shutdown();
    }
  });
});
