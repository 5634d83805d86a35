// SQLite repositories of the orchestrator: apps (current + every version), groups (records + the
// versions group changes made), deployments, tasks
// (with pid for crash recovery), launch-queue delays and last task failures. Every write runs in a
// transaction on a database opened with synchronous=FULL, so once a method returns the change is
// on disk; the API answers only after that.
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { AppDefinition } from '../state/app-definition.ts';
import type { GroupRecord, GroupTree } from '../state/group.ts';

export interface TaskRecord {
  id: string;
  appId: string;
  state: string;
  stagedAt: string;
  startedAt: string | null;
  /** App version the task was launched with. */
  version: string;
  /** lastConfigChangeAt of that version: tasks with another value are "old" in a restart. */
  configVersion: string;
  host: string;
  ports: number[];
  servicePorts: number[];
  slaveId: string;
  pid?: number | undefined;
  /** Set once the scheduler asked the executor to kill it. */
  killing?: boolean;
  message?: string;
  /** --isolation=netns: the task's own address (also its `host`) and network namespace. */
  ipAddresses?: { ipAddress: string; protocol: 'IPv4' | 'IPv6' }[];
  netns?: string;
}

export interface DelayRecord {
  appId: string;
  configVersion: string;
  delaySeconds: number;
  deadline: number;
  failures: number;
}

export interface StoredDeployment {
  id: string;
  version: string;
  /** The group the change was made to (the app's parent for app changes): group_change_* events carry it. */
  groupId?: string;
  affectedApps: string[];
  steps: { actions: { action: string; app: string }[] }[];
  currentStep: number;
  /** App definitions before the change (null: app was absent), for rollback. */
  original: Record<string, AppDefinition | null>;
  /** Group records before the change (null: the group was absent), for rollback. */
  originalGroups?: Record<string, GroupRecord | null>;
  /** App definitions after the change (null: app removed). */
  target: Record<string, AppDefinition | null>;
  /** Per-app rolling-restart bookkeeping of the running step. */
  restart: Record<string, { maxCapacity: number; readyCounted: number; started: boolean }>;
}

/** A row that could not be read back (its table and key): skipped, so that start-up goes on. */
export interface UnreadableRow {
  table: string;
  key: string;
  error: string;
}

export class Store {
  readonly db: DatabaseSync;
  readonly #s: Record<string, StatementSync>;
  /** Rows the load methods skipped because their JSON does not parse (the scheduler logs them). */
  readonly unreadable: UnreadableRow[] = [];

  /** Each row's JSON parsed on its own: one unreadable row must not stop the orchestrator starting. */
  #rows<T>(table: string, key: string): { key: string; value: T }[] {
    const out: { key: string; value: T }[] = [];
    for (const row of this.db.prepare(`SELECT ${key} AS k, json FROM ${table}`).all() as { k: string; json: string }[]) {
      try {
        out.push({ key: row.k, value: JSON.parse(row.json) as T });
      } catch (err) {
        this.unreadable.push({ table, key: row.k, error: (err as Error).message });
      }
    }
    return out;
  }

  constructor(db: DatabaseSync) {
    this.db = db;
    db.exec(`
      CREATE TABLE IF NOT EXISTS orch_apps (id TEXT PRIMARY KEY, json TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS orch_app_versions (id TEXT NOT NULL, version TEXT NOT NULL, json TEXT NOT NULL, PRIMARY KEY (id, version));
      CREATE TABLE IF NOT EXISTS orch_deployments (id TEXT PRIMARY KEY, json TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS orch_tasks (id TEXT PRIMARY KEY, app_id TEXT NOT NULL, json TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS orch_delays (app_id TEXT PRIMARY KEY, json TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS orch_failures (app_id TEXT PRIMARY KEY, json TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS orch_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS orch_groups (id TEXT PRIMARY KEY, json TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS orch_group_versions (id TEXT NOT NULL, version TEXT NOT NULL, json TEXT NOT NULL, PRIMARY KEY (id, version));
    `);
    this.#s = {
      putApp: db.prepare('INSERT OR REPLACE INTO orch_apps (id, json) VALUES (?, ?)'),
      putVersion: db.prepare('INSERT OR REPLACE INTO orch_app_versions (id, version, json) VALUES (?, ?, ?)'),
      delApp: db.prepare('DELETE FROM orch_apps WHERE id = ?'),
      delVersions: db.prepare('DELETE FROM orch_app_versions WHERE id = ?'),
      putDeployment: db.prepare('INSERT OR REPLACE INTO orch_deployments (id, json) VALUES (?, ?)'),
      delDeployment: db.prepare('DELETE FROM orch_deployments WHERE id = ?'),
      putTask: db.prepare('INSERT OR REPLACE INTO orch_tasks (id, app_id, json) VALUES (?, ?, ?)'),
      delTask: db.prepare('DELETE FROM orch_tasks WHERE id = ?'),
      putDelay: db.prepare('INSERT OR REPLACE INTO orch_delays (app_id, json) VALUES (?, ?)'),
      delDelay: db.prepare('DELETE FROM orch_delays WHERE app_id = ?'),
      putFailure: db.prepare('INSERT OR REPLACE INTO orch_failures (app_id, json) VALUES (?, ?)'),
      delFailure: db.prepare('DELETE FROM orch_failures WHERE app_id = ?'),
      versions: db.prepare('SELECT version FROM orch_app_versions WHERE id = ? ORDER BY version DESC'),
      version: db.prepare('SELECT json FROM orch_app_versions WHERE id = ? AND version = ?'),
      putGroup: db.prepare('INSERT OR REPLACE INTO orch_groups (id, json) VALUES (?, ?)'),
      delGroup: db.prepare('DELETE FROM orch_groups WHERE id = ?'),
      putGroupVersion: db.prepare('INSERT OR REPLACE INTO orch_group_versions (id, version, json) VALUES (?, ?, ?)'),
      delGroupVersions: db.prepare('DELETE FROM orch_group_versions WHERE id = ?'),
      groupVersions: db.prepare('SELECT version FROM orch_group_versions WHERE id = ? ORDER BY version DESC'),
      groupVersion: db.prepare('SELECT json FROM orch_group_versions WHERE id = ? AND version = ?'),
      getMeta: db.prepare('SELECT value FROM orch_meta WHERE key = ?'),
      putMeta: db.prepare('INSERT OR REPLACE INTO orch_meta (key, value) VALUES (?, ?)'),
    };
  }

  /** Runs `fn` in one transaction (nested calls join the outer one). */
  tx<T>(fn: () => T): T {
    if (this.db.isTransaction) return fn();
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const out = fn();
      this.db.exec('COMMIT');
      return out;
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
  }

  putApp(app: AppDefinition, newVersion: boolean): void {
    const json = JSON.stringify(app);
    this.#s.putApp!.run(app.id, json);
    if (newVersion) this.#s.putVersion!.run(app.id, app.version, json);
  }
  deleteApp(id: string): void {
    this.#s.delApp!.run(id);
    this.#s.delVersions!.run(id);
    this.#s.delDelay!.run(id);
    this.#s.delFailure!.run(id);
  }
  /** Stored definitions as read (revive them with stored-app.ts before use). */
  loadApps(): { key: string; value: unknown }[] {
    return this.#rows<unknown>('orch_apps', 'id');
  }
  versions(id: string): string[] {
    return (this.#s.versions!.all(id) as { version: string }[]).map((r) => r.version);
  }
  appVersion(id: string, version: string): AppDefinition | undefined {
    const row = this.#s.version!.get(id, version) as { json: string } | undefined;
    return row ? (JSON.parse(row.json) as AppDefinition) : undefined;
  }

  putDeployment(d: StoredDeployment): void {
    this.#s.putDeployment!.run(d.id, JSON.stringify(d));
  }
  deleteDeployment(id: string): void {
    this.#s.delDeployment!.run(id);
  }
  loadDeployments(): StoredDeployment[] {
    return this.#rows<StoredDeployment>('orch_deployments', 'id').map((r) => r.value);
  }

  putTask(t: TaskRecord): void {
    this.#s.putTask!.run(t.id, t.appId, JSON.stringify(t));
  }
  deleteTask(id: string): void {
    this.#s.delTask!.run(id);
  }
  loadTasks(): TaskRecord[] {
    return this.#rows<TaskRecord>('orch_tasks', 'id').map((r) => r.value);
  }

  putDelay(d: DelayRecord): void {
    this.#s.putDelay!.run(d.appId, JSON.stringify(d));
  }
  deleteDelay(appId: string): void {
    this.#s.delDelay!.run(appId);
  }
  loadDelays(): DelayRecord[] {
    return this.#rows<DelayRecord>('orch_delays', 'app_id').map((r) => r.value);
  }

  putFailure(appId: string, failure: Record<string, unknown>): void {
    this.#s.putFailure!.run(appId, JSON.stringify(failure));
  }
  loadFailures(): Map<string, Record<string, unknown>> {
    return new Map(this.#rows<Record<string, unknown>>('orch_failures', 'app_id').map((r) => [r.key, r.value]));
  }

  putGroup(g: GroupRecord): void {
    this.#s.putGroup!.run(g.id, JSON.stringify(g));
  }
  /** Removes the group and its stored versions. */
  deleteGroup(id: string): void {
    this.#s.delGroup!.run(id);
    this.#s.delGroupVersions!.run(id);
  }
  loadGroups(): GroupRecord[] {
    return this.#rows<GroupRecord>('orch_groups', 'id').map((r) => r.value);
  }
  /** The group as a group change left it, kept for GET …/versions/{v} and rollback. */
  putGroupVersion(tree: GroupTree): void {
    this.#s.putGroupVersion!.run(tree.id, tree.version, JSON.stringify(tree));
  }
  groupVersions(id: string): string[] {
    return (this.#s.groupVersions!.all(id) as { version: string }[]).map((r) => r.version);
  }
  groupVersion(id: string, version: string): GroupTree | undefined {
    const row = this.#s.groupVersion!.get(id, version) as { json: string } | undefined;
    return row ? (JSON.parse(row.json) as GroupTree) : undefined;
  }

  meta(key: string): string | undefined {
    return (this.#s.getMeta!.get(key) as { value: string } | undefined)?.value;
  }
  putMeta(key: string, value: string): void {
    this.#s.putMeta!.run(key, value);
  }
}
