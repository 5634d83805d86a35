// Compiles both policy models into one rule model per task, both directions, with no I/O. The
// nftables renderer (render.ts) turns it into text; GET /v2/starmap/network shows it.
//
// Independent of the evaluator (shared/netpol/evaluate.ts) on purpose: each checks the other on
// real packets (the isolation tests compare the evaluator's verdicts with what nftables lets
// through), which only works while neither uses the other's code; the boundaries table
// (scripts/lint/boundaries.js) holds it. The one part they share is the label selector
// (shared/netpol/selector.ts), tested directly against upstream's own cases
// (test/netpol-selector-upstream.test.ts).
//
// Ingress of a task (what it accepts):
// - network groups (Marathon ipAddress.groups, dialect): a task with groups accepts only tasks that
//   share one (`limit`, ANDed with everything else);
// - dialect policies selecting it by its labels and NetworkPolicies of its namespace selecting it
//   with Ingress in policyTypes: once any selects it, it is isolated and accepts only what some rule
//   of those policies allows (rules of all of them add up).
// Egress of a task (what it may open): NetworkPolicies of its namespace selecting it with Egress in
// policyTypes; the dialect has no egress.
// A connection needs both: the source's egress side and the destination's ingress side.
// NetworkPolicy peers: ipBlock (cidr minus except, any address, pods included); podSelector alone
// (pods of the policy's namespace); namespaceSelector alone (every pod of matching namespaces);
// both (matching pods in matching namespaces). Ports: a number (with endPort), no port (every port
// of the protocol), or a name, resolved against the destination pod's named ports of the same
// protocol: on ingress the task itself, on egress each destination pod (a name nobody declares
// matches nothing).
import {
  NAMESPACE_NAME_LABEL,
  objectId,
  type NamespaceInfo,
  type NetworkPolicyObject,
  type NetworkPolicyPeer,
  type NetworkPolicyPort,
  type Protocol,
} from '../../shared/netpol/types.ts';
import { labelsInclude, selectorMatches } from '../../shared/netpol/selector.ts';
import { parseCidr, type Cidr } from '../../shared/netpol/validate.ts';
import type { ClusterPolicy } from '../../shared/netpol/cluster-policy.ts';
import type { PodNet } from './cluster.ts';
import { TierCompiler, tieredAllows, type TierRule } from './compile-tiers.ts';
import type { NetworkPolicy as DialectPolicy } from './policy.ts';

export type Direction = 'ingress' | 'egress';

export interface PortMatch {
  protocol: Protocol;
  /** Inclusive port ranges; undefined: every port of the protocol. */
  ranges?: [number, number][];
}

export type PeerMatch =
  | { kind: 'any' }
  /** Pods by address (`pods` names them as ns/pod for people). Empty: the rule matches nobody now. */
  | { kind: 'pods'; ips: string[]; pods: string[] }
  /** Any address in `cidr` (masked) outside every `except` (masked). */
  | { kind: 'block'; family: 4 | 6; cidr: string; except: string[] };

export interface CompiledRule {
  /** Where it comes from: "ns/name ingress 0", "policy <id> ingress 0" (dialect). */
  origin: string;
  peer: PeerMatch;
  /** 'any': every port and protocol; []: nothing (e.g. a named port nobody declares). */
  ports: 'any' | PortMatch[];
}

export interface Side {
  /** Selected by a policy for this direction: only what a rule allows passes. */
  isolated: boolean;
  /** The policies that isolate it (ns/name; `policy <id>` for the dialect): whose default drop it is. */
  isolatedBy?: string[];
  rules: CompiledRule[];
  /** Ingress only: network groups admit just these sources (ANDed with the rules). */
  limit?: { origin: string; ips: string[] };
  /** Admin-tier rules, in order, before the NetworkPolicy section (compile-tiers.ts). */
  admin?: TierRule[];
  /** Baseline-tier rules, in order, after it (reached only when no NetworkPolicy isolates the side). */
  baseline?: TierRule[];
  /** Tier rules (by origin) whose `nodes` or `domainNames` peers match nothing here. */
  unenforced?: string[];
}

/** Does anything restrict this side (a drop is possible)? */
export function sideRestricted(side: Side): boolean {
  return side.isolated || side.limit !== undefined || (side.admin?.length ?? 0) > 0 || (side.baseline?.length ?? 0) > 0;
}

export interface TaskRules {
  taskId: string;
  netns: string;
  ip: string;
  gateway: string;
  ingress: Side;
  egress: Side;
  /** Anything restricts its ingress (policies or network groups). */
  restricted: boolean;
}

/** The test-only fault: leave out one rule (STARMAP_TEST_FAULT_DROP_RULE). */
export interface RuleFault {
  policy: string;
  direction: Direction;
  index: number;
}

export interface ClusterState {
  pods: readonly PodNet[];
  namespaces: readonly NamespaceInfo[];
  dialect: readonly DialectPolicy[];
  policies: readonly NetworkPolicyObject[];
  /** Admin-tier policies (ClusterNetworkPolicy and the v1alpha1 kinds), validated. */
  clusterPolicies?: readonly ClusterPolicy[];
  gateway: string;
  fault?: RuleFault | undefined;
}

/** Parses `<policy id>:<ingress|egress>:<rule index>` (the id may be ns/name or a dialect id). */
export function parseFault(text: string): RuleFault | { error: string } {
  const m = /^(.+):(ingress|egress):(\d{1,4})$/.exec(text);
  if (!m) return { error: `STARMAP_TEST_FAULT_DROP_RULE must be <namespace>/<name>:<ingress|egress>:<rule index>, not ${JSON.stringify(text)}` };
  return { policy: m[1]!, direction: m[2] as Direction, index: Number(m[3]) };
}

function inBlock(ip: string, block: Cidr): boolean {
  const c = parseCidr(`${ip}/${ip.includes(':') ? 128 : 32}`);
  if ('error' in c || c.family !== block.family) return false;
  const shift = BigInt((block.family === 4 ? 32 : 128) - block.prefix);
  return c.network >> shift === block.network >> shift;
}

/**
 * Each ipBlock's peer, parsed once: stored policies are not changed in place (a write replaces the
 * object), and parsing is most of the cost of compiling large policy sets again for every pod and
 * every change.
 */
const blockPeers = new WeakMap<NonNullable<NetworkPolicyPeer['ipBlock']>, Extract<PeerMatch, { kind: 'block' }> | undefined>();

function blockPeer(ipBlock: NonNullable<NetworkPolicyPeer['ipBlock']>): Extract<PeerMatch, { kind: 'block' }> | undefined {
  if (blockPeers.has(ipBlock)) return blockPeers.get(ipBlock);
  const peer = parseBlockPeer(ipBlock);
  blockPeers.set(ipBlock, peer);
  return peer;
}

function parseBlockPeer(ipBlock: NonNullable<NetworkPolicyPeer['ipBlock']>): Extract<PeerMatch, { kind: 'block' }> | undefined {
  const c = parseCidr(ipBlock.cidr);
  if ('error' in c) return undefined; // validated before; a stored oddity matches nothing
  const except = (ipBlock.except ?? []).map((e) => parseCidr(e)).filter((e): e is Cidr => !('error' in e));
  return { kind: 'block', family: c.family, cidr: c.text, except: except.map((e) => e.text) };
}

function blockContains(peer: Extract<PeerMatch, { kind: 'block' }>, ip: string): boolean {
  const parse = (t: string) => parseCidr(t) as Cidr;
  return inBlock(ip, parse(peer.cidr)) && !peer.except.some((e) => inBlock(ip, parse(e)));
}

function podsPeer(pods: readonly PodNet[]): PeerMatch {
  const uniq = new Map(pods.map((p) => [p.ip, p]));
  const sorted = [...uniq.values()].sort((a, b) => a.ip.localeCompare(b.ip, 'en', { numeric: true }));
  return { kind: 'pods', ips: sorted.map((p) => p.ip), pods: sorted.map((p) => objectId({ namespace: p.namespace, name: p.pod })) };
}

class Compiler {
  readonly #c: ClusterState;
  readonly #nsLabels: Map<string, Record<string, string>>;
  readonly #dialect: DialectPolicy[];
  readonly #policies: NetworkPolicyObject[];

  constructor(c: ClusterState) {
    this.#c = c;
    this.#nsLabels = new Map(c.namespaces.map((n) => [n.name, n.labels]));
    this.#dialect = [...c.dialect].sort((a, b) => a.id.localeCompare(b.id));
    this.#policies = [...c.policies].sort((a, b) => objectId(a.metadata).localeCompare(objectId(b.metadata)));
  }

  #omitted(policy: string, direction: Direction, index: number): boolean {
    const f = this.#c.fault;
    return f !== undefined && f.policy === policy && f.direction === direction && f.index === index;
  }

  #selecting(pod: PodNet, type: 'Ingress' | 'Egress'): NetworkPolicyObject[] {
    return this.#policies.filter(
      (p) => p.metadata.namespace === pod.namespace && (p.spec.policyTypes ?? ['Ingress']).includes(type) && selectorMatches(p.spec.podSelector, pod.labels),
    );
  }

  /** Pods a pod/namespace-selector peer of a policy in `policyNs` selects. */
  #peerPods(peer: NetworkPolicyPeer, policyNs: string): PodNet[] {
    return this.#c.pods.filter((p) => {
      const nsOk = peer.namespaceSelector
        ? selectorMatches(peer.namespaceSelector, this.#nsLabels.get(p.namespace) ?? { [NAMESPACE_NAME_LABEL]: p.namespace })
        : p.namespace === policyNs;
      return nsOk && (!peer.podSelector || selectorMatches(peer.podSelector, p.labels));
    });
  }

  /** The rule's peers: 'any', or the selected pods (one peer) plus each ipBlock. */
  #peers(peers: NetworkPolicyPeer[] | undefined, policyNs: string): PeerMatch[] {
    if (!peers || peers.length === 0) return [{ kind: 'any' }];
    const out: PeerMatch[] = [];
    const selectorPeers = peers.filter((p) => !p.ipBlock);
    if (selectorPeers.length > 0) out.push(podsPeer(selectorPeers.flatMap((p) => this.#peerPods(p, policyNs))));
    for (const p of peers) {
      const b = p.ipBlock && blockPeer(p.ipBlock);
      if (b) out.push(b);
    }
    return out;
  }

  #ingress(pod: PodNet): Side {
    const rules: CompiledRule[] = [];
    const dialect = this.#dialect.filter((p) => labelsInclude(p.selector.labels, pod.dialectLabels));
    for (const p of dialect) {
      p.ingress.forEach((r, i) => {
        if (this.#omitted(p.id, 'ingress', i)) return;
        const others = this.#c.pods.filter((o) => o.taskId !== pod.taskId);
        const peer: PeerMatch =
          !r.from || r.from.length === 0
            ? { kind: 'any' }
            : podsPeer(
                others.filter((o) =>
                  r.from!.some((f) => (!f.labels || labelsInclude(f.labels, o.dialectLabels)) && (f.group === undefined || o.groups.includes(f.group))),
                ),
              );
        const ports: CompiledRule['ports'] =
          r.ports && r.ports.length > 0
            ? r.ports.map((x) => ({ protocol: x.protocol.toUpperCase() as Protocol, ranges: [[x.port, x.endPort ?? x.port]] }))
            : 'any';
        rules.push({ origin: `policy ${p.id} ingress ${i}`, peer, ports });
      });
    }
    const policies = this.#selecting(pod, 'Ingress');
    for (const p of policies) {
      const id = objectId(p.metadata);
      (p.spec.ingress ?? []).forEach((r, i) => {
        if (this.#omitted(id, 'ingress', i)) return;
        // Named ports resolve against this pod (the destination).
        const ports = resolvePorts(r.ports, pod);
        for (const peer of this.#peers(r.from, p.metadata.namespace)) rules.push({ origin: `${id} ingress ${i}`, peer, ports });
      });
    }
    const isolatedBy = [...dialect.map((p) => `policy ${p.id}`), ...policies.map((p) => objectId(p.metadata))];
    const side: Side = { isolated: isolatedBy.length > 0, isolatedBy, rules };
    if (pod.groups.length > 0) {
      const members = this.#c.pods.filter((o) => o.taskId !== pod.taskId && o.groups.some((g) => pod.groups.includes(g)));
      side.limit = { origin: `groups ${pod.groups.join(',')}`, ips: [...new Set(members.map((o) => o.ip))].sort() };
    }
    return side;
  }

  #egress(pod: PodNet): Side {
    const rules: CompiledRule[] = [];
    const policies = this.#selecting(pod, 'Egress');
    for (const p of policies) {
      const id = objectId(p.metadata);
      (p.spec.egress ?? []).forEach((r, i) => {
        if (this.#omitted(id, 'egress', i)) return;
        const origin = `${id} egress ${i}`;
        const peers = this.#peers(r.to, p.metadata.namespace);
        const given = r.ports ?? [];
        if (given.length === 0) {
          for (const peer of peers) rules.push({ origin, peer, ports: 'any' });
          return;
        }
        const numeric = given.filter((x) => typeof x.port !== 'string');
        if (numeric.length > 0) {
          const ports = resolvePorts(numeric, undefined);
          for (const peer of peers) rules.push({ origin, peer, ports });
        }
        // Named ports resolve per destination pod: the peers' pods that declare the name with
        // that protocol, grouped by the number each declares.
        const candidates = this.#c.pods.filter((d) =>
          peers.some((peer) => peer.kind === 'any' || (peer.kind === 'pods' ? peer.ips.includes(d.ip) : blockContains(peer, d.ip))),
        );
        for (const x of given.filter((y) => typeof y.port === 'string')) {
          const protocol = x.protocol ?? 'TCP';
          const byNumber = new Map<number, PodNet[]>();
          for (const d of candidates) {
            for (const np of d.ports) if (np.name === x.port && np.protocol === protocol) byNumber.set(np.port, [...(byNumber.get(np.port) ?? []), d]);
          }
          if (byNumber.size === 0) rules.push({ origin, peer: podsPeer([]), ports: [] });
          for (const [n, targets] of [...byNumber].sort((a, b) => a[0] - b[0]))
            rules.push({ origin, peer: podsPeer(targets), ports: [{ protocol, ranges: [[n, n]] }] });
        }
      });
    }
    return { isolated: policies.length > 0, isolatedBy: policies.map((p) => objectId(p.metadata)), rules };
  }

  compile(): TaskRules[] {
    const tiers = new TierCompiler(this.#c.pods, this.#nsLabels, this.#c.clusterPolicies ?? []);
    const withTiers = (side: Side, pod: PodNet, direction: Direction): Side => {
      if (tiers.empty) return side;
      const t = tiers.side(pod, direction);
      return {
        ...side,
        ...(t.admin.length > 0 ? { admin: t.admin } : {}),
        ...(t.baseline.length > 0 ? { baseline: t.baseline } : {}),
        ...(t.unenforced.length > 0 ? { unenforced: t.unenforced } : {}),
      };
    };
    return this.#c.pods.map((pod) => {
      const ingress = withTiers(this.#ingress(pod), pod, 'ingress');
      return {
        taskId: pod.taskId,
        netns: pod.netns,
        ip: pod.ip,
        gateway: this.#c.gateway,
        ingress,
        egress: withTiers(this.#egress(pod), pod, 'egress'),
        restricted: sideRestricted(ingress),
      };
    });
  }
}

/**
 * A rule's ports: absent or [] → 'any'; otherwise numbers and ranges as given, no port → every port
 * of the protocol, a name → the number `dest` declares under that name and protocol (nothing when it
 * declares none; `dest` undefined: names are resolved elsewhere).
 */
function resolvePorts(ports: NetworkPolicyPort[] | undefined, dest: PodNet | undefined): CompiledRule['ports'] {
  if (!ports || ports.length === 0) return 'any';
  const out: PortMatch[] = [];
  for (const x of ports) {
    const protocol = x.protocol ?? 'TCP';
    if (x.port === undefined) out.push({ protocol });
    else if (typeof x.port === 'number') out.push({ protocol, ranges: [[x.port, x.endPort ?? x.port]] });
    else for (const np of dest?.ports ?? []) if (np.name === x.port && np.protocol === protocol) out.push({ protocol, ranges: [[np.port, np.port]] });
  }
  return out;
}

/** The rules of every pod, both directions. */
export function compileRules(c: ClusterState): TaskRules[] {
  return new Compiler(c).compile();
}

/** Does a peer match this address? */
export function peerMatches(peer: PeerMatch, ip: string): boolean {
  if (peer.kind === 'any') return true;
  if (peer.kind === 'pods') return peer.ips.includes(ip);
  return blockContains(peer, ip);
}

/** Do the ports of a rule match this packet? */
export function portsMatch(ports: CompiledRule['ports'], port: number, protocol: Protocol): boolean {
  return ports === 'any' || ports.some((p) => p.protocol === protocol && (!p.ranges || p.ranges.some(([lo, hi]) => port >= lo && port <= hi)));
}

/** The model's verdict for one side (gateway handling is the caller's). */
export function sideAllows(side: Side, peerIp: string, port: number, protocol: Protocol): boolean {
  if (side.limit && !side.limit.ips.includes(peerIp)) return false;
  const matches = (r: CompiledRule) => peerMatches(r.peer, peerIp) && portsMatch(r.ports, port, protocol);
  const networkPolicy = side.isolated ? side.rules.some(matches) : undefined;
  if (!side.admin && !side.baseline) return networkPolicy ?? true;
  return tieredAllows(side.admin ?? [], side.baseline ?? [], networkPolicy, matches);
}
