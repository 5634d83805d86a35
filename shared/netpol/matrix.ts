// Every verdict of a cluster at once: each pod pair and each port cell of the destination (its
// declared container ports, plus any port asked of every pod), with exactly the verdicts and reasons
// Evaluator.evaluate gives cell by cell (a property test holds them to it), at cluster scale.
//
// Why it is fast: a verdict depends on a pod only through its namespace, its labels, its named
// ports and, for ipBlock peers, which blocks hold its address. Pods equal in the first three form a
// class (a Deployment's replicas, typically), and every class pair has one verdict per port cell,
// so the work is classes² × port cells instead of pods² × port cells. Addresses split a class only
// where the subject's isolating policies name ipBlocks, and only by those blocks: such a class
// pair's cell holds one verdict per address group of each side (a "mixed" cell; most come out
// uniform and are stored as one). Below that: policies are indexed by namespace; each selector is
// matched once per distinct label set (pod selectors) or namespace (namespace selectors); each
// rule's peer result is one small integer per class and its port result one per distinct port
// signature (number, protocol and the names declared for them); each (ipBlock, pod) is tested once;
// and a side's verdict is interned (a trie over the refs it found), so that the matrix holds one
// 32-bit verdict id per class pair and port cell and a few thousand verdict objects, shared.
// Memory is therefore about 4 bytes × classes × the port cells of all classes, beside the cluster.
//
// A pod reaching itself is loopback, as in the evaluator; cells the matrix does not hold (a port
// that is neither declared nor asked of every pod, or a pod object that is not the cluster's) go to
// the per-cell evaluator, so the answers never differ.
//
// Admin tiers (ClusterNetworkPolicy, a later issue) have their place in the class loop (marked): an admin
// tier decides a side before NetworkPolicies and a baseline tier after them; their subjects and
// peers are namespace and pod selectors too, so they are computed over these same classes.
//
// Over 400 lines: one constructor whose steps share the class indexes it builds as local state;
// the coding of results, the verdict trie and the address table are in classes.ts.
import {
  BlockTable,
  canonical,
  child,
  dedupe,
  LOOPBACK,
  MATCH_ALL,
  NO_MATCH,
  node,
  NOT_ISOLATED,
  refCode,
  sideVerdict,
  undecidedAt,
  type IsolationSet,
  type PeerTest,
  type PortCell,
  type RuleEntry,
} from './classes.ts';
import {
  compile,
  Evaluator,
  portMatches,
  type Cluster,
  type CompiledPolicy,
  type Connection,
  type Direction,
  type SideVerdict,
  type Verdict,
} from './evaluate.ts';
import { selectorMatches } from './selector.ts';
import { objectId, type LabelSelector, type NetworkPolicyObject, type PodInfo, type Protocol } from './types.ts';

export type { PortCell } from './classes.ts';

export interface MatrixOptions {
  /** Ports asked of every destination beside those it declares (a scenario's ports, say). */
  ports?: readonly PortCell[];
}

export interface MatrixCounts {
  /** Cells: ordered pairs of distinct pods × the destination's port cells. */
  cells: number;
  allowed: number;
  denied: number;
  undecided: number;
}

export interface MatrixStats {
  pods: number;
  classes: number;
  /** Port cells summed over classes: a row of the class matrix. */
  classPortCells: number;
  /** Class cells whose verdict differs between members (by ipBlocks on their addresses). */
  addressDependentCells: number;
  /** Distinct side verdicts and whole verdicts the matrix holds. */
  sideVerdicts: number;
  verdicts: number;
}

export interface ChangedCell {
  from: PodInfo;
  to: PodInfo;
  port: number;
  protocol: Protocol;
  before: Verdict;
  after: Verdict;
}

/** Members of a class split by what a set of ipBlocks says of their addresses (one group when none do). */
interface Grouping {
  /** Group of each member (by position in its class); null: one group. */
  groupOf: Int32Array | null;
  /** A member of each group (pod index), and each group's size. */
  reps: number[];
  sizes: number[];
}

/** A class pair's cell whose verdict depends on addresses: one verdict id per source group × destination group. */
interface MixedCell {
  from: Grouping;
  to: Grouping;
  ids: Int32Array;
}

export class VerdictMatrix {
  /** The per-cell evaluator over the same inputs: fallback, and explanations (policy(), namespaceLabels()). */
  readonly evaluator: Evaluator;
  readonly pods: readonly PodInfo[];
  readonly #extraPorts: PortCell[];
  readonly #podIndex = new Map<PodInfo, number>();
  readonly #classOf: Int32Array;
  readonly #positionInClass: Int32Array;
  readonly #members: number[][] = [];
  /** Per class: its port cells, and where they start in a row of the class matrix. */
  readonly #cells: PortCell[][] = [];
  readonly #cellKeys: Map<string, number>[] = [];
  readonly #offset: number[] = [];
  readonly #rowLength: number;
  /** Per class pair and port cell: a verdict id (>= 0), or -(i + 1) for #mixed[i]. */
  readonly #matrix: Int32Array;
  readonly #mixed: MixedCell[] = [];
  readonly #verdicts: Verdict[] = [];
  readonly #sides: SideVerdict[] = [NOT_ISOLATED];
  readonly #rules: RuleEntry[] = [];

  constructor(cluster: Cluster, policies: readonly NetworkPolicyObject[], options: MatrixOptions = {}) {
    this.evaluator = new Evaluator(cluster, policies);
    this.pods = cluster.pods;
    this.#extraPorts = dedupe(options.ports ?? []);
    const ipOf = new Map(cluster.pods.map((p) => [objectId(p), p.ip]));
    const compiled = policies.map((p) => compile(p, (ref) => ipOf.get(ref)));
    const byNamespace = new Map<string, CompiledPolicy[]>();
    for (const p of compiled) {
      const list = byNamespace.get(p.namespace) ?? [];
      list.push(p);
      byNamespace.set(p.namespace, list);
    }

    // Distinct ipBlocks, each tested on a pod's address (as the evaluator reads it) at most once.
    const blocks = new BlockTable(cluster.pods);
    const ruleIds = new Map<CompiledPolicy, Record<Direction, number[]>>();
    for (const policy of compiled) {
      const ids: Record<Direction, number[]> = { ingress: [], egress: [] };
      for (const direction of ['ingress', 'egress'] as const)
        policy.rules[direction].forEach((rule, index) => {
          const blockIds = rule.blocks.map((b) => (b ? blocks.add(b) : -1));
          ids[direction].push(this.#rules.push({ policy, direction, index, rule, blockIds, hasBlocks: blockIds.some((b) => b >= 0) }) - 1);
        });
      ruleIds.set(policy, ids);
    }

    // Classes: namespace, labels and named ports (addresses are dealt with per isolation set below).
    const classKeys = new Map<string, number>();
    const reps: PodInfo[] = [];
    this.#classOf = new Int32Array(cluster.pods.length);
    this.#positionInClass = new Int32Array(cluster.pods.length);
    cluster.pods.forEach((pod, i) => {
      this.#podIndex.set(pod, i);
      const ports = JSON.stringify(pod.ports.map((p) => [p.name, p.port, p.protocol]).sort());
      // Off the pod network (hostNetwork, external): no policy selects it, no selector matches it (evaluate.ts).
      const key = `${pod.namespace}\0${canonical(pod.labels)}\0${ports}\0${pod.hostNetwork === true || pod.external === true}`;
      let c = classKeys.get(key);
      if (c === undefined) {
        classKeys.set(key, (c = reps.push(pod) - 1));
        this.#members.push([]);
      }
      this.#positionInClass[i] = this.#members[c]!.push(i) - 1;
      this.#classOf[i] = c;
    });
    const classes = reps.length;

    // Port cells and their signatures (what a rule's ports can tell apart).
    const portSigs = new Map<string, number>();
    const sigReps: { to: PodInfo; cell: PortCell }[] = [];
    const cellSig: number[] = [];
    let offset = 0;
    for (const rep of reps) {
      const cells = dedupe([...rep.ports.map((p) => ({ port: p.port, protocol: p.protocol })), ...this.#extraPorts]);
      this.#cells.push(cells);
      this.#cellKeys.push(new Map(cells.map((c, k) => [`${c.port}/${c.protocol}`, k])));
      this.#offset.push(offset);
      offset += cells.length;
      for (const cell of cells) {
        const names = rep.ports
          .filter((p) => p.port === cell.port && p.protocol === cell.protocol)
          .map((p) => p.name)
          .sort();
        const key = `${cell.port}/${cell.protocol}/${JSON.stringify(names)}`;
        let s = portSigs.get(key);
        if (s === undefined) portSigs.set(key, (s = sigReps.push({ to: rep, cell }) - 1));
        cellSig.push(s);
      }
    }
    this.#rowLength = offset;

    // Per class and direction, the isolating policies (the namespace's, in the evaluator's order).
    const isolationSets = new Map<string, IsolationSet>();
    const isolation: Record<Direction, (IsolationSet | null)[]> = { ingress: [], egress: [] };
    for (const rep of reps) {
      const offPodNetwork = rep.hostNetwork === true || rep.external === true;
      const selecting = offPodNetwork ? [] : (byNamespace.get(rep.namespace) ?? []).filter((p) => selectorMatches(p.source.spec.podSelector ?? {}, rep.labels));
      for (const direction of ['ingress', 'egress'] as const) {
        const list = selecting.filter((p) => p.isolates[direction]);
        if (list.length === 0) {
          isolation[direction].push(null);
          continue;
        }
        const key = `${direction}\0${list.map((p) => p.id).join('\0')}`;
        let set = isolationSets.get(key);
        if (!set) {
          const ids = list.flatMap((p) => ruleIds.get(p)![direction]);
          const rules = ids.map((id) => this.#rules[id]!);
          const blockIds = [...new Set(rules.flatMap((r) => r.blockIds.filter((b) => b >= 0)))];
          set = { index: isolationSets.size, isolatedBy: list.map((p) => p.id), rules, ruleIds: ids, blockIds, root: node(null, 0) };
          isolationSets.set(key, set);
        }
        isolation[direction].push(set);
      }
    }

    // Selector results, memoised per selector over label sets and namespaces.
    const labelSetOf = new Int32Array(classes);
    const labelSets: Record<string, string>[] = [];
    const labelSetKeys = new Map<string, number>();
    const namespaceOf = new Int32Array(classes);
    const namespaces: string[] = [];
    const namespaceKeys = new Map<string, number>();
    reps.forEach((rep, c) => {
      const key = canonical(rep.labels);
      let l = labelSetKeys.get(key);
      if (l === undefined) labelSetKeys.set(key, (l = labelSets.push(rep.labels) - 1));
      labelSetOf[c] = l;
      let n = namespaceKeys.get(rep.namespace);
      if (n === undefined) namespaceKeys.set(rep.namespace, (n = namespaces.push(rep.namespace) - 1));
      namespaceOf[c] = n;
    });
    const podSelectorMemo = new Map<string, Uint8Array>();
    const namespaceSelectorMemo = new Map<string, Uint8Array>();
    const memo = (cache: Map<string, Uint8Array>, selector: LabelSelector, subjects: Record<string, string>[]): Uint8Array => {
      const key = JSON.stringify(selector);
      let out = cache.get(key);
      if (!out) {
        out = new Uint8Array(subjects.length);
        subjects.forEach((labels, i) => (out![i] = selectorMatches(selector, labels) ? 1 : 0));
        cache.set(key, out);
      }
      return out;
    };
    const namespaceLabels = namespaces.map((n) => this.evaluator.namespaceLabels(n));
    const offPodNetwork = reps.map((rep) => rep.hostNetwork === true || rep.external === true);

    // Per rule, each peer as a test of (class, pod): 0 no, 1 yes, 2 undecided.
    const peerTests: (PeerTest[] | undefined)[] = [];
    const testsOf = (ruleId: number): PeerTest[] => {
      let tests = peerTests[ruleId];
      if (tests) return tests;
      const { policy, rule, blockIds } = this.#rules[ruleId]!;
      tests = rule.peers.map((peer, i): PeerTest => {
        const b = blockIds[i]!;
        if (b >= 0) return (_, pod) => blocks.tri(b, pod);
        if (!peer.podSelector && !peer.namespaceSelector) return () => 0; // refused by validation; selects nothing
        const ns = peer.namespaceSelector ? memo(namespaceSelectorMemo, peer.namespaceSelector, namespaceLabels) : undefined;
        const own = namespaceKeys.get(policy.namespace) ?? -1;
        const pods = peer.podSelector ? memo(podSelectorMemo, peer.podSelector, labelSets) : undefined;
        return (c) => (!offPodNetwork[c] && (ns ? ns[namespaceOf[c]!] === 1 : namespaceOf[c] === own) && (pods ? pods[labelSetOf[c]!] === 1 : true) ? 1 : 0);
      });
      peerTests[ruleId] = tests;
      return tests;
    };
    /** The first matching peer, as the evaluator's anyOf picks it (see the codes at NO_MATCH). */
    const peerAt = (ruleId: number, c: number, pod: number): number => {
      const tests = testsOf(ruleId);
      if (tests.length === 0) return MATCH_ALL;
      let result = NO_MATCH;
      for (let i = 0; i < tests.length; i++) {
        const t = tests[i]!(c, pod);
        if (t === 1) return i;
        if (t === 2 && result === NO_MATCH) result = undecidedAt(i);
      }
      return result;
    };
    // Per rule without ipBlocks, lazily: its peer result for each class.
    const peerResults: (Int16Array | undefined)[] = [];
    const peersOf = (ruleId: number): Int16Array => {
      let out = peerResults[ruleId];
      if (!out) {
        out = new Int16Array(classes);
        for (let c = 0; c < classes; c++) out[c] = peerAt(ruleId, c, -1);
        peerResults[ruleId] = out;
      }
      return out;
    };
    // Per rule, lazily: the first matching port for each port signature.
    const portResults: (Int16Array | undefined)[] = [];
    const portsOf = (ruleId: number): Int16Array => {
      let out = portResults[ruleId];
      if (out) return out;
      const { rule } = this.#rules[ruleId]!;
      out = new Int16Array(sigReps.length);
      if (rule.ports.length === 0) out.fill(MATCH_ALL);
      else sigReps.forEach(({ to, cell }, s) => (out![s] = rule.ports.findIndex((pp) => portMatches(pp, to, cell.port, cell.protocol))));
      portResults[ruleId] = out;
      return out;
    };

    /** One side's verdict id: a subject's isolation set against a peer (class, and pod for ipBlocks) at a port signature. */
    const sideId = (set: IsolationSet | null, peerClass: number, peerPod: number, sig: number): number => {
      if (!set) return 0;
      let at = set.root;
      for (let j = 0; j < set.ruleIds.length; j++) {
        const ruleId = set.ruleIds[j]!;
        const port = portsOf(ruleId)[sig]!;
        if (port === NO_MATCH) continue;
        const peer = set.rules[j]!.hasBlocks ? peerAt(ruleId, peerClass, peerPod) : peersOf(ruleId)[peerClass]!;
        if (peer === NO_MATCH) continue;
        at = child(at, refCode(j, peer, port));
      }
      if (at.id < 0) at.id = this.#sides.push(sideVerdict(set.isolatedBy, set.rules, at)) - 1;
      return at.id;
    };

    // Whole verdicts interned per (egress, ingress) pair of side ids; a Map per egress id keeps the keys small integers.
    // A side without ipBlocks depends on (isolation set, peer class, port signature) alone, and
    // many subject classes share a set (a namespace's default deny and its allows): memoised.
    const sideMemo = new Map<number, Int32Array>();
    const classSideId = (set: IsolationSet | null, peerClass: number, peerPod: number, sig: number): number => {
      if (!set) return 0;
      const key = set.index * sigReps.length + sig;
      let memo = sideMemo.get(key);
      if (!memo) sideMemo.set(key, (memo = new Int32Array(classes).fill(-1)));
      const id = memo[peerClass]!;
      return id >= 0 ? id : (memo[peerClass] = sideId(set, peerClass, peerPod, sig));
    };

    const combined: Map<number, number>[] = [];
    const verdictId = (egress: number, ingress: number): number => {
      const byIngress = (combined[egress] ??= new Map());
      let id = byIngress.get(ingress);
      if (id === undefined) {
        const e = this.#sides[egress]!;
        const n = this.#sides[ingress]!;
        const allowed = e.allowed === false || n.allowed === false ? false : e.allowed === null || n.allowed === null ? null : true;
        byIngress.set(ingress, (id = this.#verdicts.push(Object.freeze({ allowed, egress: e, ingress: n })) - 1));
      }
      return id;
    };

    // Members of a class grouped by what the ipBlocks of an isolation set say of their addresses.
    const single: Grouping[] = this.#members.map((m) => ({ groupOf: null, reps: [m[0]!], sizes: [m.length] }));
    const groupings = new Map<IsolationSet, Grouping[]>();
    const grouping = (c: number, set: IsolationSet | null): Grouping => {
      if (!set || set.blockIds.length === 0) return single[c]!;
      let bySet = groupings.get(set);
      if (!bySet) groupings.set(set, (bySet = []));
      const g = bySet[c];
      if (g) return g;
      const groupOf = new Int32Array(this.#members[c]!.length);
      const index = new Map<string, number>();
      const out: Grouping = { groupOf, reps: [], sizes: [] };
      this.#members[c]!.forEach((pod, m) => {
        let signature = '';
        for (const b of set.blockIds) signature += blocks.tri(b, pod);
        let i = index.get(signature);
        if (i === undefined) {
          index.set(signature, (i = out.reps.push(pod) - 1));
          out.sizes.push(0);
        }
        groupOf[m] = i;
        out.sizes[i]!++;
      });
      bySet[c] = out;
      return out;
    };

    this.#matrix = new Int32Array(classes * this.#rowLength);
    const egressIds: number[] = [];
    const scratch: number[] = [];
    for (let from = 0; from < classes; from++) {
      const row = from * this.#rowLength;
      const egressSet = isolation.egress[from]!;
      for (let to = 0; to < classes; to++) {
        // Admin tiers go here: an admin tier's decision for a side stands before sideId, a
        // baseline tier's applies where sideId finds the side not isolated.
        const ingressSet = isolation.ingress[to]!;
        const start = this.#offset[to]!;
        const count = this.#cells[to]!.length;
        const fromRep = this.#members[from]![0]!;
        const toRep = this.#members[to]![0]!;
        const byAddress = (egressSet !== null && egressSet.blockIds.length > 0) || (ingressSet !== null && ingressSet.blockIds.length > 0);
        if (!byAddress) {
          for (let k = 0; k < count; k++) {
            const sig = cellSig[start + k]!;
            this.#matrix[row + start + k] = verdictId(classSideId(egressSet, to, toRep, sig), classSideId(ingressSet, from, fromRep, sig));
          }
          continue;
        }
        const fromGroups = grouping(from, ingressSet);
        const toGroups = grouping(to, egressSet);
        const width = toGroups.reps.length;
        const size = fromGroups.reps.length * width;
        for (let k = 0; k < count; k++) {
          const sig = cellSig[start + k]!;
          for (let j = 0; j < width; j++) egressIds[j] = sideId(egressSet, to, toGroups.reps[j]!, sig);
          let uniform = true;
          for (let i = 0; i < fromGroups.reps.length; i++) {
            const ingress = sideId(ingressSet, from, fromGroups.reps[i]!, sig);
            for (let j = 0; j < width; j++) {
              const id = (scratch[i * width + j] = verdictId(egressIds[j]!, ingress));
              if (id !== scratch[0]) uniform = false;
            }
          }
          this.#matrix[row + start + k] = uniform
            ? scratch[0]!
            : -(this.#mixed.push({ from: fromGroups, to: toGroups, ids: Int32Array.from(scratch.slice(0, size)) }) - 1) - 1;
        }
      }
    }
  }

  /** The verdict Evaluator.evaluate gives for this connection. */
  evaluate(conn: Connection): Verdict {
    if (conn.from.namespace === conn.to.namespace && conn.from.name === conn.to.name) return LOOPBACK;
    const from = this.#podIndex.get(conn.from);
    const to = this.#podIndex.get(conn.to);
    if (from !== undefined && to !== undefined) {
      const k = this.#cellKeys[this.#classOf[to]!]!.get(`${conn.port}/${conn.protocol}`);
      if (k !== undefined) return this.#cell(from, to, k);
    }
    return this.evaluator.evaluate(conn);
  }

  /** Every cell from one pod of the cluster: each other pod, each of its port cells, in the cluster's order. */
  row(from: PodInfo, visit: (to: PodInfo, cell: PortCell, verdict: Verdict) => void): void {
    const f = this.#podIndex.get(from);
    if (f === undefined) throw new Error(`${objectId(from)} is not a pod of this matrix' cluster`);
    this.pods.forEach((to, t) => {
      if (to.namespace === from.namespace && to.name === from.name) return;
      this.#cells[this.#classOf[t]!]!.forEach((cell, k) => visit(to, cell, this.#cell(f, t, k)));
    });
  }

  /** How many cells are allowed, denied and undecided, from the class matrix and the class sizes. */
  counts(): MatrixCounts {
    const out: MatrixCounts = { cells: 0, allowed: 0, denied: 0, undecided: 0 };
    const add = (v: Verdict, n: number) => {
      out.cells += n;
      if (v.allowed === true) out.allowed += n;
      else if (v.allowed === false) out.denied += n;
      else out.undecided += n;
    };
    const classes = this.#members.length;
    for (let from = 0; from < classes; from++)
      for (let to = 0; to < classes; to++) {
        const base = from * this.#rowLength + this.#offset[to]!;
        for (let k = 0; k < this.#cells[to]!.length; k++) {
          const id = this.#matrix[base + k]!;
          if (id >= 0) {
            add(this.#verdicts[id]!, this.#pairs(from, to));
            continue;
          }
          const m = this.#mixed[-id - 1]!;
          const width = m.to.reps.length;
          m.ids.forEach((v, cell) => {
            const i = Math.floor(cell / width);
            const j = cell % width;
            let pairs = m.from.sizes[i]! * m.to.sizes[j]!;
            // Within one class, a pod and itself is loopback, not a cell.
            if (from === to) pairs -= this.#members[from]!.filter((_, p) => (m.from.groupOf?.[p] ?? 0) === i && (m.to.groupOf?.[p] ?? 0) === j).length;
            add(this.#verdicts[v]!, pairs);
          });
        }
      }
    return out;
  }

  /**
   * The cells whose `allowed` differs between this matrix (before) and `after`, built over the
   * same pods and extra ports (another policy set, say); visits each when `visit` is given and
   * returns how many there are. Classes do not depend on the policies, so the two class matrices
   * line up cell by cell: one pass over them, and only differing or address-split cells are
   * expanded to pods.
   */
  diff(after: VerdictMatrix, visit?: (cell: ChangedCell) => void): number {
    if (after.pods.length !== this.pods.length || after.pods.some((p, i) => p !== this.pods[i]))
      throw new Error('diff: the two matrices are not over the same pods');
    if (JSON.stringify(after.#extraPorts) !== JSON.stringify(this.#extraPorts)) throw new Error('diff: the two matrices ask different ports');
    const allowedOf = (m: VerdictMatrix) => Int8Array.from(m.#verdicts, (v) => (v.allowed === true ? 1 : v.allowed === false ? 0 : 2));
    const [was, now] = [allowedOf(this), allowedOf(after)];
    const toClassAt = new Int32Array(this.#rowLength);
    this.#offset.forEach((start, c) => toClassAt.fill(c, start, start + this.#cells[c]!.length));
    let changed = 0;
    for (let i = 0; i < this.#matrix.length; i++) {
      const a = this.#matrix[i]!;
      const b = after.#matrix[i]!;
      if (a >= 0 && b >= 0 && was[a] === now[b]) continue;
      const fromClass = Math.floor(i / this.#rowLength);
      const toClass = toClassAt[i % this.#rowLength]!;
      const k = (i % this.#rowLength) - this.#offset[toClass]!;
      const cell = this.#cells[toClass]![k]!;
      for (const f of this.#members[fromClass]!)
        for (const t of this.#members[toClass]!) {
          const from = this.pods[f]!;
          const to = this.pods[t]!;
          if (from.namespace === to.namespace && from.name === to.name) continue;
          const before = this.#cell(f, t, k);
          const next = after.#cell(f, t, k);
          if (before.allowed === next.allowed) continue;
          changed++;
          visit?.({ from, to, port: cell.port, protocol: cell.protocol, before, after: next });
        }
    }
    return changed;
  }
  /**
   * Every cell, in blocks of one verdict, without going pod by pod: per class pair and port cell
   * of the destination, the two classes' members (or, where addresses split the cell, each pair of
   * address groups). `from` and `to` are pod indexes into `pods`, the same array each time a class
   * or group recurs (callers may memoise on it); `sameClass` says the two lists come from one class,
   * whose pod-with-itself pairs are loopback and no cell (the caller leaves them out). Visits
   * classes² × port cells blocks, plus the address groups of split cells (for summaries by workload).
   */
  blocks(visit: (from: readonly number[], to: readonly number[], cell: PortCell, verdict: Verdict, sameClass: boolean) => void): void {
    const groupMembers = new Map<Grouping, number[][]>();
    const membersOf = (g: Grouping, c: number, i: number): number[] => {
      if (!g.groupOf) return this.#members[c]!;
      let lists = groupMembers.get(g);
      if (!lists) {
        lists = g.reps.map(() => []);
        this.#members[c]!.forEach((pod, m) => lists![g.groupOf![m]!]!.push(pod));
        groupMembers.set(g, lists);
      }
      return lists[i]!;
    };
    const classes = this.#members.length;
    for (let from = 0; from < classes; from++)
      for (let to = 0; to < classes; to++) {
        const base = from * this.#rowLength + this.#offset[to]!;
        const cells = this.#cells[to]!;
        for (let k = 0; k < cells.length; k++) {
          const id = this.#matrix[base + k]!;
          if (id >= 0) {
            visit(this.#members[from]!, this.#members[to]!, cells[k]!, this.#verdicts[id]!, from === to);
            continue;
          }
          const m = this.#mixed[-id - 1]!;
          const width = m.to.reps.length;
          m.ids.forEach((v, at) => {
            const i = Math.floor(at / width);
            const j = at % width;
            visit(membersOf(m.from, from, i), membersOf(m.to, to, j), cells[k]!, this.#verdicts[v]!, from === to);
          });
        }
      }
  }

  stats(): MatrixStats {
    return {
      pods: this.pods.length,
      classes: this.#members.length,
      classPortCells: this.#rowLength,
      addressDependentCells: this.#mixed.length,
      sideVerdicts: this.#sides.length,
      verdicts: this.#verdicts.length,
    };
  }

  /** The verdict of pod `from` to pod `to` (indexes) at the destination's port cell k. */
  #cell(from: number, to: number, k: number): Verdict {
    const fromClass = this.#classOf[from]!;
    const toClass = this.#classOf[to]!;
    const id = this.#matrix[fromClass * this.#rowLength + this.#offset[toClass]! + k]!;
    if (id >= 0) return this.#verdicts[id]!;
    const m = this.#mixed[-id - 1]!;
    const i = m.from.groupOf ? m.from.groupOf[this.#positionInClass[from]!]! : 0;
    const j = m.to.groupOf ? m.to.groupOf[this.#positionInClass[to]!]! : 0;
    return this.#verdicts[m.ids[i * m.to.reps.length + j]!]!;
  }

  /** Ordered pairs of distinct pods from one class to another (a pod and itself is loopback, not counted). */
  #pairs(from: number, to: number): number {
    const a = this.#members[from]!.length;
    return from === to ? a * (a - 1) : a * this.#members[to]!.length;
  }
}
