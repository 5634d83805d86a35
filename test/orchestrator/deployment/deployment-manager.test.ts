// The deployment manager on its own (orchestrator/deployment/manager.ts): fast, no processes. It is
// given a read-only view of the apps, a real task tracker, the event catalogue over a real bus, a
// real launcher (test/helpers/launcher.ts) over an executor that records what it is asked to start,
// and a kill that records what it is asked to kill and marks the task as the scheduler's does.
// pass() is one reconcile pass as the scheduler runs it: a new launch budget, the deployments'
// progress, then the pass's launches started.
import { afterEach, describe, expect, it } from 'vitest';
import { DeploymentManager } from '../../../orchestrator/deployment/manager.ts';
import { buildPlan } from '../../../orchestrator/deployment/plan.ts';
import { EventBus } from '../../../orchestrator/events/bus.ts';
import { EventCatalogue } from '../../../orchestrator/events/catalogue.ts';
import { configVersionOf } from '../../../orchestrator/state/app-update.ts';
import { parseApp, type AppDefinition } from '../../../orchestrator/state/app-definition.ts';
import type { GroupRecord } from '../../../orchestrator/state/group.ts';
import type { TaskRecord } from '../../../orchestrator/storage/store.ts';
import { Conflict } from '../../../orchestrator/errors.ts';
import { RecordingExecutor, launcherRig } from '../../helpers/launcher.ts';
import { removeTempDirs } from '../../helpers/process.ts';

afterEach(removeTempDirs);

const V1 = '2026-01-01T00:00:00.000Z';
const V2 = '2026-01-01T00:00:01.000Z';

function app(id: string, instances: number, version: string, def: Record<string, unknown> = {}): AppDefinition {
  const a = parseApp({ id, cmd: 'sleep 1000', instances, ...def }, { now: version });
  return { ...a, version, versionInfo: { lastScalingAt: version, lastConfigChangeAt: version } };
}

function task(a: AppDefinition, n: number): TaskRecord {
  return {
    id: `${a.id.slice(1)}.${n}`,
    appId: a.id,
    state: 'TASK_RUNNING',
    stagedAt: a.version,
    startedAt: a.version,
    version: a.version,
    configVersion: configVersionOf(a),
    host: '127.0.0.1',
    ports: [],
    servicePorts: [],
    slaveId: 'local-agent-S0',
  };
}

function setup() {
  const apps = new Map<string, AppDefinition>();
  const groups = new Map<string, GroupRecord>();
  const log: string[] = [];
  const executor = new RecordingExecutor(log);
  const { launcher, tracker } = launcherRig({ executor, log });
  const bus = new EventBus();
  const events: { eventType: string }[] = [];
  bus.subscribe((e) => events.push(e as { eventType: string }));
  const asked: string[] = [];
  const kill = (t: TaskRecord, reason: string) => {
    asked.push(`kill ${t.id} (${reason})`);
    t.killing = true;
  };
  const manager = new DeploymentManager({ groups: { apps, groups }, tracker, events: new EventCatalogue(bus), launcher, kill });
  const pass = () => {
    launcher.newPass();
    const progress = manager.progress();
    launcher.startPending();
    return progress;
  };
  /** The executor reports a task running. */
  const running = (t: TaskRecord) => {
    t.state = 'TASK_RUNNING';
    tracker.changed(t);
  };
  /** A killed task is gone (TASK_KILLED): the scheduler forgets it and the launcher releases it. */
  const gone = (t: TaskRecord) => {
    tracker.remove(t);
    launcher.release(t);
  };
  return { apps, tracker, launcher, executor, events, asked, manager, pass, running, gone };
}

describe('the deployment manager', () => {
  it('runs a new app to its instances through the launcher, holds its lock until they run, and reports success', () => {
    const { apps, tracker, executor, events, manager, pass, running } = setup();
    const web = app('/web', 2, V1);
    const plan = buildPlan(
      [{ id: web.id, target: web }],
      () => undefined,
      V1,
      () => 1,
      '/',
    );
    apps.set(web.id, web);
    manager.start(plan);
    // Step 1 starts the app (nothing to wait for) and says a next step started; step 2 scales it
    // to its instances: the launcher makes them and they are started at the end of the pass.
    expect(pass()).toEqual({ busy: new Set(['/web']), stepStarted: true });
    expect(tracker.countOf(web.id)).toBe(0);
    expect(pass()).toEqual({ busy: new Set(['/web']), stepStarted: false });
    const tasks = tracker.appTasks(web.id);
    expect(tasks.map((t) => [t.state, t.version])).toEqual([
      ['TASK_STAGING', V1],
      ['TASK_STAGING', V1],
    ]);
    expect(executor.launched.map((s) => s.taskId)).toEqual(tasks.map((t) => t.id));
    expect(() => manager.checkLocks(['/web'], false)).toThrow(Conflict);
    // Not yet running: held, and nothing more is launched.
    expect(pass().busy).toEqual(new Set(['/web']));
    expect(tracker.countOf(web.id)).toBe(2);
    for (const t of tasks) running(t);
    expect(pass().busy).toEqual(new Set());
    expect(manager.size).toBe(0);
    expect(() => manager.checkLocks(['/web'], false)).not.toThrow();
    expect(events.map((e) => e.eventType)).toContain('group_change_success');
  });

  it('scales an app down by killing its surplus (youngest first) and finishes once those are gone', () => {
    const { apps, tracker, executor, asked, manager, pass, gone } = setup();
    const before = app('/web', 3, V1);
    const after = { ...before, instances: 1, version: V2, versionInfo: { lastScalingAt: V2, lastConfigChangeAt: V1 } };
    const ts = [1, 2, 3].map((n) => ({ ...task(before, n), stagedAt: `2026-01-01T00:00:0${n}.000Z` }));
    for (const t of ts) tracker.add(t);
    apps.set(after.id, after);
    const plan = buildPlan(
      [{ id: after.id, target: after }],
      () => before,
      V2,
      () => 1,
      '/',
    );
    expect(plan.steps).toEqual([{ actions: [{ action: 'ScaleApplication', app: '/web' }] }]);
    manager.start(plan);
    pass();
    expect(asked).toEqual(['kill web.3 (scaling down)', 'kill web.2 (scaling down)']);
    expect(executor.launched).toEqual([]);
    pass();
    expect(asked).toHaveLength(2); // asked once
    expect(manager.size).toBe(1);
    gone(ts[2]!);
    gone(ts[1]!);
    pass();
    expect(manager.size).toBe(0);
  });

  it('restarts an app rolling: its launch delay forgotten, new tasks from the launcher, an old one killed for each new one running', () => {
    const { apps, tracker, launcher, asked, manager, pass, running, gone } = setup();
    const before = app('/web', 2, V1);
    const after = app('/web', 2, V2, { cmd: 'sleep 2000' });
    const olds = [task(before, 1), task(before, 2)];
    for (const t of olds) tracker.add(t);
    launcher.backOff(after, configVersionOf(after)); // a failure of the new configuration already
    apps.set(after.id, after);
    const plan = buildPlan(
      [{ id: after.id, target: after }],
      () => before,
      V2,
      () => 1,
      '/',
    );
    expect(plan.steps).toEqual([{ actions: [{ action: 'RestartApplication', app: '/web' }] }]);
    manager.start(plan);
    pass();
    expect(launcher.delayOf(after.id)).toBeUndefined();
    // minimumHealthCapacity 1, maximumOverCapacity 1: no old one killed at once, both new ones launched.
    expect(asked).toEqual([]);
    const news = tracker.appTasks(after.id).filter((t) => t.configVersion === configVersionOf(after));
    expect(news.map((t) => t.state)).toEqual(['TASK_STAGING', 'TASK_STAGING']);
    running(news[0]!);
    pass();
    expect(asked).toEqual(['kill web.1 (rolling restart: replaced)']);
    gone(olds[0]!);
    running(news[1]!);
    pass();
    expect(asked).toEqual(['kill web.1 (rolling restart: replaced)', 'kill web.2 (rolling restart: replaced)']);
    expect(manager.size).toBe(1);
    gone(olds[1]!);
    pass();
    expect(manager.size).toBe(0);
    expect(tracker.appTasks(after.id)).toEqual(news);
  });

  it('stops a removed app by killing its tasks, and finishes once they are gone', () => {
    const { apps, tracker, asked, manager, pass, gone } = setup();
    const web = app('/web', 1, V1);
    apps.set(web.id, web);
    const t = task(web, 1);
    tracker.add(t);
    const plan = buildPlan(
      [{ id: web.id, target: null }],
      (id) => (id === web.id ? web : undefined),
      V2,
      () => 1,
      '/',
    );
    apps.delete(web.id);
    manager.start(plan);
    pass();
    expect(asked).toEqual(['kill web.1 (app stopped)']);
    expect(manager.size).toBe(1);
    gone(t);
    pass();
    expect(manager.size).toBe(0);
  });

  it('a forced change cancels the deployment holding its app; a cancel without force returns the rollback', () => {
    const { apps, events, manager } = setup();
    const before = app('/web', 1, V1);
    const after = app('/web', 3, V2);
    apps.set(after.id, after);
    const plan = buildPlan(
      [{ id: after.id, target: after }],
      () => before,
      V2,
      () => 1,
      '/',
    );
    manager.start(plan);
    const rollback = manager.cancel(plan.id, false);
    expect(rollback?.changes).toEqual([{ id: '/web', target: before }]);
    expect(manager.size).toBe(0);
    expect(events.map((e) => e.eventType)).toContain('group_change_failed');

    const again = buildPlan(
      [{ id: after.id, target: after }],
      () => before,
      V2,
      () => 1,
      '/',
    );
    manager.start(again);
    manager.checkLocks(['/web'], true);
    expect(manager.size).toBe(0);
  });
});
