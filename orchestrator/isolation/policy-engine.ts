// Holds the policy state (policies of both kinds, namespace labels, pod-label replacements;
// persisted by policy-store.ts) and keeps every task namespace's nftables ruleset in line with it:
// sync() compiles the rules of all tasks and applies, atomically per namespace, those that changed.
// Call it whenever the state changes (apply() does) and whenever an isolated task starts or stops
// (addresses change). Tasks keep running: only their rules are replaced.
import type { DatabaseSync } from 'node:sqlite';
import { objectId, type NamespaceInfo, type NetworkPolicyObject } from '../../shared/netpol/types.ts';
import { namespacesOf, podOf, type PodNet } from './cluster.ts';
import { compileRules, type RuleFault, type TaskRules } from './compile.ts';
import { parseDropSets, type DropCount } from './drops.ts';
import type { NetworkPolicy, TaskNetInfo } from './policy.ts';
import { PolicyStore, isNetworkPolicyObject, policyId, type AnyPolicy, type StateWrite } from './policy-store.ts';
import { renderRuleset } from './render.ts';

/** What the engine needs from the network (TaskNetwork implements it). */
export interface RulesetTarget {
  readonly gateway: string;
  applyRuleset(netns: string, ruleset: string): Promise<void>;
  /** `nft -j list table inet starmap` in the namespace (for the drop counters). */
  listRuleset?(netns: string): Promise<string>;
  writeHosts?(netns: string, entries: { ip: string; names: string[] }[]): void;
}

export interface PolicyEngineOptions {
  target: RulesetTarget;
  /** The isolated tasks that exist now (starting or running), with their addresses. */
  listTasks: () => TaskNetInfo[];
  db?: DatabaseSync;
  log?: (msg: string, err?: unknown) => void;
  /** Test-only: leave this rule out of every ruleset (STARMAP_TEST_FAULT_DROP_RULE). */
  fault?: RuleFault | undefined;
}

export interface SyncResult {
  applied: string[];
  unchanged: string[];
  failed: { taskId: string; error: string }[];
}

/** Bounds on the state (each write is refused beyond them, so no input can grow it without limit). */
export const LIMITS = { policies: 1000, namespaces: 1000, podLabels: 10_000 };

export class TooMuchState extends Error {
  readonly path: string;
  constructor(path: string, message: string) {
    super(message);
    this.path = path;
  }
}

export interface DropReport {
  taskId: string;
  namespace: string;
  pod: string;
  ip: string;
  egress: { to: string; pod?: string; port: number; protocol: string; packets: number }[];
  ingress: { from: string; pod?: string; port: number; protocol: string; packets: number }[];
}

/** Runs `fn` over `items` with at most `n` at a time; results in input order. */
async function mapLimited<T, R>(items: readonly T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return out;
}

export class PolicyEngine {
  readonly #policies = new Map<string, AnyPolicy>();
  readonly #namespaces: Map<string, Record<string, string>>;
  readonly #podLabels: Map<string, Record<string, string>>;
  readonly #target: RulesetTarget;
  readonly #listTasks: () => TaskNetInfo[];
  readonly #store: PolicyStore;
  readonly #log: (msg: string, err?: unknown) => void;
  readonly #fault: RuleFault | undefined;
  /** Last ruleset applied per namespace (skips re-applying identical rules). */
  readonly #applied = new Map<string, string>();
  #running: Promise<SyncResult> | undefined;
  #again = false;

  constructor(opts: PolicyEngineOptions) {
    this.#target = opts.target;
    this.#listTasks = opts.listTasks;
    this.#log = opts.log ?? (() => undefined);
    this.#fault = opts.fault;
    this.#store = new PolicyStore(opts.db, this.#log);
    const stored = this.#store.load();
    for (const p of stored.policies) this.#policies.set(policyId(p), p);
    this.#namespaces = stored.namespaces;
    this.#podLabels = stored.podLabels;
  }

  /** Every policy, both kinds, sorted by id (a NetworkPolicy's id is namespace/name). */
  list(): AnyPolicy[] {
    return [...this.#policies.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, p]) => p);
  }

  get(id: string): AnyPolicy | undefined {
    return this.#policies.get(id);
  }

  /** Stored namespace labels (as given; kubernetes.io/metadata.name is added when read). */
  storedNamespace(name: string): Record<string, string> | undefined {
    return this.#namespaces.get(name);
  }

  podLabels(id: string): Record<string, string> | undefined {
    return this.#podLabels.get(id);
  }

  get gateway(): string {
    return this.#target.gateway;
  }

  tasks(): TaskNetInfo[] {
    return this.#listTasks();
  }

  /** The current tasks as pods (namespace, pod name, labels with replacements applied). */
  pods(): PodNet[] {
    return this.#listTasks().map((t) => podOf(t, this.#podLabels));
  }

  /** Every namespace: stored ones and those only implied by tasks. */
  namespaces(): NamespaceInfo[] {
    return namespacesOf(this.#namespaces, this.pods());
  }

  /** The rules each current task gets (what sync applies). */
  rules(): TaskRules[] {
    return this.#compile(this.pods());
  }

  #compile(pods: PodNet[]): TaskRules[] {
    const all = this.list();
    return compileRules({
      pods,
      namespaces: namespacesOf(this.#namespaces, pods),
      dialect: all.filter((p): p is NetworkPolicy => !isNetworkPolicyObject(p)),
      policies: all.filter((p): p is NetworkPolicyObject => isNetworkPolicyObject(p)),
      gateway: this.#target.gateway,
      fault: this.#fault,
    });
  }

  /**
   * One atomic change: checked against the bounds, written in one database transaction, applied
   * in memory, then enforced in ONE sync. Deleting what does not exist is no error (the wanted end
   * state holds); those ids come back in `notFound`.
   */
  async apply(w: StateWrite): Promise<{ created: string[]; notFound: string[]; sync: SyncResult }> {
    const notFound = w.deletePolicies.filter((id) => !this.#policies.has(id));
    const putIds = new Set(w.putPolicies.map(policyId));
    const created = [...putIds].filter((id) => !this.#policies.has(id) || w.deletePolicies.includes(id));
    const count = <T>(m: Map<string, T>, entries: [string, unknown][], removed: string[] = []) => {
      const keys = new Set(m.keys());
      for (const k of removed) keys.delete(k);
      for (const [k, v] of entries) {
        if (v === null) keys.delete(k);
        else keys.add(k);
      }
      return keys.size;
    };
    if (
      count(
        this.#policies,
        w.putPolicies.map((p) => [policyId(p), p]),
        w.deletePolicies,
      ) > LIMITS.policies
    )
      throw new TooMuchState('/policies', `at most ${LIMITS.policies} policies can be in force`);
    if (count(this.#namespaces, w.namespaces) > LIMITS.namespaces)
      throw new TooMuchState('/namespaces', `at most ${LIMITS.namespaces} namespaces can have labels`);
    if (count(this.#podLabels, w.podLabels) > LIMITS.podLabels)
      throw new TooMuchState('/podLabels', `at most ${LIMITS.podLabels} pods can have replaced labels`);
    this.#store.write(w);
    for (const id of w.deletePolicies) this.#policies.delete(id);
    for (const p of w.putPolicies) this.#policies.set(policyId(p), p);
    for (const [into, entries] of [
      [this.#namespaces, w.namespaces],
      [this.#podLabels, w.podLabels],
    ] as const) {
      for (const [key, labels] of entries) {
        if (labels) into.set(key, labels);
        else into.delete(key);
      }
    }
    return { created, notFound, sync: await this.sync() };
  }

  /** Creates or replaces a (validated) policy of either kind, stores it, and applies the change. */
  async put(policy: AnyPolicy): Promise<{ created: boolean; sync: SyncResult }> {
    const r = await this.apply({ putPolicies: [policy], deletePolicies: [], namespaces: [], podLabels: [] });
    return { created: r.created.length > 0, sync: r.sync };
  }

  /** Deletes a policy; false when there was none with this id. */
  async delete(id: string): Promise<{ deleted: boolean; sync?: SyncResult }> {
    if (!this.#policies.has(id)) return { deleted: false };
    return { deleted: true, sync: (await this.apply({ putPolicies: [], deletePolicies: [id], namespaces: [], podLabels: [] })).sync };
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
    // A few namespaces at a time: each `nft -f` is a process; the machine has few cores.
    const outcomes = await mapLimited(this.#compile(tasks.map((t) => podOf(t, this.#podLabels))), 4, async (rules) => {
      const text = renderRuleset(rules);
      if (this.#applied.get(rules.netns) === text) return { taskId: rules.taskId, state: 'unchanged' as const };
      try {
        await this.#target.applyRuleset(rules.netns, text);
        this.#applied.set(rules.netns, text);
        return { taskId: rules.taskId, state: 'applied' as const };
      } catch (err) {
        this.#applied.delete(rules.netns);
        this.#log(`isolation: cannot apply the rules of task ${rules.taskId} in ${rules.netns}`, err);
        return { taskId: rules.taskId, state: 'failed' as const, error: (err as Error).message };
      }
    });
    const result: SyncResult = { applied: [], unchanged: [], failed: [] };
    for (const o of outcomes) {
      if (o.state === 'failed') result.failed.push({ taskId: o.taskId, error: o.error });
      else result[o.state].push(o.taskId);
    }
    return result;
  }

  /** Packets each task's policies dropped, per side, from the nftables counters. */
  async drops(): Promise<DropReport[]> {
    const pods = this.pods();
    const podByIp = new Map(pods.map((p) => [p.ip, objectId({ namespace: p.namespace, name: p.pod })]));
    const pod = (ip: string) => (podByIp.has(ip) ? { pod: podByIp.get(ip)! } : {});
    return mapLimited(pods, 4, async (p) => {
      let counts = { ingress: [] as DropCount[], egress: [] as DropCount[] };
      try {
        if (this.#target.listRuleset) counts = parseDropSets(await this.#target.listRuleset(p.netns));
      } catch (err) {
        this.#log(`isolation: cannot read the drop counters of task ${p.taskId}`, err);
      }
      return {
        taskId: p.taskId,
        namespace: p.namespace,
        pod: p.pod,
        ip: p.ip,
        egress: counts.egress.map((d) => ({ to: d.peer, ...pod(d.peer), port: d.port, protocol: d.protocol, packets: d.packets })),
        ingress: counts.ingress.map((d) => ({ from: d.peer, ...pod(d.peer), port: d.port, protocol: d.protocol, packets: d.packets })),
      };
    });
  }
}
