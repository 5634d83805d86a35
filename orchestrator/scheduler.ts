// The one place where the orchestrator's state changes. Apps, tasks, deployments and launch
// delays live here (in memory, mirrored to SQLite before any change is acknowledged), and every
// change is announced on the EventBus. A reconcile loop drives deployments (start, scale, rolling
// restart, stop) and keeps `instances` tasks of every app running, with launch back-off.
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { findTaskProcesses } from './tasks/process-group.ts';
import { v1 as uuidv1 } from 'uuid';
import type { EventBus } from './events/bus.ts';
import { EventCatalogue, conditionOf } from './events/catalogue.ts';
import { taskEnvironment } from './tasks/env.ts';
import { appIdOfTask, instanceIdOf } from './tasks/ids.ts';
import { HostPortAllocator } from './tasks/ports.ts';
import type { Executor, LaunchSpec, PortAssignment, TaskStatusUpdate } from './tasks/types.ts';
import { TERMINAL_STATES, type TaskState } from './tasks/types.ts';
import type { Logger } from '../shared/logger.ts';
import { ApiError, bridgedMappings, isConfigChange, keepServicePorts, notValid, safePath, type AppDefinition } from './state/app-definition.ts';
import { LIMITS, definitionProblem, instanceViolations } from './state/bounds.ts';
import { placementLimit } from './state/constraints.ts';
import { withPlainMaps } from './state/labels.ts';
import { reviveApp } from './state/stored-app.ts';
import { ancestorsOf, isWithin, parentOf, type GroupRecord, type GroupTree } from './state/group.ts';
import { groupTree } from './deployment/group-change.ts';
import { DependencyGraph } from './deployment/dependencies.ts';
import type { DelayRecord, Store, StoredDeployment, TaskRecord } from './state/store.ts';
import { BACKOFF_STATES, configVersionOf, isDelayed, nextDelay } from './launch-queue/backoff.ts';
import { buildPlan, restartStrategy, type AppChange } from './deployment/plan.ts';
import type { HealthMonitor } from './health/monitor.ts';
import type { HealthCheckResult } from './health/types.ts';
import { ReadinessChecker, type ReadinessResult } from './health/readiness.ts';

/** A task's health as the scheduler keeps it: one result per health check. */
export type HealthResult = HealthCheckResult;

/** Healthy: at least one check, and every check alive. */
function allAlive(results: readonly HealthResult[] | undefined): boolean {
  return results !== undefined && results.length > 0 && results.every((r) => r.alive);
}

export interface SchedulerOptions {
  store: Store;
  bus: EventBus;
  executor: Executor;
  logger: Logger;
  hostname: string;
  dataDir: string;
  localPortMin: number;
  localPortMax: number;
  taskPortMin: number;
  taskPortMax: number;
  envVarsPrefix?: string | undefined;
  /** Reconcile period in ms (back-off deadlines, deployment progress). */
  tickMs?: number;
  /** Runs the apps' health checks on running tasks (orchestrator/health). */
  healthMonitor?: HealthMonitor | undefined;
  /** --isolation=netns: tasks of apps with ipAddress get their own network namespace and address. */
  isolation?: TaskIsolation | undefined;
  /** --enable_features task_killing: killed tasks pass through TASK_KILLING. */
  taskKilling?: boolean | undefined;
}

/** What the scheduler needs from network isolation (orchestrator/isolation's Isolation provides it). */
export interface TaskIsolation {
  /** Namespace and address for a task about to start, with every task's rules applied; `ports`: its host ports (--publish-address). */
  taskStarting(task: IsolatedTask): Promise<{ netns: string; ip: string; ports?: number[] }>;
  /** Removes the task's namespace (and whatever still runs in it) once the task is terminal. */
  taskStopped(taskId: string): Promise<unknown>;
}

export interface IsolatedTask {
  taskId: string;
  appId: string;
  labels: Record<string, string>;
  groups: string[];
  hostnames: string[];
  /** The app's ipAddress.discovery.ports: its named ports for NetworkPolicy. */
  ports?: unknown;
}

/**
 * Names other isolated tasks use for an app's tasks: the last segment of its id, and that
 * segment with its parent group's (`/starmap/stars/stars/frontend` → `frontend`, `frontend.stars`).
 */
export function taskHostnames(appId: string): string[] {
  const parts = appId.split('/').filter(Boolean);
  const last = parts[parts.length - 1];
  if (!last) return [];
  const parent = parts[parts.length - 2];
  return parent ? [last, `${last}.${parent}`] : [last];
}

/** Ports of an app with ipAddress (its `ipAddress.discovery.ports`): health checks' portIndex counts in these. */
function discoveryPorts(app: AppDefinition): number[] {
  return (app.ipAddress?.discovery.ports ?? []).map((p) => (typeof p.number === 'number' ? p.number : 0));
}

export interface DeploymentResult {
  deploymentId: string;
  version: string;
  /** Only for dry runs: the plan that would run. */
  plan?: StoredDeployment;
}

/** What a change through the group API adds to its app changes. */
export interface GroupChangeOptions {
  /** The group changed (group_change_* events); default: the deepest group holding every changed app. */
  groupId?: string;
  putGroups?: GroupRecord[];
  removeGroups?: string[];
  /** The changed group: kept, as the change leaves it, as a group version (for rollback). */
  snapshotGroup?: string;
  /** Check and plan only: nothing is stored, locked or started. */
  dryRun?: boolean;
}

/** An error as one line: Marathon's message plus the violations' paths and errors. */
function reasonOf(err: unknown): string {
  const details = err instanceof ApiError && Array.isArray(err.body.details) ? (err.body.details as { path: string; errors: string[] }[]) : [];
  const message = err instanceof Error ? err.message : String(err);
  return details.length ? `${message}: ${details.map((d) => `${d.path} ${d.errors.join(', ')}`).join('; ')}` : message;
}

/** The apps with these changes applied (null removes an app). */
function withChanges(apps: ReadonlyMap<string, AppDefinition>, changes: Iterable<[string, AppDefinition | null]>): Map<string, AppDefinition> {
  const out = new Map(apps);
  for (const [id, app] of changes) {
    if (app) out.set(id, app);
    else out.delete(id);
  }
  return out;
}

/** The deepest group that holds every one of `ids`. */
function commonGroupOf(ids: string[]): string {
  let common: string | undefined;
  for (const id of ids) {
    const g = parentOf(id);
    if (common === undefined) common = g;
    else while (!isWithin(g, common)) common = parentOf(common);
  }
  return common ?? '/';
}

const LOCK_MESSAGE = "App is locked by one or more deployments. Override with the option '?force=true'. View details at '/v2/deployments/<DEPLOYMENT_ID>'.";
/** The one agent id this single-machine scheduler reports (tasks' slaveId, events' agentId). */
export const SLAVE_ID = 'local-agent-S0';

export class Scheduler {
  readonly apps = new Map<string, AppDefinition>();
  /** Group records (dependencies, version); groups that only apps' paths imply have none. */
  readonly groups = new Map<string, GroupRecord>();
  readonly tasks = new Map<string, TaskRecord>();
  readonly deployments = new Map<string, StoredDeployment>();
  readonly delays = new Map<string, DelayRecord>();
  readonly failures = new Map<string, Record<string, unknown>>();
  readonly health = new Map<string, HealthResult[]>();
  /** Readiness checks of new tasks; a result wakes the reconcile loop (deployments wait for them). */
  readonly readiness = new ReadinessChecker(() => this.schedule());
  readonly queueSince = new Map<string, string>();
  /** Environment and sandbox of live tasks (COMMAND health checks run with them). */
  readonly #launchInfo = new Map<string, { env: Record<string, string>; sandboxDir: string }>();
  readonly #byApp = new Map<string, Map<string, TaskRecord>>();
  readonly #dirty = new Map<string, TaskRecord | null>();
  readonly #dirtyFailures = new Map<string, Record<string, unknown>>();
  readonly #dirtyDelays = new Map<string, DelayRecord | null>();
  readonly #pendingLaunches: LaunchSpec[] = [];
  /** Tasks launched in this pass that need their network namespace first (--isolation=netns). */
  readonly #needsNetwork = new Map<string, IsolatedTask>();
  /** Network set-up in progress, per task: the task is launched (or dropped) when it settles. */
  readonly #isolating = new Map<string, Promise<void>>();
  /** Every isolation call in flight (awaited by close()). */
  readonly #networkOps = new Set<Promise<unknown>>();
  readonly #dirtyDeployments = new Map<string, StoredDeployment | null>();
  /** Event form of running deployments (planJson). */
  readonly #plans = new Map<string, Record<string, unknown>>();
  /** Host ports held by live tasks (orchestrator/tasks/ports.ts). */
  readonly #hostPorts: HostPortAllocator;
  readonly #o: SchedulerOptions;
  readonly #store: Store;
  /** Every event the scheduler publishes goes through the catalogue's typed publishers (document 2's fields). */
  readonly events: EventCatalogue;
  #timer: NodeJS.Timeout | undefined;
  #pending = false;
  /** Set once start() has removed what a previous run left: nothing launches before. */
  #recovered = false;
  #markRecovered!: () => void;
  /** Resolves once start() has recovered; the API holds writes until then (server.ts). */
  readonly recovered = new Promise<void>((resolve) => (this.#markRecovered = resolve));
  /** Tasks this reconcile pass may still launch (LIMITS.launchesPerPass). */
  #launchBudget = 0;
  readonly #reportedRefusals = new WeakSet<AppDefinition>();
  #closed = false;
  #lastVersion = 0;
  #unsubscribe: (() => void) | undefined;
  /** Counters for /metrics. */
  readonly stats = { launched: 0, killed: 0, failed: 0, deployments: 0, statusUpdates: 0 };

  constructor(opts: SchedulerOptions) {
    this.#o = opts;
    this.#hostPorts = new HostPortAllocator({ min: opts.taskPortMin, max: opts.taskPortMax, probe: false });
    this.#store = opts.store;
    this.events = new EventCatalogue(opts.bus);
  }

  /**
   * Loads state (synchronously: once this returns a promise, reads see the stored state), then
   * kills the processes a previous run left, all at once (each may take its grace period), and
   * forgets their tasks (replace, not adopt). Nothing launches before that is done (`recovered`).
   */
  async start(): Promise<void> {
    for (const row of this.#store.loadApps()) {
      const r = reviveApp(row.key, row.value);
      if ('app' in r) this.apps.set(r.app.id, r.app);
      else this.#o.logger.error({ appId: row.key, problem: r.problem }, 'stored app definition cannot be read: left out of this run (kept in the database)');
    }
    for (const g of this.#store.loadGroups()) this.groups.set(g.id, g);
    for (const d of this.#store.loadDeployments()) {
      for (const k of Object.keys(d.restart)) d.restart[k]!.started = false;
      this.deployments.set(d.id, d);
    }
    for (const d of this.#store.loadDelays()) this.delays.set(d.appId, d);
    for (const [k, v] of this.#store.loadFailures()) this.failures.set(k, v);
    for (const u of this.#store.unreadable) this.#o.logger.error(u, 'stored row cannot be read (its JSON does not parse): skipped');
    // Subscribed before anything can launch: a status lost here left tasks TASK_STAGING forever.
    this.#unsubscribe = this.#o.executor.onStatus((u) => this.#onStatus(u));
    const leftovers = this.#store.loadTasks();
    if (leftovers.length > 0) {
      // Only processes that carry the task's MESOS_TASK_ID are killed (a recorded pid may have been
      // reused by an unrelated process); processes whose pid was never recorded are found the same way.
      const found = findTaskProcesses(new Set(leftovers.map((t) => t.id)));
      await Promise.all(leftovers.map(async (t) => {
        const pids = found.get(t.id) ?? [];
        try {
          if (t.pid && pids.includes(t.pid)) await this.#o.executor.killOrphan(t.pid, { taskId: t.id, gracePeriodSeconds: this.apps.get(t.appId)?.taskKillGracePeriodSeconds ?? null });
        } catch (err) {
          this.#o.logger.warn({ err, taskId: t.id }, 'stopping a task left by the previous run failed; killing it');
        }
        for (const pid of pids) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            /* gone */
          }
        }
      }));
    }
    try {
      await this.#o.executor.killLeftovers?.(); // what detached from those tasks (cgroups)
    } catch (err) {
      this.#o.logger.error({ err }, 'killing what the previous run left in its task cgroups failed');
    }
    if (this.#closed) return;
    this.#store.tx(() => {
      for (const t of leftovers) this.#store.deleteTask(t.id);
    });
    for (const t of leftovers) {
      this.#publishStatus({ ...t, state: 'TASK_LOST', message: 'orchestrator restarted: task replaced' });
    }
    this.#recovered = true;
    this.#markRecovered();
    this.#timer = setInterval(() => this.tick(), this.#o.tickMs ?? 200);
    this.#timer.unref();
    this.tick();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#o.healthMonitor?.close();
    this.readiness.close();
    await this.#o.executor.shutdown();
    // Network set-ups still running launch nothing once closed; they and namespace removals end here.
    await Promise.allSettled([...this.#networkOps]);
    this.#unsubscribe?.();
    // Clean shutdown: every task was killed, so none is left to find after the next start.
    for (const id of this.tasks.keys()) this.#dirty.set(id, null);
    this.#flush();
  }

  /** A fresh, strictly increasing version timestamp (ISO with ms). */
  newVersion(): string {
    let t = Date.now();
    if (t <= this.#lastVersion) t = this.#lastVersion + 1;
    this.#lastVersion = t;
    return new Date(t).toISOString();
  }

  // ------------------------------------------------------------------------------------------
  // Queries

  appTasks(appId: string): TaskRecord[] {
    const m = this.#byApp.get(appId);
    return m ? [...m.values()] : [];
  }

  #addTask(t: TaskRecord): void {
    this.tasks.set(t.id, t);
    let m = this.#byApp.get(t.appId);
    if (!m) this.#byApp.set(t.appId, (m = new Map()));
    m.set(t.id, t);
  }

  #removeTask(t: TaskRecord): void {
    this.tasks.delete(t.id);
    this.#hostPorts.release(t.id);
    const m = this.#byApp.get(t.appId);
    m?.delete(t.id);
    if (m && m.size === 0) this.#byApp.delete(t.appId);
  }

  /**
   * Task status changes and deployment progress are written in batches (one transaction per reconcile pass): they are not
   * acknowledged to any client, and a task lost in a crash is replaced anyway. The record of a new
   * task is written before it is launched, so its process can always be found after a crash.
   */
  #flush(): void {
    if (this.#dirty.size === 0 && this.#dirtyFailures.size === 0 && this.#dirtyDelays.size === 0 && this.#dirtyDeployments.size === 0) return;
    this.#store.tx(() => {
      for (const [id, d] of this.#dirtyDeployments) {
        if (d) this.#store.putDeployment(d);
        else this.#store.deleteDeployment(id);
      }
      for (const [id, t] of this.#dirty) {
        if (t) this.#store.putTask(t);
        else this.#store.deleteTask(id);
      }
      for (const [appId, f] of this.#dirtyFailures) if (this.apps.has(appId)) this.#store.putFailure(appId, f);
      for (const [appId, d] of this.#dirtyDelays) {
        if (d && this.apps.has(appId)) this.#store.putDelay(d);
        else if (!d) this.#store.deleteDelay(appId);
      }
    });
    this.#dirty.clear();
    this.#dirtyDeployments.clear();
    this.#dirtyFailures.clear();
    this.#dirtyDelays.clear();
  }

  versionsOf(appId: string): string[] {
    return this.#store.versions(appId);
  }

  appVersion(appId: string, version: string): AppDefinition | undefined {
    return this.#store.appVersion(appId, version);
  }

  deploymentsOf(appId: string): StoredDeployment[] {
    return [...this.deployments.values()].filter((d) => d.affectedApps.includes(appId));
  }

  /** A task of an app with a readiness check counts in a deployment only once the check said ready. */
  isReady(t: TaskRecord, app: AppDefinition | undefined): boolean {
    if (!app || app.readinessChecks.length === 0) return true;
    return this.readiness.results.get(t.id)?.ready === true;
  }

  /** Readiness results of the app's tasks (shown while a deployment of the app runs). */
  readinessOf(appId: string): ReadinessResult[] {
    const app = this.apps.get(appId);
    const cfg = app ? configVersionOf(app) : undefined;
    return this.appTasks(appId).flatMap((t) => (t.configVersion === cfg ? (this.readiness.results.get(t.id) ?? []) : []));
  }

  isHealthy(t: TaskRecord, app: AppDefinition | undefined): boolean {
    if (t.state !== 'TASK_RUNNING') return false;
    if (!app || app.healthChecks.length === 0) return true;
    return allAlive(this.health.get(t.id));
  }

  /** Staged (staging or starting), running, healthy and unhealthy (health results, not all alive) tasks. */
  countTasks(tasks: Iterable<TaskRecord>): { staged: number; running: number; healthy: number; unhealthy: number } {
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

  // ------------------------------------------------------------------------------------------
  // Changes (called by the API)

  /** Versions an updated app: scale-only moves lastScalingAt, anything else both. */
  versioned(before: AppDefinition | undefined, next: AppDefinition, restart = false, v = this.newVersion()): AppDefinition {
    // An app keeps its service ports across updates (reference §7.2): a definition asking for 0 is
    // no configuration change on that account.
    const kept = before ? keepServicePorts(before, next) : next;
    const out: AppDefinition = { ...kept, version: v };
    if (!before) out.versionInfo = { lastScalingAt: v, lastConfigChangeAt: v };
    else if (!restart && !isConfigChange(before, kept)) out.versionInfo = { lastScalingAt: v, lastConfigChangeAt: configVersionOf(before) };
    else out.versionInfo = { lastScalingAt: v, lastConfigChangeAt: v };
    return out;
  }

  /** Throws the 409 lock error unless forced; with force cancels the conflicting deployments. */
  #checkLocks(ids: string[], force: boolean): void {
    const conflicting = [...this.deployments.values()].filter((d) => d.affectedApps.some((a) => ids.includes(a)));
    if (conflicting.length === 0) return;
    if (!force) throw new ApiError(409, { message: LOCK_MESSAGE, deployments: conflicting.map((d) => ({ id: d.id })) });
    for (const d of conflicting) this.#finishDeployment(d, false, 'overridden by a forced change');
  }

  /**
   * Stores the change and starts its deployment; everything is on disk when it returns. The target
   * state is checked first (no app where a group is, no dependency cycle); a failed check changes
   * nothing, publishes group_change_failed and throws the 4xx.
   */
  deploy(changes: AppChange[], force: boolean, version = changes.find((c) => c.target)?.target?.version ?? this.newVersion(), group: GroupChangeOptions = {}): DeploymentResult {
    const groupId = group.groupId ?? commonGroupOf(changes.map((c) => c.id));
    let plan: StoredDeployment;
    let groups: { put: GroupRecord[]; remove: string[] };
    let snapshot: GroupTree | undefined;
    try {
      if (!group.dryRun) this.#checkLocks(changes.map((c) => c.id), force);
      for (const c of changes) if (c.target) c.target = this.#assignServicePorts(c.target, changes);
      const targetApps = withChanges(this.apps, changes.map((c) => [c.id, c.target]));
      const overload = instanceViolations(this.apps, targetApps);
      if (overload.length > 0) throw notValid(overload);
      groups = this.#targetGroups(changes, group, version);
      const targetGroups = new Map(this.groups);
      for (const id of groups.remove) targetGroups.delete(id);
      for (const g of groups.put) targetGroups.set(g.id, g);
      const clash = [...changes.filter((c) => c.target && targetGroups.has(c.id)).map((c) => c.id), ...groups.put.filter((g) => targetApps.has(g.id)).map((g) => g.id)];
      if (clash.length > 0) throw notValid([{ path: '/', errors: [`Groups and Applications may not have the same identifier: ${clash[0]}`] }]);
      const depths = new DependencyGraph(targetApps, targetGroups).depths();
      plan = buildPlan(changes, (id) => this.apps.get(id), version, (id) => depths.get(id) ?? 1, groupId);
      const touched = [...groups.remove, ...groups.put.map((g) => g.id)];
      if (touched.length > 0) plan.originalGroups = Object.fromEntries(touched.map((id) => [id, this.groups.get(id) ?? null]));
      if (group.snapshotGroup) snapshot = groupTree(group.snapshotGroup, targetApps, targetGroups);
    } catch (err) {
      if (!group.dryRun) this.events.groupChangeFailed({ groupId, version, reason: reasonOf(err) });
      throw err;
    }
    if (group.dryRun) return { deploymentId: plan.id, version, plan };
    this.#store.tx(() => {
      for (const c of changes) {
        if (c.target) {
          const before = this.apps.get(c.id);
          this.#store.putApp(c.target, !before || before.version !== c.target.version);
        } else this.#store.deleteApp(c.id);
      }
      for (const id of groups.remove) this.#store.deleteGroup(id);
      for (const g of groups.put) this.#store.putGroup(g);
      if (snapshot) this.#store.putGroupVersion(snapshot);
      this.#flush(); // deployments cancelled by force go to disk with the change
      if (plan.steps.length > 0) this.#store.putDeployment(plan);
    });
    for (const c of changes) {
      if (c.target) this.apps.set(c.id, c.target);
      else {
        this.apps.delete(c.id);
        this.delays.delete(c.id);
        this.failures.delete(c.id);
      }
    }
    for (const id of groups.remove) this.groups.delete(id);
    for (const g of groups.put) this.groups.set(g.id, g);
    this.stats.deployments++;
    if (plan.steps.length === 0) this.#finishDeployment(plan, true);
    else {
      this.deployments.set(plan.id, plan);
      this.#startStep(plan);
    }
    this.schedule();
    return { deploymentId: plan.id, version };
  }

  /** Group records a change writes: the group API's own, plus records for groups new apps need. */
  #targetGroups(changes: AppChange[], group: GroupChangeOptions, version: string): { put: GroupRecord[]; remove: string[] } {
    const put = new Map((group.putGroups ?? []).map((g) => [g.id, g]));
    const remove = group.removeGroups ?? [];
    for (const c of changes) {
      if (!c.target) continue;
      for (const g of ancestorsOf(c.id)) if (!this.groups.has(g) && !put.has(g)) put.set(g, { id: g, dependencies: [], version });
    }
    return { put: [...put.values()], remove };
  }

  /** The current state's groups: records, and the groups apps' paths imply. */
  groupExists(id: string): boolean {
    if (id === '/' || this.groups.has(id)) return true;
    for (const a of this.apps.keys()) if (a !== id && isWithin(a, id)) return true;
    return false;
  }

  groupTree(id: string): GroupTree {
    return groupTree(id, this.apps, this.groups);
  }

  groupVersions(id: string): string[] {
    return this.#store.groupVersions(id);
  }

  groupVersion(id: string, version: string): GroupTree | undefined {
    return this.#store.groupVersion(id, version);
  }

  /** DELETE /v2/deployments/{id}: force → drop it; else roll back with a new deployment. */
  cancelDeployment(id: string, force: boolean): DeploymentResult | null {
    const d = this.deployments.get(id);
    if (!d) throw new ApiError(404, { message: `DeploymentPlan ${id} does not exist` });
    this.#finishDeployment(d, false, force ? 'deployment cancelled (force: no rollback)' : 'deployment cancelled: rolled back');
    if (force) {
      this.#flush(); // acknowledged (202): on disk before the answer
      return null;
    }
    const changes: AppChange[] = d.affectedApps.map((appId) => ({ id: appId, target: d.original[appId] ?? null }));
    const groups = Object.entries(d.originalGroups ?? {});
    return this.deploy(changes, true, this.newVersion(), {
      ...(d.groupId !== undefined ? { groupId: d.groupId } : {}),
      putGroups: groups.flatMap(([, g]) => (g ? [g] : [])),
      removeGroups: groups.filter(([id, g]) => g === null && ![...this.apps.keys()].some((a) => d.original[a] === undefined && isWithin(a, id))).map(([id]) => id),
    });
  }

  /** Kills tasks; with scale the app's instances shrink by the number killed (a deployment). */
  killTasks(appTasks: TaskRecord[], opts: { scale: boolean; force: boolean }): DeploymentResult | null {
    if (!opts.scale) {
      for (const t of appTasks) void this.killTask(t, 'killed through the API');
      return null;
    }
    // Tasks already gone or being killed (TASK_KILLING) were counted when their kill was asked:
    // scaling down for them again would shrink the app twice (Marathon skips them too).
    const victims = appTasks.filter((t) => this.tasks.has(t.id) && !t.killing);
    const byApp = new Map<string, TaskRecord[]>();
    for (const t of victims) byApp.set(t.appId, [...(byApp.get(t.appId) ?? []), t]);
    const changes: AppChange[] = [];
    for (const [appId, ts] of byApp) {
      const app = this.apps.get(appId);
      if (!app) continue;
      changes.push({ id: appId, target: this.versioned(app, { ...app, instances: Math.max(0, app.instances - ts.length) }) });
    }
    this.#checkLocks(changes.map((c) => c.id), opts.force);
    for (const t of victims) void this.killTask(t, 'killed through the API (scale)');
    return this.deploy(changes, true);
  }

  /** Forgets the app's launch delay; `durable` (API calls) writes it before returning. */
  resetDelay(appId: string, durable = true): void {
    this.delays.delete(appId);
    this.#dirtyDelays.set(appId, null);
    if (durable) this.#flush();
    this.schedule();
  }

  /** Used by the health checkers: results of one task; `kill` replaces an unhealthy one. */
  setHealth(taskId: string, results: HealthResult[]): void {
    if (!this.tasks.has(taskId)) return;
    const was = allAlive(this.health.get(taskId));
    this.health.set(taskId, results);
    // Only healthy or not matters to deployments: every successful check must not cost a reconcile pass.
    if (allAlive(results) !== was) this.schedule();
  }

  async killTask(t: TaskRecord, reason: string): Promise<void> {
    if (!this.tasks.has(t.id)) return;
    if (!t.killing) {
      t.killing = true;
      this.stats.killed++;
      this.#o.healthMonitor?.setRunning(t.id, false);
      // --enable_features task_killing: the task is reported TASK_KILLING until it is gone (Marathon 1.4).
      if (this.#o.taskKilling) this.#onStatus({ taskId: t.id, state: 'TASK_KILLING', message: reason, timestamp: new Date().toISOString() });
    }
    // A task still getting its network namespace is dropped before it starts (TASK_KILLED).
    const starting = this.#isolating.get(t.id);
    if (starting) await starting;
    await this.#o.executor.kill(t.id, reason);
  }

  // ------------------------------------------------------------------------------------------
  // Status updates from the executor

  #onStatus(u: TaskStatusUpdate): void {
    if (this.#closed) return;
    this.stats.statusUpdates++;
    const t = this.tasks.get(u.taskId);
    if (!t) {
      if (TERMINAL_STATES.has(u.state)) this.events.unknownInstanceTerminated({ instanceId: instanceIdOf(u.taskId), runSpecId: appIdOfTask(u.taskId), condition: conditionOf(u.state) });
      return;
    }
    t.state = u.state;
    t.message = u.message;
    if (u.pid !== undefined) t.pid = u.pid;
    const app = this.apps.get(t.appId);
    const monitor = this.#o.healthMonitor;
    if (u.state === 'TASK_RUNNING' && !t.startedAt) {
      t.startedAt = u.timestamp;
      if (monitor && app && app.healthChecks.length > 0 && !t.killing) {
        const info = this.#launchInfo.get(t.id);
        // Isolated tasks are checked at their own address (COMMAND checks inside their namespace);
        // for apps with ipAddress, portIndex counts in ipAddress.discovery.ports (they have no host ports).
        const host = t.ipAddresses?.[0]?.ipAddress ?? '127.0.0.1';
        const ports = app.ipAddress ? discoveryPorts(app) : t.ports;
        monitor.add({ taskId: t.id, appId: t.appId, version: t.version, host, ports, netns: t.netns, env: info?.env, sandboxDir: info?.sandboxDir, runningSince: u.timestamp }, app.healthChecks);
      }
      const rc = app?.readinessChecks[0];
      if (app && rc && !t.killing) {
        const port = readinessPort(app, t, rc.portName);
        if (port !== undefined) this.readiness.add({ taskId: t.id, host: t.ipAddresses?.[0]?.ipAddress ?? '127.0.0.1', port, check: rc });
      }
    }
    if (u.state === 'TASK_KILLING') monitor?.setRunning(t.id, false);
    if (TERMINAL_STATES.has(u.state)) {
      this.#removeTask(t);
      this.health.delete(t.id);
      this.#launchInfo.delete(t.id);
      this.#o.healthMonitor?.remove(t.id);
      this.readiness.remove(t.id);
      if (t.netns) this.#releaseNetwork(t.id);
      const failure = { appId: t.appId, host: t.host, message: u.message, state: u.state, taskId: t.id, timestamp: u.timestamp, version: t.version, slaveId: SLAVE_ID };
      let delay: DelayRecord | undefined;
      if (app && BACKOFF_STATES.has(u.state)) {
        delay = nextDelay(app, t.configVersion, this.delays.get(app.id), Date.now());
        this.stats.failed++;
      }
      const recordFailure = app && u.state !== 'TASK_KILLED';
      this.#dirty.set(t.id, null);
      if (recordFailure) this.#dirtyFailures.set(t.appId, failure);
      if (delay) this.#dirtyDelays.set(delay.appId, delay);
      if (recordFailure) this.failures.set(t.appId, failure);
      if (delay) this.delays.set(delay.appId, delay);
      this.#pruneSandboxes(t);
    } else this.#dirty.set(t.id, t);
    this.#publishStatus(t);
    this.schedule();
  }

  /** Sandboxes of finished tasks are kept for inspection: the last 5 per app. */
  readonly #finishedSandboxes = new Map<string, string[]>();
  #pruneSandboxes(t: TaskRecord): void {
    const list = this.#finishedSandboxes.get(t.appId) ?? [];
    list.push(t.id);
    while (list.length > 5) {
      const old = list.shift()!;
      try {
        rmSync(join(this.#o.dataDir, 'sandboxes', old), { recursive: true, force: true });
      } catch {
        /* best effort */
      }
    }
    this.#finishedSandboxes.set(t.appId, list);
  }

  #publishStatus(t: TaskRecord): void {
    this.events.statusUpdate({
      slaveId: SLAVE_ID,
      taskId: t.id,
      taskStatus: t.state,
      message: t.message ?? '',
      appId: t.appId,
      host: t.host,
      ipAddresses: t.ipAddresses ?? [],
      ports: t.ports,
      version: t.version,
    });
    this.events.instanceChanged({ instanceId: instanceIdOf(t.id), condition: conditionOf(t.state), runSpecId: t.appId, agentId: SLAVE_ID, host: t.host, runSpecVersion: t.version });
  }

  // ------------------------------------------------------------------------------------------
  // Reconcile loop

  /** Runs tick() soon (coalesced). */
  schedule(): void {
    if (this.#pending || this.#closed) return;
    this.#pending = true;
    setImmediate(() => {
      this.#pending = false;
      this.tick();
    });
  }

  tick(): void {
    if (this.#closed || !this.#recovered) return;
    this.#launchBudget = LIMITS.launchesPerPass;
    try {
      this.#flush();
      const busy = new Set<string>();
      for (const d of [...this.deployments.values()]) {
        this.#progress(d);
        // Every app of a step is among the deployment's affected apps (buildPlan makes both from one list).
        if (this.deployments.has(d.id)) for (const a of d.affectedApps) busy.add(a);
      }
      for (const app of this.apps.values()) if (!busy.has(app.id)) this.#scaleTo(app);
      // Tasks of apps that no longer exist (e.g. after a forced cancel of a stop).
      for (const [appId, tasks] of this.#byApp) {
        if (this.apps.has(appId) || busy.has(appId)) continue;
        for (const t of tasks.values()) if (!t.killing) void this.killTask(t, 'app removed');
      }
    } catch (err) {
      this.#o.logger.error({ err }, 'reconcile failed');
    }
    try {
      this.#startPending();
    } catch (err) {
      this.#o.logger.error({ err }, 'launch failed');
    }
  }

  /** Launches or kills tasks so that `app.instances` are active; true when all are running (healthy). */
  #scaleTo(app: AppDefinition): void {
    const live = this.appTasks(app.id).filter((t) => !t.killing);
    if (live.length > app.instances) {
      for (const t of this.#killOrder(live, app).slice(0, live.length - app.instances)) void this.killTask(t, 'scaling down');
    } else if (live.length < app.instances) {
      this.#launchUpTo(app, app.instances - live.length);
    }
  }

  /** True when exactly `instances` tasks run, none being killed, all healthy and ready (a Scale step's end). */
  #scaled(app: AppDefinition): boolean {
    const all = this.appTasks(app.id);
    return all.length === app.instances && all.every((t) => !t.killing && this.isHealthy(t, app) && this.isReady(t, app));
  }

  /** Scale-down order: Staging < Starting < Running, then YOUNGEST_FIRST (or OLDEST_FIRST). */
  #killOrder(tasks: TaskRecord[], app: AppDefinition): TaskRecord[] {
    const weight = (s: string) => (s === 'TASK_STAGING' ? 1 : s === 'TASK_STARTING' ? 2 : s === 'TASK_RUNNING' ? 3 : 4);
    const youngest = app.killSelection !== 'OLDEST_FIRST';
    // Ties (same millisecond) are broken by launch order: callers pass tasks in insertion order.
    const seq = new Map(tasks.map((t, i) => [t.id, i]));
    const age = (a: TaskRecord, b: TaskRecord) => a.stagedAt.localeCompare(b.stagedAt) || (seq.get(a.id) ?? 0) - (seq.get(b.id) ?? 0);
    return [...tasks].sort((a, b) => weight(a.state) - weight(b.state) || (youngest ? age(b, a) : age(a, b)));
  }

  #launchUpTo(app: AppDefinition, count: number): void {
    if (count <= 0) return; // the common case in a rolling restart's every pass
    if (this.#refused(app)) return;
    // Constraints are compiled once per definition (only `hostname` is known on this one host).
    count = Math.min(count, placementLimit(app.constraints)(this.#o.hostname) - (this.#byApp.get(app.id)?.size ?? 0));
    if (count <= 0) return;
    if (!this.queueSince.has(app.id)) this.queueSince.set(app.id, new Date().toISOString());
    if (isDelayed(app, this.delays.get(app.id), Date.now())) return;
    const now = Math.min(count, this.#launchBudget);
    let launched = 0;
    while (launched < now && this.#launch(app)) launched++;
    this.#launchBudget -= launched;
    // The rest in the next pass (the event loop serves requests in between); not when a launch
    // could not be made (no free port): that would spin.
    if (launched === now && count > now) this.schedule();
  }

  /**
   * A definition this orchestrator cannot honour (stored before a limit existed, a pattern the
   * constraint engine refuses) launches nothing: its app shows why as lastTaskFailure (TASK_ERROR,
   * Mesos' state for a task that cannot be described) and in the log, once per definition; every
   * other app runs as usual.
   */
  #refused(app: AppDefinition): boolean {
    const problem = definitionProblem(app);
    if (!problem) return false;
    if (!this.#reportedRefusals.has(app)) {
      this.#reportedRefusals.add(app);
      this.#o.logger.error({ appId: app.id, version: app.version, problem }, 'app not launched: its definition cannot be honoured (update it to fix)');
      const failure = { appId: app.id, host: this.#o.hostname, message: problem, state: 'TASK_ERROR', taskId: '', timestamp: new Date().toISOString(), version: app.version, slaveId: SLAVE_ID };
      this.failures.set(app.id, failure);
      this.#dirtyFailures.set(app.id, failure);
    }
    return true;
  }

  #finishStepIfDone(d: StoredDeployment, done: boolean): void {
    if (!done) return;
    const step = d.steps[d.currentStep]!;
    // No task runs the old version any more: its checks go (Marathon's reconcile by version).
    for (const a of step.actions) if (a.action === 'RestartApplication') for (const _hc of d.original[a.app]?.healthChecks ?? []) this.events.removeHealthCheck({ appId: a.app });
    this.events.deploymentStepSuccess({ plan: this.planJson(d), currentStep: step });
    for (const a of step.actions) if (a.action === 'StopApplication') this.events.appTerminated({ appId: a.app });
    d.currentStep++;
    if (d.currentStep >= d.steps.length) this.#finishDeployment(d, true);
    else {
      this.#dirtyDeployments.set(d.id, d);
      this.#startStep(d);
    }
  }

  #startStep(d: StoredDeployment): void {
    const step = d.steps[d.currentStep];
    if (!step) return;
    this.events.deploymentInfo({ plan: this.planJson(d), currentStep: step });
    for (const a of step.actions) {
      const app = this.apps.get(a.app);
      // Checks are registered for the app's new version at each step that gives it one (a scale
      // of a new app is announced by its Start step already), and removed once per check on stop.
      const startedHere = d.steps.some((st) => st.actions.some((x) => x.action === 'StartApplication' && x.app === a.app));
      if (app && (a.action === 'StartApplication' || a.action === 'RestartApplication' || (a.action === 'ScaleApplication' && !startedHere))) {
        for (const hc of app.healthChecks) this.events.addHealthCheck({ appId: app.id, version: app.version, healthCheck: hc });
      }
      if (a.action === 'StopApplication') for (const _hc of d.original[a.app]?.healthChecks ?? []) this.events.removeHealthCheck({ appId: a.app });
    }
  }

  /**
   * Ends a deployment. A cancelled or overridden one (not success) fails its current step. Then,
   * as document 1 says, the outcome of the group change: group_change_success or _failed.
   */
  #finishDeployment(d: StoredDeployment, success: boolean, reason = 'deployment cancelled'): void {
    this.deployments.delete(d.id);
    this.#dirtyDeployments.set(d.id, null);
    const plan = this.planJson(d);
    const step = d.steps[d.currentStep];
    if (!success && step) this.events.deploymentStepFailure({ plan, currentStep: step });
    if (success) this.events.deploymentSuccess({ id: d.id, plan });
    else this.events.deploymentFailed({ id: d.id, plan, reason });
    const groupId = d.groupId ?? '/';
    if (success) this.events.groupChangeSuccess({ groupId, version: d.version });
    else this.events.groupChangeFailed({ groupId, version: d.version, reason });
    this.#plans.delete(d.id);
  }

  #progress(d: StoredDeployment): void {
    const step = d.steps[d.currentStep];
    if (!step) return this.#finishDeployment(d, true);
    let done = true;
    for (const a of step.actions) {
      const app = this.apps.get(a.app);
      switch (a.action) {
        case 'StartApplication':
          break;
        case 'ScaleApplication':
          if (app) {
            this.#scaleTo(app);
            done = this.#scaled(app) && done;
          }
          break;
        case 'RestartApplication':
          if (app) done = this.#restart(d, app) && done;
          break;
        case 'StopApplication': {
          const ts = this.appTasks(a.app);
          for (const t of ts) if (!t.killing) void this.killTask(t, 'app stopped');
          if (ts.length > 0) done = false;
          break;
        }
      }
    }
    this.#finishStepIfDone(d, done);
  }

  /** One evaluation of the rolling restart (§4.3); true when finished. */
  #restart(d: StoredDeployment, app: AppDefinition): boolean {
    const n = app.instances;
    const cfg = configVersionOf(app);
    const all = this.appTasks(app.id);
    const isNew = (t: TaskRecord) => t.configVersion === cfg;
    let st = d.restart[app.id];
    if (!st || !st.started) {
      const running = all.filter((t) => !t.killing).length;
      const s = restartStrategy(n, running, app.upgradeStrategy.minimumHealthCapacity, app.upgradeStrategy.maximumOverCapacity);
      const olds = this.#killOrder(all.filter((t) => !isNew(t) && !t.killing), app);
      for (const t of olds.slice(0, s.killImmediately)) void this.killTask(t, 'rolling restart');
      st = { maxCapacity: s.maxCapacity, readyCounted: all.filter((t) => isNew(t) && this.isHealthy(t, app) && this.isReady(t, app)).length, started: true };
      d.restart[app.id] = st;
      this.resetDelay(app.id, false);
      this.#dirtyDeployments.set(d.id, d);
    }
    const current = this.appTasks(app.id);
    const news = current.filter((t) => isNew(t) && !t.killing);
    const olds = current.filter((t) => !isNew(t));
    const ready = news.filter((t) => this.isHealthy(t, app) && this.isReady(t, app)).length;
    while (st.readyCounted < ready) {
      st.readyCounted++;
      const victim = this.#killOrder(olds.filter((t) => !t.killing), app).reverse()[0];
      if (victim) void this.killTask(victim, 'rolling restart: replaced');
    }
    const toStart = Math.min(n - news.length, Math.max(0, st.maxCapacity - olds.length - news.length));
    this.#launchUpTo(app, toStart);
    if (news.length > n) for (const t of this.#killOrder(news, app).slice(0, news.length - n)) void this.killTask(t, 'scaling down');
    return ready === n && news.length === n && this.appTasks(app.id).filter((t) => !isNew(t)).length === 0;
  }

  // ------------------------------------------------------------------------------------------
  // Launching

  #launch(app: AppDefinition): boolean {
    const docker = app.container?.docker;
    const bridged = docker !== undefined && docker.network !== 'HOST';
    const decl: { declared: number; name?: string | undefined; protocol: string; containerPort?: number }[] = bridged
      ? docker.portMappings.map((m) => ({ declared: m.hostPort, name: m.name, protocol: m.protocol, containerPort: m.containerPort }))
      : (app.portDefinitions ?? []).map((d) => ({ declared: app.requirePorts ? d.port : 0, name: d.name, protocol: d.protocol }));
    const taskId = `${safePath(app.id)}.${uuidv1()}`;
    let hostPorts: number[] | null;
    try {
      hostPorts = this.#hostPorts.take(taskId, decl.map((p) => p.declared));
    } catch (err) {
      this.#o.logger.warn({ appId: app.id, err: (err as Error).message }, 'no free host port in the task port range');
      return false;
    }
    if (!hostPorts) return false; // requirePorts: wait until the port is free
    const ports: PortAssignment[] = decl.map((p, i) => ({ hostPort: hostPorts[i]!, declaredPort: p.declared, protocol: p.protocol, ...(p.name !== undefined ? { name: p.name } : {}), ...(p.containerPort !== undefined ? { containerPort: p.containerPort } : {}) }));
    const now = new Date().toISOString();
    const t: TaskRecord = {
      id: taskId,
      appId: app.id,
      state: 'TASK_STAGING',
      stagedAt: now,
      startedAt: null,
      version: app.version,
      configVersion: configVersionOf(app),
      host: this.#o.hostname,
      ports: ports.map((p) => p.hostPort),
      servicePorts: app.ports ?? [],
      slaveId: SLAVE_ID,
    };
    this.#dirty.set(t.id, t); // written (with the rest of this pass) before the process starts
    this.#addTask(t);
    this.queueSince.delete(app.id);
    this.stats.launched++;
    const sandboxDir = join(this.#o.dataDir, 'sandboxes', taskId);
    const spec: LaunchSpec = {
      taskId,
      appId: app.id,
      appVersion: app.version,
      cmd: app.cmd,
      args: app.cmd === null ? (app.args ?? null) : null,
      env: this.#env(app, taskId, ports, sandboxDir),
      ports,
      sandboxDir,
      killGracePeriodSeconds: app.taskKillGracePeriodSeconds,
      ...(docker
        ? { docker: { image: docker.image, network: docker.network, privileged: docker.privileged, parameters: docker.parameters, forcePullImage: docker.forcePullImage, volumes: app.container!.volumes } }
        : {}),
    };
    if (spec.cmd === null && spec.args === null && !docker) spec.cmd = 'true';
    this.#launchInfo.set(taskId, { env: spec.env, sandboxDir });
    if (app.ipAddress && this.#o.isolation) {
      this.#needsNetwork.set(taskId, { taskId, appId: app.id, labels: app.labels, groups: app.ipAddress.groups, hostnames: taskHostnames(app.id), ports: app.ipAddress.discovery.ports });
    }
    this.#pendingLaunches.push(spec);
    return true;
  }

  /** Starts the tasks created in this pass, once their records are on disk. */
  #startPending(): void {
    if (this.#pendingLaunches.length === 0) return;
    this.#flush();
    const specs = this.#pendingLaunches.splice(0);
    for (const spec of specs) {
      const isolated = this.#needsNetwork.get(spec.taskId);
      this.#needsNetwork.delete(spec.taskId);
      if (isolated) this.#launchIsolated(spec, isolated);
      else this.#launchNow(spec);
    }
  }

  #launchNow(spec: LaunchSpec): void {
    try {
      this.#o.executor.launch(spec);
    } catch (err) {
      this.#onStatus({ taskId: spec.taskId, state: 'TASK_FAILED' as TaskState, message: `launch failed: ${(err as Error).message}`, timestamp: new Date().toISOString() });
    }
  }

  /**
   * --isolation=netns: gives the task its namespace and address (asynchronously: other tasks
   * launch meanwhile; the task stays TASK_STAGING), then launches it inside the namespace with
   * HOST, host and ipAddresses set to its address. A failure fails the task with the reason.
   */
  #launchIsolated(spec: LaunchSpec, task: IsolatedTask): void {
    const iso = this.#o.isolation!;
    const taskId = spec.taskId;
    const now = () => new Date().toISOString();
    const setup = (async () => {
      let net: { netns: string; ip: string; ports?: number[] };
      try {
        net = await iso.taskStarting(task);
      } catch (err) {
        await this.#track(iso.taskStopped(taskId)).catch(() => undefined); // whatever part was made
        this.#onStatus({ taskId, state: 'TASK_FAILED', message: `network isolation (--isolation=netns) failed for the task: ${(err as Error).message}`, timestamp: now() });
        return;
      }
      const t = this.tasks.get(taskId);
      if (this.#closed || !t || t.killing) {
        await this.#track(iso.taskStopped(taskId)).catch((err: unknown) => this.#o.logger.warn({ err, taskId }, 'isolation: could not remove the network of a task killed before start'));
        if (t) this.#onStatus({ taskId, state: 'TASK_KILLED', message: 'Killed before start', timestamp: now() });
        return;
      }
      t.host = net.ip;
      t.netns = net.netns;
      t.ipAddresses = [{ ipAddress: net.ip, protocol: 'IPv4' }];
      if (net.ports) t.ports = net.ports;
      spec.netns = net.netns;
      spec.env[`${this.#o.envVarsPrefix ?? ''}HOST`] = net.ip;
      this.#dirty.set(taskId, t);
      this.#flush();
      this.#launchNow(spec);
    })().catch((err: unknown) => this.#o.logger.error({ err, taskId }, 'isolation: launching the task failed'));
    this.#isolating.set(taskId, setup);
    void this.#track(setup).finally(() => this.#isolating.delete(taskId));
  }

  /** Once a task is terminal: its namespace, veth and address go (and the other tasks' rules are updated). */
  #releaseNetwork(taskId: string): void {
    const iso = this.#o.isolation;
    if (!iso) return;
    void this.#track(iso.taskStopped(taskId)).catch((err: unknown) => this.#o.logger.warn({ err, taskId }, 'isolation: could not remove the network of a stopped task'));
  }

  #track<T>(p: Promise<T>): Promise<T> {
    this.#networkOps.add(p);
    void p.finally(() => this.#networkOps.delete(p)).catch(() => undefined);
    return p;
  }

  #env(app: AppDefinition, taskId: string, ports: PortAssignment[], sandboxDir: string): Record<string, string> {
    const marathon = taskEnvironment(
      { appId: app.id, version: app.version, cpus: app.cpus, mem: app.mem, disk: app.disk, gpus: app.gpus, labels: app.labels, env: app.env, dockerImage: app.container?.docker?.image },
      taskId,
      this.#o.hostname,
      ports,
      { envVarsPrefix: this.#o.envVarsPrefix },
    );
    return { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', MESOS_SANDBOX: sandboxDir, ...marathon };
  }

  /** Service ports (§7.2): zeros get the lowest free port in [min, max) (versioned() has kept an app's own). */
  #assignServicePorts(app: AppDefinition, changes: AppChange[]): AppDefinition {
    const used = new Set<number>();
    for (const a of this.apps.values()) if (a.id !== app.id) for (const p of servicePortsOf(a)) used.add(p);
    for (const c of changes) if (c.target && c.id !== app.id) for (const p of servicePortsOf(c.target)) used.add(p);
    for (const p of servicePortsOf(app)) used.add(p);
    const pick = (): number => {
      for (let p = this.#o.localPortMin; p < this.#o.localPortMax; p++) {
        if (!used.has(p)) {
          used.add(p);
          return p;
        }
      }
      throw new ApiError(422, { message: `All ports in the range [${this.#o.localPortMin}-${this.#o.localPortMax}) are already in use` });
    };
    const out: AppDefinition = withPlainMaps(JSON.parse(JSON.stringify(app)) as AppDefinition);
    const mappings = bridgedMappings(out);
    if (mappings) {
      mappings.forEach((m) => {
        if (m.servicePort === 0) m.servicePort = pick();
      });
    } else if (out.portDefinitions && !out.requirePorts) {
      out.portDefinitions.forEach((d) => {
        if (d.port === 0) d.port = pick();
      });
      out.ports = out.portDefinitions.map((d) => d.port);
    }
    return out;
  }

  // ------------------------------------------------------------------------------------------
  // JSON

  /**
   * A deployment as events carry it (Marathon 1.4: the whole root group before and after). Built
   * once per deployment: the trees are as large as the state, and every step event repeats them.
   */
  planJson(d: StoredDeployment): Record<string, unknown> {
    const cached = this.#plans.get(d.id);
    if (cached) return { ...cached, steps: d.steps };
    const root = (over: Record<string, AppDefinition | null>) => groupTree('/', withChanges(this.apps, Object.entries(over)), this.groups);
    const plan = { id: d.id, original: root(d.original), target: root(d.target), steps: d.steps, version: d.version };
    this.#plans.set(d.id, plan);
    return plan;
  }

  deploymentJson(d: StoredDeployment): Record<string, unknown> {
    const step = d.steps[d.currentStep];
    return {
      id: d.id,
      version: d.version,
      affectedApps: d.affectedApps,
      affectedPods: [],
      steps: d.steps,
      // Marathon 1.4 names the results readinessCheckResults, document 1 readinessChecks: both are there.
      currentActions: (step?.actions ?? []).map((a) => {
        const results = a.action === 'StopApplication' ? [] : this.readinessOf(a.app);
        return { action: a.action, app: a.app, readinessCheckResults: results, readinessChecks: results };
      }),
      currentStep: Math.min(d.currentStep + 1, d.steps.length),
      totalSteps: d.steps.length,
    };
  }

  taskJson(t: TaskRecord, withServicePorts = true): Record<string, unknown> {
    const out: Record<string, unknown> = {
      id: t.id,
      slaveId: t.slaveId,
      host: t.host,
      state: t.state,
      startedAt: t.startedAt,
      stagedAt: t.stagedAt,
      ports: t.ports,
      version: t.version,
      appId: t.appId,
    };
    if (withServicePorts && t.servicePorts.length) out.servicePorts = t.servicePorts;
    if (t.ipAddresses) out.ipAddresses = t.ipAddresses;
    const hc = this.health.get(t.id);
    if (hc && hc.length) out.healthCheckResults = hc;
    return out;
  }
}

/** The port a readiness check's portName names, for this task. */
function readinessPort(app: AppDefinition, t: TaskRecord, portName: string): number | undefined {
  if (app.ipAddress) {
    const p = app.ipAddress.discovery.ports.find((x) => x.name === portName);
    return typeof p?.number === 'number' ? p.number : undefined;
  }
  const names = (bridgedMappings(app) ?? app.portDefinitions ?? []).map((x) => x.name);
  const i = names.indexOf(portName);
  return i < 0 ? undefined : t.ports[i];
}

export function servicePortsOf(app: AppDefinition): number[] {
  return bridgedMappings(app)?.map((m) => m.servicePort) ?? app.ports ?? [];
}
