// The parts the scheduler ties together, each on its own: the apps API's path split
// (api/apps.ts appPath), the task tracker (counts, health, readiness, scale-down order), the group
// manager (versions, service ports, implied groups; with a real SQLite store), the check of a
// change (deployment/change.ts) and the JSON formats (formats/json.ts).
import { afterAll, describe, expect, it } from 'vitest';
import { appPath } from '../orchestrator/api/apps.ts';
import { commonGroupOf, planChange } from '../orchestrator/deployment/change.ts';
import { deploymentJson, taskJson, textListing } from '../orchestrator/formats/json.ts';
import { parseApp, type AppDefinition } from '../orchestrator/state/app-definition.ts';
import { openDatabase } from '../orchestrator/storage/db.ts';
import { GroupManager } from '../orchestrator/group/manager.ts';
import { Store, type StoredDeployment, type TaskRecord } from '../orchestrator/storage/store.ts';
import { TaskTracker, killOrder, type HealthResult } from '../orchestrator/tasks/tracker.ts';
import { removeTempDirs, tempDir } from './helpers/process.ts';

afterAll(removeTempDirs);

const T0 = '2024-05-01T10:00:00.000Z';

function app(id: string, extra: Record<string, unknown> = {}): AppDefinition {
  const a = parseApp({ id, cmd: 'sleep 1000', ...extra }, { now: T0 });
  return { ...a, versionInfo: { lastScalingAt: T0, lastConfigChangeAt: T0 } };
}

/** One health check's result for a task. */
function result(taskId: string, alive: boolean): HealthResult {
  return {
    alive,
    consecutiveFailures: alive ? 0 : 1,
    firstSuccess: null,
    lastFailure: null,
    lastSuccess: null,
    lastFailureCause: null,
    instanceId: taskId,
    taskId,
  };
}

let seq = 0;
function task(appId: string, state: TaskRecord['state'], extra: Partial<TaskRecord> = {}): TaskRecord {
  seq++;
  return {
    id: `${appId.slice(1)}.${seq}`,
    appId,
    state,
    stagedAt: `2024-05-01T10:00:0${seq % 10}.000Z`,
    startedAt: null,
    version: T0,
    configVersion: T0,
    host: 'h',
    ports: [31000 + seq],
    servicePorts: [],
    slaveId: 's',
    ...extra,
  };
}

describe('appPath: what a path under /v2/apps/ names', () => {
  it('splits app ids that span segments from the resource beneath them', () => {
    expect(appPath('a/b/c')).toEqual({ kind: 'app', id: 'a/b/c' });
    expect(appPath('a/b/c/')).toEqual({ kind: 'app', id: 'a/b/c' });
    expect(appPath('a/b/versions')).toEqual({ kind: 'versions', id: 'a/b' });
    expect(appPath('a/b/versions/2024-05-01T10:00:00.000Z')).toEqual({ kind: 'version', id: 'a/b', extra: '2024-05-01T10:00:00.000Z' });
    expect(appPath('a/b/tasks')).toEqual({ kind: 'tasks', id: 'a/b' });
    expect(appPath('a/b/tasks/a_b.1%')).toEqual({ kind: 'task', id: 'a/b', extra: 'a_b.1%' });
    expect(appPath('a/b/restart')).toEqual({ kind: 'restart', id: 'a/b' });
    expect(appPath('a/*')).toEqual({ kind: 'group', id: 'a/' });
    expect(appPath('*')).toEqual({ kind: 'group', id: '' });
    expect(appPath('a/*/tasks')).toEqual({ kind: 'tasks', id: 'a/*' });
  });
});

describe('TaskTracker', () => {
  it('keeps tasks by app, counts staged/running/healthy/unhealthy, and forgets a removed task with its results', () => {
    const tracker = new TaskTracker(() => undefined);
    const web = app('/web', { instances: 2, healthChecks: [{ protocol: 'HTTP', path: '/' }] });
    const a = task('/web', 'TASK_RUNNING');
    const b = task('/web', 'TASK_STAGING');
    const c = task('/db', 'TASK_RUNNING');
    for (const t of [a, b, c]) tracker.add(t);
    expect(tracker.appTasks('/web').map((t) => t.id)).toEqual([a.id, b.id]);
    expect(tracker.countOf('/db')).toBe(1);
    expect(tracker.counts('/web')).toEqual({ tasksStaged: 1, tasksRunning: 1, tasksHealthy: 0, tasksUnhealthy: 0 });
    expect(tracker.isHealthy(a, web)).toBe(false); // no result yet
    expect(tracker.setHealth(a.id, [result(a.id, true)])).toBe(true);
    expect(tracker.setHealth(a.id, [result(a.id, true)])).toBe(false); // no change in health: no reconcile needed
    expect(tracker.isHealthy(a, web)).toBe(true);
    expect(tracker.setHealth(b.id, [result(b.id, false)])).toBe(false);
    expect(tracker.counts('/web')).toEqual({ tasksStaged: 1, tasksRunning: 1, tasksHealthy: 1, tasksUnhealthy: 1 });
    tracker.remove(b);
    expect(tracker.health.has(b.id)).toBe(false);
    expect(tracker.appTasks('/web').map((t) => t.id)).toEqual([a.id]);
    expect(tracker.setHealth(b.id, [result(b.id, true)])).toBe(false); // gone: ignored
    expect([...tracker.byApp()].map(([id]) => id)).toEqual(['/web', '/db']);
    tracker.readiness.close();
  });

  it('writes what changed in one batch: new and changed tasks, removals, failures of apps that still exist', () => {
    const db = openDatabase(tempDir());
    const store = new Store(db);
    const tracker = new TaskTracker(() => undefined);
    const a = task('/web', 'TASK_STAGING');
    const b = task('/web', 'TASK_STAGING');
    tracker.add(a);
    tracker.add(b);
    tracker.recordFailure('/web', { appId: '/web', message: 'boom' });
    tracker.recordFailure('/gone', { appId: '/gone', message: 'boom' });
    expect(tracker.dirty).toBe(true);
    store.tx(() => tracker.flushInto(store, (id) => id === '/web'));
    expect(tracker.dirty).toBe(false);
    expect(
      store
        .loadTasks()
        .map((t) => t.id)
        .sort(),
    ).toEqual([a.id, b.id].sort());
    expect([...store.loadFailures()].map(([id]) => id)).toEqual(['/web']);
    tracker.remove(a);
    store.tx(() => tracker.flushInto(store, () => true));
    expect(store.loadTasks().map((t) => t.id)).toEqual([b.id]);
    tracker.readiness.close();
    db.close();
  });

  it('scale-down order: staging before starting before running, then youngest (or oldest) first', () => {
    const run1 = task('/x', 'TASK_RUNNING', { stagedAt: '2024-05-01T10:00:01.000Z' });
    const run2 = task('/x', 'TASK_RUNNING', { stagedAt: '2024-05-01T10:00:02.000Z' });
    const staging = task('/x', 'TASK_STAGING', { stagedAt: '2024-05-01T10:00:00.000Z' });
    const starting = task('/x', 'TASK_STARTING', { stagedAt: '2024-05-01T10:00:00.000Z' });
    const all = [run1, run2, staging, starting];
    expect(killOrder(all, app('/x')).map((t) => t.id)).toEqual([staging.id, starting.id, run2.id, run1.id]);
    expect(killOrder(all, app('/x', { killSelection: 'OLDEST_FIRST' })).map((t) => t.id)).toEqual([staging.id, starting.id, run1.id, run2.id]);
  });
});

describe('GroupManager', () => {
  it('gives strictly increasing versions; a scale keeps lastConfigChangeAt, a change or restart moves it', () => {
    const db = openDatabase(tempDir());
    const groups = new GroupManager(new Store(db), { min: 10000, max: 10003 });
    const versions = Array.from({ length: 50 }, () => groups.newVersion());
    expect(new Set(versions).size).toBe(50);
    expect([...versions].sort()).toEqual(versions);
    const first = groups.versioned(undefined, app('/a'), false, 'v1');
    expect(first.versionInfo).toEqual({ lastScalingAt: 'v1', lastConfigChangeAt: 'v1' });
    const scaled = groups.versioned(first, { ...first, instances: 3 }, false, 'v2');
    expect(scaled.versionInfo).toEqual({ lastScalingAt: 'v2', lastConfigChangeAt: 'v1' });
    expect(groups.versioned(first, { ...first, cmd: 'sleep 2' }, false, 'v3').versionInfo).toEqual({ lastScalingAt: 'v3', lastConfigChangeAt: 'v3' });
    expect(groups.versioned(first, first, true, 'v4').versionInfo).toEqual({ lastScalingAt: 'v4', lastConfigChangeAt: 'v4' });
    db.close();
  });

  it('assigns the lowest free service ports in [min, max), skipping ports of other apps and of the same change; 422 when none is left', () => {
    const db = openDatabase(tempDir());
    const groups = new GroupManager(new Store(db), { min: 10000, max: 10003 });
    groups.apply([{ id: '/a', target: { ...app('/a'), portDefinitions: [{ port: 10000, protocol: 'tcp' }], ports: [10000] } as AppDefinition }], {
      put: [],
      remove: [],
    });
    const b = app('/b', { portDefinitions: [{ port: 0 }] });
    const c = { ...app('/c', { portDefinitions: [{ port: 0 }] }), ports: [10001] } as AppDefinition;
    const out = groups.assignServicePorts(b, [{ id: '/c', target: c }]);
    expect(out.ports).toEqual([10002]);
    expect(b.portDefinitions?.[0]?.port).toBe(0); // the input is not changed
    const many = app('/d', { portDefinitions: [{ port: 0 }, { port: 0 }, { port: 0 }] });
    expect(() => groups.assignServicePorts(many, [])).toThrow(/All ports in the range \[10000-10003\) are already in use/);
    db.close();
  });

  it('a change writes records for the groups new apps need; the groups apps imply exist', () => {
    const db = openDatabase(tempDir());
    const groups = new GroupManager(new Store(db), { min: 10000, max: 10100 });
    const changes = [{ id: '/p/q/a', target: app('/p/q/a') }];
    const g = groups.targetGroups(changes, {}, 'v1');
    expect(g.put.map((x) => x.id)).toEqual(['/', '/p', '/p/q']);
    groups.apply(changes, g);
    expect(groups.groupExists('/p')).toBe(true);
    expect(groups.groupExists('/p/q')).toBe(true);
    expect(groups.groupExists('/p/q/a')).toBe(false); // an app is not a group
    expect(groups.groupExists('/r')).toBe(false);
    expect(groups.targetGroups([{ id: '/p/q/b', target: app('/p/q/b') }], {}, 'v2').put).toEqual([]);
    db.close();
  });
});

describe('checking a change (deployment/change.ts)', () => {
  it('the deepest group that holds every changed app', () => {
    expect(commonGroupOf(['/a/b/x', '/a/b/y'])).toBe('/a/b');
    expect(commonGroupOf(['/a/b/x', '/a/c/y'])).toBe('/a');
    expect(commonGroupOf(['/x'])).toBe('/');
    expect(commonGroupOf([])).toBe('/');
  });

  it('refuses an app where a group is (422), plans the rest with the groups it touches', () => {
    const apps = new Map<string, AppDefinition>();
    const groups = new Map([['/g', { id: '/g', dependencies: [], version: T0 }]]);
    expect(() =>
      planChange(apps, groups, { changes: [{ id: '/g', target: app('/g') }], groups: { put: [], remove: [] }, version: 'v1', groupId: '/' }),
    ).toThrow(/Object is not valid/);
    const r = planChange(apps, groups, {
      changes: [{ id: '/g/a', target: app('/g/a') }],
      groups: { put: [{ id: '/h', dependencies: [], version: 'v1' }], remove: [] },
      version: 'v1',
      groupId: '/g',
      snapshotGroup: '/g',
    });
    expect(r.plan.steps.map((s) => s.actions.map((a) => a.action))).toEqual([['StartApplication'], ['ScaleApplication']]);
    expect(r.plan.originalGroups).toEqual({ '/h': null });
    expect(r.snapshot?.apps.map((a) => a.id)).toEqual(['/g/a']);
  });
});

describe('JSON formats', () => {
  it('a task with its health results and service ports; the plain-text listing; a deployment with readiness results', () => {
    const t = task('/web', 'TASK_RUNNING', { servicePorts: [10000] });
    expect(taskJson(t, undefined)).not.toHaveProperty('healthCheckResults');
    expect(taskJson(t, [result(t.id, true)]).healthCheckResults).toEqual([result(t.id, true)]);
    expect(taskJson(t, undefined, false)).not.toHaveProperty('servicePorts');
    const web = { ...app('/web'), ports: [10000] } as AppDefinition;
    expect(textListing([web], () => [t])).toBe(`web\t10000\th:${t.ports[0]}\t\n`);
    const d = {
      id: 'd1',
      version: T0,
      affectedApps: ['/web'],
      steps: [{ actions: [{ action: 'RestartApplication', app: '/web' }] }],
      currentStep: 0,
    } as unknown as StoredDeployment;
    const json = deploymentJson(d, () => [{ name: 'r', taskId: t.id, ready: true }]);
    expect(json.currentStep).toBe(1);
    expect(json.currentActions).toEqual([
      {
        action: 'RestartApplication',
        app: '/web',
        readinessCheckResults: [{ name: 'r', taskId: t.id, ready: true }],
        readinessChecks: [{ name: 'r', taskId: t.id, ready: true }],
      },
    ]);
  });
});
