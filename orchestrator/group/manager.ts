// The group manager (Marathon's GroupManager): the current apps and group records, their stored
// versions, version timestamps, and the service ports apps are given. A change is checked and
// planned by the scheduler's deploy(); this module prepares its parts (service ports, the group
// records it implies) and applies it once it is on disk.
import type { Logger } from '../../shared/logger.ts';
import { bridgedMappings, isConfigChange, keepServicePorts, type AppDefinition } from '../state/app-definition.ts';
import { ancestorsOf, isWithin, type GroupRecord, type GroupTree } from '../state/group.ts';
import { withPlainMaps } from '../state/labels.ts';
import { reviveApp } from '../storage/stored-app.ts';
import type { Store } from '../storage/store.ts';
import { groupTree } from '../state/group-tree.ts';
import { configVersionOf } from '../state/app-update.ts';
import type { AppChange } from '../state/app-change.ts';
import { Unprocessable } from '../errors.ts';

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

/** Group records a change writes and removes. */
export interface GroupRecordChanges {
  put: GroupRecord[];
  remove: string[];
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
