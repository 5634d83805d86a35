// A change of apps: each changed app's id and its definition after the change (null: removed),
// and the apps a state has once a change is applied. Pure.
import type { AppDefinition } from './app-definition.ts';

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
