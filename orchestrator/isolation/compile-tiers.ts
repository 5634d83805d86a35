// The admin tiers (ClusterNetworkPolicy v1alpha2, and the v1alpha1 AdminNetworkPolicy and
// BaselineAdminNetworkPolicy read as the same tiers: shared/netpol/cluster-policy.ts) compiled into
// the rule model, per task and direction, with no I/O. render.ts turns them into nftables chains:
//   Admin tier rules, in order    Accept -> accept, Deny -> drop, Pass -> on to the NetworkPolicy section
//   NetworkPolicy section         isolated: what a rule allows is accepted, the rest dropped
//   Baseline tier rules, in order Accept -> accept, Deny -> drop
//   default                       accept
// Within a tier, policies go by priority (lower first), then rules in their order. Upstream leaves
// the order of two policies of the same tier and priority undefined; here they go by id (`cnp/a`
// before `cnp/b`), a stable order, and the evaluator's report says such a cell depends on it.
//
// Independent of the tiered evaluator (shared/netpol/tiers.ts) ON PURPOSE, as compile.ts is of
// shared/netpol/evaluate.ts: the isolation tests compare the evaluator's verdicts with what these
// rules let through on real packets, which only proves something while neither computes its answer
// with the other's code. Only the validated policy form (cluster-policy.ts, pure types and
// validation) and the label selector are shared.
//
// Peers: `namespaces` (every pod of matching namespaces), `pods` (matching pods in matching
// namespaces), `networks` (CIDRs, egress: any address inside, pods included). `nodes` and
// `domainNames` peers match nothing here (the one-machine cluster has no node model and serves no
// DNS yet): `unenforced` lists the rules that have them, so that callers can say so. Ports: a number,
// a range, or a named port, resolved against the destination pod's declared ports (on ingress the
// task itself, on egress each destination pod; a name nobody declares matches nothing).
import type { Action, ClusterPeer, ClusterPolicy, ClusterProtocol, ClusterRule, Tier } from '../../shared/netpol/cluster-policy.ts';
import { NAMESPACE_NAME_LABEL, objectId, type Protocol } from '../../shared/netpol/types.ts';
import { selectorMatches } from '../../shared/netpol/selector.ts';
import { parseCidr, type Cidr } from '../../shared/netpol/validate.ts';
import type { PodNet } from './cluster.ts';
import type { CompiledRule, Direction, PeerMatch, PortMatch } from './compile.ts';

/** One compiled rule of a tier: what it matches and what it does. */
export interface TierRule extends CompiledRule {
  action: Action;
}

export interface TierSides {
  admin: TierRule[];
  baseline: TierRule[];
  /** Rules (by origin) with `nodes` or `domainNames` peers: those peers match nothing here. */
  unenforced: string[];
}

/** `Admin cnp/x egress rule 2`: how a tier rule is named in rules, drop tags and reports. */
export function tierRuleOrigin(tier: Tier, policy: string, direction: Direction, index: number): string {
  return `${tier} ${policy} ${direction} rule ${index}`;
}

/** Admin and Baseline policies, each tier by priority then id (see the top: same priority is undefined upstream). */
export function tierOrder(policies: readonly ClusterPolicy[]): Record<Tier, ClusterPolicy[]> {
  const byOrder = (a: ClusterPolicy, b: ClusterPolicy) => a.priority - b.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return {
    Admin: policies.filter((p) => p.tier === 'Admin').sort(byOrder),
    Baseline: policies.filter((p) => p.tier === 'Baseline').sort(byOrder),
  };
}

function hostCidr(ip: string): Cidr | undefined {
  const c = parseCidr(`${ip}/${ip.includes(':') ? 128 : 32}`);
  return 'error' in c ? undefined : c;
}

function inside(ip: string, block: Cidr): boolean {
  const c = hostCidr(ip);
  if (!c || c.family !== block.family) return false;
  const shift = BigInt((block.family === 4 ? 32 : 128) - block.prefix);
  return c.network >> shift === block.network >> shift;
}

function podsPeer(pods: readonly PodNet[]): PeerMatch {
  const uniq = new Map(pods.map((p) => [p.ip, p]));
  const sorted = [...uniq.values()].sort((a, b) => a.ip.localeCompare(b.ip, 'en', { numeric: true }));
  return { kind: 'pods', ips: sorted.map((p) => p.ip), pods: sorted.map((p) => objectId({ namespace: p.namespace, name: p.pod })) };
}

/** A compiled peer and the parsed CIDRs behind a block peer (for the named-port candidates). */
interface RulePeers {
  matches: PeerMatch[];
  /** The pods the rule's selector peers select. */
  pods: PodNet[];
  blocks: Cidr[];
  unenforced: boolean;
}

export class TierCompiler {
  readonly #pods: readonly PodNet[];
  readonly #nsLabels: (ns: string) => Record<string, string>;
  readonly #tiers: Record<Tier, ClusterPolicy[]>;

  constructor(pods: readonly PodNet[], namespaceLabels: ReadonlyMap<string, Record<string, string>>, policies: readonly ClusterPolicy[]) {
    this.#pods = pods;
    this.#nsLabels = (ns) => namespaceLabels.get(ns) ?? { [NAMESPACE_NAME_LABEL]: ns };
    this.#tiers = tierOrder(policies);
  }

  get empty(): boolean {
    return this.#tiers.Admin.length === 0 && this.#tiers.Baseline.length === 0;
  }

  #podSelected(sel: { namespaceSelector: Parameters<typeof selectorMatches>[0]; podSelector: Parameters<typeof selectorMatches>[0] }, pod: PodNet): boolean {
    return selectorMatches(sel.namespaceSelector, this.#nsLabels(pod.namespace)) && selectorMatches(sel.podSelector, pod.labels);
  }

  #subject(policy: ClusterPolicy, pod: PodNet): boolean {
    const s = policy.subject;
    return 'namespaces' in s ? selectorMatches(s.namespaces, this.#nsLabels(pod.namespace)) : this.#podSelected(s.pods, pod);
  }

  #peers(peers: readonly ClusterPeer[], direction: Direction): RulePeers {
    const out: RulePeers = { matches: [], pods: [], blocks: [], unenforced: false };
    const selectorPeers = peers.filter((p) => 'namespaces' in p || 'pods' in p);
    if (selectorPeers.length > 0) {
      out.pods = this.#pods.filter((pod) =>
        selectorPeers.some((p) =>
          'namespaces' in p ? selectorMatches(p.namespaces, this.#nsLabels(pod.namespace)) : 'pods' in p && this.#podSelected(p.pods, pod),
        ),
      );
      out.matches.push(podsPeer(out.pods));
    }
    for (const p of peers) {
      if ('networks' in p) {
        if (direction !== 'egress') continue; // the CRD allows networks on egress only
        for (const text of p.networks) {
          const c = parseCidr(text);
          if ('error' in c) continue; // validated before; an address template not filled in matches nothing
          out.blocks.push(c);
          out.matches.push({ kind: 'block', family: c.family, cidr: c.text, except: [] });
        }
      } else if ('nodes' in p || 'domainNames' in p) out.unenforced = true;
    }
    return out;
  }

  /** The compiled entries of one rule (none: it matches nothing now). */
  #rule(rule: ClusterRule, origin: string, direction: Direction, pod: PodNet, peers: RulePeers): TierRule[] {
    const out: TierRule[] = [];
    const add = (peer: PeerMatch, ports: CompiledRule['ports']) => out.push({ origin, action: rule.action, peer, ports });
    if (!rule.protocols) {
      for (const peer of peers.matches) add(peer, 'any');
      return out;
    }
    const numbered: PortMatch[] = [];
    const named: string[] = [];
    for (const pr of rule.protocols as ClusterProtocol[]) {
      if ('namedPort' in pr) named.push(pr.namedPort);
      else
        numbered.push({ protocol: pr.protocol, ranges: ['number' in pr.port ? [pr.port.number, pr.port.number] : [pr.port.range.start, pr.port.range.end]] });
    }
    if (numbered.length > 0) for (const peer of peers.matches) add(peer, numbered);
    if (named.length === 0) return out;
    if (direction === 'ingress') {
      // The destination is this task: its own declared ports, whichever protocol each has.
      const ports: PortMatch[] = pod.ports.filter((np) => named.includes(np.name)).map((np) => ({ protocol: np.protocol, ranges: [[np.port, np.port]] }));
      if (ports.length > 0) for (const peer of peers.matches) add(peer, ports);
      return out;
    }
    // Egress: each destination pod the peers match that declares the name, grouped by what it declares.
    const candidates = this.#pods.filter((d) => peers.pods.some((p) => p.ip === d.ip) || peers.blocks.some((b) => inside(d.ip, b)));
    const byPort = new Map<string, { protocol: Protocol; port: number; pods: PodNet[] }>();
    for (const d of candidates) {
      for (const np of d.ports) {
        if (!named.includes(np.name)) continue;
        const key = `${np.protocol}/${np.port}`;
        const entry = byPort.get(key) ?? { protocol: np.protocol, port: np.port, pods: [] };
        entry.pods.push(d);
        byPort.set(key, entry);
      }
    }
    for (const [, e] of [...byPort].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      add(podsPeer(e.pods), [{ protocol: e.protocol, ranges: [[e.port, e.port]] }]);
    return out;
  }

  /** The tier rules of one task for one direction, in the order they apply. */
  side(pod: PodNet, direction: Direction): TierSides {
    const out: TierSides = { admin: [], baseline: [], unenforced: [] };
    for (const tier of ['Admin', 'Baseline'] as const) {
      for (const policy of this.#tiers[tier]) {
        if (!this.#subject(policy, pod)) continue;
        policy[direction].forEach((rule, i) => {
          const origin = tierRuleOrigin(tier, policy.id, direction, i);
          const peers = this.#peers(rule.peers, direction);
          if (peers.unenforced) out.unenforced.push(origin);
          const compiled = this.#rule(rule, origin, direction, pod, peers);
          (tier === 'Admin' ? out.admin : out.baseline).push(...compiled);
        });
      }
    }
    return out;
  }
}

/**
 * The model's verdict of the tiers around a side's NetworkPolicy answer (`networkPolicy`: undefined
 * when no NetworkPolicy isolates the side). `matches` tells whether a compiled rule matches the packet.
 */
export function tieredAllows(
  admin: readonly TierRule[],
  baseline: readonly TierRule[],
  networkPolicy: boolean | undefined,
  matches: (r: CompiledRule) => boolean,
): boolean {
  for (const r of admin) {
    if (!matches(r)) continue;
    if (r.action === 'Pass') break;
    return r.action === 'Accept';
  }
  if (networkPolicy !== undefined) return networkPolicy;
  for (const r of baseline) if (matches(r) && r.action !== 'Pass') return r.action === 'Accept';
  return true;
}
