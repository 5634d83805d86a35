// The event sequence of an app's whole life, read from a REAL /v2/events connection on a real
// orchestrator program running real tasks (a tiny node HTTP server per task, health-checked over
// HTTP): create, scale, rolling restart, a failing health check, delete. Every event is checked field
// by field (documented fields only, plus eventType and timestamp) and orders are asserted only where
// Marathon guarantees them: within one deployment (deployment_info → deployment_step_success per
// step → deployment_success, then group_change_success, as the README's Events section places it) and per task
// (STAGING → STARTING → RUNNING → KILLED). Also: the
// repeatable event_type filter, attach/detach, and callback receivers that are slow, down, and back
// (plus, on an in-process bus with a small queue, one that answers slower than events arrive).
/* eslint-disable @typescript-eslint/no-explicit-any */
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, listen } from '../../../shared/http-server.ts';
import { EventBus } from '../../../orchestrator/events/bus.ts';
import { registerEvents } from '../../../orchestrator/events/routes.ts';
import { openDatabase } from '../../../orchestrator/storage/db.ts';
import { NODE, freePort, stopAll, tempDir } from '../../helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { waitFor } from '../../helpers/wait.ts';
import { openSse, type SseClient } from '../../orchestrator-events-sse-client.ts';

type Ev = { eventType: string; timestamp: string; [k: string]: any };

const APP = '/seq/web';
const APP_GROUP = '/seq';
const HC = { protocol: 'HTTP', path: '/health', portIndex: 0, gracePeriodSeconds: 60, intervalSeconds: 0.2, timeoutSeconds: 5, maxConsecutiveFailures: 2 };
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TASK_ID = /^seq_web\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TASK_STATUSES = [
  'TASK_STAGING',
  'TASK_STARTING',
  'TASK_RUNNING',
  'TASK_KILLING',
  'TASK_FINISHED',
  'TASK_FAILED',
  'TASK_KILLED',
  'TASK_LOST',
  'TASK_ERROR',
];
const CONDITION: Record<string, string> = {
  TASK_STAGING: 'Staging',
  TASK_STARTING: 'Starting',
  TASK_RUNNING: 'Running',
  TASK_KILLING: 'Killing',
  TASK_FINISHED: 'Finished',
  TASK_FAILED: 'Failed',
  TASK_KILLED: 'Killed',
  TASK_LOST: 'Gone',
  TASK_ERROR: 'Error',
};
const TERMINAL = new Set(['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR']);
const instanceIdOf = (taskId: string) => taskId.replace('.', '.marathon-');

// --- Field checks: every documented field with its type (Marathon 1.4's catalogue) ------------------

type Check = (v: any, e?: any) => boolean;
const str: Check = (v) => typeof v === 'string' && v !== '';
const iso: Check = (v) => typeof v === 'string' && ISO.test(v);
const bool: Check = (v) => typeof v === 'boolean';
const loopback: Check = (v) => v === '127.0.0.1';
const appPath: Check = (v) => v === APP;
const taskId: Check = (v) => typeof v === 'string' && TASK_ID.test(v);
const instanceId: Check = (v) => typeof v === 'string' && /^seq_web\.marathon-[0-9a-f-]{36}$/.test(v);
const obj: Check = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const healthCheck: Check = (v) => obj(v) && Object.entries(HC).every(([k, x]) => v[k] === x);
const action: Check = (v) =>
  obj(v) &&
  Object.keys(v).sort().join() === 'action,app' &&
  ['StartApplication', 'StopApplication', 'ScaleApplication', 'RestartApplication'].includes(v.action) &&
  str(v.app);
const step: Check = (v) => obj(v) && Object.keys(v).join() === 'actions' && Array.isArray(v.actions) && v.actions.length > 0 && v.actions.every(action);
const rootGroup: Check = (v) => obj(v) && v.id === '/' && Array.isArray(v.apps) && Array.isArray(v.groups) && Array.isArray(v.dependencies) && iso(v.version);
// 1.4 carries the full plan: id, version, steps, original and target root groups.
const plan: Check = (v) =>
  obj(v) &&
  UUID.test(v.id) &&
  iso(v.version) &&
  Array.isArray(v.steps) &&
  v.steps.every(step) &&
  rootGroup(v.original) &&
  rootGroup(v.target) &&
  Object.keys(v).sort().join() === 'id,original,steps,target,version';

const FIELDS: Record<string, Record<string, Check>> = {
  event_stream_attached: { remoteAddress: loopback },
  event_stream_detached: { remoteAddress: loopback },
  subscribe_event: { clientIp: loopback, callbackUrl: str },
  unsubscribe_event: { clientIp: loopback, callbackUrl: str },
  api_post_event: {
    clientIp: loopback,
    uri: (v) => v === '/v2/apps' || v === `/v2/apps${APP}`,
    appDefinition: (v) => obj(v) && v.id === APP && iso(v.version),
  },
  group_change_success: { groupId: (v) => typeof v === 'string' && (v === '/' || APP.startsWith(`${v}/`)), version: iso },
  deployment_info: { plan, currentStep: step },
  deployment_step_success: { plan, currentStep: step },
  deployment_success: { id: (v, e) => UUID.test(v) && v === e?.plan?.id, plan },
  add_health_check_event: { appId: appPath, version: iso, healthCheck },
  remove_health_check_event: { appId: appPath },
  status_update_event: {
    slaveId: str,
    taskId,
    taskStatus: (v) => TASK_STATUSES.includes(v),
    message: (v) => typeof v === 'string',
    appId: appPath,
    host: loopback,
    ipAddresses: (v) => Array.isArray(v) && v.every((a: any) => obj(a) && str(a.ipAddress) && ['IPv4', 'IPv6'].includes(a.protocol)),
    ports: (v) => Array.isArray(v) && v.length === 1 && Number.isInteger(v[0]) && v[0] >= 39500 && v[0] <= 39599,
    version: iso,
  },
  instance_changed_event: {
    instanceId,
    condition: (v) => Object.values(CONDITION).includes(v),
    runSpecId: appPath,
    agentId: str,
    host: loopback,
    runSpecVersion: iso,
  },
  instance_health_changed_event: { instanceId, runSpecId: appPath, healthy: (v) => v === null || typeof v === 'boolean', runSpecVersion: iso },
  health_status_changed_event: { appId: appPath, instanceId, version: iso, alive: bool },
  failed_health_check_event: { appId: appPath, taskId, instanceId: (v, e) => v === instanceIdOf(e?.taskId), healthCheck },
  unhealthy_task_kill_event: { appId: appPath, taskId, version: iso, reason: (v) => v === '503 Service Unavailable', host: loopback, slaveId: str },
  unhealthy_instance_kill_event: {
    appId: appPath,
    taskId,
    instanceId: (v, e) => v === instanceIdOf(e?.taskId),
    version: iso,
    reason: (v) => v === '503 Service Unavailable',
    host: loopback,
    slaveId: str,
  },
  app_terminated_event: { appId: (v) => v === APP || v === '/seq/plain' },
};

/** Exactly the documented fields plus eventType and timestamp, each of the right type/value. */
function expectShape(e: Ev): void {
  const fields = FIELDS[e.eventType];
  expect(fields, `an event type this sequence should not produce: ${JSON.stringify(e)}`).toBeDefined();
  expect(Object.keys(e).sort(), e.eventType).toEqual(['eventType', 'timestamp', ...Object.keys(fields!)].sort());
  expect(e.timestamp, `${e.eventType} timestamp`).toMatch(ISO);
  for (const [k, check] of Object.entries(fields!)) expect(check(e[k], e), `${e.eventType}.${k} = ${JSON.stringify(e[k])?.slice(0, 300)}`).toBe(true);
}

// --- The program, the task, the streams -------------------------------------------------------------

let o: StartedOrchestrator;
let all: SseClient; // everything
let filtered: SseClient; // ?event_type=status_update_event&event_type=deployment_success
let light: SseClient; // ?event_type=deployment_info&plan-format=light
let failDir: string;
const toClose: (() => void)[] = [];
const events = (c: SseClient = all): Ev[] => c.frames.map((f) => f.data as Ev);

interface Receiver {
  url: string;
  got: Ev[];
  close: () => Promise<void>;
}
/** A callback receiver on loopback that answers each POST after `delayMs` (0 = at once). */
async function receiver(delayMs = 0, port = 0): Promise<Receiver> {
  const got: Ev[] = [];
  const server: Server = createHttpServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      got.push(JSON.parse(body) as Ev);
      if (delayMs > 0) setTimeout(() => res.end(), delayMs);
      else res.end();
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const addr = server.address();
  const close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  toClose.push(() => void close());
  return { url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : port}/events`, got, close };
}
let fast: Receiver;
let slow: Receiver;
let downPort: number;

beforeAll(async () => {
  failDir = tempDir('evseq-');
  // The task: answers /health with 200, or 503 once a file named after its task id is in failDir.
  writeFileSync(
    join(failDir, 'server.cjs'),
    [
      "const http = require('node:http'), fs = require('node:fs'), path = require('node:path');",
      'const sick = path.join(process.env.FAIL_DIR, process.env.MESOS_TASK_ID);',
      "http.createServer((req, res) => { const bad = fs.existsSync(sick); res.statusCode = bad ? 503 : 200; res.end(bad ? 'sick' : 'ok'); }).listen(Number(process.env.PORT0), '127.0.0.1');",
      "process.on('SIGTERM', () => process.exit(0));",
    ].join('\n'),
  );
  o = await startOrchestrator(['--event_subscriber=http_callback', '--task-port-min=39500', '--task-port-max=39599']);
  all = await openSse(o.url, '/v2/events', o.authHeaders);
  filtered = await openSse(o.url, '/v2/events?event_type=status_update_event&event_type=deployment_success', o.authHeaders);
  light = await openSse(o.url, '/v2/events?event_type=deployment_info&plan-format=light', o.authHeaders);
  toClose.push(
    () => all.close(),
    () => filtered.close(),
    () => light.close(),
  );
  await waitFor(() => events().filter((e) => e.eventType === 'event_stream_attached').length === 3, { message: 'the streams attached' });
  // Callback receivers for the whole life: one fast, one slow (answers every POST after 30 ms,
  // well inside the 10 s timeout), one down (nothing listens on its port until the end).
  fast = await receiver();
  slow = await receiver(30);
  downPort = await freePort();
  for (const url of [fast.url, slow.url, `http://127.0.0.1:${downPort}/events`]) {
    expect((await o.call('POST', `/v2/eventSubscriptions?callbackUrl=${encodeURIComponent(url)}`)).status).toBe(200);
  }
}, 30_000);

afterAll(async () => {
  for (const c of toClose.splice(0)) c();
  await o?.proc.stop('SIGTERM');
  await stopAll();
});

// --- Helpers over the recorded stream ---------------------------------------------------------------

const idx = (list: Ev[], pred: (e: Ev) => boolean, from = 0) => {
  for (let i = from; i < list.length; i++) if (pred(list[i]!)) return i;
  return -1;
};
const of = (type: string) => (e: Ev) => e.eventType === type;
const statusOf = (task: string, status: string) => (e: Ev) => e.eventType === 'status_update_event' && e.taskId === task && e.taskStatus === status;
const deploymentDone = (id: string) =>
  waitFor(() => events().some((e) => e.eventType === 'deployment_success' && e.id === id), { timeoutMs: 20_000, message: `deployment_success of ${id}` });

/**
 * The deployment's own events, in stream order: deployment_info and deployment_step_success for each
 * step of the plan in turn, then deployment_success, then group_change_success with the deployment's
 * version and the app's group: the group change is signalled when the deployment
 * ends (Marathon 1.4 published it when the change was accepted; the README states the choice).
 */
function expectDeploymentOrder(list: Ev[], id: string, version: string, actions: string[][]): { infos: number[]; stepSuccesses: number[]; end: number } {
  const mine = list
    .map((e, i) => ({ e, i }))
    .filter(
      ({ e }) =>
        (['deployment_info', 'deployment_step_success', 'deployment_success'].includes(e.eventType) && e.plan?.id === id) ||
        (e.eventType === 'group_change_success' && e.version === version),
    );
  const types = mine.map(({ e }) => e.eventType);
  const core = actions.flatMap(() => ['deployment_info', 'deployment_step_success']).concat('deployment_success');
  expect(types, 'deployment event order').toEqual([...core, 'group_change_success']);
  expect(mine.at(-1)!.e.groupId, "an app change carries the app's group").toBe(APP_GROUP);
  const body = mine.filter(({ e }) => e.eventType !== 'group_change_success');
  for (const { e } of body) {
    expect(e.plan.version).toBe(version);
    expect(e.plan.steps.map((s: any) => s.actions.map((a: any) => `${a.action} ${a.app}`))).toEqual(actions);
  }
  actions.forEach((step, n) => {
    for (const { e } of body.slice(2 * n, 2 * n + 2)) expect(e.currentStep.actions.map((a: any) => `${a.action} ${a.app}`)).toEqual(step);
  });
  return {
    infos: body.filter(({ e }) => e.eventType === 'deployment_info').map(({ i }) => i),
    stepSuccesses: body.filter(({ e }) => e.eventType === 'deployment_step_success').map(({ i }) => i),
    end: body.at(-1)!.i,
  };
}

/** Per task: statuses only move forward (STAGING → STARTING → RUNNING → KILLING → terminal), terminal once and last. */
function expectTaskOrders(list: Ev[]): void {
  const rank: Record<string, number> = { TASK_STAGING: 0, TASK_STARTING: 1, TASK_RUNNING: 2, TASK_KILLING: 3 };
  const byTask = new Map<string, string[]>();
  for (const e of list) if (e.eventType === 'status_update_event') byTask.set(e.taskId, [...(byTask.get(e.taskId) ?? []), e.taskStatus]);
  for (const [task, seq] of byTask) {
    expect(seq[0], `${task} starts staging`).toBe('TASK_STAGING');
    const r = seq.map((s) => (TERMINAL.has(s) ? 9 : rank[s]!));
    expect(r, `${task}: ${seq.join(' → ')}`).toEqual([...r].sort((a, b) => a - b));
    expect(new Set(seq).size, `${task} repeats a status: ${seq.join(' → ')}`).toBe(seq.length);
    expect(
      seq.slice(0, -1).some((s) => TERMINAL.has(s)),
      `${task}: nothing after a terminal status`,
    ).toBe(false);
  }
}

/** Each status_update_event has its instance_changed_event: same instance, condition, version. */
function expectInstanceChanges(list: Ev[]): void {
  const changes = list.filter(of('instance_changed_event'));
  for (const u of list.filter(of('status_update_event'))) {
    expect(
      changes.some(
        (c) => c.instanceId === instanceIdOf(u.taskId) && c.condition === CONDITION[u.taskStatus] && c.runSpecVersion === u.version && c.agentId === u.slaveId,
      ),
      `instance_changed_event for ${u.taskId} ${u.taskStatus}`,
    ).toBe(true);
  }
}

const healthyAt = (list: Ev[], task: string, from = 0) =>
  idx(list, (e) => e.eventType === 'instance_health_changed_event' && e.instanceId === instanceIdOf(task) && e.healthy === true, from);
const aliveAt = (list: Ev[], task: string, alive: boolean, from = 0) =>
  idx(list, (e) => e.eventType === 'health_status_changed_event' && e.instanceId === instanceIdOf(task) && e.alive === alive, from);

// --- The life of one app -------------------------------------------------------------------------

let created: { deploymentId: string; version: string };
let firstTask: string;
let liveTasks: string[] = [];
let scaleEvents: { list: Ev[]; version: string } = { list: [], version: '' };

describe("the events of an app's life on a real orchestrator", () => {
  it('(a) create: api_post_event, the Start and Scale steps in order, the task staged → running → healthy before the step succeeds', async () => {
    const start = events().length;
    const r = await o.call('POST', '/v2/apps', {
      id: APP,
      cmd: `exec ${NODE} ${join(failDir, 'server.cjs')}`,
      env: { FAIL_DIR: failDir },
      instances: 1,
      healthChecks: [HC],
    });
    expect(r.status).toBe(201);
    created = { deploymentId: r.body.deployments[0].id, version: r.body.version };
    await deploymentDone(created.deploymentId);
    const list = events().slice(start);
    const { infos, stepSuccesses } = expectDeploymentOrder(list, created.deploymentId, created.version, [
      [`StartApplication ${APP}`],
      [`ScaleApplication ${APP}`],
    ]);

    const post = list.filter(of('api_post_event'));
    expect(post).toHaveLength(1);
    expect(post[0]).toMatchObject({
      clientIp: '127.0.0.1',
      uri: '/v2/apps',
      appDefinition: { id: APP, instances: 1, version: created.version, healthChecks: [HC] },
    });

    // Health checks are registered for the new version when the deployment starts.
    const add = list.filter(of('add_health_check_event'));
    expect(add).toHaveLength(1);
    expect(add[0]).toMatchObject({ appId: APP, version: created.version });
    expect(idx(list, of('add_health_check_event'))).toBeGreaterThan(infos[0]!);

    const staged = list.filter((e) => e.eventType === 'status_update_event' && e.taskStatus === 'TASK_STAGING');
    expect(staged).toHaveLength(1);
    firstTask = staged[0]!.taskId;
    expect(staged[0]).toMatchObject({ appId: APP, version: created.version, host: '127.0.0.1', ipAddresses: [] });
    // The task is launched by the Scale step and counted only once healthy (it has health checks).
    const stagingAt = idx(list, statusOf(firstTask, 'TASK_STAGING'));
    const runningAt = idx(list, statusOf(firstTask, 'TASK_RUNNING'));
    expect(stagingAt).toBeGreaterThan(infos[1]!);
    expect(runningAt).toBeGreaterThan(stagingAt);
    const startingAt = idx(list, statusOf(firstTask, 'TASK_STARTING'));
    if (startingAt >= 0) {
      expect(startingAt).toBeGreaterThan(stagingAt);
      expect(startingAt).toBeLessThan(runningAt);
    }
    const healthy = healthyAt(list, firstTask);
    expect(healthy).toBeGreaterThan(runningAt);
    expect(aliveAt(list, firstTask, true)).toBeGreaterThan(runningAt);
    expect(healthy).toBeLessThan(stepSuccesses[1]!);
    expect(list[healthy]).toMatchObject({ runSpecId: APP, runSpecVersion: created.version, healthy: true });
    expect(list[aliveAt(list, firstTask, true)]).toMatchObject({ appId: APP, version: created.version });
    // The ports in the status updates are the task's ports.
    const task = (await o.call('GET', `/v2/apps${APP}`)).body.app.tasks[0];
    expect(task.id).toBe(firstTask);
    expect(list[runningAt]!.ports).toEqual(task.ports);
    // appDefinition is the full app JSON: what GET /v2/apps/{id} shows without the status fields,
    // but with the service ports as submitted (0), like the 201 answer (Marathon posts the app it echoes).
    const {
      tasks: _t,
      deployments: _d,
      tasksStaged: _s,
      tasksRunning: _r,
      tasksHealthy: _h,
      tasksUnhealthy: _u,
      lastTaskFailure: _f,
      ...definition
    } = (await o.call('GET', `/v2/apps${APP}`)).body.app;
    expect(definition.ports).toEqual([expect.any(Number)]);
    expect(post[0]!.appDefinition).toEqual({ ...definition, ports: [0], portDefinitions: [{ ...definition.portDefinitions[0], port: 0 }] });
    expect(post[0]!.appDefinition.ports).toEqual(r.body.ports);
    liveTasks = [firstTask];
  });

  it('(b) scale to 2: api_post_event, one Scale step, one new task running and healthy, the old one untouched', async () => {
    const start = events().length;
    const r = await o.call('PUT', `/v2/apps${APP}`, { instances: 2 });
    expect(r.status).toBe(200);
    await deploymentDone(r.body.deploymentId);
    const list = events().slice(start);
    const { infos, stepSuccesses } = expectDeploymentOrder(list, r.body.deploymentId, r.body.version, [[`ScaleApplication ${APP}`]]);
    scaleEvents = { list, version: r.body.version };
    expect(list.filter(of('api_post_event')).map((e) => [e.uri, e.appDefinition.instances, e.appDefinition.version])).toEqual([
      [`/v2/apps${APP}`, 2, r.body.version],
    ]);
    const staged = list.filter((e) => e.eventType === 'status_update_event' && e.taskStatus === 'TASK_STAGING');
    expect(staged.map((e) => e.version)).toEqual([r.body.version]);
    const fresh = staged[0]!.taskId as string;
    expect(idx(list, statusOf(fresh, 'TASK_STAGING'))).toBeGreaterThan(infos[0]!);
    expect(healthyAt(list, fresh)).toBeGreaterThan(idx(list, statusOf(fresh, 'TASK_RUNNING')));
    expect(healthyAt(list, fresh)).toBeLessThan(stepSuccesses[0]!);
    expect(list.some((e) => e.eventType === 'status_update_event' && e.taskId === firstTask)).toBe(false);
    liveTasks = [firstTask, fresh];
  });

  // Marathon's DeploymentActor calls healthCheckManager.addAllFor(app) for every action of a step,
  // and a scale gives the app a new version, so the checks are registered (add_health_check_event)
  // for that version too.
  it('(b) scale: add_health_check_event for the new app version', () => {
    expect(scaleEvents.list.length).toBeGreaterThan(0);
    expect(scaleEvents.list.filter(of('add_health_check_event'))).toEqual([
      expect.objectContaining({ appId: APP, version: scaleEvents.version, healthCheck: expect.objectContaining(HC) }),
    ]);
  });

  it('(c) rolling restart: each old task is killed only after a new one is healthy (alive=true), never fewer than 2 healthy', async () => {
    const restartStart = events().length;
    const r = await o.call('POST', `/v2/apps${APP}/restart`);
    expect(r.status).toBe(200);
    await deploymentDone(r.body.deploymentId);
    const list = events().slice(restartStart);
    expectDeploymentOrder(list, r.body.deploymentId, r.body.version, [[`RestartApplication ${APP}`]]);
    // The checks of the new version are registered; a restart is not an api_post_event (Marathon: only POST/PUT/PATCH).
    expect(list.filter(of('add_health_check_event')).map((e) => e.version)).toEqual([r.body.version]);
    expect(list.filter(of('api_post_event'))).toEqual([]);
    // Once no task runs the old version, its check is removed: after the last old kill, before the step succeeds.
    const removed = list.findIndex(of('remove_health_check_event'));
    expect(list.filter(of('remove_health_check_event'))).toEqual([expect.objectContaining({ appId: APP })]);
    expect(removed).toBeLessThan(list.findIndex((e) => e.eventType === 'deployment_step_success' && e.plan.id === r.body.deploymentId));
    const news = [...new Set(list.filter((e) => e.eventType === 'status_update_event' && e.version === r.body.version).map((e) => e.taskId as string))];
    expect(news).toHaveLength(2);
    const kills = liveTasks.map((t) => idx(list, statusOf(t, 'TASK_KILLED'))).sort((a, b) => a - b);
    expect(
      kills.every((k) => k >= 0),
      'both old tasks killed',
    ).toBe(true);
    const healthies = news.map((t) => healthyAt(list, t)).sort((a, b) => a - b);
    const alives = news.map((t) => aliveAt(list, t, true)).sort((a, b) => a - b);
    // The k-th old kill comes after the k-th new task turned healthy.
    kills.forEach((k, n) => {
      expect(healthies[n], `new task #${n + 1} healthy before old kill #${n + 1}`).toBeLessThan(k);
      expect(alives[n]).toBeLessThan(k);
    });
    for (const t of news) expect(list[healthyAt(list, t)]).toMatchObject({ runSpecVersion: r.body.version });
    // minimumHealthCapacity 1: at every point of the stream at least 2 instances are healthy.
    const healthy = new Set(liveTasks.map(instanceIdOf));
    for (const e of list) {
      if (e.eventType === 'instance_health_changed_event') {
        if (e.healthy) healthy.add(e.instanceId);
        else healthy.delete(e.instanceId);
      }
      if (e.eventType === 'status_update_event' && TERMINAL.has(e.taskStatus)) healthy.delete(instanceIdOf(e.taskId));
      expect(healthy.size, `healthy instances after ${e.eventType} ${e.taskStatus ?? ''}`).toBeGreaterThanOrEqual(2);
    }
    liveTasks = news;
  });

  it('(d) a failing HTTP check: failed_health_check_event ×3, alive=false, both kill events, TASK_KILLED, and a healthy replacement', async () => {
    const start = events().length;
    const victim = liveTasks[0]!;
    writeFileSync(join(failDir, victim), 'sick');
    await waitFor(() => idx(events(), statusOf(victim, 'TASK_KILLED'), start) >= 0, { timeoutMs: 15_000, message: `${victim} killed` });
    const replacement = await waitFor(
      () => {
        const list = events().slice(start);
        const s = list.find((e) => e.eventType === 'status_update_event' && e.taskStatus === 'TASK_STAGING' && !liveTasks.includes(e.taskId));
        return s && healthyAt(list, s.taskId) >= 0 ? (s.taskId as string) : undefined;
      },
      { timeoutMs: 15_000, message: 'a healthy replacement' },
    );
    const list = events().slice(start);
    const failed = list.filter((e) => e.eventType === 'failed_health_check_event');
    // Kill on failure #(maxConsecutiveFailures + 1), then the checks of that task stop.
    expect(failed.map((e) => e.taskId)).toEqual([victim, victim, victim]);
    expect(failed[0]).toMatchObject({ appId: APP, instanceId: instanceIdOf(victim), healthCheck: HC });
    const down = list.filter((e) => e.eventType === 'health_status_changed_event' && e.alive === false);
    expect(down).toEqual([expect.objectContaining({ appId: APP, instanceId: instanceIdOf(victim), alive: false })]);
    expect(list.filter((e) => e.eventType === 'instance_health_changed_event' && e.healthy === false)).toEqual([
      expect.objectContaining({ instanceId: instanceIdOf(victim), runSpecId: APP }),
    ]);
    const taskKill = list.filter(of('unhealthy_task_kill_event'));
    const instanceKill = list.filter(of('unhealthy_instance_kill_event'));
    expect(taskKill).toHaveLength(1);
    expect(instanceKill).toHaveLength(1);
    const victimStatus = list.find(statusOf(victim, 'TASK_KILLED'))!;
    const expected = {
      appId: APP,
      taskId: victim,
      version: victimStatus.version,
      reason: '503 Service Unavailable',
      host: '127.0.0.1',
      slaveId: victimStatus.slaveId,
    };
    expect(taskKill[0]).toEqual({ ...expected, eventType: 'unhealthy_task_kill_event', timestamp: taskKill[0]!.timestamp });
    expect(instanceKill[0]).toEqual({
      ...expected,
      instanceId: instanceIdOf(victim),
      eventType: 'unhealthy_instance_kill_event',
      timestamp: instanceKill[0]!.timestamp,
    });
    // Marathon stamps the kill events with the time of the last failure: not after the third failure was announced.
    expect(Date.parse(instanceKill[0]!.timestamp)).toBeLessThanOrEqual(Date.parse(failed[2]!.timestamp));
    // Order: the failures, then the kill events, then the task's TASK_KILLED.
    const lastFailure = list.lastIndexOf(failed[2]!);
    const killEvents = Math.max(list.indexOf(taskKill[0]!), list.indexOf(instanceKill[0]!));
    expect(lastFailure).toBeLessThan(list.indexOf(taskKill[0]!));
    expect(lastFailure).toBeLessThan(list.indexOf(instanceKill[0]!));
    expect(aliveAt(list, victim, false)).toBeLessThan(killEvents);
    expect(killEvents).toBeLessThan(idx(list, statusOf(victim, 'TASK_KILLED')));
    // The replacement is launched after the kill decision, without a deployment, on the current version.
    expect(idx(list, statusOf(replacement, 'TASK_STAGING'))).toBeGreaterThan(killEvents);
    expect(list.find(statusOf(replacement, 'TASK_STAGING'))!.version).toBe(victimStatus.version);
    expect(list.filter((e) => e.eventType.startsWith('deployment_') || e.eventType === 'group_change_success')).toEqual([]);
    liveTasks = [liveTasks[1]!, replacement];
  });

  it('(e) delete: one Stop step, remove_health_check_event, TASK_KILLED for both tasks before the step succeeds, app_terminated_event', async () => {
    const start = events().length;
    const r = await o.call('DELETE', `/v2/apps${APP}`);
    expect(r.status).toBe(200);
    await deploymentDone(r.body.deploymentId);
    await waitFor(() => events().slice(start).some(of('app_terminated_event')), { message: 'app_terminated_event' });
    const list = events().slice(start);
    const { stepSuccesses } = expectDeploymentOrder(list, r.body.deploymentId, r.body.version, [[`StopApplication ${APP}`]]);
    // Marathon 1.4 publishes no api_post_event for a DELETE (it publishes one for POST, PUT and PATCH).
    expect(list.filter(of('api_post_event'))).toEqual([]);
    expect(list.filter(of('remove_health_check_event'))).toEqual([expect.objectContaining({ appId: APP })]);
    expect(list.filter(of('app_terminated_event'))).toEqual([expect.objectContaining({ appId: APP })]);
    for (const t of liveTasks) {
      const killed = idx(list, statusOf(t, 'TASK_KILLED'));
      expect(killed, `${t} killed`).toBeGreaterThanOrEqual(0);
      // The Stop step ends when its tasks are gone.
      expect(killed).toBeLessThan(stepSuccesses[0]!);
    }
    expect((await o.call('GET', `/v2/apps${APP}`)).status).toBe(404);
  });

  it('every event of the whole life has exactly its documented fields, each of the right type', () => {
    const list = events();
    const types = new Set(list.map((e) => e.eventType));
    for (const t of [
      'api_post_event',
      'group_change_success',
      'deployment_info',
      'deployment_step_success',
      'deployment_success',
      'add_health_check_event',
      'remove_health_check_event',
      'status_update_event',
      'instance_changed_event',
      'instance_health_changed_event',
      'health_status_changed_event',
      'failed_health_check_event',
      'unhealthy_task_kill_event',
      'unhealthy_instance_kill_event',
      'app_terminated_event',
      'subscribe_event',
      'event_stream_attached',
    ]) {
      expect(types, t).toContain(t);
    }
    for (const e of list) expectShape(e);
    // The SSE event line names the same type as the JSON.
    for (const f of all.frames) expect(f.event).toBe((f.data as Ev).eventType);
    expectTaskOrders(list);
    expectInstanceChanges(list);
    // Every task went through STAGING and RUNNING and ended KILLED: 1 created, 1 scaled, 2 restarted, 1 replacement.
    const tasks = new Set(list.filter(of('status_update_event')).map((e) => e.taskId));
    expect(tasks.size).toBe(5);
    for (const t of tasks) for (const s of ['TASK_STAGING', 'TASK_RUNNING', 'TASK_KILLED']) expect(list.some(statusOf(t as string, s)), `${t} ${s}`).toBe(true);
    // Timestamps never go backwards by more than a clock tick within the stream (the kill events carry the earlier failure time).
    const stamps = list.filter((e) => !e.eventType.startsWith('unhealthy_')).map((e) => Date.parse(e.timestamp));
    stamps.forEach((s, i) => i > 0 && expect(s).toBeGreaterThanOrEqual(stamps[i - 1]!));
  });

  it('a repeated event_type filter gets exactly those types, in the same order and the same JSON as the full stream', async () => {
    const want = () =>
      events()
        .filter((e) => e.eventType === 'status_update_event' || e.eventType === 'deployment_success')
        .map((e) => JSON.stringify(e));
    await waitFor(() => filtered.frames.length === want().length, { message: 'filtered stream caught up' });
    expect(want().length).toBeGreaterThan(20);
    expect(filtered.frames.map((f) => JSON.stringify(f.data))).toEqual(want());
  });

  it('?plan-format=light drops plan.original and plan.target, and nothing else', async () => {
    const want = () => events().filter(of('deployment_info'));
    await waitFor(() => light.frames.length === want().length, { message: 'light stream caught up' });
    expect(want().length).toBeGreaterThanOrEqual(5);
    light.frames.forEach((f, i) => {
      const { original: _o, target: _t, ...rest } = want()[i]!.plan;
      expect(f.data).toEqual({ ...want()[i], plan: rest });
    });
  });

  it('attaching and detaching are announced to every stream, subject to its filter, with remoteAddress', async () => {
    const watch = await openSse(o.url, '/v2/events?event_type=event_stream_attached&event_type=event_stream_detached', o.authHeaders);
    toClose.push(() => watch.close());
    await waitFor(() => watch.frames.length === 1, { message: 'own attach' });
    const before = events().length;
    const other = await openSse(o.url, '/v2/events?event_type=nothing_matches', o.authHeaders);
    await waitFor(() => watch.frames.length === 2, { message: 'other attach' });
    other.close();
    await waitFor(() => watch.frames.length === 3, { message: 'other detach' });
    expect(watch.frames.map((f) => f.event)).toEqual(['event_stream_attached', 'event_stream_attached', 'event_stream_detached']);
    for (const f of watch.frames) expectShape(f.data as Ev);
    await waitFor(() => events().slice(before).some(of('event_stream_detached')), { message: 'the full stream saw the detach' });
    expect(other.frames).toEqual([]);
    // A filtered client does not get its own attach event unless it asked for it.
    expect(filtered.frames.some((f) => f.event.startsWith('event_stream_'))).toBe(false);
  });

  let plainEvents: Ev[] = [];
  let plainDeployment = '';
  it('an app without health checks: no add_health_check_event', async () => {
    const keep = await o.call('POST', '/v2/apps', { id: '/other/keep', cmd: 'exec sleep 1000', instances: 0 });
    expect(keep.status).toBe(201);
    await deploymentDone(keep.body.deployments[0].id);
    const start = events().length;
    const r = await o.call('POST', '/v2/apps', { id: '/seq/plain', cmd: 'exec sleep 1000', instances: 1 });
    plainDeployment = r.body.deployments[0].id;
    expect(r.status).toBe(201);
    await deploymentDone(r.body.deployments[0].id);
    const d = await o.call('DELETE', '/v2/apps/seq/plain');
    await deploymentDone(d.body.deploymentId);
    await waitFor(
      () =>
        events()
          .slice(start)
          .some((e) => e.eventType === 'app_terminated_event' && e.appId === '/seq/plain'),
      { message: 'app_terminated_event' },
    );
    plainEvents = events().slice(start);
    expect(plainEvents.filter(of('add_health_check_event'))).toEqual([]);
  });

  // Marathon's removeAllFor publishes one remove_health_check_event per active check, so none for
  // an app without checks.
  it('an app without health checks: no remove_health_check_event when it is deleted', () => {
    expect(plainEvents.some(of('app_terminated_event'))).toBe(true);
    expect(plainEvents.filter(of('remove_health_check_event'))).toEqual([]);
  });

  // plan.original and plan.target are root Group snapshots (as Marathon's deployment events carry them): the whole
  // tree, apps inside their groups, so a client mirroring state from them keeps /other/keep.
  it('deployment events carry the whole root group as plan.original and plan.target', () => {
    const info = plainEvents.find((e) => e.eventType === 'deployment_info' && e.plan.id === plainDeployment)!;
    const appIds = (g: any): string[] => [...(g.apps ?? []).map((a: any) => a.id as string), ...(g.groups ?? []).flatMap(appIds)];
    expect(appIds(info.plan.target).sort()).toEqual(['/other/keep', '/seq/plain']);
    expect(appIds(info.plan.original)).toEqual(['/other/keep']);
    expect(info.plan.target.apps).toEqual([]);
    expect(info.plan.target.groups.map((g: any) => g.id).sort()).toEqual(['/other', '/seq']);
  });
});

describe('callback receivers during the same life', () => {
  const sinceSubscribe = (got: Ev[], url: string) => {
    const list = events();
    const from = idx(list, (e) => e.eventType === 'subscribe_event' && e.callbackUrl === url);
    return list.slice(from, from + got.length);
  };

  it('a fast receiver gets every event from its subscription on, in stream order, as the same JSON', async () => {
    await waitFor(() => fast.got.some((e) => e.eventType === 'app_terminated_event' && e.appId === '/seq/plain'), { message: 'fast receiver caught up' });
    expect(fast.got[0]).toMatchObject({ eventType: 'subscribe_event', callbackUrl: fast.url, clientIp: '127.0.0.1' });
    await waitFor(() => sinceSubscribe(fast.got, fast.url).length === fast.got.length, { message: 'the stream has what the receiver has' });
    expect(fast.got.map((e) => JSON.stringify(e))).toEqual(sinceSubscribe(fast.got, fast.url).map((e) => JSON.stringify(e)));
    expect(fast.got.length).toBeGreaterThan(100);
  });

  it('a slow receiver (30 ms per answer, inside the timeout) still gets every event, in order, none skipped', async () => {
    await waitFor(() => slow.got.some((e) => e.eventType === 'app_terminated_event' && e.appId === '/seq/plain'), {
      timeoutMs: 20_000,
      message: 'slow receiver caught up',
    });
    expect(slow.got[0]).toMatchObject({ eventType: 'subscribe_event', callbackUrl: slow.url });
    await waitFor(() => sinceSubscribe(slow.got, slow.url).length === slow.got.length, { message: 'the stream has what the receiver has' });
    expect(slow.got.map((e) => JSON.stringify(e))).toEqual(sinceSubscribe(slow.got, slow.url).map((e) => JSON.stringify(e)));
    // The same events as the fast one from the slow one's subscription on.
    const fromSlow = fast.got.findIndex((e) => e.eventType === 'subscribe_event' && e.callbackUrl === slow.url);
    expect(slow.got.map((e) => JSON.stringify(e))).toEqual(fast.got.slice(fromSlow, fromSlow + slow.got.length).map((e) => JSON.stringify(e)));
  });

  it('a receiver that was down gets new events once it is back, and none of those it missed', async () => {
    const url = `http://127.0.0.1:${downPort}/events`;
    expect((await o.call('GET', '/v2/eventSubscriptions')).body.callbackUrls).toContain(url);
    const back = await receiver(0, downPort);
    expect(back.url).toBe(url);
    // Its back-off is at most a few seconds (2^n s after n failures): poke the bus until it delivers.
    let pokes = 0;
    await waitFor(
      async () => {
        const c = await openSse(o.url, '/v2/events?event_type=none', o.authHeaders);
        c.close();
        pokes++;
        return back.got.length > 0;
      },
      { timeoutMs: 20_000, intervalMs: 250, message: 'delivery to the receiver that came back' },
    );
    expect(pokes).toBeGreaterThan(0);
    for (const e of back.got) expect(e.eventType.startsWith('event_stream_'), `only events after its return, got ${e.eventType}`).toBe(true);
    // Events published while it was down were skipped, not queued and replayed.
    expect(back.got.some((e) => e.eventType === 'status_update_event' || e.eventType === 'subscribe_event')).toBe(false);
  });
});

describe('a receiver that answers, but slower than events arrive (in-process bus, queue of 5)', () => {
  it('is backed off when its queue overflows (those events skipped, none reordered), never holds up a fast one, and gets events again', async () => {
    const bus = new EventBus();
    const db = openDatabase(tempDir('evseq-db-'));
    const app = createServer({ logger: pino({ level: 'silent' }) });
    const h = registerEvents(app, {
      bus,
      db,
      eventSubscriber: 'http_callback',
      callbacks: { timeoutMs: 2_000, backoffUnitMs: 50, maxBackoffMs: 200, maxQueue: 5 },
    });
    try {
      const url = await listen(app, '127.0.0.1', 0);
      const lagging = await receiver(100);
      const quick = await receiver();
      for (const r of [lagging, quick])
        expect((await fetch(`${url}/v2/eventSubscriptions?callbackUrl=${encodeURIComponent(r.url)}`, { method: 'POST' })).status).toBe(200);
      const ns = (r: Receiver) => r.got.filter(of('status_update_event')).map((e) => e.n as number);
      // Paced by the fast receiver (one event in flight each): far faster than 100 ms per answer.
      for (let n = 0; n < 30; n++) {
        bus.publish('status_update_event', { n });
        await waitFor(() => ns(quick).length === n + 1, { intervalMs: 2, message: `the fast receiver got event ${n}` });
      }
      expect(ns(quick)).toEqual(Array.from({ length: 30 }, (_, i) => i));
      await waitFor(() => h.dispatcher!.state(lagging.url)!.failed >= 1, { message: 'queue overflow counted as a failure' });
      expect(h.dispatcher!.state(lagging.url)!.skipped).toBeGreaterThan(0);
      expect(h.dispatcher!.state(quick.url)).toMatchObject({ failed: 0, skipped: 0 });
      // What the lagging one got is in order, with a gap instead of unbounded queueing.
      const got = ns(lagging);
      expect(got.length).toBeLessThan(30);
      expect(got).toEqual([...got].sort((a, b) => a - b));
      await waitFor(
        () => {
          bus.publish('app_terminated_event', { appId: '/after-overflow' });
          return lagging.got.some((e) => e.appId === '/after-overflow');
        },
        { intervalMs: 150, timeoutMs: 5_000, message: 'delivery resumed after the back-off' },
      );
    } finally {
      await app.close();
      db.close();
    }
  });
});
