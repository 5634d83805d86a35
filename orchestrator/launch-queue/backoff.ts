// Launch back-off (Marathon's RateLimiter): keyed by (app, lastConfigChangeAt). The nth consecutive
// failure (Failed, Error, Finished, Lost; NOT Killed) delays the next launch by
// min(backoffSeconds × backoffFactor^(n−1), maxLaunchDelaySeconds). A config change starts fresh;
// a RestartApplication step and DELETE /v2/queue/{app}/delay reset it.
import type { AppDefinition } from '../state/app-definition.ts';
import { configVersionOf } from '../state/app-update.ts';
import type { DelayRecord } from '../storage/store.ts';

export const BACKOFF_STATES: ReadonlySet<string> = new Set(['TASK_FAILED', 'TASK_ERROR', 'TASK_FINISHED', 'TASK_LOST', 'TASK_GONE', 'TASK_DROPPED']);

/** The delay after one more failure of a task of `app` launched with `configVersion`. */
export function nextDelay(app: AppDefinition, configVersion: string, previous: DelayRecord | undefined, now: number): DelayRecord {
  const same = previous !== undefined && previous.configVersion === configVersion;
  const delaySeconds = same
    ? Math.min(previous.delaySeconds * app.backoffFactor, app.maxLaunchDelaySeconds)
    : Math.min(app.backoffSeconds, app.maxLaunchDelaySeconds);
  return { appId: app.id, configVersion, delaySeconds, deadline: now + delaySeconds * 1000, failures: same ? previous.failures + 1 : 1 };
}

/** True while launches of `app` must wait. */
export function isDelayed(app: AppDefinition, delay: DelayRecord | undefined, now: number): boolean {
  return delay !== undefined && delay.configVersion === configVersionOf(app) && delay.deadline > now;
}
