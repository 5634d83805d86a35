// The read model behind the apps and groups resources' `embed` (Marathon's AppInfoService): an
// app with its counts, tasks, deployments, readiness results, last task failure and task stats.
import type { AppDefinition } from '../state/app-definition.ts';
import type { TaskRecord } from '../storage/store.ts';
import type { TaskTracker } from '../tasks/tracker.ts';
import type { DeploymentManager } from '../deployment/manager.ts';
import { configVersionOf } from '../state/app-update.ts';
import { taskJson } from '../formats/json.ts';

function lifeTime(tasks: TaskRecord[]): { averageSeconds: number; medianSeconds: number } | undefined {
  const now = Date.now();
  const xs = tasks
    .filter((t) => t.startedAt)
    .map((t) => (now - Date.parse(t.startedAt!)) / 1000)
    .sort((a, b) => a - b);
  if (xs.length === 0) return undefined;
  const mid = Math.floor(xs.length / 2);
  const median = xs.length % 2 ? xs[mid]! : (xs[mid - 1]! + xs[mid]!) / 2;
  return { averageSeconds: xs.reduce((a, b) => a + b, 0) / xs.length, medianSeconds: median };
}

export class AppInfoService {
  readonly #tasks: TaskTracker;
  readonly #deployments: DeploymentManager;

  constructor(tasks: TaskTracker, deployments: DeploymentManager) {
    this.#tasks = tasks;
    this.#deployments = deployments;
  }

  /** A task as the API shows it (with its health check results). */
  task(t: TaskRecord): Record<string, unknown> {
    return taskJson(t, this.#tasks.health.get(t.id));
  }

  /** The app's tasks as the API shows them. */
  tasksOf(appId: string): Record<string, unknown>[] {
    return this.#tasks.appTasks(appId).map((t) => this.task(t));
  }

  /** The app with what `want` embeds (counts, deployments, readiness, tasks, lastTaskFailure, taskStats). */
  info(app: AppDefinition, want: Set<string>): Record<string, unknown> {
    return { ...app, ...this.extras(app, want) };
  }

  /** What `want` adds to the app's definition in info(), in that order. */
  extras(app: AppDefinition, want: Set<string>): Record<string, unknown> {
    const tracker = this.#tasks;
    const deployments = this.#deployments;
    const out: Record<string, unknown> = {};
    if (want.has('counts')) Object.assign(out, tracker.counts(app.id));
    if (want.has('deployments')) out.deployments = deployments.deploymentsOf(app.id).map((d) => ({ id: d.id }));
    if (want.has('readiness')) out.readinessCheckResults = deployments.deploymentsOf(app.id).length > 0 ? deployments.readinessOf(app.id) : [];
    if (want.has('tasks')) out.tasks = this.tasksOf(app.id);
    if (want.has('lastTaskFailure')) {
      const f = tracker.failures.get(app.id);
      if (f) out.lastTaskFailure = f;
    }
    if (want.has('taskStats')) {
      const tasks = tracker.appTasks(app.id);
      const stats = (ts: TaskRecord[]) => {
        const lt = lifeTime(ts);
        return { stats: { counts: tracker.countTasks(ts), ...(lt ? { lifeTime: lt } : {}) } };
      };
      const cfg = configVersionOf(app);
      const scaledAt = app.versionInfo?.lastScalingAt ?? app.version;
      const groups: Record<string, TaskRecord[]> = {
        startedAfterLastScaling: tasks.filter((t) => t.stagedAt >= scaledAt),
        withLatestConfig: tasks.filter((t) => t.configVersion === cfg),
        withOutdatedConfig: tasks.filter((t) => t.configVersion !== cfg),
        totalSummary: tasks,
      };
      const ts: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(groups)) if (v.length) ts[k] = stats(v);
      out.taskStats = ts;
    }
    return out;
  }
}
