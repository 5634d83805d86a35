// The class matrix with admin tiers: TieredEvaluator's verdict for every cell, each side's tier
// steps computed once per class and port cell instead of once per pod pair. A layer over matrix.ts,
// which gives the NetworkPolicy tier's verdicts (ipBlocks and all, exactly as the evaluator).
//
// Why classes suffice: an admin tier's subjects and pod/namespace peers see a pod only through its
// namespace (labels), its labels, hostNetwork (and then its node) and external; its protocols
// through the destination's named ports. Classes here are matrix.ts's (namespace, labels, ports)
// split by hostNetwork (by node) and external. A side's steps (TieredEvaluator.side) depend on the subject through the policies
// selecting it, on the peer through which rule peers match it (its "profile", TieredEvaluator.peerKey),
// on the port through its signature (number, protocol, the destination's names for it) and on the
// NetworkPolicy tier only through whether it isolates the subject, so a side is computed once per
//   egress:  (policies selecting the source, isolated, destination's profile, port signature)
//   ingress: (policies selecting the destination, isolated, port signature, source's profile)
// (tens of subject sets and profiles, not classes²), as a "shape" (interned by content: a
// handful in practice), and each cell's side is its shape with
// the cell's own NetworkPolicy answer put in (interned per shape and answer; matrix.ts interns the
// answers). Whole verdicts are interned per pair of sides, so a verdict object stands for one
// reason everywhere (summaries compare them by identity).
// `networks` peers see addresses: a source class selected by an admin-tier policy with a `networks`
// egress peer has its egress shape per destination pod instead of per destination class (exact;
// a split by blocks as matrix.ts does for ipBlocks is not done). Loopback cells, cells with an
// external endpoint (outside the cluster: the NetworkPolicy evaluator's own case, which matrix.ts
// does not class apart) and connections the class matrix does not hold (pods not of the cluster,
// ports neither declared nor asked) go to the per-cell TieredEvaluator. Pure: no I/O.
import type { ClusterPolicy } from './cluster-policy.ts';
import type { Cluster, Connection, SideVerdict, Verdict } from './evaluate.ts';
import { VerdictMatrix, type MatrixOptions, type PortCell } from './matrix.ts';
import { TieredEvaluator, type TieredSide, type TieredVerdict } from './tiers.ts';
import { PROTOCOLS, type NetworkPolicyObject, type PodInfo, type Protocol } from './types.ts';

const canonical = (labels: Record<string, string>): string => JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
/** Port cells as numbers: port × 3 + protocol. */
const PORT_KEYS = 65536 * 3;
const portKey = (port: number, protocol: Protocol): number => port * 3 + PROTOCOLS.indexOf(protocol);

/** Members of a list of matrix.ts's blocks that fall in one tier class. */
interface Part {
  cls: number;
  pods: readonly number[];
}

export interface TierMatrixStats {
  classes: number;
  /** Side computations done (each a TieredEvaluator.side call): egress and ingress keys. */
  templates: number;
  /** Distinct side shapes they came to. */
  shapes: number;
  /** Classes whose egress goes per destination pod (subjects of `networks` egress peers). */
  addressClasses: number;
  /** Distinct whole verdicts handed out. */
  verdicts: number;
}

export class TierMatrix {
  readonly tiered: TieredEvaluator;
  readonly networkPolicies: VerdictMatrix;
  readonly pods: readonly PodInfo[];
  readonly #podIndex = new Map<PodInfo, number>();
  readonly #classOf: Int32Array;
  readonly #members: number[][] = [];
  /** Per class: the index of the set of admin-tier policies selecting it. */
  readonly #subjectSet: number[] = [];
  /** Per class: the index of what it is as a peer (which rule peers match it: TieredEvaluator.peerKey). */
  readonly #profile: number[] = [];
  /** Per class: whether it is the subject of an admin-tier policy with a `networks` egress peer. */
  readonly #byAddress: boolean[] = [];
  /** Per class: external (outside the cluster: the NetworkPolicy evaluator's own case, which matrix.ts does not class), asked per cell. */
  readonly #external: boolean[] = [];
  /** Per class: its port cells (declared and asked) by port key to their index in the class, and each index's port signature. */
  readonly #cellIndex: Map<number, number>[] = [];
  readonly #signature: Int32Array[] = [];
  /**
   * Side shape ids (-1: not computed yet): egress by (subject set, isolated, destination's peer
   * profile, port signature); egress of address classes by (class, destination pod, isolated,
   * port); ingress by (subject set, isolated, port signature, source's peer profile).
   */
  readonly #egress: ShapeTable;
  readonly #egressByPod = new Map<number, number>();
  readonly #ingress: ShapeTable;
  readonly #signatureCount: number;
  readonly #profileCount: number;
  /** Per pair of shapes (egress, then ingress), the verdict for each NetworkPolicy verdict met. */
  readonly #byShapes: Map<Verdict, TieredVerdict>[][] = [];
  #computed = 0;
  readonly #shapes: TieredSide[] = [];
  readonly #shapeKeys = new Map<string, number>();
  /** Per shape: its side for each NetworkPolicy answer met (matrix.ts interns those). */
  readonly #sides: Map<SideVerdict, TieredSide>[] = [];
  readonly #verdicts = new Map<TieredSide, Map<TieredSide, TieredVerdict>>();
  #verdictCount = 0;
  readonly #parts = new WeakMap<readonly number[], Part[]>();
  readonly #single = new Map<number, readonly number[]>();

  constructor(cluster: Cluster, policies: readonly NetworkPolicyObject[], clusterPolicies: readonly ClusterPolicy[], options: MatrixOptions = {}) {
    this.tiered = new TieredEvaluator(cluster, policies, clusterPolicies);
    this.networkPolicies = new VerdictMatrix(cluster, policies, options);
    this.pods = cluster.pods;
    const asked = (options.ports ?? []).map((c) => portKey(c.port, c.protocol));
    const classKeys = new Map<string, number>();
    const setKeys = new Map<string, number>();
    const profileKeys = new Map<string, number>();
    const signatures = new Map<string, number>();
    this.#classOf = new Int32Array(cluster.pods.length);
    cluster.pods.forEach((pod, i) => {
      this.#podIndex.set(pod, i);
      const ports = JSON.stringify(pod.ports.map((p) => [p.name, p.port, p.protocol]).sort());
      const key = `${pod.namespace}\0${canonical(pod.labels)}\0${ports}\0${pod.hostNetwork === true ? (pod.node ?? '') : false}\0${pod.external === true}`;
      let c = classKeys.get(key);
      if (c === undefined) {
        classKeys.set(key, (c = this.#members.push([]) - 1));
        const subjects = this.tiered.subjects(pod);
        const setKey = [...subjects.Admin, ...subjects.Baseline].map((p) => p.id).join('\0');
        let s = setKeys.get(setKey);
        if (s === undefined) setKeys.set(setKey, (s = setKeys.size));
        this.#subjectSet.push(s);
        const profileKey = this.tiered.peerKey(pod);
        let profile = profileKeys.get(profileKey);
        if (profile === undefined) profileKeys.set(profileKey, (profile = profileKeys.size));
        this.#profile.push(profile);
        this.#external.push(pod.external === true);
        this.#byAddress.push([...subjects.Admin, ...subjects.Baseline].some((p) => p.egress.some((r) => r.peers.some((peer) => 'networks' in peer))));
        const cells = new Map<number, number>();
        const sigs: number[] = [];
        for (const k of [...pod.ports.map((p) => portKey(p.port, p.protocol)), ...asked]) {
          if (cells.has(k)) continue;
          const names = pod.ports
            .filter((p) => portKey(p.port, p.protocol) === k)
            .map((p) => p.name)
            .sort();
          const sigKey = `${k}/${JSON.stringify(names)}`;
          let sig = signatures.get(sigKey);
          if (sig === undefined) signatures.set(sigKey, (sig = signatures.size));
          cells.set(k, sigs.push(sig) - 1);
        }
        this.#cellIndex.push(cells);
        this.#signature.push(Int32Array.from(sigs));
      }
      this.#members[c]!.push(i);
      this.#classOf[i] = c;
    });
    this.#signatureCount = signatures.size;
    this.#profileCount = profileKeys.size;
    const size = setKeys.size * 2 * signatures.size * profileKeys.size;
    this.#egress = new ShapeTable(size);
    this.#ingress = new ShapeTable(size);
  }

  /** The verdict TieredEvaluator.evaluate gives for this connection. */
  evaluate(conn: Connection): TieredVerdict {
    const f = this.#podIndex.get(conn.from);
    const t = this.#podIndex.get(conn.to);
    if (f === undefined || t === undefined) return this.tiered.evaluate(conn);
    const from = this.#classOf[f]!;
    const to = this.#classOf[t]!;
    if (this.#external[from] || this.#external[to] || !this.#cellIndex[to]!.has(portKey(conn.port, conn.protocol))) return this.tiered.evaluate(conn);
    const np = this.networkPolicies.evaluate(conn);
    if (np.egress.decision === 'loopback') return this.tiered.evaluate(conn);
    return this.#verdict(from, to, t, conn.port, conn.protocol, np);
  }

  /**
   * Every cell in blocks of one verdict, as VerdictMatrix.blocks gives them (pod indexes into
   * `pods`, the same arrays each time a class or group recurs; `sameClass`: the two lists may share
   * pods, whose pairs with themselves are loopback and no cell). matrix.ts's blocks split by tier
   * class where hostNetwork or external differ, and to single destinations where a source's
   * egress depends on addresses (`networks` peers).
   */
  blocks(visit: (from: readonly number[], to: readonly number[], cell: PortCell, verdict: TieredVerdict, sameClass: boolean) => void): void {
    let lastFrom: readonly number[] | undefined;
    let fromParts: Part[] = [];
    this.networkPolicies.blocks((from, to, cell, np, sameClass) => {
      if (from !== lastFrom) fromParts = this.#partsOf((lastFrom = from)); // a row of blocks has one source list
      const toParts = this.#partsOf(to);
      for (const a of fromParts)
        for (const b of toParts) {
          const same = sameClass && a.cls === b.cls;
          if (this.#external[a.cls] || this.#external[b.cls]) {
            for (const f of a.pods)
              for (const t of b.pods)
                if (f !== t)
                  visit(
                    this.#one(f),
                    this.#one(t),
                    cell,
                    this.tiered.evaluate({ from: this.pods[f]!, to: this.pods[t]!, port: cell.port, protocol: cell.protocol }),
                    false,
                  );
            continue;
          }
          if (!this.#byAddress[a.cls]) {
            visit(a.pods, b.pods, cell, this.#verdict(a.cls, b.cls, b.pods[0]!, cell.port, cell.protocol, np), same);
            continue;
          }
          for (const t of b.pods) visit(a.pods, this.#one(t), cell, this.#verdict(a.cls, b.cls, t, cell.port, cell.protocol, np), same && a.pods.includes(t));
        }
    });
  }

  stats(): TierMatrixStats {
    return {
      classes: this.#members.length,
      templates: this.#computed,
      shapes: this.#shapes.length,
      addressClasses: this.#byAddress.filter(Boolean).length,
      verdicts: this.#verdictCount,
    };
  }

  /** The cell's verdict: each side's shape with the cell's NetworkPolicy answer (`np`) put in. `toPod` matters only for address classes. */
  #verdict(from: number, to: number, toPod: number, port: number, protocol: Protocol, np: Verdict): TieredVerdict {
    const pk = portKey(port, protocol);
    const sig = this.#signature[to]![this.#cellIndex[to]!.get(pk)!]!;
    const egressIsolated = np.egress.decision === 'not-isolated' ? 0 : 1;
    let egress: number;
    if (this.#byAddress[from]) {
      const key = ((from * this.pods.length + toPod) * 2 + egressIsolated) * PORT_KEYS + pk;
      egress = this.#egressByPod.get(key) ?? -1;
      if (egress < 0) this.#egressByPod.set(key, (egress = this.#sideShape('egress', from, toPod, port, protocol, np.egress)));
    } else {
      const key = ((this.#subjectSet[from]! * 2 + egressIsolated) * this.#profileCount + this.#profile[to]!) * this.#signatureCount + sig;
      egress = this.#egress.get(key);
      if (egress < 0) this.#egress.set(key, (egress = this.#sideShape('egress', from, this.#members[to]![0]!, port, protocol, np.egress)));
    }
    const ingressIsolated = np.ingress.decision === 'not-isolated' ? 0 : 1;
    const ingressKey = ((this.#subjectSet[to]! * 2 + ingressIsolated) * this.#signatureCount + sig) * this.#profileCount + this.#profile[from]!;
    let ingress = this.#ingress.get(ingressKey);
    if (ingress < 0) this.#ingress.set(ingressKey, (ingress = this.#sideShape('ingress', to, this.#members[from]![0]!, port, protocol, np.ingress)));
    const shapesByIngress = (this.#byShapes[egress] ??= []);
    const byVerdict = (shapesByIngress[ingress] ??= new Map());
    const known = byVerdict.get(np);
    if (known) return known;
    const e = this.#side(egress, np.egress);
    const i = this.#side(ingress, np.ingress);
    let byIngress = this.#verdicts.get(e);
    if (!byIngress) this.#verdicts.set(e, (byIngress = new Map()));
    let out = byIngress.get(i);
    if (!out) {
      const allowed = e.allowed === false || i.allowed === false ? false : e.allowed === null || i.allowed === null ? null : true;
      byIngress.set(i, (out = { allowed, egress: e, ingress: i }));
      this.#verdictCount++;
    }
    byVerdict.set(np, out);
    return out;
  }

  /** One side computed by the tiered evaluator for a representative of `subjectClass` and the pod `peer`, as a shape id. */
  #sideShape(direction: 'egress' | 'ingress', subjectClass: number, peer: number, port: number, protocol: Protocol, answer: SideVerdict): number {
    this.#computed++;
    const subject = this.pods[this.#members[subjectClass]![0]!]!;
    const other = this.pods[peer]!;
    const conn = direction === 'egress' ? { from: subject, to: other, port, protocol } : { from: other, to: subject, port, protocol };
    return this.#shape(this.tiered.side(direction, subject, other, conn, answer));
  }

  /** A side's shape id: its content without the NetworkPolicy answer (which rebase puts back). */
  #shape(side: TieredSide): number {
    const key = JSON.stringify({
      ...side,
      allowed: side.decidedBy === 'networkpolicy' ? 0 : side.allowed,
      networkPolicy: 0,
      chain: side.chain.map((s) => (s.tier === 'NetworkPolicy' ? 0 : s)),
    });
    let id = this.#shapeKeys.get(key);
    if (id === undefined) {
      this.#shapeKeys.set(key, (id = this.#shapes.push(side) - 1));
      this.#sides.push(new Map());
    }
    return id;
  }

  /** A shape with this cell's NetworkPolicy answer, one object per (shape, answer). */
  #side(shape: number, answer: SideVerdict): TieredSide {
    const byAnswer = this.#sides[shape]!;
    let out = byAnswer.get(answer);
    if (!out) byAnswer.set(answer, (out = rebase(this.#shapes[shape]!, answer)));
    return out;
  }

  /** A list of one pod, the same array each time. */
  #one(pod: number): readonly number[] {
    let list = this.#single.get(pod);
    if (!list) this.#single.set(pod, (list = [pod]));
    return list;
  }

  /** A block's pod list split by tier class (one part, the same list, when it is one class). */
  #partsOf(list: readonly number[]): Part[] {
    let parts = this.#parts.get(list);
    if (parts) return parts;
    const byClass = new Map<number, number[]>();
    for (const p of list) {
      const c = this.#classOf[p]!;
      const members = byClass.get(c);
      if (members) members.push(p);
      else byClass.set(c, [p]);
    }
    parts = byClass.size === 1 ? [{ cls: this.#classOf[list[0]!]!, pods: list }] : [...byClass].map(([cls, pods]) => ({ cls, pods }));
    this.#parts.set(list, parts);
    return parts;
  }
}

/** Shape ids by a numeric key: an array while the key space is small (it is the product of a few small counts), a Map past that. */
class ShapeTable {
  readonly #dense: Int32Array | undefined;
  readonly #sparse = new Map<number, number>();
  constructor(size: number) {
    this.#dense = size <= 1 << 22 ? new Int32Array(size).fill(-1) : undefined;
  }
  get(key: number): number {
    return this.#dense ? this.#dense[key]! : (this.#sparse.get(key) ?? -1);
  }
  set(key: number, shape: number): void {
    if (this.#dense) this.#dense[key] = shape;
    else this.#sparse.set(key, shape);
  }
}

/** A shape's side with this cell's own NetworkPolicy answer put in. */
function rebase(side: TieredSide, networkPolicy: SideVerdict): TieredSide {
  const out: TieredSide = {
    allowed: side.decidedBy === 'networkpolicy' ? networkPolicy.allowed : side.allowed,
    decidedBy: side.decidedBy,
    chain: side.chain.map((s) => (s.tier === 'NetworkPolicy' ? { tier: 'NetworkPolicy', verdict: networkPolicy } : s)),
    networkPolicy,
  };
  if (side.orderDependsOn) out.orderDependsOn = side.orderDependsOn;
  return out;
}
