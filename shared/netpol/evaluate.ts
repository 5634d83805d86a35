// The evaluator: given namespaces, pods and NetworkPolicies, whether a connection (source pod,
// destination pod, port, protocol) is allowed, and why, for both sides: the source's egress and
// the destination's ingress. Pure (no I/O). It implements the semantics of networking.k8s.io/v1
// on its own, independent of the nftables compiler (orchestrator/isolation/compile.ts) on purpose:
// each checks the other on real packets, which only works while neither computes its answers with
// the other's code. The one part they share, besides the wire types, is the label selector
// (selector.ts), tested directly against upstream's own cases (test/netpol-selector-upstream.test.ts).
//
// Semantics (Kubernetes API reference, NetworkPolicySpec and friends):
// - a pod is isolated for a direction when a policy of its namespace selects it (podSelector) and
//   lists that direction in policyTypes (default: Ingress, plus Egress when egress has rules);
// - an isolated side allows a connection when some rule of some isolating policy allows it
//   (policies add up); a side that is not isolated allows everything;
// - a rule allows when one of its peers matches (none given: every peer) and one of its ports
//   matches (none given: every port and protocol); a peer is an ipBlock (the other pod's address
//   inside cidr and outside every except), or pod and/or namespace selectors (podSelector alone:
//   pods of the policy's namespace; namespaceSelector alone: every pod of those namespaces);
// - a port matches on its protocol (default TCP) and its number, its range up to endPort, or its
//   name resolved against the destination pod's container ports (same name and protocol);
// - the connection is allowed when both sides allow it.
// A pod reaching itself goes over loopback, which Starmap never filters (and the upstream e2e
// tests ignore), so the evaluator says so instead of applying policies to it.
// Addresses may not be known yet (before deployment): an ipBlock that depends on one is then
// undecided, and so is every verdict it could change (`allowed: null`), never a guess.
import { blockContains, parseAddress, parseBlock, type Address, type Block } from './cidr.ts';
import { hasTemplate, substitute, templateRefs } from './ip-template.ts';
import { selectorMatches } from './selector.ts';
import {
  NAMESPACE_NAME_LABEL,
  objectId,
  type NamespaceInfo,
  type NodeInfo,
  type NetworkPolicyObject,
  type NetworkPolicyPeer,
  type NetworkPolicyPort,
  type PodInfo,
  type Protocol,
} from './types.ts';

export type Direction = 'ingress' | 'egress';

export interface Cluster {
  namespaces: NamespaceInfo[];
  pods: PodInfo[];
  /** The nodes (admin-tier `nodes` peers select them); absent: none declared. */
  nodes?: NodeInfo[];
}

export interface Connection {
  from: PodInfo;
  to: PodInfo;
  port: number;
  protocol: Protocol;
}

/** One rule of one policy, and within it the peer and the port that matched (null: the rule has none, so all match). */
export interface RuleRef {
  policy: string;
  direction: Direction;
  rule: number;
  peer: number | null;
  port: number | null;
}

export type SideVerdict =
  | { decision: 'loopback'; allowed: true }
  | { decision: 'not-isolated'; allowed: true }
  | { decision: 'allowed'; allowed: true; isolatedBy: string[]; allowedBy: RuleRef[] }
  | { decision: 'denied'; allowed: false; isolatedBy: string[] }
  /**
   * Some rule's ipBlock needs an address not known yet; `pending` are the rules it could allow by
   * (Evaluator.answer names the pods whose addresses would decide it).
   */
  | { decision: 'undecided'; allowed: null; isolatedBy: string[]; pending: RuleRef[] };

export interface Verdict {
  /** null: depends on addresses not known yet. */
  allowed: boolean | null;
  egress: SideVerdict;
  ingress: SideVerdict;
}

/**
 * The evaluator's answer in four (issue 32): allowed, blocked, not applicable (the same pod over
 * loopback, or a port the destination does not declare), or undecided with the facts it misses.
 * Additive beside Verdict.allowed, which keeps its three values.
 */
export type Answer =
  { answer: 'allowed' } | { answer: 'blocked' } | { answer: 'not applicable'; why: string } | { answer: 'undecided'; missing: string[]; why: string };

/** The missing facts in words: `depends on the address of x/b, which is assigned at run time`. */
export function missingText(missing: readonly string[]): string {
  return missing.length === 0
    ? 'depends on an address not known yet'
    : `depends on the address${missing.length > 1 ? 'es' : ''} of ${missing.join(', ')}, which ${missing.length > 1 ? 'are' : 'is'} assigned at run time`;
}

/** The four-way answer of a verdict for its connection; `missing`: the pods whose addresses would decide it (Evaluator.answer). */
export function answerOf(conn: Connection, v: Verdict, missing: readonly string[] = []): Answer {
  if (v.egress.decision === 'loopback') return { answer: 'not applicable', why: 'the same pod: loopback, which policies never filter' };
  if (conn.to.ports.length > 0 && !conn.to.ports.some((p) => p.port === conn.port && p.protocol === conn.protocol))
    return { answer: 'not applicable', why: `${objectId(conn.to)} declares no port ${conn.port}/${conn.protocol}` };
  if (v.allowed === true) return { answer: 'allowed' };
  if (v.allowed === false) return { answer: 'blocked' };
  return { answer: 'undecided', missing: [...missing], why: missingText(missing) };
}

type Tri = boolean | null;

/** Kleene OR over lazily computed values: true wins, then unknown. */
function anyOf<T>(items: readonly T[], test: (item: T, index: number) => Tri): { value: Tri; index: number | null } {
  let unknownAt: number | null = null;
  for (const [i, item] of items.entries()) {
    const v = test(item, i);
    if (v === true) return { value: true, index: i };
    if (v === null && unknownAt === null) unknownAt = i;
  }
  return unknownAt === null ? { value: false, index: null } : { value: null, index: unknownAt };
}

// The compiled forms below are exported for the whole-matrix path (matrix.ts), which must read
// policies exactly as this evaluator does; callers outside shared/netpol/ use Evaluator only.

/** An ipBlock with its CIDRs parsed once; undefined entries are not known yet. */
export interface CompiledBlock {
  cidr: Block | undefined;
  except: (Block | undefined)[];
  /** The pods (ns/pod) named by `{{ip …}}` in cidr or except whose addresses are not known. */
  needs?: string[];
  /** cidr and except as written, with the known addresses filled in (for explanations). */
  texts?: { cidr: string; except: string[] };
}

/** How one ipBlock peer of an isolating rule judged the other pod's address (for `scenario explain`). */
export interface IpBlockCheck {
  ref: RuleRef;
  cidr: string;
  /** The address it was judged on; undefined: not known. */
  address: string | undefined;
  /** inside: cidr holds it and no except does; excepted: `except` names the entry that excluded it. */
  result: 'inside' | 'outside' | 'excepted' | 'undecided';
  /** Every except entry, addresses filled in; `except`: the one that excluded the address. */
  excepts: string[];
  except?: string;
}

export interface CompiledRule {
  peers: NetworkPolicyPeer[];
  blocks: (CompiledBlock | undefined)[];
  ports: NetworkPolicyPort[];
}

export interface CompiledPolicy {
  id: string;
  source: NetworkPolicyObject;
  namespace: string;
  isolates: Record<Direction, boolean>;
  rules: Record<Direction, CompiledRule[]>;
}

export class Evaluator {
  readonly #policies: CompiledPolicy[];
  readonly #nsLabels = new Map<string, Record<string, string>>();
  readonly #isolatedBy = new WeakMap<PodInfo, Record<Direction, CompiledPolicy[]>>();
  readonly #addresses = new Map<string, Address | undefined>();
  readonly #addressText = new Map<string, string>();

  constructor(cluster: Cluster, policies: readonly NetworkPolicyObject[]) {
    for (const ns of cluster.namespaces) this.#nsLabels.set(ns.name, { ...ns.labels, [NAMESPACE_NAME_LABEL]: ns.name });
    const ipOf = new Map(cluster.pods.map((p) => [objectId(p), p.ip]));
    for (const p of cluster.pods) {
      this.#addresses.set(objectId(p), p.ip === undefined ? undefined : parseAddress(p.ip));
      if (p.ip !== undefined) this.#addressText.set(objectId(p), p.ip);
    }
    this.#policies = policies.map((p) => compile(p, (ref) => ipOf.get(ref)));
  }

  /** Labels of a namespace as selectors see them (every namespace has its name label, as in Kubernetes). */
  namespaceLabels(name: string): Record<string, string> {
    return this.#nsLabels.get(name) ?? { [NAMESPACE_NAME_LABEL]: name };
  }

  /** The policy a rule reference points into (for explanations). */
  policy(id: string): NetworkPolicyObject | undefined {
    return this.#policies.find((p) => p.id === id)?.source;
  }

  /** The policies of the pod's namespace that select it for each direction. */
  isolating(pod: PodInfo): Record<Direction, string[]> {
    const found = this.#isolating(pod);
    return { ingress: found.ingress.map((p) => p.id), egress: found.egress.map((p) => p.id) };
  }

  /** Every ipBlock peer of the rules isolating `subject` for `direction`, judged on `peer`'s address. */
  ipBlocks(direction: Direction, subject: PodInfo, peer: PodInfo): IpBlockCheck[] {
    const out: IpBlockCheck[] = [];
    const addrText = this.#addressText.get(objectId(peer)) ?? peer.ip;
    const addr = addrText === undefined ? undefined : parseAddress(addrText);
    for (const p of this.#isolating(subject)[direction])
      p.rules[direction].forEach((rule, r) =>
        rule.blocks.forEach((block, i) => {
          if (!block) return;
          const ref: RuleRef = { policy: p.id, direction, rule: r, peer: i, port: null };
          const cidr = block.texts?.cidr ?? '?';
          const base = { ref, cidr, address: addrText, excepts: block.texts?.except ?? [] };
          if (!addr || !block.cidr) return out.push({ ...base, result: 'undecided' });
          if (!blockContains(block.cidr, addr)) return out.push({ ...base, result: 'outside' });
          const hit = block.except.findIndex((e) => e !== undefined && blockContains(e, addr));
          if (hit >= 0) return out.push({ ...base, result: 'excepted', except: block.texts?.except[hit] ?? '?' });
          return out.push({ ...base, result: block.except.some((e) => !e) ? 'undecided' : 'inside' });
        }),
      );
    return out;
  }

  /** The address the evaluator knows for a pod (ns/pod), as given. */
  addressOf(id: string): string | undefined {
    return this.#addressText.get(id);
  }

  /** The verdict and its four-way answer (see Answer). */
  answer(conn: Connection): { verdict: Verdict; answer: Answer; missing: Record<Direction, string[]> } {
    const verdict = this.evaluate(conn);
    const missing = { egress: new Set<string>(), ingress: new Set<string>() };
    // The same walk again, collecting the unknown addresses (kept off the verdict, which the
    // whole-matrix path must reproduce exactly).
    if (verdict.egress.decision === 'undecided') this.#side('egress', conn.from, conn.to, conn, missing.egress);
    if (verdict.ingress.decision === 'undecided') this.#side('ingress', conn.to, conn.from, conn, missing.ingress);
    const both = [...new Set([...missing.egress, ...missing.ingress])].sort();
    return { verdict, answer: answerOf(conn, verdict, both), missing: { egress: [...missing.egress].sort(), ingress: [...missing.ingress].sort() } };
  }

  evaluate(conn: Connection): Verdict {
    if (conn.from.namespace === conn.to.namespace && conn.from.name === conn.to.name) {
      return { allowed: true, egress: { decision: 'loopback', allowed: true }, ingress: { decision: 'loopback', allowed: true } };
    }
    const egress = this.#side('egress', conn.from, conn.to, conn);
    const ingress = this.#side('ingress', conn.to, conn.from, conn);
    const allowed = egress.allowed === false || ingress.allowed === false ? false : egress.allowed === null || ingress.allowed === null ? null : true;
    return { allowed, egress, ingress };
  }

  #isolating(pod: PodInfo): Record<Direction, CompiledPolicy[]> {
    let found = this.#isolatedBy.get(pod);
    if (!found && (pod.external || pod.hostNetwork)) found = { ingress: [], egress: [] }; // no NetworkPolicy selects either
    if (!found) {
      const selecting = this.#policies.filter((p) => p.namespace === pod.namespace && selectorMatches(p.source.spec.podSelector ?? {}, pod.labels));
      found = { ingress: selecting.filter((p) => p.isolates.ingress), egress: selecting.filter((p) => p.isolates.egress) };
      this.#isolatedBy.set(pod, found);
    }
    return found;
  }

  /** One side: `subject` is the pod whose policies decide, `peer` the other end. */
  #side(direction: Direction, subject: PodInfo, peer: PodInfo, conn: Connection, missing?: Set<string>): SideVerdict {
    const policies = this.#isolating(subject)[direction];
    if (policies.length === 0) return { decision: 'not-isolated', allowed: true };
    const isolatedBy = policies.map((p) => p.id);
    const allowedBy: RuleRef[] = [];
    const pending: RuleRef[] = [];
    for (const p of policies) {
      p.rules[direction].forEach((rule, r) => {
        const port =
          rule.ports.length === 0 ? { value: true as Tri, index: null } : anyOf(rule.ports, (pp) => portMatches(pp, conn.to, conn.port, conn.protocol));
        if (port.value !== true) return;
        const match = rule.peers.length === 0 ? { value: true as Tri, index: null } : anyOf(rule.peers, (_, i) => this.#peerMatches(p, rule, i, peer, missing));
        const ref: RuleRef = { policy: p.id, direction, rule: r, peer: match.index, port: port.index };
        if (match.value === true) allowedBy.push(ref);
        else if (match.value === null) pending.push(ref);
      });
    }
    if (allowedBy.length > 0) return { decision: 'allowed', allowed: true, isolatedBy, allowedBy };
    if (pending.length > 0) return { decision: 'undecided', allowed: null, isolatedBy, pending };
    return { decision: 'denied', allowed: false, isolatedBy };
  }

  #peerMatches(policy: CompiledPolicy, rule: CompiledRule, index: number, pod: PodInfo, missing?: Set<string>): Tri {
    const peer = rule.peers[index]!;
    const block = rule.blocks[index];
    if (block) {
      const addr = this.#addresses.get(objectId(pod)) ?? (pod.ip === undefined ? undefined : parseAddress(pod.ip));
      const v = blockMatches(block, addr);
      if (v === null && missing) {
        if (!addr) missing.add(objectId(pod));
        for (const ref of block.needs ?? []) missing.add(ref);
      }
      return v;
    }
    if (!peer.podSelector && !peer.namespaceSelector) return false; // refused by validation; selects nothing
    if (pod.external) return false; // outside the cluster: in no namespace, a pod of none
    if (pod.hostNetwork) return false; // on its node's network: selectors see pods of the pod network only
    const nsOk = peer.namespaceSelector ? selectorMatches(peer.namespaceSelector, this.namespaceLabels(pod.namespace)) : pod.namespace === policy.namespace;
    return nsOk && (peer.podSelector ? selectorMatches(peer.podSelector, pod.labels) : true);
  }
}

export function blockMatches(block: CompiledBlock, addr: Address | undefined): Tri {
  if (!addr || !block.cidr) return null;
  if (!blockContains(block.cidr, addr)) return false;
  let unknown = false;
  for (const e of block.except) {
    if (!e) unknown = true;
    else if (blockContains(e, addr)) return false;
  }
  return unknown ? null : true;
}

export function portMatches(pp: NetworkPolicyPort, to: PodInfo, port: number, protocol: Protocol): boolean {
  const proto = pp.protocol ?? 'TCP';
  if (proto !== protocol) return false;
  if (pp.port === undefined) return true;
  if (typeof pp.port === 'number') return pp.endPort !== undefined ? port >= pp.port && port <= pp.endPort : port === pp.port;
  // A named port: the destination pod's container port of that name and protocol. A name that
  // the pod does not declare matches nothing (not an error, as in Kubernetes).
  return to.ports.some((np) => np.name === pp.port && np.protocol === proto && np.port === port);
}

/** policyTypes as Kubernetes defaults them: Ingress, plus Egress when egress has rules. */
export function policyTypesOf(p: NetworkPolicyObject): Record<Direction, boolean> {
  const types = p.spec.policyTypes;
  if (types && types.length > 0) return { ingress: types.includes('Ingress'), egress: types.includes('Egress') };
  return { ingress: true, egress: (p.spec.egress?.length ?? 0) > 0 };
}

function compileBlock(p: NetworkPolicyObject, peer: NetworkPolicyPeer, ipOf: (ref: string) => string | undefined): CompiledBlock | undefined {
  if (!peer.ipBlock) return undefined;
  const parse = (text: string): Block | undefined => {
    const resolved = hasTemplate(text) ? substitute(text, ipOf) : text;
    if (resolved === undefined) return undefined;
    const block = parseBlock(resolved.trim());
    // validate.ts refuses such a policy; should one arrive anyway, say so rather than guess.
    if (!block) throw new Error(`${objectId(p.metadata)}: ipBlock ${JSON.stringify(resolved)} is not a CIDR`);
    return block;
  };
  const needs = [peer.ipBlock.cidr, ...(peer.ipBlock.except ?? [])].flatMap((t) => templateRefs(t)).filter((ref) => ipOf(ref) === undefined);
  const text = (t: string) => (hasTemplate(t) ? (substitute(t, ipOf) ?? t) : t).trim();
  return {
    cidr: parse(peer.ipBlock.cidr),
    except: (peer.ipBlock.except ?? []).map(parse),
    ...(needs.length > 0 ? { needs: [...new Set(needs)] } : {}),
    texts: { cidr: text(peer.ipBlock.cidr), except: (peer.ipBlock.except ?? []).map(text) },
  };
}

export function compile(p: NetworkPolicyObject, ipOf: (ref: string) => string | undefined): CompiledPolicy {
  const rules = (
    list: { from?: NetworkPolicyPeer[]; to?: NetworkPolicyPeer[]; ports?: NetworkPolicyPort[] }[] | undefined,
    key: 'from' | 'to',
  ): CompiledRule[] =>
    (list ?? []).map((r) => {
      const peers = r[key] ?? [];
      return { peers, blocks: peers.map((peer) => compileBlock(p, peer, ipOf)), ports: r.ports ?? [] };
    });
  return {
    id: objectId(p.metadata),
    source: p,
    namespace: p.metadata.namespace,
    isolates: policyTypesOf(p),
    rules: { ingress: rules(p.spec.ingress, 'from'), egress: rules(p.spec.egress, 'to') },
  };
}
