// A change of apps: each changed app's id and its definition after the change (null: removed),
// what a change through the group API adds, a read-only view of the current state, and the apps a
// state has once a change is applied. Pure.
import type { AppDefinition } from './app-definition.ts';
import type { GroupRecord } from './group.ts';

export interface AppChange {
  id: string;
  /** The app after the change; null removes it. */
  target: AppDefinition | null;
}

/** The apps with these changes applied (null removes an app). */
export function withChanges(apps: ReadonlyMap<string, AppDefinition>, changes: Iterable<[string, AppDefinition | null]>): Map<string, AppDefinition> {
  const out = new Map(apps);
  for (const [id, app] of changes) {
    if (app) out.set(id, app);
    else out.delete(id);
  }
  return out;
}

/** What a change through the group API adds to its app changes. */
export interface GroupChangeOptions {
  /** The group changed (group_change_* events); default: the deepest group holding every changed app. */
  groupId?: string;
  putGroups?: GroupRecord[];
  removeGroups?: string[];
  /** The changed group: kept, as the change leaves it, as a group version (for rollback). */
  snapshotGroup?: string;
  /** Check and plan only: nothing is stored, locked or started. */
  dryRun?: boolean;
}

/** The current apps and group records, read only (what the deployment manager and the API read). */
export interface StateView {
  readonly apps: ReadonlyMap<string, AppDefinition>;
  readonly groups: ReadonlyMap<string, GroupRecord>;
}
