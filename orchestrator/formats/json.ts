// Marathon's JSON forms of the orchestrator's records (Marathon's api/v2/json Formats): a task,
// a running deployment, a deployment plan as events carry it, and the plain-text task listing.
// Pure functions of the records they are given: the parts that keep the records pass them in.
import type { AppDefinition } from '../state/app-definition.ts';
import { safePath } from '../state/app-definition.ts';
import type { GroupRecord } from '../state/group.ts';
import { withChanges } from '../state/app-change.ts';
import { groupTree } from '../state/group-tree.ts';
import type { StoredDeployment, TaskRecord } from '../storage/store.ts';
import type { HealthCheckResult } from '../health/types.ts';
import type { ReadinessResult } from '../health/readiness.ts';

/** A task as /v2/tasks, /v2/apps/{id}/tasks and the tasks embed show it. */
export function taskJson(t: TaskRecord, health: readonly HealthCheckResult[] | undefined, withServicePorts = true): Record<string, unknown> {
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
  if (health && health.length) out.healthCheckResults = health;
  return out;
}

/** A running deployment as /v2/deployments lists it; `readinessOf` gives an app's readiness results. */
export function deploymentJson(d: StoredDeployment, readinessOf: (appId: string) => ReadinessResult[]): Record<string, unknown> {
  const step = d.steps[d.currentStep];
  return {
    id: d.id,
    version: d.version,
    affectedApps: d.affectedApps,
    affectedPods: [],
    steps: d.steps,
    // Marathon 1.4 names the results readinessCheckResults; document 1 names them readinessChecks, so
    // both are there on purpose. A client that refuses unknown keys fails on the second one
    // (marathon-python 0.13's MarathonDeploymentAction takes no readiness_checks argument): the
    // docs say so (test/orchestrator/api/groups.test.ts checks both keys).
    currentActions: (step?.actions ?? []).map((a) => {
      const results = a.action === 'StopApplication' ? [] : readinessOf(a.app);
      return { action: a.action, app: a.app, readinessCheckResults: results, readinessChecks: results };
    }),
    currentStep: Math.min(d.currentStep + 1, d.steps.length),
    totalSteps: d.steps.length,
  };
}

/** A deployment as events carry it (Marathon 1.4: the whole root group before and after). */
export function planJson(d: StoredDeployment, apps: ReadonlyMap<string, AppDefinition>, groups: ReadonlyMap<string, GroupRecord>): Record<string, unknown> {
  const root = (over: Record<string, AppDefinition | null>) => groupTree('/', withChanges(apps, Object.entries(over)), groups);
  return { id: d.id, original: root(d.original), target: root(d.target), steps: d.steps, version: d.version };
}

/** The plain-text listing (Marathon's api/EndpointsHelper): TAB-separated, one line per service port. */
export function textListing(apps: AppDefinition[], tasksOf: (appId: string) => TaskRecord[]): string {
  let out = '';
  for (const app of apps) {
    const running = tasksOf(app.id).filter((t) => t.state === 'TASK_RUNNING');
    const sps = app.ports ?? [];
    if (sps.length === 0) {
      out += `${safePath(app.id)}\t \t${running.map((t) => t.host).join(' ')} \n`;
      continue;
    }
    sps.forEach((sp, i) => {
      out += `${safePath(app.id)}\t${sp}\t${running.map((t) => `${t.host}:${t.ports[i] ?? 0}\t`).join('')}\n`;
    });
  }
  return out;
}
