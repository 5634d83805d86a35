// An nftables interpreter for the rulesets the orchestrator renders (orchestrator/isolation/
// render.ts), for tests that compare policy semantics without namespaces or root: it reads the
// rendered TEXT (the exact transaction `nft -f` receives: declarations, flushes, chains), not the
// structures before rendering, so a rendering mistake shows up here as it would on real packets.
// It judges the first packet of a connection (conntrack state "new"): `ct state …` never matches.
//
//   const sim = simulateCluster({ namespaces, pods, policies });      // shared/netpol types
//   sim('x/a', 'y/b', 80, 'TCP') → { allowed, egress: {verdict, rule}, ingress: {verdict, rule} }
//
// It understands the subset of nft the renderer writes (and says so, loudly, when it meets anything
// else): iif/oif "lo", ct state, ip/ip6 saddr/daddr [!=] address|prefix|range|{set}, meta l4proto
// proto|{set}, tcp/udp/sctp dport port|range|{set}, meta l4proto . th dport {proto . port|range, …},
// update @set {…}, meta mark set, accept, drop, goto, comment.
import { compileRules } from '../../orchestrator/isolation/compile.ts';
import type { PodNet } from '../../orchestrator/isolation/cluster.ts';
import { renderRuleset } from '../../orchestrator/isolation/render.ts';
import { objectId, type NamespaceInfo, type NetworkPolicyObject, type PodInfo, type Protocol } from '../../shared/netpol/types.ts';
import { parseCidr } from '../../shared/netpol/validate.ts';
import type { ClusterPolicy } from '../../shared/netpol/cluster-policy.ts';

export interface Packet {
  src: string;
  dst: string;
  port: number;
  protocol: Protocol;
}

export interface ChainVerdict {
  verdict: 'accept' | 'drop';
  /** The comment of the rule that decided (its origin, e.g. "x/allow ingress 0"), if it had one. */
  rule?: string;
  /** A drop that went through the counting chain (what GET /v2/starmap/drops would show). */
  counted: boolean;
  /** The packet's mark when it was counted: the drop site's tag (orchestrator/isolation/drop-tags.ts). */
  tag?: number;
}

interface Chain {
  policy: 'accept' | 'drop' | undefined;
  rules: string[][];
}

/** Splits one rule into tokens; `{ … }` and quoted strings stay one token each. */
function tokenize(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (c === ' ') i++;
    else if (c === '{' || c === '"') {
      const end = line.indexOf(c === '{' ? '}' : '"', i + 1);
      if (end < 0) throw new Error(`nft-sim: unbalanced ${c} in: ${line}`);
      out.push(line.slice(i, end + 1));
      i = end + 1;
    } else {
      const end = line.indexOf(' ', i);
      out.push(line.slice(i, end < 0 ? undefined : end));
      i = end < 0 ? line.length : end;
    }
  }
  return out;
}

/** Reads the transaction: chain declarations add rules, flushes clear them, headers set the policy. */
export function parseRuleset(text: string): Map<string, Chain> {
  const chains = new Map<string, Chain>();
  const chain = (name: string) => chains.get(name) ?? (chains.set(name, { policy: undefined, rules: [] }), chains.get(name)!);
  let current: Chain | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    let m: RegExpExecArray | null;
    if (line === '' || line.startsWith('set ') || /^table inet \w+ \{$/.test(line)) continue;
    if ((m = /^flush chain inet \w+ (\w+)$/.exec(line))) chain(m[1]!).rules = [];
    else if ((m = /^chain (\w+) \{ (.*)\}$/.exec(line))) {
      const pol = /policy (accept|drop);/.exec(m[2]!);
      if (pol) chain(m[1]!).policy = pol[1] as 'accept' | 'drop';
    } else if ((m = /^chain (\w+) \{$/.exec(line))) current = chain(m[1]!);
    else if (line === '}') current = undefined;
    else if (current && (m = /^type filter hook \w+ priority \S+; policy (accept|drop);$/.exec(line))) current.policy = m[1] as 'accept' | 'drop';
    else if (current) current.rules.push(tokenize(line));
    else throw new Error(`nft-sim: cannot read: ${line}`);
  }
  return chains;
}

/** Addresses read so far: large rulesets name the same thousands of addresses on every packet. */
const ipValues = new Map<string, { family: 4 | 6; n: bigint } | undefined>();

function ipValue(ip: string): { family: 4 | 6; n: bigint } | undefined {
  if (ipValues.has(ip)) return ipValues.get(ip);
  const c = parseCidr(`${ip}/${ip.includes(':') ? 128 : 32}`);
  const v = 'error' in c ? undefined : { family: c.family, n: c.network };
  if (ipValues.size > 100_000) ipValues.clear();
  ipValues.set(ip, v);
  return v;
}

function addressMatches(item: string, ip: string): boolean {
  const v = ipValue(ip);
  if (!v) return false;
  if (item.includes('/')) {
    const c = parseCidr(item);
    if ('error' in c) throw new Error(`nft-sim: bad prefix ${item}`);
    const shift = BigInt((c.family === 4 ? 32 : 128) - c.prefix);
    return c.family === v.family && v.n >> shift === c.network >> shift;
  }
  const dash = item.indexOf('-');
  if (dash > 0) {
    const lo = ipValue(item.slice(0, dash));
    const hi = ipValue(item.slice(dash + 1));
    return !!lo && !!hi && lo.family === v.family && v.n >= lo.n && v.n <= hi.n;
  }
  const one = ipValue(item);
  return !!one && one.family === v.family && one.n === v.n;
}

/** The items of each set token read so far (as for ipValues). */
const itemLists = new Map<string, string[]>();

function items(token: string): string[] {
  let list = itemLists.get(token);
  if (!list) {
    list = splitItems(token);
    if (itemLists.size > 100_000) itemLists.clear();
    itemLists.set(token, list);
  }
  return list;
}

function splitItems(token: string): string[] {
  return token.startsWith('{')
    ? token
        .slice(1, -1)
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [token];
}

function portMatches(item: string, port: number): boolean {
  const [lo, hi] = item.split('-').map(Number);
  return port >= lo! && port <= (hi ?? lo)!;
}

/** Evaluates one base chain ('input' = the destination's ingress, 'output' = the source's egress). */
/** The last ruleset read (a test judges many packets against one large ruleset). */
let lastParsed: { text: string; chains: Map<string, Chain> } | undefined;

export function evaluateRuleset(text: string, hook: 'input' | 'output', pkt: Packet): ChainVerdict {
  if (lastParsed?.text !== text) lastParsed = { text, chains: parseRuleset(text) };
  const chains = lastParsed.chains;
  const base = chains.get(hook);
  if (!base) throw new Error(`nft-sim: no chain ${hook}`);
  const proto = pkt.protocol.toLowerCase();
  let mark: number | undefined;
  const run = (c: Chain, depth: number): ChainVerdict | undefined => {
    if (depth > 8) throw new Error('nft-sim: goto loop');
    let counted = false;
    for (const t of c.rules) {
      let i = 0;
      let matched = true;
      let comment: string | undefined;
      let verdict: ChainVerdict | undefined;
      while (i < t.length && matched) {
        const tok = t[i]!;
        if (tok === 'iif' || tok === 'oif') {
          matched = t[i + 1] === '"lo"' ? pkt.src === pkt.dst : false;
          i += 2;
        } else if (tok === 'ct') {
          matched = false; // a new connection: neither established nor related
        } else if (tok === 'ip' || tok === 'ip6') {
          const field = t[i + 1];
          const negate = t[i + 2] === '!=';
          const value = t[i + (negate ? 3 : 2)]!;
          const ip = field === 'saddr' ? pkt.src : field === 'daddr' ? pkt.dst : undefined;
          if (ip === undefined) throw new Error(`nft-sim: unknown field ${field}`);
          const familyOk = (ipValue(ip)?.family === 4) === (tok === 'ip');
          const hit = familyOk && items(value).some((it) => addressMatches(it, ip));
          matched = familyOk && (negate ? !hit : hit);
          i += negate ? 4 : 3;
        } else if (tok === 'meta' && t[i + 1] === 'l4proto' && t[i + 2] === '.' && t[i + 3] === 'th' && t[i + 4] === 'dport') {
          // A concatenation: items are "<protocol> . <port or range>".
          matched = items(t[i + 5]!).some((it) => {
            const [p, port] = it.split(' . ');
            return p === proto && port !== undefined && portMatches(port, pkt.port);
          });
          i += 6;
        } else if (tok === 'meta' && t[i + 1] === 'l4proto') {
          matched = items(t[i + 2]!).includes(proto);
          i += 3;
        } else if ((tok === 'tcp' || tok === 'udp' || tok === 'sctp') && t[i + 1] === 'dport') {
          matched = proto === tok && items(t[i + 2]!).some((it) => portMatches(it, pkt.port));
          i += 3;
        } else if (tok === 'meta' && t[i + 1] === 'mark' && t[i + 2] === 'set') {
          mark = Number(t[i + 3]); // a statement: the rule goes on (0x… reads as hex)
          i += 4;
        } else if (tok === 'update') {
          counted = true; // the drop chain's counting statement (the packet goes on to the next rule)
          i += 3;
        } else if (tok === 'comment') {
          comment = t[i + 1]!.slice(1, -1);
          i += 2;
        } else if (tok === 'accept' || tok === 'drop') {
          verdict = { verdict: tok, counted, ...(counted && mark !== undefined ? { tag: mark } : {}) };
          i++;
        } else if (tok === 'goto') {
          const target = chains.get(t[i + 1]!);
          if (!target) throw new Error(`nft-sim: goto to a missing chain ${t[i + 1]}`);
          // A chain entered by goto that ends without a verdict ends the base chain: its policy.
          verdict = run(target, depth + 1) ?? { verdict: base.policy ?? 'accept', counted: false };
          i += 2;
        } else {
          throw new Error(`nft-sim: does not understand "${tok}" in: ${t.join(' ')}`);
        }
      }
      if (matched && verdict) return comment !== undefined && verdict.rule === undefined ? { ...verdict, rule: comment } : verdict;
    }
    return undefined;
  };
  return run(base, 0) ?? { verdict: base.policy ?? 'accept', counted: false };
}

export interface ConnectionVerdict {
  allowed: boolean;
  egress: ChainVerdict;
  ingress: ChainVerdict;
}

/** A connection between two rendered rulesets: the source's output chain, then the destination's input chain. */
export function connectionVerdict(srcRuleset: string, dstRuleset: string, pkt: Packet): ConnectionVerdict {
  const egress = evaluateRuleset(srcRuleset, 'output', pkt);
  const ingress = evaluateRuleset(dstRuleset, 'input', pkt);
  return { allowed: egress.verdict === 'accept' && ingress.verdict === 'accept', egress, ingress };
}

export interface ClusterInput {
  namespaces: NamespaceInfo[];
  /** Every pod needs its ip. */
  pods: PodInfo[];
  policies: NetworkPolicyObject[];
  /** Admin-tier policies (validated: shared/netpol/cluster-policy.ts). */
  clusterPolicies?: ClusterPolicy[];
  /** The host's address (default 10.213.0.1). */
  gateway?: string;
}

/** The ruleset the orchestrator would render for each pod (keyed ns/pod). */
export function renderCluster(c: ClusterInput): Map<string, string> {
  const pods: PodNet[] = c.pods.map((p) => {
    if (!p.ip) throw new Error(`nft-sim: pod ${objectId(p)} has no ip`);
    return {
      taskId: objectId(p),
      appId: `/${p.namespace}/${p.name}`,
      netns: objectId(p),
      ip: p.ip,
      namespace: p.namespace,
      pod: p.name,
      labels: p.labels,
      dialectLabels: p.labels,
      groups: [],
      ports: p.ports,
    };
  });
  const rules = compileRules({
    pods,
    namespaces: c.namespaces,
    dialect: [],
    policies: c.policies,
    ...(c.clusterPolicies ? { clusterPolicies: c.clusterPolicies } : {}),
    gateway: c.gateway ?? '10.213.0.1',
  });
  return new Map(rules.map((r) => [r.taskId, renderRuleset(r)]));
}

/** Renders once, then answers connections between pods (by ns/pod) as the kernel would judge their first packet. */
export function simulateCluster(c: ClusterInput): (from: string, to: string, port: number, protocol: Protocol) => ConnectionVerdict {
  const rendered = renderCluster(c);
  const ipOf = new Map(c.pods.map((p) => [objectId(p), p.ip!]));
  return (from, to, port, protocol) => {
    const src = rendered.get(from);
    const dst = rendered.get(to);
    if (!src || !dst) throw new Error(`nft-sim: unknown pod ${src ? to : from}`);
    return connectionVerdict(src, dst, { src: ipOf.get(from)!, dst: ipOf.get(to)!, port, protocol });
  };
}
