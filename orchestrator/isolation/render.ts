// Renders a task's compiled rules (compile.ts) as one nftables transaction for its namespace
// (`nft -f -`): table `inet starmap` with
//   chain input   (ingress: what the task accepts)     hook input,  policy drop when restricted
//   chain output  (egress: what the task may open)     hook output, policy drop when isolated
//   chain ingress_drop / egress_drop: count, then drop
//   sets ingress_drops (source . protocol . port) and egress_drops (destination . protocol . port):
//     dynamic sets with a counter per element, so GET /v2/starmap/drops can say which side dropped
//     a blocked connection, from measured packets.
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
import { parseCidr, type Cidr } from '../../shared/netpol/validate.ts';
import type { Protocol } from '../../shared/netpol/types.ts';
import type { CompiledRule, Direction, PeerMatch, Side, TaskRules } from './compile.ts';

export const TASK_TABLE = 'starmap';
export const DROP_SETS: Record<Direction, string> = { ingress: 'ingress_drops', egress: 'egress_drops' };
const DROP_CHAINS: Record<Direction, string> = { ingress: 'ingress_drop', egress: 'egress_drop' };
const HOOK_CHAINS: Record<Direction, string> = { ingress: 'input', egress: 'output' };
/** Per-element counters of drops: bounded, and forgotten after 10 minutes without a drop. */
const DROP_SET_SPEC = 'type ipv4_addr . inet_proto . inet_service; flags dynamic,timeout; timeout 10m; size 16384; counter;';
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

/** Except prefixes without those inside another (CIDR prefixes are nested or disjoint). */
export function outermostPrefixes(cidrs: readonly string[]): string[] {
  const parsed = [...new Set(cidrs)]
    .map((c) => parseCidr(c))
    .filter((c): c is Cidr => !('error' in c))
    .sort((a, b) => a.prefix - b.prefix);
  const kept: Cidr[] = [];
  for (const c of parsed) {
    const bits = BigInt(c.family === 4 ? 32 : 128);
    const inside = kept.some((k) => k.family === c.family && c.network >> (bits - BigInt(k.prefix)) === k.network >> (bits - BigInt(k.prefix)));
    if (!inside) kept.push(c);
  }
  return kept.map((k) => k.text);
}

function set(items: readonly string[]): string {
  return `{ ${items.join(', ')} }`;
}

/** The address parts of a rule (one per family); [] when the peer matches no address now. */
function addressMatches(peer: PeerMatch, key: 'saddr' | 'daddr'): string[] {
  if (peer.kind === 'any') return [''];
  if (peer.kind === 'pods') {
    const v4 = peer.ips.filter((ip) => !ip.includes(':'));
    const v6 = peer.ips.filter((ip) => ip.includes(':'));
    return [...(v4.length ? [`ip ${key} ${set(v4)} `] : []), ...(v6.length ? [`ip6 ${key} ${set(v6)} `] : [])];
  }
  const fam = peer.family === 4 ? 'ip' : 'ip6';
  const except = outermostPrefixes(peer.except);
  return [`${fam} ${key} ${peer.cidr} ${except.length ? `${fam} ${key} != ${set(except)} ` : ''}`];
}

/** The port parts of a rule (one per protocol); [] when it matches no port. */
function portMatches(ports: CompiledRule['ports']): string[] {
  if (ports === 'any') return [''];
  const out: string[] = [];
  for (const proto of PROTOCOLS) {
    const mine = ports.filter((p) => p.protocol === proto);
    if (mine.length === 0) continue;
    const name = proto.toLowerCase();
    if (mine.some((p) => !p.ranges)) out.push(`meta l4proto ${name} `);
    else out.push(`${name} dport ${set(mergeRanges(mine.flatMap((p) => p.ranges!)).map(([lo, hi]) => (lo === hi ? String(lo) : `${lo}-${hi}`)))} `);
  }
  return out;
}

function ruleLines(rule: CompiledRule, dir: Direction): string[] {
  const key = dir === 'ingress' ? 'saddr' : 'daddr';
  const lines: string[] = [];
  for (const addr of addressMatches(rule.peer, key)) for (const port of portMatches(rule.ports)) lines.push(`${addr}${port}accept ${comment(rule.origin)}`);
  return lines;
}

function chainBody(side: Side, dir: Direction, gateway: string): { policy: 'accept' | 'drop'; rules: string[] } {
  const restricted = side.isolated || side.limit !== undefined;
  if (!restricted) return { policy: 'accept', rules: [TRACK_FROM_THE_START] };
  const drop = `goto ${DROP_CHAINS[dir]}`;
  const rules = [dir === 'ingress' ? 'iif "lo" accept' : 'oif "lo" accept', 'ct state established ct direction reply accept', 'ct state related accept'];
  if (dir === 'ingress') rules.push(`ip saddr ${gateway} accept ${comment('the host = the node: orchestrator and health checks')}`);
  if (side.limit)
    rules.push(
      side.limit.ips.length > 0 ? `ip saddr != ${set(side.limit.ips)} ${drop} ${comment(side.limit.origin)}` : `${drop} ${comment(side.limit.origin)}`,
    );
  if (!side.isolated) rules.push('accept');
  else {
    for (const r of side.rules) rules.push(...ruleLines(r, dir));
    rules.push(drop);
  }
  return { policy: 'drop', rules };
}

/** The task namespace's ruleset, applied in one transaction (see the top of this file). */
export function renderRuleset(r: TaskRules): string {
  const t = TASK_TABLE;
  const dirs: Direction[] = ['ingress', 'egress'];
  const hook = (dir: Direction, policy: string) => `type filter hook ${HOOK_CHAINS[dir]} priority 0; policy ${policy};`;
  const lines = [
    `table inet ${t} {`,
    ...dirs.map((d) => `  set ${DROP_SETS[d]} { ${DROP_SET_SPEC} }`),
    ...dirs.map((d) => `  chain ${HOOK_CHAINS[d]} { ${hook(d, 'accept')} }`),
    ...dirs.map((d) => `  chain ${DROP_CHAINS[d]} { }`),
    '}',
    ...dirs.flatMap((d) => [`flush chain inet ${t} ${HOOK_CHAINS[d]}`, `flush chain inet ${t} ${DROP_CHAINS[d]}`]),
    `table inet ${t} {`,
  ];
  for (const d of dirs) {
    const body = chainBody(d === 'ingress' ? r.ingress : r.egress, d, r.gateway);
    lines.push(`  chain ${HOOK_CHAINS[d]} {`, `    ${hook(d, body.policy)}`, ...body.rules.map((x) => `    ${x}`), '  }');
  }
  for (const d of dirs) {
    const addr = d === 'ingress' ? 'ip saddr' : 'ip daddr';
    lines.push(
      `  chain ${DROP_CHAINS[d]} {`,
      `    meta l4proto { tcp, udp, sctp } update @${DROP_SETS[d]} { ${addr} . meta l4proto . th dport }`,
      '    drop',
      '  }',
    );
  }
  lines.push('}', '');
  return lines.join('\n');
}
