// What the API may change, and what a change answers. The scheduler implements Deployer; API
// plugins are given it (with the read-only parts they show) rather than the scheduler itself.
import type { AppEdit, GroupUpdateOptions } from './group/manager.ts';
import type { StoredDeployment, TaskRecord } from './storage/store.ts';
import type { AppChange } from './state/app-change.ts';

export interface DeploymentResult {
  deploymentId: string;
  version: string;
  /** Only for dry runs: the plan that would run. */
  plan?: StoredDeployment;
  /** The changes as versioned (before service ports are given): what the API echoes and announces. */
  changes?: AppChange[];
}

export interface Deployer {
  /**
   * The one call of a change: the group manager versions, checks and plans it, then it is stored
   * and its deployment started; on disk when it returns. `version` defaults to a new one.
   */
  update(edits: AppEdit[], opts: { force: boolean; version?: string; group?: GroupUpdateOptions }): DeploymentResult;
  /** Kills tasks; with scale the apps' instances shrink by the number killed (a deployment). */
  killTasks(appTasks: TaskRecord[], opts: { scale: boolean; force: boolean }): DeploymentResult | null;
  /** Force: drops the deployment (null); else rolls it back with a new deployment. */
  cancelDeployment(id: string, force: boolean): DeploymentResult | null;
  /** Forgets an app's launch delay, on disk before returning. */
  resetDelay(appId: string): void;
}
