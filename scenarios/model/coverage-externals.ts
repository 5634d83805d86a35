// Automatic coverage (issue 29): for each CIDR the policies in force name, one external with an
// address inside it, so that every rule naming addresses has a cell that exercises it:
// - NetworkPolicy ipBlocks (ingress and egress): one inside the `cidr` (outside every `except`)
//   and one inside each `except`;
// - the admin tiers' egress `networks` peers (ClusterNetworkPolicy v1alpha2, AdminNetworkPolicy
//   and BaselineAdminNetworkPolicy v1alpha1: shared/netpol/cluster-policy.ts): one inside each
//   network (they have no except, and `networks` is an egress peer only).
// IPv4 and IPv6 alike: an IPv6 external gets its computed cells, but the run's layouts give every
// task one IPv4 address (orchestrator/isolation/netns.ts), so run marks its cells not run
// (externals.ts: externalNotRunReason). Templates (`{{ip ns/pod}}`) name pods, not hosts, and get
// none. Addresses are chosen deterministically (coverageAddress). Pure.
import { createHash } from 'node:crypto';
import { blockContains, parseAddress, parseBlock, type Block } from '../../shared/netpol/cidr.ts';
import type { ClusterPolicy, ClusterProtocol } from '../../shared/netpol/cluster-policy.ts';
import { hasTemplate } from '../../shared/netpol/ip-template.ts';
import type { NamedPort, NetworkPolicyObject, NetworkPolicyPeer, NetworkPolicyPort } from '../../shared/netpol/types.ts';
import { addressProblem, DEFAULT_EXTERNAL_PORTS, RESERVED, type ExternalSpec } from './externals.ts';

const TEST_NETS = ['192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24'].map((b) => parseBlock(b)!);
const v4 = (n: bigint) => [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join('.');

/** IPv6 documentation prefix (RFC 3849), preferred as IPv4's TEST-NETs are. */
const TEST_NET_V6 = parseBlock('2001:db8::/32')!;
/** IPv6 addresses that are no host outside the cluster: unspecified and loopback, IPv4-compatible and -mapped, link-local, multicast. */
const RESERVED_V6 = ['::/96', '::ffff:0:0/96', 'fe80::/10', 'ff00::/8'].map((b) => parseBlock(b)!);

/** An IPv6 address in its short form (RFC 5952: lowercase, the longest run of two or more zero groups as ::). */
export function v6(n: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((n >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = { at: -1, len: 1 };
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.at < 0) return hex.join(':');
  return `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.len).join(':')}`;
}

/**
 * The address an external standing in a block gets: inside `block`, outside every `avoid` block,
 * not the network or broadcast address of a block of 30 bits or fewer, and fit for an external
 * (addressProblem). A documentation address (TEST-NET-1, -2, -3) is preferred when the block
 * holds one, so that a stand-in for "the internet" is one that can never be a real host; else the
 * first usable address. Undefined when there is none (say, the block is the pod subnet).
 * IPv6: the same, with 2001:db8::/32 as the documentation prefix, never the block's network
 * address (below /127) nor a reserved one (RESERVED_V6).
 */
export function coverageAddress(block: Block, avoid: readonly Block[], podSubnet: string): string | undefined {
  if (block.family === 6) return coverageAddressV6(block, avoid);
  const size = 1n << BigInt(32 - block.prefix);
  const first = block.network + (block.prefix <= 30 ? 1n : 0n);
  const last = block.network + size - 1n - (block.prefix <= 30 ? 1n : 0n);
  const fits = (n: bigint) => {
    const a = { family: 4 as const, value: n };
    return n >= first && n <= last && !avoid.some((b) => blockContains(b, a)) && addressProblem(v4(n), podSubnet) === undefined;
  };
  const ranges: [bigint, bigint][] = [];
  for (const t of TEST_NETS) {
    const lo = t.network > first ? t.network + 1n : first;
    const hi = t.network + 255n < last ? t.network + 254n : last;
    if (lo <= hi) ranges.push([lo, hi]);
  }
  ranges.push([first, last]);
  // Each blocking range (an except, the pod subnet, a reserved block) is skipped whole, so a /0
  // with many excepts is still a few steps, not a count through its addresses.
  const skips = [...avoid, parseBlock(podSubnet), ...RESERVED.map((r) => parseBlock(r.block))].filter((b): b is Block => !!b && b.family === 4);
  return firstFit(ranges, fits, skips, 32, v4);
}

function coverageAddressV6(block: Block, avoid: readonly Block[]): string | undefined {
  const size = 1n << BigInt(128 - block.prefix);
  const first = block.network + (block.prefix <= 126 ? 1n : 0n);
  const last = block.network + size - 1n;
  const skips = [...avoid.filter((b) => b.family === 6), ...RESERVED_V6];
  const fits = (n: bigint) => n >= first && n <= last && !skips.some((b) => blockContains(b, { family: 6, value: n }));
  const ranges: [bigint, bigint][] = [];
  const t = TEST_NET_V6;
  const lo = t.network + 1n > first ? t.network + 1n : first;
  const tLast = t.network + (1n << BigInt(128 - t.prefix)) - 1n;
  const hi = tLast < last ? tLast : last;
  if (lo <= hi) ranges.push([lo, hi]);
  ranges.push([first, last]);
  return firstFit(ranges, fits, skips, 128, v6);
}

/** The first address of the ranges that fits, skipping each blocking block whole (bounded steps). */
function firstFit(
  ranges: [bigint, bigint][],
  fits: (n: bigint) => boolean,
  skips: readonly Block[],
  bits: number,
  text: (n: bigint) => string,
): string | undefined {
  const family = bits === 32 ? 4 : 6;
  for (const [lo, hi] of ranges) {
    let n = lo;
    for (let guard = 0; n <= hi && guard < 10_000; guard++) {
      if (fits(n)) return text(n);
      const a = { family, value: n } as const;
      let next = n + 1n;
      for (const b of skips) {
        const end = b.network + (1n << BigInt(bits - b.prefix));
        if (blockContains(b, a) && end > next) next = end;
      }
      n = next;
    }
  }
  return undefined;
}

/** A DNS-label name from parts, cut (with a short hash to stay unique) when over 63 characters. */
function externalName(parts: string[]): string {
  const full = parts
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
  if (full.length <= 63) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 6);
  return `${full.slice(0, 56).replace(/-+$/, '')}-${hash}`;
}

const servedOf = (ports: NamedPort[]): NamedPort[] => {
  const unique = [...new Map(ports.map((p) => [`${p.port}/${p.protocol}`, p])).values()];
  return unique.length > 0 ? unique.slice(0, 16) : [...DEFAULT_EXTERNAL_PORTS];
};

/** The ports an egress rule allows, as an external standing in its peers should serve them (numbers only). */
function servedPorts(ports: readonly NetworkPolicyPort[] | undefined): NamedPort[] {
  return servedOf(
    (ports ?? []).flatMap((p) => {
      const protocol = p.protocol ?? 'TCP';
      return protocol === 'SCTP' || typeof p.port !== 'number' ? [] : [{ name: '', port: p.port, protocol }];
    }),
  );
}

/** The ports an admin-tier egress rule names (a range: its first port; named ports and SCTP: none). */
function servedClusterPorts(protocols: readonly ClusterProtocol[] | undefined): NamedPort[] {
  return servedOf(
    (protocols ?? []).flatMap((p) => {
      if ('namedPort' in p || p.protocol === 'SCTP') return [];
      return [{ name: '', port: 'number' in p.port ? p.port.number : p.port.range.start, protocol: p.protocol }];
    }),
  );
}

/** One block to stand in: where it is written, what it excludes, the ports its rule allows. */
interface Wanted {
  block: Block;
  avoid: Block[];
  /** `[scope, policy name, rule part]`: the name is the last two, the scope first when that is taken. */
  name: [string, string, string];
  covers: string;
  served: NamedPort[];
}

/** A NetworkPolicy's ipBlocks: the cidr outside its excepts, and each except. */
function networkPolicyBlocks(policy: NetworkPolicyObject): Wanted[] {
  const out: Wanted[] = [];
  const rules = [
    ...(policy.spec.egress ?? []).map((r, i) => ({ dir: 'e', i, peers: r.to, ports: r.ports, path: `/spec/egress/${i}/to` })),
    ...(policy.spec.ingress ?? []).map((r, i) => ({ dir: 'i', i, peers: r.from, ports: undefined, path: `/spec/ingress/${i}/from` })),
  ];
  for (const rule of rules) {
    (rule.peers ?? []).forEach((peer: NetworkPolicyPeer, p) => {
      const ip = peer.ipBlock;
      if (!ip || hasTemplate(ip.cidr) || (ip.except ?? []).some(hasTemplate)) return;
      const cidr = parseBlock(ip.cidr.trim());
      const excepts = (ip.except ?? []).map((e) => parseBlock(e.trim())).filter((b): b is Block => b !== undefined);
      if (!cidr) return;
      const where = `${policy.metadata.namespace}/${policy.metadata.name} ${rule.path}/${p}/ipBlock`;
      const served = rule.dir === 'e' ? servedPorts(rule.ports) : [...DEFAULT_EXTERNAL_PORTS];
      const name = (suffix: string): Wanted['name'] => [policy.metadata.namespace, policy.metadata.name, `${rule.dir}${rule.i}p${p}${suffix}`];
      out.push({ block: cidr, avoid: excepts, name: name(''), covers: `${where}/cidr`, served });
      excepts.forEach((e, j) => out.push({ block: e, avoid: [], name: name(`x${j}`), covers: `${where}/except/${j}`, served }));
    });
  }
  return out;
}

/** An admin-tier policy's egress networks, each on its own. */
function clusterPolicyBlocks(policy: ClusterPolicy): Wanted[] {
  const out: Wanted[] = [];
  const scope = policy.id.slice(0, policy.id.indexOf('/'));
  policy.egress.forEach((rule, i) => {
    const served = servedClusterPorts(rule.protocols);
    rule.peers.forEach((peer, p) => {
      if (!('networks' in peer)) return;
      peer.networks.forEach((text, k) => {
        const block = hasTemplate(text) ? undefined : parseBlock(text.trim());
        if (!block) return;
        out.push({ block, avoid: [], name: [scope, policy.name, `e${i}p${p}n${k}`], covers: `${policy.id} /spec/egress/${i}/to/${p}/networks/${k}`, served });
      });
    });
  });
  return out;
}

/**
 * Automatic coverage: for each block of the policies (module comment), one external with an
 * address inside it, unless an external (declared or made earlier) already has an address there
 * that the block judges the same way. NetworkPolicy ones are named
 * `<policy>-<e|i><rule>p<peer>[x<except>]` (`web-egress-e1p0x0`: egress rule 1, peer 0, except 0),
 * with `<namespace>-` before it when that name is taken; admin-tier ones `<policy>-e<rule>p<peer>n<network>`
 * (`cnp-`, `anp-` or `banp-` before it when taken).
 */
export function coverageExternals(
  policies: readonly NetworkPolicyObject[],
  existing: readonly ExternalSpec[],
  podSubnet: string,
  clusterPolicies: readonly ClusterPolicy[] = [],
): ExternalSpec[] {
  const made: ExternalSpec[] = [];
  const all = () => [...existing, ...made];
  const wanted = [...policies.flatMap(networkPolicyBlocks), ...clusterPolicies.flatMap(clusterPolicyBlocks)];
  for (const w of wanted) {
    const inside = (e: ExternalSpec) => {
      const a = parseAddress(e.address)!;
      return blockContains(w.block, a) && !w.avoid.some((b) => blockContains(b, a));
    };
    // One already inside stands in for this block too; one made here also serves this rule's ports.
    const have = made.find(inside) ?? existing.find(inside);
    if (have) {
      if (made.includes(have))
        for (const port of w.served)
          if (!have.ports.some((x) => x.port === port.port && x.protocol === port.protocol) && have.ports.length < 16) have.ports.push(port);
      continue;
    }
    const address = coverageAddress(w.block, w.avoid, podSubnet);
    if (!address || all().some((e) => e.address === address)) continue;
    // The policy's name and the rule; its scope too when another external has that name already.
    const short = externalName(w.name.slice(1));
    const name = all().some((e) => e.name === short) ? externalName(w.name) : short;
    if (all().some((e) => e.name === name)) continue;
    made.push({ name, address, ports: [...w.served], covers: w.covers });
  }
  return made;
}
