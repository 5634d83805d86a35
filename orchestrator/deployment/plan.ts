// Deployment plans (Marathon's DeploymentPlan.apply, reduced to the app level) and the rolling
// restart strategy (TaskReplaceActor.computeRestartStrategy).
import { randomUUID } from 'node:crypto';
import type { AppDefinition } from '../state/app-definition.ts';
import type { StoredDeployment } from '../storage/store.ts';
import { configVersionOf } from '../state/app-update.ts';
import type { AppChange } from '../state/app-change.ts';

/**
 * Builds the steps: Stop (removed) → Start (new) → Scale/Restart layered by `depthOf`, the length
 * of the longest dependency path from each app in the target state (apps without dependencies first).
 */
export function buildPlan(
  changes: AppChange[],
  current: (id: string) => AppDefinition | undefined,
  version: string,
  depthOf: (id: string) => number,
  groupId = '/',
): StoredDeployment {
  const stops: { action: string; app: string }[] = [];
  const starts: { action: string; app: string }[] = [];
  const layered = new Map<number, { action: string; app: string }[]>();
  const original: Record<string, AppDefinition | null> = {};
  const target: Record<string, AppDefinition | null> = {};
  for (const c of changes) {
    const before = current(c.id) ?? null;
    original[c.id] = before;
    target[c.id] = c.target;
    let action: string | null = null;
    if (c.target === null) {
      if (before) stops.push({ action: 'StopApplication', app: c.id });
      continue;
    }
    if (!before) {
      starts.push({ action: 'StartApplication', app: c.id });
      action = 'ScaleApplication';
    } else if (configVersionOf(before) !== configVersionOf(c.target) && c.target.instances > 0) action = 'RestartApplication';
    else if (before.instances !== c.target.instances || configVersionOf(before) !== configVersionOf(c.target)) action = 'ScaleApplication';
    if (action) {
      const d = depthOf(c.id);
      layered.set(d, [...(layered.get(d) ?? []), { action, app: c.id }]);
    }
  }
  const steps = [stops, starts, ...[...layered.keys()].sort((a, b) => a - b).map((k) => layered.get(k)!)]
    .filter((s) => s.length > 0)
    .map((actions) => ({ actions }));
  return { id: randomUUID(), version, groupId, affectedApps: changes.map((c) => c.id), steps, currentStep: 0, original, target, restart: {} };
}

export interface RestartStrategy {
  killImmediately: number;
  maxCapacity: number;
}

/**
 * Marathon's restart rule: of n target instances, keep at least ceil(n × minimumHealthCapacity)
 * running and run at most floor(n × (1 + maximumOverCapacity)), one more when the two are equal and
 * already reached (so that a new instance can start). `running`: the active instances when the step starts.
 */
export function restartStrategy(n: number, running: number, minimumHealthCapacity: number, maximumOverCapacity: number): RestartStrategy {
  const minHealthy = Math.ceil(n * minimumHealthCapacity);
  let maxCapacity = Math.floor(n * (1 + maximumOverCapacity));
  const killImmediately = Math.max(0, running - minHealthy);
  if (minHealthy === maxCapacity && maxCapacity <= running) maxCapacity += 1;
  return { killImmediately, maxCapacity };
}
