// Checking and planning one change against the current state (pure: the scheduler's deploy()
// stores and starts what this returns). The target state must hold no app where a group is, no
// dependency cycle, and stay within the instance bounds; a failed check throws InvalidObject.
import type { AppDefinition } from '../state/app-definition.ts';
import { InvalidObject } from '../errors.ts';
import { instanceViolations } from '../state/bounds.ts';
import { isWithin, parentOf, type GroupRecord, type GroupTree } from '../state/group.ts';
import type { StoredDeployment } from '../storage/store.ts';
import { withChanges } from '../state/app-change.ts';
import { DependencyGraph } from './dependencies.ts';
import { groupTree } from '../state/group-tree.ts';
import type { AppChange } from '../state/app-change.ts';
import { buildPlan } from './plan.ts';

/** The deepest group that holds every one of `ids`. */
export function commonGroupOf(ids: string[]): string {
  let common: string | undefined;
  for (const id of ids) {
    const g = parentOf(id);
    if (common === undefined) common = g;
    else while (!isWithin(g, common)) common = parentOf(common);
  }
  return common ?? '/';
}

export interface ChangeToPlan {
  /** The app changes, service ports already assigned. */
  changes: AppChange[];
  /** Group records the change writes and removes. */
  groups: { put: GroupRecord[]; remove: string[] };
  version: string;
  groupId: string;
  /** The group kept as a group version once changed (for rollback). */
  snapshotGroup?: string | undefined;
}

/** Checks the change's target state and plans its deployment; `snapshot` is the changed group as it will be. */
export function planChange(
  apps: ReadonlyMap<string, AppDefinition>,
  groups: ReadonlyMap<string, GroupRecord>,
  c: ChangeToPlan,
): { plan: StoredDeployment; snapshot: GroupTree | undefined } {
  const targetApps = withChanges(
    apps,
    c.changes.map((x) => [x.id, x.target]),
  );
  const overload = instanceViolations(apps, targetApps);
  if (overload.length > 0) throw new InvalidObject(overload);
  const targetGroups = new Map(groups);
  for (const id of c.groups.remove) targetGroups.delete(id);
  for (const g of c.groups.put) targetGroups.set(g.id, g);
  const clash = [
    ...c.changes.filter((x) => x.target && targetGroups.has(x.id)).map((x) => x.id),
    ...c.groups.put.filter((g) => targetApps.has(g.id)).map((g) => g.id),
  ];
  if (clash.length > 0) throw new InvalidObject([{ path: '/', errors: [`Groups and Applications may not have the same identifier: ${clash[0]}`] }]);
  const depths = new DependencyGraph(targetApps, targetGroups).depths();
  const plan = buildPlan(
    c.changes,
    (id) => apps.get(id),
    c.version,
    (id) => depths.get(id) ?? 1,
    c.groupId,
  );
  const touched = [...c.groups.remove, ...c.groups.put.map((g) => g.id)];
  if (touched.length > 0) plan.originalGroups = Object.fromEntries(touched.map((id) => [id, groups.get(id) ?? null]));
  return { plan, snapshot: c.snapshotGroup ? groupTree(c.snapshotGroup, targetApps, targetGroups) : undefined };
}
