// What the policy engine keeps in the orchestrator's database, so that it survives kill -9 and
// restart: policies of both kinds (table isolation_policies, id → document; a NetworkPolicy's id is
// namespace/name), admin-tier policies (isolation_cluster_policies, `cnp/<name>` → the document as
// given: ClusterNetworkPolicy, AdminNetworkPolicy, BaselineAdminNetworkPolicy), namespace labels (isolation_namespaces) and pod-label replacements
// (isolation_pod_labels, keyed namespace/pod). A change is written in one transaction before it is
// acknowledged. Rows are validated again when read: a row that no longer validates (a poison pill
// from an older version, a hand edit) is skipped with a warning instead of stopping the start.
import type { DatabaseSync } from 'node:sqlite';
import { validateClusterPolicy, type ClusterPolicy } from '../../shared/netpol/cluster-policy.ts';
import type { NetworkPolicyObject } from '../../shared/netpol/types.ts';
import { validateNetworkPolicy } from '../../shared/netpol/validate.ts';
import { validatePolicy, type NetworkPolicy } from './policy.ts';

export type AnyPolicy = NetworkPolicy | NetworkPolicyObject;

export function isNetworkPolicyObject(p: AnyPolicy): p is NetworkPolicyObject {
  return 'kind' in p;
}

export function policyId(p: AnyPolicy): string {
  return isNetworkPolicyObject(p) ? `${p.metadata.namespace}/${p.metadata.name}` : p.id;
}

/** An admin-tier policy (ClusterNetworkPolicy or a v1alpha1 kind): the document as given, and what it says. */
export interface StoredClusterPolicy {
  doc: Record<string, unknown>;
  policy: ClusterPolicy;
}

export interface StoredState {
  policies: AnyPolicy[];
  clusterPolicies: StoredClusterPolicy[];
  namespaces: Map<string, Record<string, string>>;
  podLabels: Map<string, Record<string, string>>;
}

/** One atomic write: policies put or deleted (by id), label maps set or removed (null). */
export interface StateWrite {
  putPolicies: AnyPolicy[];
  deletePolicies: string[];
  namespaces: [string, Record<string, string> | null][];
  podLabels: [string, Record<string, string> | null][];
  /** Admin-tier policies put (by their id, `cnp/<name>`) or deleted. */
  putClusterPolicies?: StoredClusterPolicy[];
  deleteClusterPolicies?: string[];
}

type Log = (msg: string, err?: unknown) => void;

function stringMap(v: unknown): Record<string, string> | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  return Object.values(v).every((x) => typeof x === 'string') ? (v as Record<string, string>) : undefined;
}

export class PolicyStore {
  readonly #db: DatabaseSync | undefined;
  readonly #log: Log;

  constructor(db: DatabaseSync | undefined, log: Log) {
    this.#db = db;
    this.#log = log;
    db?.exec(`CREATE TABLE IF NOT EXISTS isolation_policies (id TEXT PRIMARY KEY, doc TEXT NOT NULL, updated_at TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS isolation_namespaces (name TEXT PRIMARY KEY, labels TEXT NOT NULL, updated_at TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS isolation_pod_labels (id TEXT PRIMARY KEY, labels TEXT NOT NULL, updated_at TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS isolation_cluster_policies (id TEXT PRIMARY KEY, doc TEXT NOT NULL, updated_at TEXT NOT NULL);`);
  }

  load(): StoredState {
    const state: StoredState = { policies: [], clusterPolicies: [], namespaces: new Map(), podLabels: new Map() };
    const db = this.#db;
    if (!db) return state;
    for (const row of db.prepare('SELECT id, doc FROM isolation_policies ORDER BY id').all() as { id: string; doc: string }[]) {
      try {
        const doc = JSON.parse(row.doc) as unknown;
        const v = typeof doc === 'object' && doc !== null && 'kind' in doc ? validateNetworkPolicy(doc) : validatePolicy(doc);
        if ('errors' in v) throw new Error(JSON.stringify(v.errors).slice(0, 500));
        state.policies.push(v.policy);
      } catch (err) {
        this.#log(`isolation: ignoring the stored policy ${row.id}, which does not validate`, err);
      }
    }
    for (const row of db.prepare('SELECT id, doc FROM isolation_cluster_policies ORDER BY id').all() as { id: string; doc: string }[]) {
      try {
        const doc = JSON.parse(row.doc) as Record<string, unknown>;
        const v = validateClusterPolicy(doc);
        if ('errors' in v) throw new Error(JSON.stringify(v.errors).slice(0, 500));
        if (v.policy.id !== row.id) throw new Error(`the document is ${v.policy.id}`);
        state.clusterPolicies.push({ doc, policy: v.policy });
      } catch (err) {
        this.#log(`isolation: ignoring the stored cluster policy ${row.id}, which does not validate`, err);
      }
    }
    const maps = [
      ['SELECT name AS key, labels FROM isolation_namespaces ORDER BY name', state.namespaces, 'namespace'],
      ['SELECT id AS key, labels FROM isolation_pod_labels ORDER BY id', state.podLabels, 'pod labels'],
    ] as const;
    for (const [sql, into, what] of maps) {
      for (const row of db.prepare(sql).all() as { key: string; labels: string }[]) {
        let labels: Record<string, string> | undefined;
        try {
          labels = stringMap(JSON.parse(row.labels));
        } catch {
          labels = undefined;
        }
        if (labels) into.set(row.key, labels);
        else this.#log(`isolation: ignoring the stored ${what} ${row.key}, which is not a map of strings`);
      }
    }
    return state;
  }

  /** Writes the change in one transaction (throws, having written nothing, when it cannot). */
  write(w: StateWrite): void {
    const db = this.#db;
    if (!db) return;
    const now = new Date().toISOString();
    db.exec('BEGIN IMMEDIATE');
    try {
      const del = db.prepare('DELETE FROM isolation_policies WHERE id = ?');
      for (const id of w.deletePolicies) del.run(id);
      const put = db.prepare('INSERT OR REPLACE INTO isolation_policies (id, doc, updated_at) VALUES (?, ?, ?)');
      for (const p of w.putPolicies) put.run(policyId(p), JSON.stringify(p), now);
      const delCluster = db.prepare('DELETE FROM isolation_cluster_policies WHERE id = ?');
      for (const id of w.deleteClusterPolicies ?? []) delCluster.run(id);
      const putCluster = db.prepare('INSERT OR REPLACE INTO isolation_cluster_policies (id, doc, updated_at) VALUES (?, ?, ?)');
      for (const p of w.putClusterPolicies ?? []) putCluster.run(p.policy.id, JSON.stringify(p.doc), now);
      for (const [table, key, entries] of [
        ['isolation_namespaces', 'name', w.namespaces],
        ['isolation_pod_labels', 'id', w.podLabels],
      ] as const) {
        const set = db.prepare(`INSERT OR REPLACE INTO ${table} (${key}, labels, updated_at) VALUES (?, ?, ?)`);
        const unset = db.prepare(`DELETE FROM ${table} WHERE ${key} = ?`);
        for (const [k, labels] of entries) {
          if (labels) set.run(k, JSON.stringify(labels), now);
          else unset.run(k);
        }
      }
      db.exec('COMMIT');
    } catch (err) {
      db.exec('ROLLBACK');
      throw err;
    }
  }
}
