// The class matrix with admin tiers: TieredEvaluator's verdict for every cell, computed once per
// class pair and port cell instead of once per pod pair. A thin layer beside matrix.ts, which gives
// the NetworkPolicy tier's verdicts (ipBlocks and all, exactly as the evaluator).
//
// Why a class suffices: an admin tier's subjects and pod/namespace peers see a pod only through its
// namespace (labels), its labels, hostNetwork and external; its protocols through the destination's
// named ports. Pods equal in those (and so in matrix.ts's class key) get the same tier steps. The
// NetworkPolicy step's verdict may still differ between members (ipBlocks), but whether a
// NetworkPolicy isolates a side does not (podSelector only), so a class pair's chain has the same
// shape for every member pair: its NetworkPolicy step is replaced by the pair's own (from the
// VerdictMatrix), and so is the side's answer where that step decides.
// `networks` peers see addresses: a cell whose source is the subject of an admin-tier policy with a
// `networks` egress peer goes to the per-cell TieredEvaluator (exact; the split by blocks, as
// matrix.ts does for ipBlocks, is not done yet). Pure: no I/O.
import type { ClusterPolicy } from './cluster-policy.ts';
import type { Cluster, Connection, SideVerdict, Verdict } from './evaluate.ts';
import { VerdictMatrix, type MatrixOptions } from './matrix.ts';
import { selectorMatches } from './selector.ts';
import { TieredEvaluator, type TieredSide, type TieredVerdict } from './tiers.ts';
import { PROTOCOLS, type NetworkPolicyObject, type PodInfo } from './types.ts';

const canonical = (labels: Record<string, string>): string => JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

export class TierMatrix {
  readonly tiered: TieredEvaluator;
  readonly networkPolicies: VerdictMatrix;
  readonly pods: readonly PodInfo[];
  readonly #classOf = new Map<PodInfo, number>();
  readonly #members: PodInfo[][] = [];
  /** Per class: whether it is the subject of an admin-tier policy with a `networks` egress peer. */
  readonly #byAddress: boolean[] = [];
  /** Per class pair and port (a number: class pair, port, protocol), the verdict of two representatives (its chains' shape). */
  readonly #templates = new Map<number, TieredVerdict>();
  /** Per template, its verdict for each NetworkPolicy verdict (the VerdictMatrix interns those): one object per distinct answer. */
  readonly #rebased = new Map<TieredVerdict, WeakMap<Verdict, TieredVerdict>>();

  constructor(cluster: Cluster, policies: readonly NetworkPolicyObject[], clusterPolicies: readonly ClusterPolicy[], options: MatrixOptions = {}) {
    this.tiered = new TieredEvaluator(cluster, policies, clusterPolicies);
    this.networkPolicies = new VerdictMatrix(cluster, policies, options);
    this.pods = cluster.pods;
    const withNetworks = clusterPolicies.filter((p) => p.egress.some((r) => r.peers.some((peer) => 'networks' in peer)));
    const nsLabels = (ns: string) => this.tiered.networkPolicies.namespaceLabels(ns);
    const selects = (p: ClusterPolicy, pod: PodInfo): boolean => {
      if (pod.hostNetwork || pod.external) return false;
      const s = p.subject;
      return 'namespaces' in s
        ? selectorMatches(s.namespaces, nsLabels(pod.namespace))
        : selectorMatches(s.pods.namespaceSelector, nsLabels(pod.namespace)) && selectorMatches(s.pods.podSelector, pod.labels);
    };
    const keys = new Map<string, number>();
    for (const pod of cluster.pods) {
      const ports = JSON.stringify(pod.ports.map((p) => [p.name, p.port, p.protocol]).sort());
      const key = `${pod.namespace}\0${canonical(pod.labels)}\0${ports}\0${pod.hostNetwork === true}\0${pod.external === true}`;
      let c = keys.get(key);
      if (c === undefined) {
        keys.set(key, (c = this.#members.push([]) - 1));
        this.#byAddress.push(withNetworks.some((p) => selects(p, pod)));
      }
      this.#members[c]!.push(pod);
      this.#classOf.set(pod, c);
    }
  }

  /** The verdict TieredEvaluator.evaluate gives for this connection. */
  evaluate(conn: Connection): TieredVerdict {
    const from = this.#classOf.get(conn.from);
    const to = this.#classOf.get(conn.to);
    // A named external: `domainNames` peers and the name lookup see its names, which classes do not.
    if (from === undefined || to === undefined || this.#byAddress[from] || conn.to.names?.length) return this.tiered.evaluate(conn);
    const np = this.networkPolicies.evaluate(conn);
    if (np.egress.decision === 'loopback') return this.tiered.evaluate(conn);
    const key = ((from * this.#members.length + to) * 65536 + conn.port) * 3 + PROTOCOLS.indexOf(conn.protocol);
    let template = this.#templates.get(key);
    if (!template) {
      const a = this.#members[from]!;
      const b = this.#members[to]!;
      const repFrom = a[0]!;
      const repTo = from === to ? b[1]! : b[0]!; // two pods of one class: another cell of it exists
      template = this.tiered.evaluate({ from: repFrom, to: repTo, port: conn.port, protocol: conn.protocol });
      this.#templates.set(key, template);
    }
    let byNp = this.#rebased.get(template);
    if (!byNp) this.#rebased.set(template, (byNp = new WeakMap()));
    let out = byNp.get(np);
    if (!out) {
      const egress = rebase(template.egress, np.egress);
      const ingress = rebase(template.ingress, np.ingress);
      const allowed = egress.allowed === false || ingress.allowed === false ? false : egress.allowed === null || ingress.allowed === null ? null : true;
      byNp.set(np, (out = { allowed, egress, ingress }));
    }
    return out;
  }

  stats(): { classes: number; templates: number; addressClasses: number } {
    return { classes: this.#members.length, templates: this.#templates.size, addressClasses: this.#byAddress.filter(Boolean).length };
  }
}

/** A representative pair's side with this pair's own NetworkPolicy answer put in. */
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
