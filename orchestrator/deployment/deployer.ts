// What the API may change, and what a change answers. The scheduler implements Deployer; API
// plugins are given it (with the read-only parts they show) rather than the scheduler itself.
import type { GroupChangeOptions } from '../group/manager.ts';
import type { StoredDeployment, TaskRecord } from '../storage/store.ts';
import type { AppChange } from '../state/app-change.ts';

export interface DeploymentResult {
  deploymentId: string;
  version: string;
  /** Only for dry runs: the plan that would run. */
  plan?: StoredDeployment;
}

export interface Deployer {
  /** Checks, stores and starts a change (apps, and groups for the group API); on disk when it returns. */
  deploy(changes: AppChange[], force: boolean, version?: string, group?: GroupChangeOptions): DeploymentResult;
  /** Kills tasks; with scale the apps' instances shrink by the number killed (a deployment). */
  killTasks(appTasks: TaskRecord[], opts: { scale: boolean; force: boolean }): DeploymentResult | null;
  /** Force: drops the deployment (null); else rolls it back with a new deployment. */
  cancelDeployment(id: string, force: boolean): DeploymentResult | null;
  /** Forgets an app's launch delay, on disk before returning. */
  resetDelay(appId: string): void;
}
