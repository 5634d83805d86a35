// Holds the policy state (policies of both kinds, namespace labels, pod-label replacements;
// persisted by policy-store.ts) and keeps every task namespace's nftables ruleset in line with it:
// sync() compiles the rules of all tasks and applies, atomically per namespace, those that changed.
// Call it whenever the state changes (apply() does) and whenever an isolated task starts or stops
// (addresses change). Tasks keep running: only their rules are replaced.
// A write is refused whole (TooMuchState) or stored: apply() compiles and renders the state the
// write would make BEFORE storing it, refuses it when it would take a task's ruleset past
// RULESET_LIMITS, and once it is stored never throws (a ruleset that cannot be rendered or applied
// is a failed task in the result). Each task namespace has its own queue of `nft -f` runs, so a
// slow namespace delays only the writes that change its rules, not those of other tenants.
// About 440 lines on purpose: the state, its check before storing, and the per-namespace queues
// change together on every write; split, each part would need the others' invariants restated.
import type { DatabaseSync } from 'node:sqlite';
import { objectId, type NamespaceInfo, type NetworkPolicyObject } from '../../shared/netpol/types.ts';
import { namespacesOf, podOf, type PodNet } from './cluster.ts';
import { compileRules, type RuleFault, type TaskRules } from './compile.ts';
import { parseDropSets, type DropCount } from './drops.ts';
import type { NetworkPolicy, TaskNetInfo } from './policy.ts';
import { PolicyStore, isNetworkPolicyObject, policyId, type AnyPolicy, type StateWrite, type StoredClusterPolicy } from './policy-store.ts';
import { Slots, mapLimited } from './concurrency.ts';
import { RULESET_LIMITS, renderTask, type RulesetSize } from './render.ts';
import { DropTags, type IsolationTestMode } from './drop-tags.ts';

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
  /** Test-only: a data plane broken on purpose (STARMAP_ISOLATION_TEST_MODE, drop-tags.ts). */
  testMode?: IsolationTestMode | undefined;
}

export interface SyncResult {
  applied: string[];
  unchanged: string[];
  failed: { taskId: string; error: string }[];
}

/** Bounds on the state (each write is refused beyond them, so no input can grow it without limit). */
export const LIMITS = { policies: 1000, clusterPolicies: 1000, namespaces: 1000, podLabels: 10_000 };

export class TooMuchState extends Error {
  readonly path: string;
  constructor(path: string, message: string) {
    super(message);
    this.path = path;
  }
}

interface PolicyState {
  policies: ReadonlyMap<string, AnyPolicy>;
  clusterPolicies: ReadonlyMap<string, StoredClusterPolicy>;
  namespaces: ReadonlyMap<string, Record<string, string>>;
  podLabels: ReadonlyMap<string, Record<string, string>>;
}

export interface DropReport {
  taskId: string;
  namespace: string;
  pod: string;
  ip: string;
  /** Why its counters could not be read (they are unknown, not zero). */
  error?: string;
  egress: ({ to: string; pod?: string; port: number; protocol: string; packets: number } & DroppedThrough)[];
  ingress: ({ from: string; pod?: string; port: number; protocol: string; packets: number } & DroppedThrough)[];
}

/** The drop site that counted the packets: its policies (null: a tag no longer known, or none). */
export interface DroppedThrough {
  policies: string[] | null;
}

/** A task's rendered ruleset, or why it could not be rendered. */
type Rendered = { taskId: string; netns: string; pod: string; text: string; size: RulesetSize } | { taskId: string; netns: string; pod: string; error: string };

export class PolicyEngine {
  readonly #policies = new Map<string, AnyPolicy>();
  /** Admin-tier policies by id (`cnp/<name>`, `anp/<name>`, `banp/default`). */
  readonly #clusterPolicies = new Map<string, StoredClusterPolicy>();
  readonly #namespaces: Map<string, Record<string, string>>;
  readonly #podLabels: Map<string, Record<string, string>>;
  readonly #target: RulesetTarget;
  readonly #listTasks: () => TaskNetInfo[];
  readonly #store: PolicyStore;
  readonly #log: (msg: string, err?: unknown) => void;
  readonly #fault: RuleFault | undefined;
  readonly #testMode: IsolationTestMode | undefined;
  /** Which policies each drop site's tag stands for (GET /v2/starmap/drops says them). */
  readonly #dropTags = new DropTags();
  /**
   * The latest ruleset asked for per namespace, being applied or in force (identical rules are not
   * applied again); removed when applying it fails, so that the next sync tries again.
   */
  readonly #wanted = new Map<string, string>();
  /** The ruleset in force per namespace, as far as this process applied it. */
  readonly #applied = new Map<string, string>();
  /** The last job of each namespace's queue of `nft -f` runs (rejects when its apply failed). */
  readonly #queues = new Map<string, Promise<void>>();
  /** A few `nft -f` at a time over all namespaces: each is a process; the machine has few cores. */
  readonly #slots = new Slots(4);
  /** The size of each task's last rendered ruleset (a write may not grow one past the limits). */
  readonly #sizes = new Map<string, RulesetSize>();

  constructor(opts: PolicyEngineOptions) {
    this.#target = opts.target;
    this.#listTasks = opts.listTasks;
    this.#log = opts.log ?? (() => undefined);
    this.#fault = opts.fault;
    this.#testMode = opts.testMode;
    this.#store = new PolicyStore(opts.db, this.#log);
    const stored = this.#store.load();
    for (const p of stored.policies) this.#policies.set(policyId(p), p);
    for (const p of stored.clusterPolicies) this.#clusterPolicies.set(p.policy.id, p);
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

  /** Every admin-tier policy, sorted by id. */
  clusterPolicies(): StoredClusterPolicy[] {
    return [...this.#clusterPolicies.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, p]) => p);
  }

  clusterPolicy(id: string): StoredClusterPolicy | undefined {
    return this.#clusterPolicies.get(id);
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

  #compile(pods: PodNet[], state: PolicyState = this.#state()): TaskRules[] {
    const all = [...state.policies.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, p]) => p);
    return compileRules({
      pods,
      namespaces: namespacesOf(state.namespaces, pods),
      dialect: all.filter((p): p is NetworkPolicy => !isNetworkPolicyObject(p)),
      policies: all.filter((p): p is NetworkPolicyObject => isNetworkPolicyObject(p)),
      clusterPolicies: [...state.clusterPolicies.values()].map((p) => p.policy),
      gateway: this.#target.gateway,
      fault: this.#fault,
    });
  }

  #state(): PolicyState {
    return { policies: this.#policies, clusterPolicies: this.#clusterPolicies, namespaces: this.#namespaces, podLabels: this.#podLabels };
  }

  /** The state after a write (new maps; the current ones untouched). */
  #after(w: StateWrite): PolicyState {
    const policies = new Map(this.#policies);
    for (const id of w.deletePolicies) policies.delete(id);
    for (const p of w.putPolicies) policies.set(policyId(p), p);
    const clusterPolicies = new Map(this.#clusterPolicies);
    for (const id of w.deleteClusterPolicies ?? []) clusterPolicies.delete(id);
    for (const p of w.putClusterPolicies ?? []) clusterPolicies.set(p.policy.id, p);
    const merged = (m: Map<string, Record<string, string>>, entries: [string, Record<string, string> | null][]) => {
      const out = new Map(m);
      for (const [key, labels] of entries) {
        if (labels) out.set(key, labels);
        else out.delete(key);
      }
      return out;
    };
    return { policies, clusterPolicies, namespaces: merged(this.#namespaces, w.namespaces), podLabels: merged(this.#podLabels, w.podLabels) };
  }

  /** Every current task's ruleset under `state`; a task whose rules cannot be rendered carries the error. */
  #render(state: PolicyState): Rendered[] {
    const tasks = this.#listTasks();
    const pods = tasks.map((t) => podOf(t, state.podLabels));
    let compiled: TaskRules[];
    try {
      compiled = this.#compile(pods, state);
    } catch (err) {
      return pods.map((p) => ({
        taskId: p.taskId,
        netns: p.netns,
        pod: objectId({ namespace: p.namespace, name: p.pod }),
        error: `cannot compile the rules: ${(err as Error).message}`,
      }));
    }
    return compiled.map((rules, i) => {
      const pod = objectId({ namespace: pods[i]!.namespace, name: pods[i]!.pod });
      try {
        const { text, size, tags } = renderTask(rules, this.#testMode);
        for (const t of tags) this.#dropTags.remember(t.tag, t.rule);
        return { taskId: rules.taskId, netns: rules.netns, pod, text, size };
      } catch (err) {
        return { taskId: rules.taskId, netns: rules.netns, pod, error: `cannot render the rules: ${(err as Error).message}` };
      }
    });
  }

  /** The first task a write would take past RULESET_LIMITS (one already past them may shrink). */
  #overLimit(rendered: Rendered[]): TooMuchState | undefined {
    for (const r of rendered) {
      if ('error' in r) continue;
      const before = this.#sizes.get(r.taskId);
      for (const what of ['rules', 'elements'] as const) {
        const limit = RULESET_LIMITS[what];
        if (r.size[what] > limit && r.size[what] > (before?.[what] ?? 0)) {
          const unit = what === 'rules' ? 'nftables rules' : 'addresses and ports in nftables rules';
          return new TooMuchState(
            '/',
            `the policies would give pod ${r.pod} (task ${r.taskId}) ${r.size[what]} ${unit}; at most ${limit} can be enforced per pod: nothing was stored`,
          );
        }
      }
    }
    return undefined;
  }

  /**
   * One atomic change: checked against the bounds (the state's, and each task's ruleset under the
   * state it would make), written in one database transaction, applied in memory, then enforced.
   * Throws only before anything is stored (TooMuchState, or the database's error); after that the
   * outcome per task is in `sync`. Deleting what does not exist is no error (the wanted end state
   * holds); those ids come back in `notFound`.
   */
  async apply(w: StateWrite): Promise<{ created: string[]; notFound: string[]; sync: SyncResult }> {
    const deleteCluster = w.deleteClusterPolicies ?? [];
    const notFound = [...w.deletePolicies.filter((id) => !this.#policies.has(id)), ...deleteCluster.filter((id) => !this.#clusterPolicies.has(id))];
    const putIds = new Set(w.putPolicies.map(policyId));
    const created = [
      ...[...putIds].filter((id) => !this.#policies.has(id) || w.deletePolicies.includes(id)),
      ...(w.putClusterPolicies ?? []).map((p) => p.policy.id).filter((id) => !this.#clusterPolicies.has(id) || deleteCluster.includes(id)),
    ];
    const next = this.#after(w);
    if (next.policies.size > LIMITS.policies) throw new TooMuchState('/policies', `at most ${LIMITS.policies} policies can be in force`);
    if (next.clusterPolicies.size > LIMITS.clusterPolicies)
      throw new TooMuchState('/clusterPolicies', `at most ${LIMITS.clusterPolicies} cluster policies can be in force`);
    if (next.namespaces.size > LIMITS.namespaces) throw new TooMuchState('/namespaces', `at most ${LIMITS.namespaces} namespaces can have labels`);
    if (next.podLabels.size > LIMITS.podLabels) throw new TooMuchState('/podLabels', `at most ${LIMITS.podLabels} pods can have replaced labels`);
    const rendered = this.#render(next);
    const over = this.#overLimit(rendered);
    if (over) throw over;
    this.#store.write(w);
    // Stored: from here on nothing throws; the result says how enforcing went.
    for (const id of w.deletePolicies) this.#policies.delete(id);
    for (const p of w.putPolicies) this.#policies.set(policyId(p), p);
    for (const id of deleteCluster) this.#clusterPolicies.delete(id);
    for (const p of w.putClusterPolicies ?? []) this.#clusterPolicies.set(p.policy.id, p);
    for (const [into, entries] of [
      [this.#namespaces, w.namespaces],
      [this.#podLabels, w.podLabels],
    ] as const) {
      for (const [key, labels] of entries) {
        if (labels) into.set(key, labels);
        else into.delete(key);
      }
    }
    return { created, notFound, sync: await this.#enforce(rendered, false) };
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
    this.#wanted.delete(netns);
    this.#applied.delete(netns);
  }

  /**
   * Recomputes the rules of every task and applies those that changed; resolves once each is in
   * force (or failed). Never rejects. A call sees every change made before it: it compiles the
   * state at once, and a namespace's queue applies the latest ruleset asked for.
   */
  sync(): Promise<SyncResult> {
    return this.#enforce(this.#render(this.#state()), true);
  }

  /**
   * Applies the rulesets that differ from the latest asked for. One asked for already and still
   * being applied is `unchanged`: a write answers at once for it (the write did not change it, and
   * waiting would hold one tenant's writes up behind another's slow namespace); a sync answers once
   * it is in force (`awaitPending`), so that a task never starts before its rules are.
   */
  async #enforce(rendered: Rendered[], awaitPending: boolean): Promise<SyncResult> {
    const present = new Set(rendered.map((r) => r.netns));
    for (const m of [this.#wanted, this.#applied]) for (const ns of [...m.keys()]) if (!present.has(ns)) m.delete(ns);
    for (const id of [...this.#sizes.keys()]) if (!rendered.some((r) => r.taskId === id)) this.#sizes.delete(id);
    this.#writeHosts();
    const outcomes = await Promise.all(
      rendered.map(async (r) => {
        if ('error' in r) {
          this.#wanted.delete(r.netns);
          this.#log(`isolation: cannot enforce the rules of task ${r.taskId}: ${r.error}`);
          return { taskId: r.taskId, state: 'failed' as const, error: r.error };
        }
        this.#sizes.set(r.taskId, r.size);
        const same = this.#wanted.get(r.netns) === r.text;
        try {
          if (!same) await this.#applyLatest(r.netns, r.text);
          else if (awaitPending && this.#applied.get(r.netns) !== r.text) await this.#queues.get(r.netns);
          return { taskId: r.taskId, state: same ? ('unchanged' as const) : ('applied' as const) };
        } catch (err) {
          this.#log(`isolation: cannot apply the rules of task ${r.taskId} in ${r.netns}`, err);
          return { taskId: r.taskId, state: 'failed' as const, error: (err as Error).message };
        }
      }),
    );
    const result: SyncResult = { applied: [], unchanged: [], failed: [] };
    for (const o of outcomes) {
      if (o.state === 'failed') result.failed.push({ taskId: o.taskId, error: o.error });
      else result[o.state].push(o.taskId);
    }
    return result;
  }

  /**
   * Asks for `text` in `netns` and resolves once it, or a later ruleset (compiled from a later
   * state, so with this change in it), is in force; rejects when that could not be applied.
   */
  #applyLatest(netns: string, text: string): Promise<void> {
    this.#wanted.set(netns, text);
    const job = (this.#queues.get(netns)?.catch(() => undefined) ?? Promise.resolve()).then(async () => {
      const want = this.#wanted.get(netns);
      if (want === undefined || this.#applied.get(netns) === want) return; // forgotten, or in force already
      try {
        await this.#slots.run(() => this.#target.applyRuleset(netns, want));
        this.#applied.set(netns, want);
      } catch (err) {
        this.#applied.delete(netns);
        if (this.#wanted.get(netns) === want) this.#wanted.delete(netns);
        throw err;
      }
    });
    this.#queues.set(netns, job);
    // Whoever awaits the job hears of a failure; the queue only needs to know it is over.
    void job
      .catch(() => undefined)
      .then(() => {
        if (this.#queues.get(netns) === job) this.#queues.delete(netns);
      });
    return job;
  }

  #writeHosts(): void {
    if (!this.#target.writeHosts) return;
    const tasks = this.#listTasks();
    const entries = tasks.filter((t) => t.hostnames && t.hostnames.length > 0).map((t) => ({ ip: t.ip, names: t.hostnames! }));
    for (const t of tasks) {
      try {
        this.#target.writeHosts(t.netns, entries);
      } catch (err) {
        this.#log(`isolation: cannot write the hosts file of ${t.netns}`, err);
      }
    }
  }

  /** Packets each task's policies dropped, per side, from the nftables counters. */
  async drops(): Promise<DropReport[]> {
    const pods = this.pods();
    const podByIp = new Map(pods.map((p) => [p.ip, objectId({ namespace: p.namespace, name: p.pod })]));
    const pod = (ip: string) => (podByIp.has(ip) ? { pod: podByIp.get(ip)! } : {});
    const through = (d: DropCount) => this.#dropTags.lookup(d.tag)?.policies ?? null;
    return mapLimited(pods, 4, async (p) => {
      let counts = { ingress: [] as DropCount[], egress: [] as DropCount[] };
      let error: string | undefined; // said, so that a reader never takes unknown counters for zero
      try {
        if (this.#target.listRuleset) counts = parseDropSets(await this.#target.listRuleset(p.netns));
      } catch (err) {
        error = (err as Error).message;
        this.#log(`isolation: cannot read the drop counters of task ${p.taskId}`, err);
      }
      return {
        taskId: p.taskId,
        namespace: p.namespace,
        pod: p.pod,
        ip: p.ip,
        ...(error !== undefined ? { error } : {}),
        egress: counts.egress.map((d) => ({ to: d.peer, ...pod(d.peer), port: d.port, protocol: d.protocol, packets: d.packets, policies: through(d) })),
        ingress: counts.ingress.map((d) => ({ from: d.peer, ...pod(d.peer), port: d.port, protocol: d.protocol, packets: d.packets, policies: through(d) })),
      };
    });
  }
}
