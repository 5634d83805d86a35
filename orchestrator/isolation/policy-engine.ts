// Holds the network policies (persisted in the orchestrator's database, table isolation_policies)
// and keeps every task namespace's nftables ruleset in line with them: sync() recomputes the rules
// of all tasks and applies, atomically per namespace, those that changed. Call it whenever a policy
// changes (the plugin does) and whenever an isolated task starts or stops (addresses change).
// Tasks keep running: only their rules are replaced.
import type { DatabaseSync } from 'node:sqlite';
import { computeRules, renderRuleset, type NetworkPolicy, type TaskNetInfo, type TaskRules } from './policy.ts';

/** What the engine needs from the network (TaskNetwork implements it). */
export interface RulesetTarget {
  readonly gateway: string;
  applyRuleset(netns: string, ruleset: string): Promise<void>;
  writeHosts?(netns: string, entries: { ip: string; names: string[] }[]): void;
}

export interface PolicyEngineOptions {
  target: RulesetTarget;
  /** The isolated tasks that exist now (starting or running), with their addresses. */
  listTasks: () => TaskNetInfo[];
  db?: DatabaseSync;
  log?: (msg: string, err?: unknown) => void;
}

export interface SyncResult {
  applied: string[];
  unchanged: string[];
  failed: { taskId: string; error: string }[];
}

export class PolicyEngine {
  readonly #policies = new Map<string, NetworkPolicy>();
  readonly #target: RulesetTarget;
  readonly #listTasks: () => TaskNetInfo[];
  readonly #db: DatabaseSync | undefined;
  readonly #log: (msg: string, err?: unknown) => void;
  /** Last ruleset applied per namespace (skips re-applying identical rules). */
  readonly #applied = new Map<string, string>();
  #running: Promise<SyncResult> | undefined;
  #again = false;

  constructor(opts: PolicyEngineOptions) {
    this.#target = opts.target;
    this.#listTasks = opts.listTasks;
    this.#db = opts.db;
    this.#log = opts.log ?? (() => undefined);
    if (this.#db) {
      this.#db.exec('CREATE TABLE IF NOT EXISTS isolation_policies (id TEXT PRIMARY KEY, doc TEXT NOT NULL, updated_at TEXT NOT NULL)');
      for (const row of this.#db.prepare('SELECT doc FROM isolation_policies ORDER BY id').all() as { doc: string }[]) {
        try {
          const p = JSON.parse(row.doc) as NetworkPolicy;
          this.#policies.set(p.id, p);
        } catch (err) {
          this.#log('isolation: ignoring an unreadable stored policy', err);
        }
      }
    }
  }

  list(): NetworkPolicy[] {
    return [...this.#policies.values()].sort((a, b) => a.id.localeCompare(b.id));
  }

  get(id: string): NetworkPolicy | undefined {
    return this.#policies.get(id);
  }

  /** Creates or replaces a (validated) policy, stores it, and applies the change. */
  async put(policy: NetworkPolicy): Promise<{ created: boolean; sync: SyncResult }> {
    const created = !this.#policies.has(policy.id);
    this.#db?.prepare('INSERT OR REPLACE INTO isolation_policies (id, doc, updated_at) VALUES (?, ?, ?)').run(policy.id, JSON.stringify(policy), new Date().toISOString());
    this.#policies.set(policy.id, policy);
    return { created, sync: await this.sync() };
  }

  /** Deletes a policy; false when there was none with this id. */
  async delete(id: string): Promise<{ deleted: boolean; sync?: SyncResult }> {
    if (!this.#policies.has(id)) return { deleted: false };
    this.#db?.prepare('DELETE FROM isolation_policies WHERE id = ?').run(id);
    this.#policies.delete(id);
    return { deleted: true, sync: await this.sync() };
  }

  get gateway(): string {
    return this.#target.gateway;
  }

  tasks(): TaskNetInfo[] {
    return this.#listTasks();
  }

  /** The rules each current task gets (what sync applies). */
  rules(): TaskRules[] {
    return computeRules(this.#listTasks(), this.list(), this.#target.gateway);
  }

  /** Forgets what was applied to a namespace (call after detaching a task). */
  forget(netns: string): void {
    this.#applied.delete(netns);
  }

  /**
   * Recomputes and applies the rules of every task. Concurrent calls are coalesced: a call made
   * while a sync runs waits for one more full sync that starts after it, so it sees its change.
   */
  sync(): Promise<SyncResult> {
    if (this.#running) {
      // The running loop checks #again after each pass, so it runs once more, after this call.
      this.#again = true;
      return this.#running;
    }
    const loop = async (): Promise<SyncResult> => {
      let result: SyncResult;
      do {
        this.#again = false;
        result = await this.#syncOnce();
      } while (this.#again);
      return result;
    };
    this.#running = loop().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #syncOnce(): Promise<SyncResult> {
    const tasks = this.#listTasks();
    const result: SyncResult = { applied: [], unchanged: [], failed: [] };
    const present = new Set(tasks.map((t) => t.netns));
    for (const ns of [...this.#applied.keys()]) if (!present.has(ns)) this.#applied.delete(ns);
    if (this.#target.writeHosts) {
      const entries = tasks.filter((t) => t.hostnames && t.hostnames.length > 0).map((t) => ({ ip: t.ip, names: t.hostnames! }));
      for (const t of tasks) {
        try {
          this.#target.writeHosts(t.netns, entries);
        } catch (err) {
          this.#log(`isolation: cannot write the hosts file of ${t.netns}`, err);
        }
      }
    }
    for (const rules of computeRules(tasks, this.list(), this.#target.gateway)) {
      const text = renderRuleset(rules);
      if (this.#applied.get(rules.netns) === text) {
        result.unchanged.push(rules.taskId);
        continue;
      }
      try {
        await this.#target.applyRuleset(rules.netns, text);
        this.#applied.set(rules.netns, text);
        result.applied.push(rules.taskId);
      } catch (err) {
        this.#applied.delete(rules.netns);
        result.failed.push({ taskId: rules.taskId, error: (err as Error).message });
        this.#log(`isolation: cannot apply the rules of task ${rules.taskId} in ${rules.netns}`, err);
      }
    }
    return result;
  }
}
