// HealthMonitor: runs every health check of every running task on its own timer and reports, with
// Marathon 1.4's semantics (see health.ts), through callbacks that the scheduler wires to its state
// and event bus:
//   onResult        → scheduler.setHealth(taskId, results)  (healthCheckResults, healthy counts)
//   onFailedCheck   → failed_health_check_event            {appId, instanceId, healthCheck}
//   onHealthChanged → health_status_changed_event           {appId, instanceId, version, alive}
//   onInstanceHealthChanged → instance_health_changed_event {instanceId, runSpecId, healthy, runSpecVersion}
//   onKill          → unhealthy_instance_kill_event, then the scheduler kills (and replaces) the task
// Checks of one task never overlap: the next run starts `intervalSeconds` after the previous one
// started, or right after it ended when it took longer. The first run is immediate (failures are
// ignored during the grace period anyway), so a healthy task is known healthy within a moment
// instead of after one full interval as in Marathon (checks start immediately at task launch;
// delaySeconds is therefore not applied).
import type { Logger } from '../../shared/logger.ts';
import { Health } from './health.ts';
import { runCheck, type CheckTarget } from './checks.ts';
import { instanceIdOf } from '../tasks/ids.ts';
import type { CheckOutcome, HealthCheckDefinition, HealthCheckResult } from './types.ts';

export interface MonitoredTask {
  taskId: string;
  appId: string;
  version: string;
  /** Address to check (default 127.0.0.1; the task's own IP when it has one). */
  host?: string | undefined;
  /** Host ports in port-definition order (portIndex indexes this). */
  ports: number[];
  /** For COMMAND checks: the task's environment and sandbox. */
  env?: Record<string, string> | undefined;
  sandboxDir?: string | undefined;
  netns?: string | undefined;
  /** For COMMAND checks: the user the task runs as (undefined: the orchestrator's own). */
  user?: string | undefined;
  /** When the task became TASK_RUNNING (ISO string or ms); the grace period counts from here. Default: now. */
  runningSince?: string | number | undefined;
}

export interface HealthEventBase {
  taskId: string;
  instanceId: string;
  appId: string;
  version: string;
  /** Index of the check in the app's healthChecks. */
  index: number;
  healthCheck: HealthCheckDefinition;
}

export interface HealthMonitorOptions {
  logger?: Logger | undefined;
  /** A check's result changed; `results` are all shown results of the task (for setHealth). */
  onResult?: ((e: HealthEventBase & { result: HealthCheckResult; results: HealthCheckResult[] }) => void) | undefined;
  /** A failure was counted (not ignored). */
  onFailedCheck?: ((e: HealthEventBase & { cause: string; consecutiveFailures: number }) => void) | undefined;
  /** `alive` of one check flipped. */
  onHealthChanged?: ((e: HealthEventBase & { alive: boolean }) => void) | undefined;
  /** The task as a whole: healthy = every check has a result and is alive. */
  onInstanceHealthChanged?: ((e: Omit<HealthEventBase, 'index' | 'healthCheck'> & { healthy: boolean }) => void) | undefined;
  /** Failure number maxConsecutiveFailures+1: the task must be killed. Checks of the task stop. */
  onKill?: ((e: HealthEventBase & { reason: string; lastFailure: string }) => void) | undefined;
  /** Replaces the real check runner (tests). */
  runner?: ((hc: HealthCheckDefinition, target: CheckTarget) => Promise<CheckOutcome>) | undefined;
}

interface CheckState {
  index: number;
  hc: HealthCheckDefinition;
  health: Health;
  timer: NodeJS.Timeout | undefined;
  inFlight: boolean;
}

interface TaskEntry {
  task: MonitoredTask;
  instanceId: string;
  runningSince: number;
  checks: CheckState[];
  stopped: boolean;
  running: boolean;
  instanceHealthy: boolean;
}

/** Everything a check's shown result is made of, as one comparable string (no JSON or dates per run). */
function stateOf(h: Health): string {
  return `${h.firstSuccess}|${h.lastSuccess}|${h.lastFailure}|${h.lastFailureCause}|${h.consecutiveFailures}|${h.reported}`;
}

export class HealthMonitor {
  readonly #tasks = new Map<string, TaskEntry>();
  readonly #o: HealthMonitorOptions;
  readonly #run: (hc: HealthCheckDefinition, target: CheckTarget) => Promise<CheckOutcome>;

  constructor(opts: HealthMonitorOptions = {}) {
    this.#o = opts;
    this.#run = opts.runner ?? runCheck;
  }

  /** Starts checking a running task. Replaces an earlier registration of the same task. */
  add(task: MonitoredTask, healthChecks: HealthCheckDefinition[]): void {
    this.remove(task.taskId);
    if (healthChecks.length === 0) return;
    const instanceId = instanceIdOf(task.taskId);
    const since = task.runningSince === undefined ? Date.now() : typeof task.runningSince === 'number' ? task.runningSince : Date.parse(task.runningSince);
    const entry: TaskEntry = {
      task,
      instanceId,
      runningSince: Number.isFinite(since) ? since : Date.now(),
      checks: healthChecks.map((hc, index) => ({ index, hc, health: new Health(instanceId, task.taskId), timer: undefined, inFlight: false })),
      stopped: false,
      running: true,
      instanceHealthy: false,
    };
    this.#tasks.set(task.taskId, entry);
    for (const c of entry.checks) this.#schedule(entry, c, 0);
  }

  /** Marks a task as not running (e.g. TASK_KILLING): its failures are ignored from now on. */
  setRunning(taskId: string, running: boolean): void {
    const e = this.#tasks.get(taskId);
    if (e) e.running = running;
  }

  /** Stops checking a task (terminal state, kill); its results are forgotten. */
  remove(taskId: string): void {
    const e = this.#tasks.get(taskId);
    if (!e) return;
    this.#stop(e);
    this.#tasks.delete(taskId);
  }

  /** Task ids being checked. */
  tasks(): string[] {
    return [...this.#tasks.keys()];
  }

  /** Marathon's `healthCheckResults` for a task: one entry per check that has a result. */
  healthCheckResults(taskId: string): HealthCheckResult[] {
    const e = this.#tasks.get(taskId);
    if (!e) return [];
    return e.checks.filter((c) => c.health.reported).map((c) => c.health.toJSON());
  }

  /** healthy = every check has a result and is alive; undefined when the task has no result yet. */
  isHealthy(taskId: string): boolean | undefined {
    const e = this.#tasks.get(taskId);
    if (!e || !e.checks.some((c) => c.health.reported)) return undefined;
    return e.checks.every((c) => c.health.alive);
  }

  close(): void {
    for (const e of this.#tasks.values()) this.#stop(e);
    this.#tasks.clear();
  }

  #stop(e: TaskEntry): void {
    e.stopped = true;
    for (const c of e.checks) {
      if (c.timer) clearTimeout(c.timer);
      c.timer = undefined;
    }
  }

  #schedule(e: TaskEntry, c: CheckState, delayMs: number): void {
    if (e.stopped) return;
    c.timer = setTimeout(() => void this.#tick(e, c), Math.max(0, delayMs));
    c.timer.unref?.();
  }

  async #tick(e: TaskEntry, c: CheckState): Promise<void> {
    c.timer = undefined;
    if (e.stopped || c.inFlight) return;
    c.inFlight = true;
    const started = Date.now();
    let outcome: CheckOutcome;
    try {
      outcome = await this.#run(c.hc, {
        host: e.task.host ?? '127.0.0.1',
        ports: e.task.ports,
        env: e.task.env,
        sandboxDir: e.task.sandboxDir,
        netns: e.task.netns,
        user: e.task.user,
      });
    } catch (err) {
      outcome = { kind: 'unhealthy', cause: (err as Error).message };
    }
    c.inFlight = false;
    if (e.stopped) return;
    this.#apply(e, c, outcome, Date.now());
    const intervalMs = Math.max(0, c.hc.intervalSeconds * 1000);
    this.#schedule(e, c, started + intervalMs - Date.now());
  }

  #base(e: TaskEntry, c: CheckState): HealthEventBase {
    return { taskId: e.task.taskId, instanceId: e.instanceId, appId: e.task.appId, version: e.task.version, index: c.index, healthCheck: c.hc };
  }

  #apply(e: TaskEntry, c: CheckState, outcome: CheckOutcome, now: number): void {
    const h = c.health;
    const before = stateOf(h);
    const aliveBefore = h.alive;
    let kill = false;
    if (outcome.kind === 'ignored') {
      this.#o.logger?.debug({ taskId: e.task.taskId, cause: outcome.cause }, 'health check result ignored');
      return;
    }
    if (outcome.kind === 'healthy') {
      h.success(now);
    } else {
      const d = h.failure(now, outcome.cause, {
        running: e.running,
        runningSince: e.runningSince,
        gracePeriodSeconds: c.hc.gracePeriodSeconds,
        maxConsecutiveFailures: c.hc.maxConsecutiveFailures,
      });
      if (!d.counted) {
        this.#o.logger?.debug({ taskId: e.task.taskId, cause: outcome.cause }, 'health check failure ignored (grace period or not running)');
        return;
      }
      kill = d.kill;
      this.#o.logger?.info({ taskId: e.task.taskId, cause: outcome.cause, consecutiveFailures: h.consecutiveFailures }, 'health check failed');
      this.#o.onFailedCheck?.({ ...this.#base(e, c), cause: outcome.cause, consecutiveFailures: h.consecutiveFailures });
    }
    if (stateOf(h) !== before) this.#o.onResult?.({ ...this.#base(e, c), result: h.toJSON(), results: this.healthCheckResults(e.task.taskId) });
    if (h.alive !== aliveBefore) this.#o.onHealthChanged?.({ ...this.#base(e, c), alive: h.alive });
    const healthy = e.checks.every((x) => x.health.alive);
    if (healthy !== e.instanceHealthy) {
      e.instanceHealthy = healthy;
      this.#o.onInstanceHealthChanged?.({ taskId: e.task.taskId, instanceId: e.instanceId, appId: e.task.appId, version: e.task.version, healthy });
    }
    if (kill) {
      this.#stop(e);
      const reason = h.lastFailureCause ?? 'health check failed';
      this.#o.logger?.warn({ taskId: e.task.taskId, reason }, 'killing an unhealthy task');
      this.#o.onKill?.({ ...this.#base(e, c), reason, lastFailure: new Date(h.lastFailure!).toISOString() });
    }
  }
}
