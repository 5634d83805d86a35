// The loop that ties the orchestrator's parts together: the group manager (apps, groups,
// versions), the task tracker (tasks, health, readiness), the deployment manager (deployments and
// their steps) and the launcher (launch queue, back-off, launching). Every change is mirrored to
// SQLite before it is acknowledged and announced on the EventBus. Here: recovery at start, the
// reconcile tick, deploy (check, store, start a deployment), and the executor's status updates.
// One piece on purpose (about 440 lines): it is only the order in which the parts are called,
// and each of those four entry points must be read whole to see that a change is stored before
// it is announced; everything with a concern of its own already lives in the parts.
import type { Logger } from '../shared/logger.ts';
import type { EventBus } from './events/bus.ts';
import { EventCatalogue, conditionOf } from './events/catalogue.ts';
import type { AppDefinition } from './state/app-definition.ts';
import { GroupManager, type AppEdit, type GroupUpdateOptions, type PlannedUpdate } from './group/manager.ts';
import type { Store, TaskRecord } from './storage/store.ts';
import { SLAVE_ID, appIdOfTask, instanceIdOf } from './tasks/ids.ts';
import { killLeftoverTasks } from './tasks/leftovers.ts';
import { TaskTracker, excessTasks, type HealthResult } from './tasks/tracker.ts';
import { TERMINAL_STATES, type Executor, type TaskStatusUpdate } from './tasks/types.ts';
import { commonGroupOf } from './deployment/change.ts';
import type { Deployer, DeploymentResult } from './deployer.ts';
import { DeploymentManager } from './deployment/manager.ts';
import { BACKOFF_STATES } from './launch-queue/backoff.ts';
import { Launcher, type TaskIsolation } from './launch-queue/launcher.ts';
import type { HealthMonitor } from './health/monitor.ts';
import { checkHost, healthCheckPorts, readinessPort } from './health/targets.ts';
import { InvalidObject, MalformedJson } from './errors.ts';
import { DEFAULTS } from './config.ts';

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
  /** --mesos_user: the user tasks of apps without `user` run as; their COMMAND health checks too. */
  defaultTaskUser?: string | undefined;
}

/** Counters for /metrics. */
export interface SchedulerStats {
  launched: number;
  killed: number;
  failed: number;
  deployments: number;
  statusUpdates: number;
}

/** An error as one line: Marathon's message plus the violations' paths and errors. */
function reasonOf(err: unknown): string {
  const details = (err instanceof MalformedJson || err instanceof InvalidObject) && Array.isArray(err.details) ? err.details : [];
  const message = err instanceof Error ? err.message : String(err);
  return details.length ? `${message}: ${details.map((d) => `${d.path} ${d.errors.join(', ')}`).join('; ')}` : message;
}

export class Scheduler implements Deployer {
  readonly groups: GroupManager;
  readonly tasks: TaskTracker;
  readonly deployments: DeploymentManager;
  readonly launcher: Launcher;
  /** Every event the scheduler publishes goes through the catalogue's typed publishers (Marathon 1.4's fields). */
  readonly events: EventCatalogue;
  readonly stats: SchedulerStats = { launched: 0, killed: 0, failed: 0, deployments: 0, statusUpdates: 0 };
  readonly #o: SchedulerOptions;
  readonly #store: Store;
  #timer: NodeJS.Timeout | undefined;
  #pending = false;
  /** Set once start() has removed what a previous run left: nothing launches before. */
  #recovered = false;
  #markRecovered!: () => void;
  /** Resolves once start() has recovered; the API holds writes until then (api/recovery-gate.ts). */
  readonly recovered = new Promise<void>((resolve) => (this.#markRecovered = resolve));
  #closed = false;
  #unsubscribe: (() => void) | undefined;

  constructor(opts: SchedulerOptions) {
    this.#o = opts;
    this.#store = opts.store;
    this.events = new EventCatalogue(opts.bus);
    this.groups = new GroupManager(opts.store, { min: opts.localPortMin, max: opts.localPortMax });
    this.tasks = new TaskTracker(() => this.schedule());
    this.launcher = new Launcher({
      tracker: this.tasks,
      executor: opts.executor,
      logger: opts.logger,
      hostname: opts.hostname,
      dataDir: opts.dataDir,
      taskPortMin: opts.taskPortMin,
      taskPortMax: opts.taskPortMax,
      envVarsPrefix: opts.envVarsPrefix,
      isolation: opts.isolation,
      stats: this.stats,
      persist: () => this.#flush(),
      schedule: () => this.schedule(),
      onStatus: (u) => this.#onStatus(u),
    });
    this.deployments = new DeploymentManager({
      groups: this.groups,
      tracker: this.tasks,
      events: this.events,
      launcher: this.launcher,
      kill: (t, reason) => void this.killTask(t, reason),
    });
  }

  /**
   * Loads state (synchronously: once this returns a promise, reads see the stored state), then
   * kills the processes a previous run left, all at once (each may take its grace period), and
   * forgets their tasks (replace, not adopt). Nothing launches before that is done (`recovered`).
   */
  async start(): Promise<void> {
    this.groups.load(this.#o.logger);
    this.deployments.load(this.#store);
    this.launcher.load(this.#store);
    for (const [k, v] of this.#store.loadFailures()) this.tasks.failures.set(k, v);
    for (const u of this.#store.unreadable) this.#o.logger.error(u, 'stored row cannot be read (its JSON does not parse): skipped');
    // Subscribed before anything can launch: a status lost here left tasks TASK_STAGING forever.
    this.#unsubscribe = this.#o.executor.onStatus((u) => this.#onStatus(u));
    const leftovers = this.#store.loadTasks();
    await killLeftoverTasks(leftovers, this.#o.executor, this.#o.logger, (appId) => this.groups.apps.get(appId)?.taskKillGracePeriodSeconds ?? null);
    if (this.#closed) return;
    this.#store.tx(() => {
      for (const t of leftovers) this.#store.deleteTask(t.id);
    });
    for (const t of leftovers) {
      this.#publishStatus({ ...t, state: 'TASK_LOST', message: 'orchestrator restarted: task replaced' });
    }
    this.#recovered = true;
    this.#markRecovered();
    this.#timer = setInterval(() => this.tick(), this.#o.tickMs ?? DEFAULTS.tickMs);
    this.#timer.unref();
    this.tick();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.launcher.stop();
    if (this.#timer) clearInterval(this.#timer);
    this.#o.healthMonitor?.close();
    this.tasks.readiness.close();
    await this.#o.executor.shutdown();
    // Network set-ups still running launch nothing once closed; they and namespace removals end here.
    await this.launcher.settled();
    this.#unsubscribe?.();
    // Clean shutdown: every task was killed, so none is left to find after the next start.
    this.tasks.forgetAll();
    this.#flush();
  }

  /**
   * Task status changes and deployment progress are written in batches (one transaction per reconcile pass): they are not
   * acknowledged to any client, and a task lost in a crash is replaced anyway. The record of a new
   * task is written before it is launched, so its process can always be found after a crash.
   */
  #flush(): void {
    if (!this.tasks.dirty && !this.launcher.dirty && !this.deployments.dirty) return;
    const appExists = (appId: string) => this.groups.apps.has(appId);
    this.#store.tx(() => {
      this.deployments.flushInto(this.#store);
      this.tasks.flushInto(this.#store, appExists);
      this.launcher.flushInto(this.#store, appExists);
    });
  }

  // ------------------------------------------------------------------------------------------
  // Changes (called by the API)

  /**
   * Stores a change and starts its deployment; everything is on disk when it returns. The group
   * manager versions, checks and plans it (no app where a group is, no dependency cycle, no app
   * held by a deployment unless forced); a failed check changes nothing, publishes
   * group_change_failed and throws the 4xx.
   */
  update(edits: AppEdit[], opts: { force: boolean; version?: string; group?: GroupUpdateOptions }): DeploymentResult {
    const version = opts.version ?? this.groups.newVersion();
    const group = opts.group ?? {};
    const groupId = group.groupId ?? commonGroupOf(edits.map((e) => e.id));
    let planned: PlannedUpdate;
    try {
      planned = this.groups.update(edits, {
        version,
        group,
        checkLocks: group.dryRun ? undefined : (ids) => this.deployments.checkLocks(ids, opts.force),
      });
    } catch (err) {
      if (!group.dryRun) this.events.groupChangeFailed({ groupId, version, reason: reasonOf(err) });
      throw err;
    }
    const { plan, changes } = planned;
    if (group.dryRun) return { deploymentId: plan.id, version, plan, changes: planned.versioned };
    this.#store.tx(() => {
      planned.write();
      this.#flush(); // deployments cancelled by force go to disk with the change
      if (plan.steps.length > 0) this.#store.putDeployment(plan);
    });
    planned.apply();
    for (const c of changes) {
      if (c.target) continue;
      this.launcher.forgetApp(c.id);
      this.tasks.failures.delete(c.id);
    }
    this.stats.deployments++;
    this.deployments.start(plan);
    this.schedule();
    return { deploymentId: plan.id, version, changes: planned.versioned };
  }

  /** DELETE /v2/deployments/{id}: force → drop it; else roll back with a new deployment. */
  cancelDeployment(id: string, force: boolean): DeploymentResult | null {
    const rollback = this.deployments.cancel(id, force);
    if (!rollback) {
      this.#flush(); // acknowledged (202): on disk before the answer
      return null;
    }
    return this.update(
      rollback.changes.map((c) => ({ ...c, asIs: true })),
      { force: true, group: rollback.group },
    );
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
    const edits: AppEdit[] = [];
    for (const [appId, ts] of byApp) {
      const app = this.groups.apps.get(appId);
      if (!app) continue;
      edits.push({ id: appId, target: { ...app, instances: Math.max(0, app.instances - ts.length) } });
    }
    this.deployments.checkLocks(
      edits.map((e) => e.id),
      opts.force,
    );
    for (const t of victims) void this.killTask(t, 'killed through the API (scale)');
    return this.update(edits, { force: true });
  }

  /** DELETE /v2/queue/{app}/delay: forgets the app's launch delay, on disk before returning. */
  resetDelay(appId: string): void {
    this.launcher.resetDelay(appId); // and a pass soon
    this.#flush();
  }

  /** Used by the health checkers: results of one task; `kill` replaces an unhealthy one. */
  setHealth(taskId: string, results: HealthResult[]): void {
    // Only healthy or not matters to deployments: every successful check must not cost a reconcile pass.
    if (this.tasks.setHealth(taskId, results)) this.schedule();
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
    const starting = this.launcher.starting(t.id);
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
      if (TERMINAL_STATES.has(u.state))
        this.events.unknownInstanceTerminated({ instanceId: instanceIdOf(u.taskId), runSpecId: appIdOfTask(u.taskId), condition: conditionOf(u.state) });
      return;
    }
    t.state = u.state;
    t.message = u.message;
    if (u.pid !== undefined) t.pid = u.pid;
    const app = this.groups.apps.get(t.appId);
    const monitor = this.#o.healthMonitor;
    if (u.state === 'TASK_RUNNING' && !t.startedAt) {
      t.startedAt = u.timestamp;
      if (app && !t.killing) this.#startChecks(t, app, u.timestamp);
    }
    if (u.state === 'TASK_KILLING') monitor?.setRunning(t.id, false);
    if (TERMINAL_STATES.has(u.state)) {
      this.tasks.remove(t);
      monitor?.remove(t.id);
      this.launcher.release(t);
      if (app && BACKOFF_STATES.has(u.state)) {
        this.launcher.backOff(app, t.configVersion);
        this.stats.failed++;
      }
      if (app && u.state !== 'TASK_KILLED') {
        this.tasks.recordFailure(t.appId, {
          appId: t.appId,
          host: t.host,
          message: u.message,
          state: u.state,
          taskId: t.id,
          timestamp: u.timestamp,
          version: t.version,
          slaveId: SLAVE_ID,
        });
      }
    } else this.tasks.changed(t);
    this.#publishStatus(t);
    this.schedule();
  }

  /** A task just running: its app's health checks and first readiness check start. */
  #startChecks(t: TaskRecord, app: AppDefinition, runningSince: string): void {
    const monitor = this.#o.healthMonitor;
    if (monitor && app.healthChecks.length > 0) {
      const info = this.launcher.launchInfoOf(t.id);
      // Isolated tasks are checked at their own address (COMMAND checks inside their namespace).
      monitor.add(
        {
          taskId: t.id,
          appId: t.appId,
          version: t.version,
          host: checkHost(t),
          ports: healthCheckPorts(app, t),
          netns: t.netns,
          env: info?.env,
          sandboxDir: info?.sandboxDir,
          user: app.user ?? this.#o.defaultTaskUser,
          runningSince,
        },
        app.healthChecks,
      );
    }
    const rc = app.readinessChecks[0];
    if (rc) {
      const port = readinessPort(app, t, rc.portName);
      if (port !== undefined) this.tasks.readiness.add({ taskId: t.id, host: checkHost(t), port, check: rc });
    }
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
    this.events.instanceChanged({
      instanceId: instanceIdOf(t.id),
      condition: conditionOf(t.state),
      runSpecId: t.appId,
      agentId: SLAVE_ID,
      host: t.host,
      runSpecVersion: t.version,
    });
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
    this.launcher.newPass();
    try {
      const { busy, stepStarted } = this.deployments.progress();
      if (stepStarted) this.schedule();
      for (const app of this.groups.apps.values()) if (!busy.has(app.id)) this.#scaleTo(app);
      // Tasks of apps that no longer exist (e.g. after a forced cancel of a stop).
      for (const [appId, tasks] of this.tasks.byApp()) {
        if (this.groups.apps.has(appId) || busy.has(appId)) continue;
        for (const t of tasks.values()) if (!t.killing) void this.killTask(t, 'app removed');
      }
    } catch (err) {
      this.#o.logger.error({ err }, 'reconcile failed');
    }
    try {
      // One transaction per pass: the status updates since the last one, this pass's deployment
      // progress and the records of the tasks it launches (startPending's persist() then has
      // nothing left to write). Each commit is an fsync (issue 17).
      this.#flush();
      this.launcher.startPending();
    } catch (err) {
      this.#o.logger.error({ err }, 'launch failed');
    }
  }

  /** An app no deployment holds: its surplus killed, what it lacks launched (the deployment's Scale step does the same). */
  #scaleTo(app: AppDefinition): void {
    for (const t of excessTasks(this.tasks.appTasks(app.id), app)) void this.killTask(t, 'scaling down');
    this.launcher.launchMissing(app);
  }
}
