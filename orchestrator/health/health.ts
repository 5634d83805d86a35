// The state of one health check for one task, with Marathon 1.4's rules (HealthCheckActor, Health):
// - failures are ignored while the task is not running, or when it never succeeded and the grace
//   period (from runningSince) has not passed;
// - a success sets firstSuccess (once) and lastSuccess, and resets consecutiveFailures;
// - a counted failure sets lastFailure and lastFailureCause and increments consecutiveFailures;
// - kill when the count BEFORE this failure is ≥ maxConsecutiveFailures > 0 (failure #max+1);
// - alive = lastSuccess exists and is later than lastFailure.
import type { HealthCheckResult } from './types.ts';

export interface FailureDecision {
  /** False when the failure was ignored (not running / grace period). */
  counted: boolean;
  kill: boolean;
}

export class Health {
  readonly instanceId: string;
  readonly taskId: string;
  firstSuccess: number | null = null;
  lastSuccess: number | null = null;
  lastFailure: number | null = null;
  lastFailureCause: string | null = null;
  consecutiveFailures = 0;
  /** True once a result (success or counted failure) exists: only then is it shown. */
  reported = false;

  constructor(instanceId: string, taskId = instanceId) {
    this.instanceId = instanceId;
    this.taskId = taskId;
  }

  get alive(): boolean {
    return this.lastSuccess !== null && (this.lastFailure === null || this.lastSuccess > this.lastFailure);
  }

  success(now: number): void {
    if (this.firstSuccess === null) this.firstSuccess = now;
    // Timestamps are strictly increasing so that "later than" is decided even within one millisecond.
    this.lastSuccess = this.lastFailure !== null && now <= this.lastFailure ? this.lastFailure + 1 : now;
    this.consecutiveFailures = 0;
    this.reported = true;
  }

  failure(
    now: number,
    cause: string,
    ctx: { running: boolean; runningSince: number; gracePeriodSeconds: number; maxConsecutiveFailures: number },
  ): FailureDecision {
    if (!ctx.running) return { counted: false, kill: false };
    if (this.firstSuccess === null && now < ctx.runningSince + ctx.gracePeriodSeconds * 1000) return { counted: false, kill: false };
    const before = this.consecutiveFailures;
    this.consecutiveFailures = before + 1;
    this.lastFailure = this.lastSuccess !== null && now <= this.lastSuccess ? this.lastSuccess + 1 : now;
    this.lastFailureCause = cause;
    this.reported = true;
    return { counted: true, kill: ctx.maxConsecutiveFailures > 0 && before >= ctx.maxConsecutiveFailures };
  }

  toJSON(): HealthCheckResult {
    const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
    return {
      alive: this.alive,
      consecutiveFailures: this.consecutiveFailures,
      firstSuccess: iso(this.firstSuccess),
      lastFailure: iso(this.lastFailure),
      lastSuccess: iso(this.lastSuccess),
      lastFailureCause: this.lastFailureCause,
      instanceId: this.instanceId,
      taskId: this.taskId,
    };
  }
}
