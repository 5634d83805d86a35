// The group manager (Marathon's GroupManager): the current apps and group records, their stored
// versions, version timestamps, and the service ports apps are given. Every change of apps and
// groups goes through update(): it versions the definitions the API hands it, assigns service
// ports, adds the groups the change implies, checks and plans it, and returns the plan with the
// write the scheduler runs inside its transaction (and what to apply once that is on disk).
import type { Logger } from '../../shared/logger.ts';
import { bridgedMappings, isConfigChange, keepServicePorts, type AppDefinition } from '../state/app-definition.ts';
import { ancestorsOf, isWithin, type GroupRecord, type GroupTree } from '../state/group.ts';
import { withPlainMaps } from '../state/labels.ts';
import { reviveApp } from '../storage/stored-app.ts';
import type { Store, StoredDeployment } from '../storage/store.ts';
import { groupTree } from '../state/group-tree.ts';
import { configVersionOf } from '../state/app-update.ts';
import type { AppChange, GroupChangeOptions } from '../state/app-change.ts';
import { commonGroupOf, planChange } from '../deployment/change.ts';
import { GroupEditor } from './editor.ts';
import { Unprocessable } from '../errors.ts';

/** Group records a change writes and removes. */
export interface GroupRecordChanges {
  put: GroupRecord[];
  remove: string[];
}

/** An app change as a handler asks for it: the definition it wants (not yet versioned), or null to remove the app. */
export interface AppEdit {
  id: string;
  target: AppDefinition | null;
  /** A restart: a new version even of the same definition. */
  restart?: boolean;
  /** Taken as it is, already versioned (a rollback restores definitions as they were stored). */
  asIs?: boolean;
}

/** A change through the group API: its options, and the edit of the group tree that makes its app changes. */
export interface GroupUpdateOptions extends GroupChangeOptions {
  edit?: (editor: GroupEditor) => void;
}

export interface UpdateOptions {
  version: string;
  group?: GroupUpdateOptions | undefined;
  /** Throws when deployments hold a changed app (the deployment manager's check); absent for dry runs. */
  checkLocks?: ((ids: string[]) => void) | undefined;
}

/** A checked and planned change, not yet stored. */
export interface PlannedUpdate {
  plan: StoredDeployment;
  /** The changes as versioned, before service ports are given (what the API echoes and api_post_event carries). */
  versioned: AppChange[];
  /** Stores the change's apps, group records and group version: run inside the caller's transaction. */
  write(): void;
  /** Makes the change the current state, once it is on disk. */
  apply(): void;
  /** The changes as stored. */
  changes: AppChange[];
}

export function servicePortsOf(app: AppDefinition): number[] {
  return bridgedMappings(app)?.map((m) => m.servicePort) ?? app.ports ?? [];
}

export class GroupManager {
  readonly apps = new Map<string, AppDefinition>();
  /** Group records (dependencies, version); groups that only apps' paths imply have none. */
  readonly groups = new Map<string, GroupRecord>();
  readonly #store: Store;
  /** Service ports are given from [min, max) (--local_port_min/max). */
  readonly #servicePorts: { min: number; max: number };
  #lastVersion = 0;

  constructor(store: Store, servicePorts: { min: number; max: number }) {
    this.#store = store;
    this.#servicePorts = servicePorts;
  }

  /** Loads the stored apps and groups; an app whose definition cannot be read is left out (and logged). */
  load(logger: Logger): void {
    for (const row of this.#store.loadApps()) {
      const r = reviveApp(row.key, row.value);
      if ('app' in r) this.apps.set(r.app.id, r.app);
      else logger.error({ appId: row.key, problem: r.problem }, 'stored app definition cannot be read: left out of this run (kept in the database)');
    }
    for (const g of this.#store.loadGroups()) this.groups.set(g.id, g);
  }

  /** A fresh, strictly increasing version timestamp (ISO with ms). */
  newVersion(): string {
    let t = Date.now();
    if (t <= this.#lastVersion) t = this.#lastVersion + 1;
    this.#lastVersion = t;
    return new Date(t).toISOString();
  }

  /**
   * The one entry of a change: versions the edits (or runs the group edit), checks the locks,
   * assigns service ports, adds implied groups, checks the target state and plans the deployment.
   * Nothing is stored or changed until the caller runs write() and apply().
   */
  update(edits: AppEdit[], opts: UpdateOptions): PlannedUpdate {
    const { version } = opts;
    const group = opts.group ?? {};
    let changes: AppChange[];
    let groupOptions: GroupChangeOptions = group;
    if (group.edit) {
      const editor = new GroupEditor(this.apps, this.groups, version);
      group.edit(editor);
      const r = editor.result((before, next, restart, v) => this.versioned(before, next, restart, v));
      changes = r.changes;
      groupOptions = { ...group, putGroups: r.putGroups, removeGroups: r.removeGroups };
    } else {
      changes = edits.map((e) => ({
        id: e.id,
        target: e.target && !e.asIs ? this.versioned(this.apps.get(e.id), e.target, e.restart ?? false, version) : e.target,
      }));
    }
    const versioned = changes.map((c) => ({ ...c }));
    opts.checkLocks?.(changes.map((c) => c.id));
    for (const c of changes) if (c.target) c.target = this.assignServicePorts(c.target, changes);
    const groups = this.targetGroups(changes, groupOptions, version);
    const groupId = group.groupId ?? commonGroupOf(changes.map((c) => c.id));
    const { plan, snapshot } = planChange(this.apps, this.groups, { changes, groups, version, groupId, snapshotGroup: group.snapshotGroup });
    return {
      plan,
      versioned,
      changes,
      write: () => this.writeChange(changes, groups, snapshot),
      apply: () => this.apply(changes, groups),
    };
  }

  /** Versions an updated app: scale-only moves lastScalingAt, anything else both. */
  versioned(before: AppDefinition | undefined, next: AppDefinition, restart = false, v = this.newVersion()): AppDefinition {
    // An app keeps its service ports across updates (Marathon's rule): a definition asking for 0 is
    // no configuration change on that account.
    const kept = before ? keepServicePorts(before, next) : next;
    const out: AppDefinition = { ...kept, version: v };
    if (!before) out.versionInfo = { lastScalingAt: v, lastConfigChangeAt: v };
    else if (!restart && !isConfigChange(before, kept)) out.versionInfo = { lastScalingAt: v, lastConfigChangeAt: configVersionOf(before) };
    else out.versionInfo = { lastScalingAt: v, lastConfigChangeAt: v };
    return out;
  }

  versionsOf(appId: string): string[] {
    return this.#store.versions(appId);
  }

  appVersion(appId: string, version: string): AppDefinition | undefined {
    return this.#store.appVersion(appId, version);
  }

  /** The current state's groups: records, and the groups apps' paths imply. */
  groupExists(id: string): boolean {
    if (id === '/' || this.groups.has(id)) return true;
    for (const a of this.apps.keys()) if (a !== id && isWithin(a, id)) return true;
    return false;
  }

  groupTree(id: string): GroupTree {
    return groupTree(id, this.apps, this.groups);
  }

  groupVersions(id: string): string[] {
    return this.#store.groupVersions(id);
  }

  groupVersion(id: string, version: string): GroupTree | undefined {
    return this.#store.groupVersion(id, version);
  }

  /** Group records a change writes: the group API's own, plus records for groups new apps need. */
  targetGroups(changes: AppChange[], group: GroupChangeOptions, version: string): GroupRecordChanges {
    const put = new Map((group.putGroups ?? []).map((g) => [g.id, g]));
    const remove = group.removeGroups ?? [];
    for (const c of changes) {
      if (!c.target) continue;
      for (const g of ancestorsOf(c.id)) if (!this.groups.has(g) && !put.has(g)) put.set(g, { id: g, dependencies: [], version });
    }
    return { put: [...put.values()], remove };
  }

  /** Service ports: zeros get the lowest free port in [min, max) (versioned() has kept an app's own). */
  assignServicePorts(app: AppDefinition, changes: AppChange[]): AppDefinition {
    const { min, max } = this.#servicePorts;
    const used = new Set<number>();
    for (const a of this.apps.values()) if (a.id !== app.id) for (const p of servicePortsOf(a)) used.add(p);
    for (const c of changes) if (c.target && c.id !== app.id) for (const p of servicePortsOf(c.target)) used.add(p);
    for (const p of servicePortsOf(app)) used.add(p);
    const pick = (): number => {
      for (let p = min; p < max; p++) {
        if (!used.has(p)) {
          used.add(p);
          return p;
        }
      }
      throw new Unprocessable(`All ports in the range [${min}-${max}) are already in use`);
    };
    const out: AppDefinition = withPlainMaps(JSON.parse(JSON.stringify(app)) as AppDefinition);
    const mappings = bridgedMappings(out);
    if (mappings) {
      mappings.forEach((m) => {
        if (m.servicePort === 0) m.servicePort = pick();
      });
    } else if (out.portDefinitions && !out.requirePorts) {
      out.portDefinitions.forEach((d) => {
        if (d.port === 0) d.port = pick();
      });
      out.ports = out.portDefinitions.map((d) => d.port);
    }
    return out;
  }

  /** Writes a change's apps, groups and group version (inside the caller's transaction). */
  writeChange(changes: AppChange[], groups: GroupRecordChanges, snapshot: GroupTree | undefined): void {
    for (const c of changes) {
      if (c.target) {
        const before = this.apps.get(c.id);
        this.#store.putApp(c.target, !before || before.version !== c.target.version);
      } else this.#store.deleteApp(c.id);
    }
    for (const id of groups.remove) this.#store.deleteGroup(id);
    for (const g of groups.put) this.#store.putGroup(g);
    if (snapshot) this.#store.putGroupVersion(snapshot);
  }

  /** Applies a change once it is on disk. */
  apply(changes: AppChange[], groups: GroupRecordChanges): void {
    for (const c of changes) {
      if (c.target) this.apps.set(c.id, c.target);
      else this.apps.delete(c.id);
    }
    for (const id of groups.remove) this.groups.delete(id);
    for (const g of groups.put) this.groups.set(g.id, g);
  }
}
