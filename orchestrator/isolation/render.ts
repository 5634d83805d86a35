// Renders a task's compiled rules (compile.ts) as one nftables transaction for its namespace
// (`nft -f -`): table `inet starmap` with
//   chain input   (ingress: what the task accepts)     hook input,  policy drop when restricted
//   chain output  (egress: what the task may open)     hook output, policy drop when isolated
//   chain ingress_drop / egress_drop: count, then drop
//   sets ingress_drops (source . protocol . port . tag) and egress_drops (destination . protocol .
//     port . tag): dynamic sets with a counter per element, so GET /v2/starmap/drops can say which
//     side dropped a blocked connection, and through which drop site (the tag: drop-tags.ts, set as
//     the packet's mark just before the drop: the side's default drop under its isolating policies,
//     or the network-group limit), from measured packets.
// The transaction declares the table, its sets and chains (a no-op when they exist), flushes the
// chains and fills them again: the rules change atomically and the drop counters survive the change.
// Always accepted, both ways: loopback, packets of connections the other side opened (conntrack
// reply direction) and related ICMP errors. Ingress also accepts every packet from the host (the
// gateway address: the node, as the kubelet in Kubernetes), so health checks and whoever reads a
// task's status keep working under any policy. Egress to the host is NOT exempt (as in Kubernetes,
// where only the node's ingress is): a task under an egress policy reaches the host only through
// a rule that allows it (for example an ipBlock <gateway>/32). Packets of connections a side opened
// are checked on every packet, so a change also cuts connections that are already open; an open
// side still reads conntrack, so that the kernel tracks each connection from its first packet (the
// rules are in place before the task starts) and knows which side opened it.
// Accept rules hold their peers as anonymous sets (one rule per family and protocol for all the
// pods and plain ipBlocks of a policy rule, its ports of every protocol as one protocol . port set;
// an ipBlock with except is a rule of its own), and the
// text is built by appending, never by spreading arrays into calls: a large policy set renders in
// linear time and stays inside RULESET_LIMITS, which writes are checked against before they are
// stored (policy-engine.ts).
// Admin-tier policies (compile-tiers.ts) add to a side: its Admin rules after the exemptions above
// (Accept: accept; Deny: drop through a drop site tagged with the rule, `Admin cnp/x egress rule 2`;
// Pass: goto the chain <side>_policies), then that chain holds the NetworkPolicy section (isolated:
// its accepts, then its default drop) or, when no NetworkPolicy isolates the side, the Baseline
// rules (Accept, Deny) and a final accept. A denial is always a drop, never a reject (upstream's
// conformance suite requires a timeout). Without Admin rules the section stays in the hook chain.
// This renderer and the evaluator (shared/netpol/evaluate.ts) are independent on purpose: neither
// calls the other, and the tests judge real packets against both, so a mistake in one shows up as a
// disagreement instead of being copied into the other.
import { parseCidr, type Cidr } from '../../shared/netpol/validate.ts';
import type { Protocol } from '../../shared/netpol/types.ts';
import { sideRestricted, type CompiledRule, type Direction, type PeerMatch, type Side, type TaskRules } from './compile.ts';
import type { TierRule } from './compile-tiers.ts';
import { dropTag, WRONG_RULE_POLICIES, type DropRule, type IsolationTestMode } from './drop-tags.ts';

export const TASK_TABLE = 'starmap';
export const DROP_SETS: Record<Direction, string> = { ingress: 'ingress_drops', egress: 'egress_drops' };
const DROP_CHAINS: Record<Direction, string> = { ingress: 'ingress_drop', egress: 'egress_drop' };
const HOOK_CHAINS: Record<Direction, string> = { ingress: 'input', egress: 'output' };
/** With Admin-tier rules: the NetworkPolicy section and the Baseline tier, where a Pass goes. */
const POLICY_CHAINS: Record<Direction, string> = { ingress: 'ingress_policies', egress: 'egress_policies' };
/** Per-element counters of drops: bounded, and forgotten after 10 minutes without a drop. */
const DROP_SET_SPEC = 'type ipv4_addr . inet_proto . inet_service . mark; flags dynamic,timeout; timeout 10m; size 16384; counter;';
const PROTOCOLS: readonly Protocol[] = ['TCP', 'UDP', 'SCTP'];
/**
 * Accepts what the open chain accepts anyway; it is there because it reads conntrack. The kernel
 * tracks connections in a namespace only once a rule there needs it, and a connection it first sees
 * mid-stream takes its direction from whichever packet comes first: had an open task's namespace no
 * such rule, a connection it opened could be picked up by an answer coming in, its own packets would
 * then pass as the reply direction, and a policy added later would never cut it.
 */
const TRACK_FROM_THE_START = `ct state established,related accept ${comment('conntrack from the first packet, so that each connection has its true direction')}`;

function comment(s: string): string {
  return `comment "${s.replace(/[^A-Za-z0-9 ._,:/=-]/g, '_').slice(0, 120)}"`;
}

/** Sorted, overlapping and adjacent ranges merged (nft refuses overlapping intervals in one set). */
export function mergeRanges(ranges: readonly [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [lo, hi] of [...ranges].sort((a, b) => a[0] - b[0] || a[1] - b[1])) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

/**
 * Except prefixes without those inside another (CIDR prefixes are nested or disjoint), by family
 * and address. Sorted by start, shorter first, a prefix is inside an earlier one exactly when it
 * is inside the last kept one: one pass, so a set of thousands of pods stays linear after the sort.
 */
export function outermostPrefixes(cidrs: readonly string[]): string[] {
  const parsed = [...new Set(cidrs)]
    .map((c) => parseCidr(c))
    .filter((c): c is Cidr => !('error' in c))
    .sort((a, b) => a.family - b.family || (a.network < b.network ? -1 : a.network > b.network ? 1 : a.prefix - b.prefix));
  const kept: Cidr[] = [];
  for (const c of parsed) {
    const k = kept[kept.length - 1];
    const shift = k ? BigInt((k.family === 4 ? 32 : 128) - k.prefix) : 0n;
    const inside = k !== undefined && k.family === c.family && c.network >> shift === k.network >> shift;
    if (!inside) kept.push(c);
  }
  return kept.map((k) => k.text);
}

/** A match and how many set elements it holds. */
interface Part {
  text: string;
  elements: number;
}

/** The rules of a task's two base chains and the addresses and ports in them. */
export interface RulesetSize {
  rules: number;
  elements: number;
}

/**
 * What one task's ruleset may hold. A write whose policies would take a task past either bound is
 * refused whole (422) before anything is stored. Measured with nft 1.0.6 on a loaded 2-core test
 * machine: 40 policies of 28 rules x 40 ipBlock peers x 3 protocols (1,126 rules, 48,160
 * elements) load in 1.0-1.4 s, 71 of them (1,994 rules, 85,000 elements) in 1.5-3.4 s: well inside
 * the 15 s that exec.ts gives `nft -f`.
 */
export const RULESET_LIMITS: RulesetSize = { rules: 2_000, elements: 100_000 };

function set(items: readonly string[]): string {
  return `{ ${items.join(', ')} }`;
}

/**
 * The set of the outermost of these prefixes, remembered by its input: a pod under a large policy
 * set has the same sets on every render, and parsing the prefixes is most of rendering's cost.
 * Forgotten wholesale when full (a bound, not a cache policy: the next renders fill it again).
 */
const addressSets = new Map<string, Part>();
const ADDRESS_SETS_KEPT = 20_000;

function addressSet(prefixes: readonly string[]): Part {
  const key = prefixes.join(',');
  let part = addressSets.get(key);
  if (!part) {
    const elements = outermostPrefixes(prefixes).map(element);
    part = { text: set(elements), elements: elements.length };
    if (addressSets.size >= ADDRESS_SETS_KEPT) addressSets.clear();
    addressSets.set(key, part);
  }
  return part;
}

/** A host prefix as a plain address (so that a set of hosts needs no intervals); others as they are. */
function element(c: string): string {
  return c.endsWith('/32') && !c.includes(':') ? c.slice(0, -3) : c.endsWith('/128') ? c.slice(0, -4) : c;
}

/**
 * The address parts of a group of peers of one rule: one set per family for the pods and the
 * ipBlocks without except (their union: nested prefixes dropped, as nft refuses overlapping
 * intervals), one part per ipBlock with except; [''] when a peer is any address; [] when the
 * peers match no address now.
 */
function addressMatches(peers: readonly PeerMatch[], key: 'saddr' | 'daddr'): Part[] {
  const plain: Record<4 | 6, string[]> = { 4: [], 6: [] };
  const excepted: Part[] = [];
  for (const peer of peers) {
    if (peer.kind === 'any') return [{ text: '', elements: 0 }];
    if (peer.kind === 'pods') for (const ip of peer.ips) plain[ip.includes(':') ? 6 : 4].push(`${ip}/${ip.includes(':') ? 128 : 32}`);
    else if (peer.except.length === 0) plain[peer.family].push(peer.cidr);
    else {
      const fam = peer.family === 4 ? 'ip' : 'ip6';
      const except = outermostPrefixes(peer.except);
      excepted.push({ text: `${fam} ${key} ${peer.cidr} ${except.length ? `${fam} ${key} != ${set(except)} ` : ''}`, elements: 1 + except.length });
    }
  }
  const out: Part[] = [];
  for (const fam of [4, 6] as const) {
    if (plain[fam].length === 0) continue;
    const elements = addressSet(plain[fam]);
    out.push({ text: `${fam === 4 ? 'ip' : 'ip6'} ${key} ${elements.text} `, elements: elements.elements });
  }
  for (const e of excepted) out.push(e);
  return out;
}

/**
 * The port parts of a rule; [] when it matches no port. Ports of several protocols, each given as
 * numbers or ranges, are one part: `meta l4proto . th dport { tcp . 80, udp . 53, sctp . 9 }` (th
 * dport: the destination port of TCP, UDP and SCTP alike), so that the rule's address set is
 * written once, not once per protocol. A protocol with every port is a part of its own.
 */
function portMatches(ports: CompiledRule['ports']): Part[] {
  if (ports === 'any') return [{ text: '', elements: 0 }];
  const out: Part[] = [];
  const numbered: { name: string; ranges: [number, number][] }[] = [];
  for (const proto of PROTOCOLS) {
    const mine = ports.filter((p) => p.protocol === proto);
    if (mine.length === 0) continue;
    const name = proto.toLowerCase();
    if (mine.some((p) => !p.ranges)) out.push({ text: `meta l4proto ${name} `, elements: 1 });
    else numbered.push({ name, ranges: mergeRanges(mine.flatMap((p) => p.ranges!)) });
  }
  const range = ([lo, hi]: [number, number]) => (lo === hi ? String(lo) : `${lo}-${hi}`);
  if (numbered.length === 1) {
    const [{ name, ranges }] = numbered as [(typeof numbered)[0]];
    out.push({ text: `${name} dport ${set(ranges.map(range))} `, elements: ranges.length });
  } else if (numbered.length > 1) {
    const items: string[] = [];
    for (const { name, ranges } of numbered) for (const r of ranges) items.push(`${name} . ${range(r)}`);
    out.push({ text: `meta l4proto . th dport ${set(items)} `, elements: items.length });
  }
  return out;
}

function portsKey(ports: CompiledRule['ports']): string {
  return ports === 'any' ? 'any' : JSON.stringify(ports);
}

/**
 * The accept rules of a side, appended to `out`. Compiled rules of the same origin and ports in a
 * row (the peers of one policy rule) become one rule per family and protocol whose addresses are a
 * set, as Calico and Cilium compile selectors into ipsets: a rule of 40 ipBlock peers is one nft
 * rule per protocol, not 40. Rules of different origins stay apart, so that each accept still
 * names the policy rule it comes from. `verdict`: what a rule of that origin does (accept, or for
 * tier rules a drop or a goto: render-tiers below); undefined leaves the rule out.
 */
function acceptRules(
  rules: readonly CompiledRule[],
  dir: Direction,
  out: string[],
  size: RulesetSize,
  verdict: (r: CompiledRule) => string | undefined = () => 'accept',
): void {
  const key = dir === 'ingress' ? 'saddr' : 'daddr';
  let i = 0;
  while (i < rules.length) {
    const first = rules[i]!;
    const ports = portsKey(first.ports);
    const peers: PeerMatch[] = [];
    const samePorts = (r: CompiledRule) => r.ports === first.ports || portsKey(r.ports) === ports; // the peers of one rule share its ports
    while (i < rules.length && rules[i]!.origin === first.origin && samePorts(rules[i]!)) peers.push(rules[i++]!.peer);
    const does = verdict(first);
    if (does === undefined) continue;
    const portParts = portMatches(first.ports);
    for (const addr of addressMatches(peers, key)) {
      for (const port of portParts) {
        out.push(`${addr.text}${port.text}${does} ${comment(first.origin)}`);
        size.elements += addr.elements + port.elements;
      }
    }
  }
}

/** A drop site of a tagged rule: marks the packet with the tag, then counts and drops it (drop-tags.ts). */
export interface TaggedDrop {
  tag: number;
  rule: DropRule;
}

/** A side's chains: the hook chain's policy and rules, and (with Admin-tier rules) the NetworkPolicy section's chain. */
interface ChainBodies {
  policy: 'accept' | 'drop';
  rules: string[];
  /** The rules of POLICY_CHAINS[dir] (only with Admin-tier rules: a Pass goes there). */
  section?: string[];
}

function chainBody(side: Side, dir: Direction, gateway: string, size: RulesetSize, tags: TaggedDrop[], mode: IsolationTestMode | undefined): ChainBodies {
  if (!sideRestricted(side)) return { policy: 'accept', rules: [TRACK_FROM_THE_START] };
  const goto = (policies: readonly string[]) => {
    const rule: DropRule = { side: dir, policies: [...(mode === 'wrong-rule' ? WRONG_RULE_POLICIES : policies)].sort() };
    const tag = dropTag(rule);
    if (!tags.some((t) => t.tag === tag)) tags.push({ tag, rule });
    return `meta mark set 0x${tag.toString(16).padStart(8, '0')} goto ${DROP_CHAINS[dir]}`;
  };
  const rules = [dir === 'ingress' ? 'iif "lo" accept' : 'oif "lo" accept', 'ct state established ct direction reply accept', 'ct state related accept'];
  // The test switch accept-all: every rule is rendered, and nothing is ever dropped.
  if (mode === 'accept-all') rules.unshift(`accept ${comment('test switch accept-all: nothing is enforced')}`);
  if (dir === 'ingress') rules.push(`ip saddr ${gateway} accept ${comment('the host = the node: orchestrator and health checks')}`);
  if (side.limit) {
    size.elements += side.limit.ips.length;
    const drop = goto([side.limit.origin]);
    rules.push(
      side.limit.ips.length > 0 ? `ip saddr != ${set(side.limit.ips)} ${drop} ${comment(side.limit.origin)}` : `${drop} ${comment(side.limit.origin)}`,
    );
  }
  // The tiers (compile-tiers.ts): a tier rule's Deny drops through a drop site of its own, tagged
  // with its origin (`Admin cnp/x egress rule 2`), so the counters say which rule dropped a packet.
  const tierVerdict = (r: CompiledRule) => {
    const action = (r as TierRule).action;
    if (action === 'Accept') return 'accept';
    if (action === 'Deny') return goto([r.origin]);
    return action === 'Pass' && side.admin?.includes(r as TierRule) ? `goto ${POLICY_CHAINS[dir]}` : undefined;
  };
  const admin = side.admin ?? [];
  // With Admin rules, the NetworkPolicy section is a chain of its own, so that a Pass can skip the
  // rest of the Admin tier to it; without, it follows inline (the ruleset of a cluster with no
  // admin-tier policies is what it always was).
  const section: string[] = admin.length > 0 ? [] : rules;
  if (admin.length > 0) {
    acceptRules(admin, dir, rules, size, tierVerdict);
    rules.push(`goto ${POLICY_CHAINS[dir]}`);
  }
  if (side.isolated) {
    acceptRules(side.rules, dir, section, size);
    section.push(goto(side.isolatedBy ?? []));
  } else {
    acceptRules(side.baseline ?? [], dir, section, size, tierVerdict);
    section.push('accept');
  }
  return admin.length > 0 ? { policy: 'drop', rules, section } : { policy: 'drop', rules };
}

/** The task namespace's ruleset, applied in one transaction (see the top of this file). */
export function renderRuleset(r: TaskRules, mode?: IsolationTestMode): string {
  return renderTask(r, mode).text;
}

/** The ruleset with its size (what RULESET_LIMITS bounds) and its drop sites' tags; `mode`: the test switch. */
export function renderTask(r: TaskRules, mode?: IsolationTestMode): { text: string; size: RulesetSize; tags: TaggedDrop[] } {
  const size: RulesetSize = { rules: 0, elements: 0 };
  const tags: TaggedDrop[] = [];
  const t = TASK_TABLE;
  const dirs: Direction[] = ['ingress', 'egress'];
  const hook = (dir: Direction, policy: string) => `type filter hook ${HOOK_CHAINS[dir]} priority 0; policy ${policy};`;
  const bodies = dirs.map((d) => chainBody(d === 'ingress' ? r.ingress : r.egress, d, r.gateway, size, tags, mode));
  // The NetworkPolicy section's chain is declared and flushed only where it is used (one left from
  // an earlier render is unreferenced), so a ruleset without Admin-tier rules is what it always was.
  const sectioned = dirs.filter((_, i) => bodies[i]!.section !== undefined);
  const lines = [
    `table inet ${t} {`,
    ...dirs.map((d) => `  set ${DROP_SETS[d]} { ${DROP_SET_SPEC} }`),
    ...dirs.map((d) => `  chain ${HOOK_CHAINS[d]} { ${hook(d, 'accept')} }`),
    ...dirs.map((d) => `  chain ${DROP_CHAINS[d]} { }`),
    ...sectioned.map((d) => `  chain ${POLICY_CHAINS[d]} { }`),
    '}',
    ...dirs.flatMap((d) => [`flush chain inet ${t} ${HOOK_CHAINS[d]}`, `flush chain inet ${t} ${DROP_CHAINS[d]}`]),
    ...sectioned.map((d) => `flush chain inet ${t} ${POLICY_CHAINS[d]}`),
    `table inet ${t} {`,
  ];
  dirs.forEach((d, i) => {
    const body = bodies[i]!;
    size.rules += body.rules.length + (body.section?.length ?? 0);
    // No spreading into push(): a side may have thousands of rules, past the argument limit.
    lines.push(`  chain ${HOOK_CHAINS[d]} {`, `    ${hook(d, body.policy)}`);
    for (const rule of body.rules) lines.push(`    ${rule}`);
    lines.push('  }');
    if (body.section) {
      lines.push(`  chain ${POLICY_CHAINS[d]} {`);
      for (const rule of body.section) lines.push(`    ${rule}`);
      lines.push('  }');
    }
  });
  for (const d of dirs) {
    const addr = d === 'ingress' ? 'ip saddr' : 'ip daddr';
    lines.push(
      `  chain ${DROP_CHAINS[d]} {`,
      `    meta l4proto { tcp, udp, sctp } update @${DROP_SETS[d]} { ${addr} . meta l4proto . th dport . meta mark }`,
      '    drop',
      '  }',
    );
  }
  lines.push('}', '');
  return { text: lines.join('\n'), size, tags };
}
