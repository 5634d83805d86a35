// The tiered evaluator: whether a connection is allowed when admin-tier policies
// (ClusterNetworkPolicy, and the v1alpha1 kinds read as the same tiers: cluster-policy.ts) are in
// force beside NetworkPolicies, and the chain of decisions that led there. Pure (no I/O), and,
// like the NetworkPolicy evaluator it builds on, independent of the nftables renderer.
//
// Semantics (apis/v1alpha2/clusternetworkpolicy_types.go), for each side of a connection (the
// source's egress, the destination's ingress), each side on its own:
// - the Admin tier first: the policies whose subject selects the pod (host-network pods are never
//   subjects), lowest priority value first, each policy's rules of that direction in written order;
//   the first rule whose peers and protocols match decides: Accept allows the side and Deny blocks
//   it (nothing after is looked at), Pass skips the rest of the Admin tier;
// - then NetworkPolicy: if any NetworkPolicy isolates the pod for that direction, it decides;
// - then the Baseline tier, as the Admin tier (Pass goes to the default);
// - then the default: allowed.
// Two policies of one tier with the same priority whose matching rules disagree leave the order
// undefined upstream ("the implementation can apply any of the matching policies"): the verdict
// then takes them by name, and the side lists them in `orderDependsOn` so reports can say so.
// Peers: `namespaces` and `pods` match pods (never host-network ones); `networks` match an
// endpoint's address (pod-to-pod traffic too, as upstream says) (and an address not known yet, the
// peer's or a `{{ip ns/pod}}` template's in the rule, leaves a `networks` rule undecided); `nodes`
// match an endpoint at a node's address: a hostNetwork pod (the node itself is one too, with no
// ports of its own), by its node's labels (the pod's `node`, or the cluster's only node);
// `domainNames` match only named external hosts, which the model does not have yet, so nothing.
import { blockContains, parseAddress, parseBlock, type Block } from './cidr.ts';
import type { Action, ClusterPeer, ClusterPolicy, ClusterProtocol, ClusterRule, NamespacedPodSelector, Tier } from './cluster-policy.ts';
import { hasTemplate, substitute } from './ip-template.ts';
import { Evaluator, type Cluster, type Connection, type Direction, type SideVerdict } from './evaluate.ts';
import { selectorMatches } from './selector.ts';
import { objectId, type NetworkPolicyObject, type NodeInfo, type PodInfo } from './types.ts';

/** One decision on the way to a side's verdict. */
export type ChainStep =
  { tier: Tier; policy: string; priority: number; rule: number; ruleName?: string; action: Action } | { tier: 'NetworkPolicy'; verdict: SideVerdict };

export interface TieredSide {
  /** null: depends on an address not known yet. */
  allowed: boolean | null;
  decidedBy: 'loopback' | 'admin' | 'networkpolicy' | 'baseline' | 'default';
  chain: ChainStep[];
  /** The NetworkPolicy tier's own answer for this side (whether or not it was reached). */
  networkPolicy: SideVerdict;
  /** Policies of one tier and priority that matched with different actions (upstream leaves their order undefined). */
  orderDependsOn?: string[];
}

export interface TieredVerdict {
  allowed: boolean | null;
  egress: TieredSide;
  ingress: TieredSide;
}

interface CompiledPolicy {
  source: ClusterPolicy;
  /** Per `networks` peer, its blocks; 'unknown': a `{{ip ns/pod}}` whose address is not known yet. */
  networks: Map<ClusterPeer, (Block | undefined | 'unknown')[]>;
}

type Tri = boolean | null;

export class TieredEvaluator {
  readonly networkPolicies: Evaluator;
  readonly #tiers: Record<Tier, CompiledPolicy[]>;
  // Per pod, the policies of each tier whose subject selects it, and per pod peer the pods it
  // matches: labels do not change within one evaluator, and a model asks each pod many times.
  readonly #subjects = new Map<PodInfo, Record<Tier, CompiledPolicy[]>>();
  readonly #peerHits = new Map<ClusterPeer, Map<PodInfo, boolean>>();
  readonly #addresses = new Map<PodInfo, ReturnType<typeof parseAddress>>();
  readonly #nodes: readonly NodeInfo[];

  constructor(cluster: Cluster, policies: readonly NetworkPolicyObject[], clusterPolicies: readonly ClusterPolicy[]) {
    this.networkPolicies = new Evaluator(cluster, policies);
    this.#nodes = cluster.nodes ?? [];
    const ips = new Map(cluster.pods.filter((p) => p.ip !== undefined).map((p) => [objectId(p), p.ip!]));
    const block = (text: string): Block | undefined | 'unknown' => {
      if (!hasTemplate(text)) return parseBlock(text.trim());
      const resolved = substitute(text, (ref) => ips.get(ref));
      return resolved === undefined ? 'unknown' : parseBlock(resolved.trim());
    };
    const compiled = [...clusterPolicies]
      .sort((a, b) => a.priority - b.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((source) => {
        const networks = new Map<ClusterPeer, (Block | undefined | 'unknown')[]>();
        for (const rule of [...source.ingress, ...source.egress]) for (const p of rule.peers) if ('networks' in p) networks.set(p, p.networks.map(block));
        return { source, networks };
      });
    this.#tiers = { Admin: compiled.filter((p) => p.source.tier === 'Admin'), Baseline: compiled.filter((p) => p.source.tier === 'Baseline') };
  }

  /** The admin-tier policy of that id (for explanations). */
  clusterPolicy(id: string): ClusterPolicy | undefined {
    return [...this.#tiers.Admin, ...this.#tiers.Baseline].find((p) => p.source.id === id)?.source;
  }

  /** One side's verdict from its NetworkPolicy tier answer (hook for tier-matrix.ts, which computes sides per class). */
  side(direction: Direction, subject: PodInfo, peer: PodInfo, conn: Connection, networkPolicy: SideVerdict): TieredSide {
    return this.#side(direction, subject, peer, conn, networkPolicy);
  }

  /** Each tier's policies whose subject selects the pod, in order (hook for tier-matrix.ts: what a side sees of its subject). */
  subjects(pod: PodInfo): Record<Tier, readonly ClusterPolicy[]> {
    const s = this.#subjectOf(pod);
    return { Admin: s.Admin.map((p) => p.source), Baseline: s.Baseline.map((p) => p.source) };
  }

  /** The pod as a peer: each rule peer's match, in order (hook for tier-matrix.ts: pods equal in this are one peer to every rule). */
  peerKey(pod: PodInfo): string {
    let key = '';
    for (const p of [...this.#tiers.Admin, ...this.#tiers.Baseline])
      for (const direction of ['ingress', 'egress'] as const)
        for (const rule of p.source[direction])
          for (const peer of rule.peers) {
            const m = this.#peerMatches(p, peer, direction, pod);
            key += m === null ? 'n' : m ? '1' : '0';
          }
    return key;
  }

  evaluate(conn: Connection): TieredVerdict {
    const np = this.networkPolicies.evaluate(conn);
    if (np.egress.decision === 'loopback') {
      const side = (networkPolicy: SideVerdict): TieredSide => ({ allowed: true, decidedBy: 'loopback', chain: [], networkPolicy });
      return { allowed: true, egress: side(np.egress), ingress: side(np.ingress) };
    }
    const egress = this.#side('egress', conn.from, conn.to, conn, np.egress);
    const ingress = this.#side('ingress', conn.to, conn.from, conn, np.ingress);
    const allowed = egress.allowed === false || ingress.allowed === false ? false : egress.allowed === null || ingress.allowed === null ? null : true;
    return { allowed, egress, ingress };
  }

  #side(direction: Direction, subject: PodInfo, peer: PodInfo, conn: Connection, networkPolicy: SideVerdict): TieredSide {
    const chain: ChainStep[] = [];
    const orderDependsOn: string[] = [];
    const done = (allowed: boolean | null, decidedBy: TieredSide['decidedBy']): TieredSide => ({
      allowed,
      decidedBy,
      chain,
      networkPolicy,
      ...(orderDependsOn.length > 0 ? { orderDependsOn } : {}),
    });
    for (const tier of ['Admin', 'Baseline'] as const) {
      if (tier === 'Baseline') {
        chain.push({ tier: 'NetworkPolicy', verdict: networkPolicy });
        if (networkPolicy.decision !== 'not-isolated') return done(networkPolicy.allowed, 'networkpolicy');
      }
      const outcome = this.#tier(tier, direction, subject, peer, conn, orderDependsOn);
      if (outcome === 'undecided') return done(null, tier === 'Admin' ? 'admin' : 'baseline');
      if (outcome) {
        chain.push(outcome);
        if (outcome.action !== 'Pass') return done(outcome.action === 'Accept', tier === 'Admin' ? 'admin' : 'baseline');
      }
    }
    return done(true, 'default');
  }

  /** The first matching rule of a tier for this side, 'undecided' when an unknown address hides it, or undefined. */
  #tier(
    tier: Tier,
    direction: Direction,
    subject: PodInfo,
    peer: PodInfo,
    conn: Connection,
    orderDependsOn: string[],
  ): Extract<ChainStep, { action: Action }> | 'undecided' | undefined {
    let found: Extract<ChainStep, { action: Action }> | undefined;
    for (const p of this.#subjectOf(subject)[tier]) {
      if (found && p.source.priority !== found.priority) break;
      const rules: ClusterRule[] = p.source[direction];
      for (const [r, rule] of rules.entries()) {
        const m = this.#ruleMatches(p, rule, direction, peer, conn);
        if (m === null) {
          if (found) break; // decided already by a policy of the same priority
          return 'undecided';
        }
        if (!m) continue;
        const step = { tier, policy: p.source.id, priority: p.source.priority, rule: r, action: rule.action, ...(rule.name ? { ruleName: rule.name } : {}) };
        if (!found) found = step;
        else if (found.action !== step.action) {
          if (!orderDependsOn.includes(found.policy)) orderDependsOn.push(found.policy);
          orderDependsOn.push(step.policy);
        }
        break;
      }
    }
    return found;
  }

  /** The node a hostNetwork pod is on: its `node`, or the cluster's only one. */
  #nodeOf(pod: PodInfo): NodeInfo | undefined {
    if (pod.node === undefined) return this.#nodes.length === 1 ? this.#nodes[0] : undefined;
    return this.#nodes.find((n) => n.name === pod.node);
  }

  #subjectOf(pod: PodInfo): Record<Tier, CompiledPolicy[]> {
    let s = this.#subjects.get(pod);
    if (!s) {
      s = { Admin: this.#tiers.Admin.filter((p) => this.#selects(p.source, pod)), Baseline: this.#tiers.Baseline.filter((p) => this.#selects(p.source, pod)) };
      this.#subjects.set(pod, s);
    }
    return s;
  }

  #selects(policy: ClusterPolicy, pod: PodInfo): boolean {
    if (pod.hostNetwork || pod.external) return false;
    const s = policy.subject;
    return 'namespaces' in s ? selectorMatches(s.namespaces, this.networkPolicies.namespaceLabels(pod.namespace)) : this.#podMatches(s.pods, pod);
  }

  #podMatches(sel: NamespacedPodSelector, pod: PodInfo): boolean {
    return selectorMatches(sel.namespaceSelector, this.networkPolicies.namespaceLabels(pod.namespace)) && selectorMatches(sel.podSelector, pod.labels);
  }

  #ruleMatches(policy: CompiledPolicy, rule: ClusterRule, direction: Direction, peer: PodInfo, conn: Connection): Tri {
    if (rule.protocols && !rule.protocols.some((pr) => protocolMatches(pr, conn))) return false;
    let unknown = false;
    for (const p of rule.peers) {
      const m = this.#peerMatches(policy, p, direction, peer);
      if (m === true) return true;
      if (m === null) unknown = true;
    }
    return unknown ? null : false;
  }

  #peerMatches(policy: CompiledPolicy, p: ClusterPeer, direction: Direction, pod: PodInfo): Tri {
    if ('namespaces' in p || 'pods' in p) {
      let hits = this.#peerHits.get(p);
      if (!hits) this.#peerHits.set(p, (hits = new Map()));
      let hit = hits.get(pod);
      if (hit === undefined) {
        hit =
          !pod.hostNetwork &&
          !pod.external &&
          ('namespaces' in p ? selectorMatches(p.namespaces, this.networkPolicies.namespaceLabels(pod.namespace)) : this.#podMatches(p.pods, pod));
        hits.set(pod, hit);
      }
      return hit;
    }
    if ('networks' in p) {
      if (direction !== 'egress') return false;
      let addr = this.#addresses.get(pod);
      if (addr === undefined && !this.#addresses.has(pod)) this.#addresses.set(pod, (addr = pod.ip === undefined ? undefined : parseAddress(pod.ip)));
      if (!addr) return null;
      const blocks = policy.networks.get(p)!;
      if (blocks.some((b) => b !== undefined && b !== 'unknown' && blockContains(b, addr))) return true;
      return blocks.includes('unknown') ? null : false;
    }
    if ('nodes' in p) {
      if (direction !== 'egress' || !pod.hostNetwork) return false;
      const node = this.#nodeOf(pod);
      return node !== undefined && selectorMatches(p.nodes, node.labels);
    }
    return false; // domainNames: no such endpoints in the model yet (see the top)
  }
}

function protocolMatches(pr: ClusterProtocol, conn: Connection): boolean {
  if ('namedPort' in pr) return conn.to.ports.some((np) => np.name === pr.namedPort && np.port === conn.port && np.protocol === conn.protocol);
  if (pr.protocol !== conn.protocol) return false;
  return 'number' in pr.port ? conn.port === pr.port.number : conn.port >= pr.port.range.start && conn.port <= pr.port.range.end;
}

/** One chain as a line: `Admin cnp/sensitive rule 2 Pass -> no NetworkPolicy isolates shop/db -> Baseline cnp/default rule 0 Deny`. */
export function chainText(direction: Direction, pod: PodInfo, side: TieredSide): string {
  if (side.decidedBy === 'loopback') return 'loopback (a pod reaching itself is never filtered)';
  const steps = side.chain.map((s) => {
    if (s.tier === 'NetworkPolicy') {
      const v = s.verdict;
      if (v.decision === 'not-isolated') return `no NetworkPolicy isolates ${objectId(pod)} for ${direction}`;
      if (v.decision === 'allowed') return `NetworkPolicy ${v.allowedBy.map((r) => `${r.policy} ${direction} rule ${r.rule}`).join(', ')} allows`;
      if (v.decision === 'denied') return `NetworkPolicy ${v.isolatedBy.join(', ')} isolates ${objectId(pod)} for ${direction} and no rule allows`;
      if (v.decision === 'undecided') return `NetworkPolicy depends on an address not known yet`;
      return 'loopback';
    }
    return `${s.tier} ${s.policy} ${direction} rule ${s.rule}${s.ruleName ? ` (${s.ruleName})` : ''} ${s.action}`;
  });
  if (side.decidedBy === 'default') steps.push('default: allowed');
  if (side.allowed === null && side.decidedBy !== 'networkpolicy') steps.push('depends on an address not known yet');
  const line = steps.join(' -> ');
  return side.orderDependsOn ? `${line} (the order of ${side.orderDependsOn.join(', ')} is undefined upstream: same tier and priority)` : line;
}
