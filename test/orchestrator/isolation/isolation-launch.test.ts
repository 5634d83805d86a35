/* eslint-disable @typescript-eslint/no-explicit-any */
// The scheduler's launch path with network isolation, against a stand-in isolation and executor
// (no root needed): what taskStarting is given, HOST/host/ipAddresses/netns of the launched task,
// a failed set-up failing the task with the reason, a kill while the namespace is being made, and
// the namespace given back when the task ends.
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { EventBus, type MarathonEvent } from '../../../orchestrator/events/bus.ts';
import { Scheduler } from '../../../orchestrator/scheduler.ts';
import { taskHostnames, type IsolatedTask, type TaskIsolation } from '../../../orchestrator/launch-queue/launcher.ts';
import { taskJson } from '../../../orchestrator/formats/json.ts';
import { parseApp } from '../../../orchestrator/state/app-definition.ts';
import { openDatabase } from '../../../orchestrator/storage/db.ts';
import { Store } from '../../../orchestrator/storage/store.ts';
import type { Executor, LaunchSpec, TaskState, TaskStatusUpdate } from '../../../orchestrator/tasks/types.ts';
import { removeTempDirs, tempDir } from '../../helpers/process.ts';
import { waitFor } from '../../helpers/wait.ts';

const logger = pino({ level: 'silent' });

class StandInExecutor implements Executor {
  readonly launched: LaunchSpec[] = [];
  readonly #listeners = new Set<(u: TaskStatusUpdate) => void>();
  readonly #active = new Set<string>();
  launch(spec: LaunchSpec): void {
    this.launched.push(spec);
    this.#active.add(spec.taskId);
    this.#emit(spec.taskId, 'TASK_STAGING');
    setImmediate(() => this.#active.has(spec.taskId) && this.#emit(spec.taskId, 'TASK_RUNNING'));
  }
  async kill(taskId: string): Promise<void> {
    if (this.#active.delete(taskId)) this.#emit(taskId, 'TASK_KILLED');
  }
  onStatus(l: (u: TaskStatusUpdate) => void): () => void {
    this.#listeners.add(l);
    return () => this.#listeners.delete(l);
  }
  active(): string[] {
    return [...this.#active];
  }
  async killOrphan(): Promise<void> {}
  async shutdown(): Promise<void> {
    for (const id of [...this.#active]) await this.kill(id);
  }
  #emit(taskId: string, state: TaskState): void {
    for (const l of this.#listeners) l({ taskId, state, message: '', timestamp: new Date().toISOString() });
  }
}

class StandInIsolation implements TaskIsolation {
  readonly started: IsolatedTask[] = [];
  readonly stopped: string[] = [];
  fail: string | undefined;
  gate: Promise<void> = Promise.resolve();
  #n = 1;
  async taskStarting(task: IsolatedTask): Promise<{ netns: string; ip: string }> {
    this.started.push(task);
    await this.gate;
    if (this.fail) throw new Error(this.fail);
    this.#n++;
    return { netns: `fake-t${this.#n}`, ip: `10.99.0.${this.#n}` };
  }
  async taskStopped(taskId: string): Promise<void> {
    this.stopped.push(taskId);
  }
}

function setup() {
  const dataDir = tempDir('sched-iso-');
  const db = openDatabase(dataDir);
  const bus = new EventBus(logger);
  const events: MarathonEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const executor = new StandInExecutor();
  const isolation = new StandInIsolation();
  const scheduler = new Scheduler({
    store: new Store(db),
    bus,
    executor,
    logger,
    hostname: 'host.test',
    dataDir,
    localPortMin: 10000,
    localPortMax: 20000,
    taskPortMin: 31000,
    taskPortMax: 32000,
    tickMs: 50,
    isolation,
  });
  const deploy = (body: Record<string, unknown>) => {
    const def = parseApp(body, { now: new Date().toISOString() });
    return scheduler.update([{ id: def.id, target: def }], { force: true });
  };
  return { db, scheduler, executor, isolation, events, deploy };
}

afterAll(() => removeTempDirs());

describe('scheduler launch path with network isolation', () => {
  it('names: last id segment and last.parent', () => {
    expect(taskHostnames('/starmap/stars/stars/frontend')).toEqual(['frontend', 'frontend.stars']);
    expect(taskHostnames('/web')).toEqual(['web']);
  });

  it('gives ipAddress apps a namespace first: HOST, host, ipAddresses and netns are the address; other apps as before', async () => {
    const { db, scheduler, executor, isolation, events, deploy } = setup();
    await scheduler.start();
    deploy({
      id: '/s/grp/web',
      args: ['server', '--port=80'],
      labels: { role: 'web' },
      ipAddress: { groups: ['g1'], discovery: { ports: [{ number: 80, name: 'http', protocol: 'tcp' }] } },
    });
    deploy({ id: '/plain', cmd: 'sleep 100' });
    const web = await waitFor(() => executor.launched.find((s) => s.appId === '/s/grp/web'));
    const plain = await waitFor(() => executor.launched.find((s) => s.appId === '/plain'));
    expect(isolation.started).toEqual([
      {
        taskId: web.taskId,
        appId: '/s/grp/web',
        labels: { role: 'web' },
        groups: ['g1'],
        hostnames: ['web', 'web.grp'],
        ports: [{ number: 80, name: 'http', protocol: 'tcp' }],
      },
    ]);
    expect(web.netns).toBe('fake-t2');
    expect(web.env.HOST).toBe('10.99.0.2');
    expect(web.ports).toEqual([]); // no host ports: the task listens on its own address
    expect(web.env.PORT0).toBeUndefined();
    expect(web.args).toEqual(['server', '--port=80']);
    expect(plain.netns).toBeUndefined();
    expect(plain.env.HOST).toBe('host.test');
    expect(plain.ports).toHaveLength(1);
    await waitFor(() => scheduler.tasks.get(web.taskId)?.state === 'TASK_RUNNING');
    const json = taskJson(scheduler.tasks.get(web.taskId)!, scheduler.tasks.health.get(web.taskId));
    expect(json.host).toBe('10.99.0.2');
    expect(json.ipAddresses).toEqual([{ ipAddress: '10.99.0.2', protocol: 'IPv4' }]);
    expect(taskJson(scheduler.tasks.get(plain.taskId)!, scheduler.tasks.health.get(plain.taskId)).ipAddresses).toBeUndefined();
    const running = events.find(
      (e) => e.eventType === 'status_update_event' && (e as any).taskId === web.taskId && (e as any).taskStatus === 'TASK_RUNNING',
    ) as any;
    expect(running.ipAddresses).toEqual([{ ipAddress: '10.99.0.2', protocol: 'IPv4' }]);
    expect(running.host).toBe('10.99.0.2');

    // The task ends (app removed): its namespace is given back.
    scheduler.update([{ id: '/s/grp/web', target: null }], { force: true });
    await waitFor(() => isolation.stopped.includes(web.taskId), { message: 'taskStopped after the task ended' });
    await scheduler.close();
    db.close();
  });

  it('a failed set-up fails the task with the reason (lastTaskFailure); nothing is launched', async () => {
    const { db, scheduler, executor, isolation, deploy } = setup();
    isolation.fail = 'nft: no such file';
    await scheduler.start();
    deploy({ id: '/broken', cmd: 'sleep 100', ipAddress: {}, backoffSeconds: 60 });
    const failure = await waitFor(() => scheduler.tasks.failures.get('/broken'), { message: 'failure recorded' });
    expect(failure.state).toBe('TASK_FAILED');
    expect(String(failure.message)).toMatch(/network isolation \(--isolation=netns\) failed for the task: nft: no such file/);
    expect(executor.launched).toEqual([]);
    expect(isolation.stopped).toContain(failure.taskId);
    await scheduler.close();
    db.close();
  });

  it('a task killed while its namespace is being made never starts (TASK_KILLED) and gives the namespace back', async () => {
    const { db, scheduler, executor, isolation, events, deploy } = setup();
    let release!: () => void;
    isolation.gate = new Promise((r) => (release = r));
    await scheduler.start();
    deploy({ id: '/slow', cmd: 'sleep 100', ipAddress: {} });
    const task = await waitFor(() => isolation.started[0]);
    const t = scheduler.tasks.get(task.taskId)!;
    expect(t.state).toBe('TASK_STAGING');
    const killed = scheduler.killTask(t, 'test');
    release();
    await killed;
    expect(scheduler.tasks.has(task.taskId)).toBe(false);
    expect(isolation.stopped).toContain(task.taskId);
    expect(executor.launched.find((s) => s.taskId === task.taskId)).toBeUndefined();
    expect(events.some((e) => e.eventType === 'status_update_event' && (e as any).taskId === task.taskId && (e as any).taskStatus === 'TASK_KILLED')).toBe(
      true,
    );
    await scheduler.close();
    db.close();
  });
});
