// What a group update (or a group delete) changes (Marathon's GroupUpdate.apply + the root group
// diff): the target apps and group records, and from them the app changes a deployment carries.
// Changed apps restart, new apps start, removed apps stop, apps whose definition is the same are
// left alone, and a change of `instances` only is a scale.
import type { AppDefinition } from '../state/app-definition.ts';
import { configVersionOf } from '../state/app-update.ts';
import { ancestorsOf, isWithin, parentOf, type GroupRecord, type GroupTree, type GroupUpdate } from '../state/group.ts';
import type { AppChange } from '../state/app-change.ts';

/**
 * Versions a changed app (the scheduler's rule: service ports asked as 0 keep the app's; scale-only
 * moves lastScalingAt, anything else both).
 */
export type Versioner = (before: AppDefinition | undefined, next: AppDefinition, restart: boolean, version: string) => AppDefinition;

export interface GroupChange {
  changes: AppChange[];
  putGroups: GroupRecord[];
  removeGroups: string[];
}

export class GroupEditor {
  readonly apps: Map<string, AppDefinition>;
  readonly groups: Map<string, GroupRecord>;
  readonly #before: ReadonlyMap<string, AppDefinition>;
  readonly #beforeGroups: ReadonlyMap<string, GroupRecord>;
  readonly #version: string;

  constructor(apps: ReadonlyMap<string, AppDefinition>, groups: ReadonlyMap<string, GroupRecord>, version: string) {
    this.apps = new Map(apps);
    this.groups = new Map(groups);
    this.#before = apps;
    this.#beforeGroups = groups;
    this.#version = version;
  }

  /** Applies an update to its group (created when missing, with any missing groups above it). */
  update(u: GroupUpdate): void {
    this.#touch(u.id);
    const rec = this.groups.get(u.id)!;
    if (u.dependencies) rec.dependencies = u.dependencies;
    if (u.apps) {
      const given = new Set(u.apps.map((a) => a.id));
      for (const id of [...this.apps.keys()]) if (parentOf(id) === u.id && !given.has(id)) this.apps.delete(id);
      for (const a of u.apps) this.apps.set(a.id, a);
    }
    if (u.groups) {
      const given = new Set(u.groups.map((g) => g.id));
      for (const id of [...this.groups.keys()]) if (id !== u.id && parentOf(id) === u.id && !given.has(id)) this.remove(id);
      for (const g of u.groups) this.update(g);
    }
  }

  /** Multiplies the instances of every app beneath `groupId` (rounding up). */
  scaleBy(groupId: string, factor: number): void {
    this.#touch(groupId);
    for (const [id, app] of this.apps) if (isWithin(id, groupId)) this.apps.set(id, { ...app, instances: Math.ceil(app.instances * factor) });
  }

  /** Removes a group with everything beneath it; the root group itself stays (empty). */
  remove(groupId: string): void {
    for (const id of [...this.apps.keys()]) if (isWithin(id, groupId)) this.apps.delete(id);
    for (const id of [...this.groups.keys()]) if (isWithin(id, groupId) && id !== '/') this.groups.delete(id);
    this.#touch(parentOf(groupId)); // the root's parent is the root
  }

  /** The app changes and group records that turn the state before into this one. */
  result(versioned: Versioner): GroupChange {
    const changes: AppChange[] = [];
    for (const id of this.#before.keys()) if (!this.apps.has(id)) changes.push({ id, target: null });
    for (const [id, next] of this.apps) {
      const before = this.#before.get(id);
      if (before === next) continue;
      const target = versioned(before, next, false, this.#version);
      // Same instances and no configuration change (the versioner's own judgement): left alone.
      if (before && before.instances === target.instances && configVersionOf(before) === configVersionOf(target)) continue;
      changes.push({ id, target });
    }
    const putGroups = [...this.groups.values()].filter((g) => {
      const was = this.#beforeGroups.get(g.id);
      return !was || was.version !== g.version || JSON.stringify(was.dependencies) !== JSON.stringify(g.dependencies);
    });
    const removeGroups = [...this.#beforeGroups.keys()].filter((id) => !this.groups.has(id));
    return { changes, putGroups, removeGroups };
  }

  /** Gives `id` and every group above it this change's version, creating missing ones. */
  #touch(id: string): void {
    for (const g of [...ancestorsOf(id), id]) {
      const rec = this.groups.get(g);
      this.groups.set(g, { id: g, dependencies: rec?.dependencies ?? [], version: this.#version });
    }
  }
}

/** A tree as an update that makes a group exactly that again (rollback). */
export function treeAsUpdate(t: GroupTree): GroupUpdate {
  return {
    id: t.id,
    dependencies: t.dependencies,
    apps: t.apps.map((a) => {
      const { versionInfo: _vi, ...rest } = a;
      return rest as AppDefinition;
    }),
    groups: t.groups.map(treeAsUpdate),
  };
}
