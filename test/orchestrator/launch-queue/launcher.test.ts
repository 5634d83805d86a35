// The launcher on its own (orchestrator/launch-queue/launcher.ts): a real launcher and task tracker
// over an executor that records what it is asked to start (test/helpers/launcher.ts), and, last,
// over a real ProcessExecutor whose task reports what it was started with.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { configVersionOf } from '../../../orchestrator/state/app-update.ts';
import { LIMITS } from '../../../orchestrator/state/bounds.ts';
import type { DelayRecord, Store } from '../../../orchestrator/storage/store.ts';
import { cleanUpExecutors, makeExecutor, terminal } from '../../helpers/executor.ts';
import { RecordingExecutor, launcherRig, storedApp } from '../../helpers/launcher.ts';
import { removeTempDirs } from '../../helpers/process.ts';

afterEach(async () => {
  await cleanUpExecutors();
  removeTempDirs();
});

/** The store as flushInto uses it: the delays written and deleted. */
function delayStore(): { store: Store; put: DelayRecord[]; deleted: string[] } {
  const put: DelayRecord[] = [];
  const deleted: string[] = [];
  const store = { putDelay: (d: DelayRecord) => put.push(d), deleteDelay: (id: string) => deleted.push(id) } as unknown as Store;
  return { store, put, deleted };
}

describe('the launcher', () => {
  it('makes each task (record, host ports, environment) in the pass, and starts it only once its record is written', () => {
    const log: string[] = [];
    const executor = new RecordingExecutor(log);
    const { launcher, tracker, stats } = launcherRig({ executor, log });
    const web = storedApp({ id: '/shop/web', instances: 2, portDefinitions: [{ port: 0, name: 'http' }] });
    launcher.newPass();
    launcher.launchUpTo(web, 2);
    const tasks = tracker.appTasks(web.id);
    expect(tasks.map((t) => [t.state, t.version, t.configVersion, t.host])).toEqual([
      ['TASK_STAGING', web.version, configVersionOf(web), 'host-a'],
      ['TASK_STAGING', web.version, configVersionOf(web), 'host-a'],
    ]);
    expect(tasks.every((t) => t.id.startsWith('shop_web.'))).toBe(true);
    expect(stats.launched).toBe(2);
    // Nothing started yet: the pass writes the records first.
    expect(executor.launched).toEqual([]);
    launcher.startPending();
    expect(log).toEqual(['persist', ...tasks.map((t) => `launch ${t.id}`)]);
    const ports = tasks.map((t) => t.ports[0]!);
    expect(new Set(ports).size).toBe(2);
    for (const p of ports) expect(p).toBeGreaterThanOrEqual(33_600);
    for (const [i, spec] of executor.launched.entries()) {
      expect(spec).toMatchObject({ taskId: tasks[i]!.id, appId: web.id, appVersion: web.version, cmd: 'sleep 1000' });
      expect(spec.env).toMatchObject({
        PORT0: String(ports[i]),
        PORT_HTTP: String(ports[i]),
        HOST: 'host-a',
        MESOS_TASK_ID: tasks[i]!.id,
        MARATHON_APP_ID: web.id,
        MESOS_SANDBOX: spec.sandboxDir,
      });
      expect(launcher.launchInfoOf(spec.taskId)).toEqual({ env: spec.env, sandboxDir: spec.sandboxDir });
    }
    expect(launcher.queuedSince(web.id)).toBeUndefined();
    expect(launcher.offersOf(web.id)).toBeUndefined(); // every task it waited for launched: the attempt is over
  });

  it('launchMissing launches what the app lacks of its instances; a task being killed does not count', () => {
    const { launcher, tracker } = launcherRig({});
    const web = storedApp({ id: '/web', instances: 3 });
    launcher.newPass();
    launcher.launchMissing(web);
    expect(tracker.countOf(web.id)).toBe(3);
    launcher.launchMissing(web);
    expect(tracker.countOf(web.id)).toBe(3);
    tracker.appTasks(web.id)[0]!.killing = true;
    launcher.launchMissing(web);
    expect(tracker.appTasks(web.id).filter((t) => !t.killing)).toHaveLength(3);
    expect(tracker.countOf(web.id)).toBe(4);
    // A surplus is not the launcher's to kill.
    launcher.launchMissing({ ...web, instances: 1 });
    expect(tracker.appTasks(web.id).filter((t) => !t.killing)).toHaveLength(3);
  });

  it('launches at most LIMITS.launchesPerPass in a pass and asks for another pass for the rest', () => {
    const { launcher, tracker, log } = launcherRig({});
    const big = storedApp({ id: '/big', instances: 40 });
    launcher.launchMissing(big);
    expect(tracker.countOf(big.id)).toBe(0); // no pass begun: no budget
    expect(log).toEqual(['schedule']);
    log.length = 0;
    launcher.newPass();
    launcher.launchMissing(big);
    expect(tracker.countOf(big.id)).toBe(LIMITS.launchesPerPass);
    expect(log).toEqual(['schedule']);
    expect(launcher.offersOf(big.id)).toMatchObject({ processed: 1, unused: 0 });
    launcher.newPass();
    launcher.launchMissing(big);
    expect(tracker.countOf(big.id)).toBe(40);
  });

  it('a hostname constraint this host does not meet launches nothing: the app waits, the offer declined as UnfulfilledConstraint', () => {
    const { launcher, tracker } = launcherRig({ hostname: 'host-a' });
    const stuck = storedApp({ id: '/stuck', instances: 1, constraints: [['hostname', 'LIKE', 'nowhere']] });
    const one = storedApp({ id: '/one', instances: 3, constraints: [['hostname', 'MAX_PER', '2']] });
    launcher.newPass();
    launcher.launchMissing(stuck);
    launcher.launchMissing(one);
    expect(tracker.countOf(stuck.id)).toBe(0);
    expect(launcher.queuedSince(stuck.id)).toEqual(expect.any(String));
    expect(launcher.offersOf(stuck.id)).toMatchObject({ processed: 1, unused: 1, declined: { UnfulfilledConstraint: 1 } });
    expect(tracker.countOf(one.id)).toBe(2);
    expect(launcher.offersOf(one.id)).toMatchObject({ processed: 1, unused: 0 });
  });

  it('backs off after a failure of the same configuration; resetDelay launches at once, asks for a pass, and the delay is written then deleted', () => {
    const { launcher, tracker, log } = launcherRig({});
    const web = storedApp({ id: '/web', instances: 1, backoffSeconds: 3600 });
    launcher.backOff(web, configVersionOf(web));
    expect(launcher.delayOf(web.id)).toMatchObject({ appId: web.id, configVersion: configVersionOf(web), delaySeconds: 3600, failures: 1 });
    const { store, put, deleted } = delayStore();
    launcher.flushInto(store, () => true);
    expect(put.map((d) => d.appId)).toEqual([web.id]);
    expect(launcher.dirty).toBe(false);

    launcher.newPass();
    launcher.launchMissing(web);
    expect(tracker.countOf(web.id)).toBe(0);
    expect(launcher.queuedSince(web.id)).toEqual(expect.any(String));
    // A new configuration is not held by the old one's delay.
    const changed = storedApp({ id: '/web', instances: 1, backoffSeconds: 3600, cmd: 'sleep 2000' }, '2026-01-01T00:00:05.000Z');
    launcher.launchMissing(changed);
    expect(tracker.countOf(web.id)).toBe(1);

    const other = storedApp({ id: '/other', instances: 1, backoffSeconds: 3600 });
    launcher.backOff(other, configVersionOf(other));
    log.length = 0;
    launcher.resetDelay(other.id);
    expect(log).toEqual(['schedule']);
    expect(launcher.delayOf(other.id)).toBeUndefined();
    launcher.launchMissing(other);
    expect(tracker.countOf(other.id)).toBe(1);
    launcher.flushInto(store, () => true);
    expect(deleted).toEqual([other.id]);
  });

  it('holds a host port while its task lives: with one port in the range the next task waits (InsufficientPorts) until release()', () => {
    const { launcher, tracker } = launcherRig({ taskPorts: [33_650, 33_650] });
    const web = storedApp({ id: '/web', instances: 2 });
    launcher.newPass();
    launcher.launchMissing(web);
    const [first] = tracker.appTasks(web.id);
    expect(tracker.countOf(web.id)).toBe(1);
    expect(first!.ports).toEqual([33_650]);
    expect(launcher.offersOf(web.id)).toMatchObject({ declined: {} });
    launcher.launchMissing(web);
    expect(tracker.countOf(web.id)).toBe(1);
    expect(launcher.offersOf(web.id)).toMatchObject({ declined: { InsufficientPorts: 1 } });

    tracker.remove(first!);
    launcher.release(first!);
    expect(launcher.launchInfoOf(first!.id)).toBeUndefined();
    launcher.launchMissing(web);
    const [second] = tracker.appTasks(web.id);
    expect(second!.ports).toEqual([33_650]);
    expect(second!.id).not.toBe(first!.id);
  });

  it('a launch the executor refuses fails its task with the reason', () => {
    const log: string[] = [];
    const executor = new RecordingExecutor(log);
    executor.throwOnLaunch = 'the spawner is gone';
    const { launcher, tracker, statuses } = launcherRig({ executor, log });
    const web = storedApp({ id: '/web', instances: 1 });
    launcher.newPass();
    launcher.launchMissing(web);
    launcher.startPending();
    const [t] = tracker.appTasks(web.id);
    expect(statuses).toEqual([{ taskId: t!.id, state: 'TASK_FAILED', message: 'launch failed: the spawner is gone', timestamp: expect.any(String) }]);
  });

  it('a stored definition it cannot honour launches nothing and says why once, as lastTaskFailure (TASK_ERROR) and in the log', () => {
    const { launcher, tracker, logLines } = launcherRig({});
    // A backreference: refused by the constraint engine, stored before the check existed.
    const refused = { ...storedApp({ id: '/old', instances: 1 }), constraints: [['hostname', 'LIKE', '(a)\\1']] };
    launcher.newPass();
    launcher.launchMissing(refused);
    launcher.launchMissing(refused);
    expect(tracker.countOf(refused.id)).toBe(0);
    expect(tracker.failures.get(refused.id)).toMatchObject({
      appId: '/old',
      state: 'TASK_ERROR',
      message: expect.stringMatching(/^app definition cannot be honoured: /),
    });
    expect(logLines.filter((l) => l.appId === '/old').map((l) => l.msg)).toEqual(['app not launched: its definition cannot be honoured (update it to fix)']);
  });

  it('keeps the sandboxes of the last 5 finished tasks of an app and removes older ones', () => {
    const log: string[] = [];
    const executor = new RecordingExecutor(log);
    const { launcher, tracker } = launcherRig({ executor, log });
    const web = storedApp({ id: '/web', instances: 6 });
    launcher.newPass();
    launcher.launchMissing(web);
    launcher.startPending();
    for (const spec of executor.launched) mkdirSync(spec.sandboxDir, { recursive: true }); // as the executor makes them
    const tasks = tracker.appTasks(web.id);
    for (const t of tasks) {
      tracker.remove(t);
      launcher.release(t);
    }
    const kept = executor.launched.map((s) => existsSync(s.sandboxDir));
    expect(kept).toEqual([false, true, true, true, true, true]);
  });
});

describe('the launcher over a real executor', () => {
  it('starts a task that sees the ports, task id and sandbox the launcher gave it', async () => {
    const { ex, updates } = makeExecutor();
    const { launcher, tracker } = launcherRig({ executor: ex });
    const job = storedApp({ id: '/launcher-test/job', instances: 1, cmd: 'printf "%s %s" "$PORT0" "$MESOS_TASK_ID" > "$MESOS_SANDBOX/seen"' });
    launcher.newPass();
    launcher.launchMissing(job);
    launcher.startPending();
    const [t] = tracker.appTasks(job.id);
    expect((await terminal(updates, t!.id)).state).toBe('TASK_FINISHED');
    const info = launcher.launchInfoOf(t!.id)!;
    expect(readFileSync(join(info.sandboxDir, 'seen'), 'utf8')).toBe(`${t!.ports[0]} ${t!.id}`);
  });
});
