// Health checks (Marathon's rules): the definition an app carries and the per-task result Marathon shows.

/** A Marathon health check definition (same shape as the app definition's healthChecks[]). */
export interface HealthCheckDefinition {
  protocol: string;
  path?: string | undefined;
  portIndex?: number | undefined;
  port?: number | undefined;
  command?: { value: string } | null | undefined;
  gracePeriodSeconds: number;
  intervalSeconds: number;
  timeoutSeconds: number;
  maxConsecutiveFailures: number;
  ignoreHttp1xx?: boolean | undefined;
  delaySeconds?: number | undefined;
}

/** One entry of a task's `healthCheckResults` (Marathon 1.4 JSON shape). */
export interface HealthCheckResult {
  alive: boolean;
  consecutiveFailures: number;
  firstSuccess: string | null;
  lastFailure: string | null;
  lastSuccess: string | null;
  lastFailureCause: string | null;
  /** Marathon 1.4 field. */
  instanceId: string;
  /** The field Marathon ≤ 1.3 names; both are given so either kind of client works. */
  taskId: string;
}

/** Outcome of one check run: healthy, unhealthy with a cause, or ignored (HTTP 1xx with ignoreHttp1xx). */
export type CheckOutcome = { kind: 'healthy' } | { kind: 'unhealthy'; cause: string } | { kind: 'ignored'; cause: string };
