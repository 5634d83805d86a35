// The task tracker (Marathon's InstanceTracker): the live tasks by id and by app, their health
// and readiness results, the apps' last task failures, and the counts the API shows. It changes
// only when the scheduler tells it to; what changed is written by flushInto() in the scheduler's
// batch transaction.
import type { AppDefinition } from '../state/app-definition.ts';
import type { Store, TaskRecord } from '../storage/store.ts';
import type { HealthCheckResult } from '../health/types.ts';
import { ReadinessChecker, type ReadinessResult } from '../health/readiness.ts';
import { configVersionOf } from '../state/app-update.ts';

/** A task's health as the tracker keeps it: one result per health check. */
export type HealthResult = HealthCheckResult;

/** An app's last task failure (lastTaskFailure), in Marathon's JSON form. */
export type TaskFailure = Record<string, unknown>;

/** Healthy: at least one check, and every check alive. */
export function allAlive(results: readonly HealthResult[] | undefined): boolean {
  return results !== undefined && results.length > 0 && results.every((r) => r.alive);
}

export interface TaskCounts {
  staged: number;
  running: number;
  healthy: number;
  unhealthy: number;
}

export class TaskTracker {
  readonly #tasks = new Map<string, TaskRecord>();
  readonly #byApp = new Map<string, Map<string, TaskRecord>>();
  readonly health = new Map<string, HealthResult[]>();
  /** Readiness checks of new tasks; a result calls `onReadiness` (deployments wait for them). */
  readonly readiness: ReadinessChecker;
  readonly failures = new Map<string, TaskFailure>();
  readonly #dirty = new Map<string, TaskRecord | null>();
  readonly #dirtyFailures = new Map<string, TaskFailure>();

  constructor(onReadiness: () => void) {
    this.readiness = new ReadinessChecker(onReadiness);
  }

  get(taskId: string): TaskRecord | undefined {
    return this.#tasks.get(taskId);
  }

  has(taskId: string): boolean {
    return this.#tasks.has(taskId);
  }

  /** Every live task, in launch order. */
  all(): IterableIterator<TaskRecord> {
    return this.#tasks.values();
  }

  get size(): number {
    return this.#tasks.size;
  }

  ids(): IterableIterator<string> {
    return this.#tasks.keys();
  }

  appTasks(appId: string): TaskRecord[] {
    const m = this.#byApp.get(appId);
    return m ? [...m.values()] : [];
  }

  /** How many tasks the app has (killed ones included until they are gone). */
  countOf(appId: string): number {
    return this.#byApp.get(appId)?.size ?? 0;
  }

  /** The apps that have tasks, with them. */
  byApp(): IterableIterator<[string, ReadonlyMap<string, TaskRecord>]> {
    return this.#byApp.entries();
  }

  /** A new task: tracked, and written before its process starts. */
  add(t: TaskRecord): void {
    this.#dirty.set(t.id, t);
    this.#tasks.set(t.id, t);
    let m = this.#byApp.get(t.appId);
    if (!m) this.#byApp.set(t.appId, (m = new Map()));
    m.set(t.id, t);
  }

  /** The task's record changed (state, address): written with the next batch. */
  changed(t: TaskRecord): void {
    this.#dirty.set(t.id, t);
  }

  /** A terminal task: forgotten with its health and readiness results. */
  remove(t: TaskRecord): void {
    this.#tasks.delete(t.id);
    const m = this.#byApp.get(t.appId);
    m?.delete(t.id);
    if (m && m.size === 0) this.#byApp.delete(t.appId);
    this.health.delete(t.id);
    this.readiness.remove(t.id);
    this.#dirty.set(t.id, null);
  }

  /** Clean shutdown: every task was killed, so none is written as live. */
  forgetAll(): void {
    for (const id of this.#tasks.keys()) this.#dirty.set(id, null);
  }

  recordFailure(appId: string, failure: TaskFailure): void {
    this.failures.set(appId, failure);
    this.#dirtyFailures.set(appId, failure);
  }

  /** True when there is something to write. */
  get dirty(): boolean {
    return this.#dirty.size > 0 || this.#dirtyFailures.size > 0;
  }

  /** Writes the changed tasks and failures (inside the caller's transaction); failures only of apps that still exist. */
  flushInto(store: Store, appExists: (appId: string) => boolean): void {
    for (const [id, t] of this.#dirty) {
      if (t) store.putTask(t);
      else store.deleteTask(id);
    }
    for (const [appId, f] of this.#dirtyFailures) if (appExists(appId)) store.putFailure(appId, f);
    this.#dirty.clear();
    this.#dirtyFailures.clear();
  }

  /** Health results of one task; true when that changed whether it is healthy. */
  setHealth(taskId: string, results: HealthResult[]): boolean {
    if (!this.#tasks.has(taskId)) return false;
    const was = allAlive(this.health.get(taskId));
    this.health.set(taskId, results);
    return allAlive(results) !== was;
  }

  isHealthy(t: TaskRecord, app: AppDefinition | undefined): boolean {
    if (t.state !== 'TASK_RUNNING') return false;
    if (!app || app.healthChecks.length === 0) return true;
    return allAlive(this.health.get(t.id));
  }

  /** A task of an app with a readiness check counts in a deployment only once the check said ready. */
  isReady(t: TaskRecord, app: AppDefinition | undefined): boolean {
    if (!app || app.readinessChecks.length === 0) return true;
    return this.readiness.results.get(t.id)?.ready === true;
  }

  /** Readiness results of the tasks of `app`'s current configuration. */
  readinessOf(appId: string, app: AppDefinition | undefined): ReadinessResult[] {
    const cfg = app ? configVersionOf(app) : undefined;
    return this.appTasks(appId).flatMap((t) => (t.configVersion === cfg ? (this.readiness.results.get(t.id) ?? []) : []));
  }

  /** Staged (staging or starting), running, healthy and unhealthy (health results, not all alive) tasks. */
  countTasks(tasks: Iterable<TaskRecord>): TaskCounts {
    const c = { staged: 0, running: 0, healthy: 0, unhealthy: 0 };
    for (const t of tasks) {
      if (t.state === 'TASK_STAGING' || t.state === 'TASK_STARTING') c.staged++;
      if (t.state === 'TASK_RUNNING') c.running++;
      const r = this.health.get(t.id);
      if (r && r.length > 0) {
        if (allAlive(r)) c.healthy++;
        else c.unhealthy++;
      }
    }
    return c;
  }

  counts(appId: string): { tasksStaged: number; tasksRunning: number; tasksHealthy: number; tasksUnhealthy: number } {
    const c = this.countTasks(this.#byApp.get(appId)?.values() ?? []);
    return { tasksStaged: c.staged, tasksRunning: c.running, tasksHealthy: c.healthy, tasksUnhealthy: c.unhealthy };
  }
}

/** Scale-down order: Staging < Starting < Running, then YOUNGEST_FIRST (or OLDEST_FIRST). */
export function killOrder(tasks: TaskRecord[], app: AppDefinition): TaskRecord[] {
  const weight = (s: string) => (s === 'TASK_STAGING' ? 1 : s === 'TASK_STARTING' ? 2 : s === 'TASK_RUNNING' ? 3 : 4);
  const youngest = app.killSelection !== 'OLDEST_FIRST';
  // Ties (same millisecond) are broken by launch order: callers pass tasks in insertion order.
  const seq = new Map(tasks.map((t, i) => [t.id, i]));
  const age = (a: TaskRecord, b: TaskRecord) => a.stagedAt.localeCompare(b.stagedAt) || (seq.get(a.id) ?? 0) - (seq.get(b.id) ?? 0);
  return [...tasks].sort((a, b) => weight(a.state) - weight(b.state) || (youngest ? age(b, a) : age(a, b)));
}

/** The active tasks beyond `app.instances`, in kill order: a scale-down's victims (tasks being killed are on their way already). */
export function excessTasks(tasks: TaskRecord[], app: AppDefinition): TaskRecord[] {
  const live = tasks.filter((t) => !t.killing);
  return live.length > app.instances ? killOrder(live, app).slice(0, live.length - app.instances) : [];
}
