// The deployment manager on its own (orchestrator/deployment/manager.ts): fast, no processes. It is
// given a read-only view of the apps, a real task tracker, the event catalogue over a real bus, and
// step actions that record what it asks for instead of launching or killing.
import { describe, expect, it } from 'vitest';
import { DeploymentManager, type StepActions } from '../../../orchestrator/deployment/manager.ts';
import { buildPlan } from '../../../orchestrator/deployment/plan.ts';
import { EventBus } from '../../../orchestrator/events/bus.ts';
import { EventCatalogue } from '../../../orchestrator/events/catalogue.ts';
import { parseApp, type AppDefinition } from '../../../orchestrator/state/app-definition.ts';
import type { GroupRecord } from '../../../orchestrator/state/group.ts';
import type { TaskRecord } from '../../../orchestrator/storage/store.ts';
import { TaskTracker } from '../../../orchestrator/tasks/tracker.ts';
import { Conflict } from '../../../orchestrator/errors.ts';

const V1 = '2026-01-01T00:00:00.000Z';
const V2 = '2026-01-01T00:00:01.000Z';

function app(id: string, instances: number, version: string): AppDefinition {
  const a = parseApp({ id, cmd: 'sleep 1000', instances }, { now: version });
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
    configVersion: a.version,
    host: '127.0.0.1',
    ports: [],
    servicePorts: [],
    slaveId: 'local-agent-S0',
  };
}

function setup() {
  const apps = new Map<string, AppDefinition>();
  const groups = new Map<string, GroupRecord>();
  const tracker = new TaskTracker(() => {});
  const bus = new EventBus();
  const events: { eventType: string }[] = [];
  bus.subscribe((e) => events.push(e as { eventType: string }));
  const asked: string[] = [];
  const actions: StepActions = {
    scaleTo: (a) => asked.push(`scaleTo ${a.id} ${a.instances}`),
    launchUpTo: (a, count) => asked.push(`launchUpTo ${a.id} ${count}`),
    kill: (t, reason) => asked.push(`kill ${t.id} (${reason})`),
    resetDelay: (appId) => asked.push(`resetDelay ${appId}`),
  };
  const manager = new DeploymentManager({ groups: { apps, groups }, tracker, events: new EventCatalogue(bus), actions });
  return { apps, tracker, events, asked, manager };
}

describe('the deployment manager', () => {
  it('runs a new app to its instances through the launcher, holds its lock until then, and reports success', () => {
    const { apps, tracker, events, asked, manager } = setup();
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
    // Step 1 starts the app (nothing to wait for), step 2 scales it to its instances.
    manager.progress();
    expect(manager.progress()).toEqual(new Set(['/web']));
    expect(asked).toContain('scaleTo /web 2');
    expect(() => manager.checkLocks(['/web'], false)).toThrow(Conflict);
    tracker.add(task(web, 1));
    tracker.add(task(web, 2));
    expect(manager.progress()).toEqual(new Set());
    expect(manager.size).toBe(0);
    expect(() => manager.checkLocks(['/web'], false)).not.toThrow();
    expect(events.map((e) => e.eventType)).toContain('group_change_success');
  });

  it('stops a removed app by killing its tasks, and finishes once they are gone', () => {
    const { apps, tracker, asked, manager } = setup();
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
    manager.progress();
    expect(asked).toEqual(['kill web.1 (app stopped)']);
    expect(manager.size).toBe(1);
    tracker.remove(t);
    manager.progress();
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
