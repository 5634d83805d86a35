// The evaluator's verdicts in words: one line per cell for reports and tables, and the full
// account of one connection for `scenario explain` (every isolating policy, the rule that allowed
// it with its peer and port, or that no rule does).
import {
  answerOf,
  missingText,
  type Connection,
  type Direction,
  type Evaluator,
  type IpBlockCheck,
  type RuleRef,
  type SideVerdict,
  type Verdict,
} from './evaluate.ts';
import { selectorText } from './selector.ts';
import { objectId, type NetworkPolicyObject, type NetworkPolicyPeer, type NetworkPolicyPort } from './types.ts';

export function peerText(peer: NetworkPolicyPeer, policyNamespace: string): string {
  if (peer.ipBlock) return `ipBlock ${peer.ipBlock.cidr}${peer.ipBlock.except?.length ? ` except ${peer.ipBlock.except.join(', ')}` : ''}`;
  const empty = (sel: { matchLabels?: object; matchExpressions?: unknown[] }) =>
    Object.keys(sel.matchLabels ?? {}).length === 0 && (sel.matchExpressions ?? []).length === 0;
  const ns = !peer.namespaceSelector
    ? `namespace ${policyNamespace}`
    : empty(peer.namespaceSelector)
      ? 'every namespace'
      : `namespaces {${selectorText(peer.namespaceSelector)}}`;
  const pods = !peer.podSelector || empty(peer.podSelector) ? 'all pods' : `pods {${selectorText(peer.podSelector)}}`;
  return `${pods} in ${ns}`;
}

export function portText(pp: NetworkPolicyPort): string {
  const proto = pp.protocol ?? 'TCP';
  if (pp.port === undefined) return `every ${proto} port`;
  if (pp.endPort !== undefined) return `${pp.port}-${pp.endPort}/${proto}`;
  return typeof pp.port === 'string' ? `named port ${pp.port}/${proto}` : `${pp.port}/${proto}`;
}

/** `y/allow-x ingress rule 0` */
export function ruleName(ref: Pick<RuleRef, 'policy' | 'direction' | 'rule'>): string {
  return `${ref.policy} ${ref.direction} rule ${ref.rule}`;
}

/** `y/allow-x ingress rule 0 (peer 0: pods {pod=a} in namespace y; port 1: 81/TCP)` */
export function ruleText(ref: RuleRef, policy: NetworkPolicyObject | undefined): string {
  const rule = policy ? (ref.direction === 'ingress' ? policy.spec.ingress : policy.spec.egress)?.[ref.rule] : undefined;
  const peers = rule ? (ref.direction === 'ingress' ? (rule as { from?: NetworkPolicyPeer[] }).from : (rule as { to?: NetworkPolicyPeer[] }).to) : undefined;
  const peer =
    ref.peer === null
      ? `every ${ref.direction === 'ingress' ? 'source' : 'destination'}`
      : `peer ${ref.peer}${peers?.[ref.peer] && policy ? `: ${peerText(peers[ref.peer]!, policy.metadata.namespace)}` : ''}`;
  const port = ref.port === null ? 'every port' : `port ${ref.port}${rule?.ports?.[ref.port] ? `: ${portText(rule.ports[ref.port]!)}` : ''}`;
  return `${ruleName(ref)} (${peer}; ${port})`;
}

const sideName = (direction: Direction, pod: string) => (direction === 'egress' ? `egress of ${pod}` : `ingress of ${pod}`);

/** One side in words, e.g. `ingress of y/b: isolated by y/deny-all; no rule allows it`. */
export function sideText(direction: Direction, pod: string, side: SideVerdict, ev?: Evaluator, missing: readonly string[] = []): string {
  const head = sideName(direction, pod);
  switch (side.decision) {
    case 'loopback':
      return `${head}: the same pod (loopback is never filtered)`;
    case 'not-isolated':
      return `${head}: not isolated (no policy selects it for ${direction})`;
    case 'allowed':
      return `${head}: isolated by ${side.isolatedBy.join(', ')}; allowed by ${side.allowedBy.map((r) => ruleText(r, ev?.policy(r.policy))).join(' and by ')}`;
    case 'denied':
      return `${head}: isolated by ${side.isolatedBy.join(', ')}; no rule allows it`;
    case 'undecided':
      return `${head}: isolated by ${side.isolatedBy.join(', ')}; ${missingText(missing)} (${side.pending.map((r) => ruleText(r, ev?.policy(r.policy))).join(', ')})`;
  }
}

const short = (r: RuleRef) => `${ruleName(r)}${r.peer === null ? '' : ` peer ${r.peer}`}${r.port === null ? '' : ` port ${r.port}`}`;

function sideShort(direction: Direction, side: SideVerdict): string {
  switch (side.decision) {
    case 'loopback':
      return 'same pod (loopback)';
    case 'not-isolated':
      return `${direction} not isolated`;
    case 'allowed':
      return `${direction} allowed by ${side.allowedBy.map(short).join(', ')}`;
    case 'denied':
      return `${direction} isolated by ${side.isolatedBy.join(', ')}, no rule allows it`;
    case 'undecided':
      return `${direction} depends on addresses not known yet`;
  }
}

/**
 * The reason of a verdict in one line: for a blocked connection the side(s) that block it, for an
 * allowed one both sides; e.g. `ingress isolated by y/deny-all, no rule allows it`.
 */
export function reasonLine(v: Verdict): string {
  if (v.egress.decision === 'loopback') return sideShort('egress', v.egress);
  const sides: [Direction, SideVerdict][] = [
    ['egress', v.egress],
    ['ingress', v.ingress],
  ];
  const shown = v.allowed === false ? sides.filter(([, s]) => s.allowed === false) : v.allowed === null ? sides.filter(([, s]) => s.allowed !== true) : sides;
  return shown.map(([d, s]) => sideShort(d, s)).join('; ');
}

/** One ipBlock peer's judgement of an address, e.g. `… : 10.213.0.3 (y/b) is excluded by except 10.213.0.3/32`. */
export function ipBlockText(c: IpBlockCheck, peerId: string): string {
  const what = `${ruleName(c.ref)} peer ${c.ref.peer} ipBlock ${c.cidr}${c.excepts.length ? ` except ${c.excepts.join(', ')}` : ''}`;
  const addr = `${c.address ?? '?'} (${peerId})`;
  switch (c.result) {
    case 'inside':
      return `${what}: holds ${addr}`;
    case 'outside':
      return `${what}: does not hold ${addr}`;
    case 'excepted':
      return `${what}: ${addr} is inside ${c.cidr} but excluded by except ${c.except}`;
    case 'undecided':
      return `${what}: ${c.address === undefined ? `the address of ${peerId} is not known (assigned at run time)` : 'it names an address not known yet'}`;
  }
}

/**
 * The full account of one connection, several lines: the answer (allowed, blocked, not
 * applicable, undecided with the missing fact), both sides, and for every ipBlock that judged an
 * address the address it used and, when excluded, the except that did.
 */
export function verdictText(conn: Connection, v: Verdict, ev?: Evaluator): string {
  // An external (a host outside the cluster) is in no namespace: `external:<name>`, as scenarios name it.
  const id = (p: Connection['from']) => (p.external ? `external:${p.name}` : objectId(p));
  const from = id(conn.from);
  const to = id(conn.to);
  const known = ev?.answer(conn);
  const a = known?.answer ?? answerOf(conn, v);
  const said = v.allowed === true ? 'allowed' : v.allowed === false ? 'blocked' : 'undecided';
  const verdict =
    a.answer === 'not applicable'
      ? `not applicable (${a.why}${v.egress.decision === 'loopback' ? '' : `; the policies say ${said}`})`
      : a.answer === 'undecided'
        ? `undecided (${a.why})`
        : a.answer;
  const blocks = ev
    ? [
        ...ev.ipBlocks('egress', conn.from, conn.to).map((c) => ipBlockText(c, to)),
        ...ev.ipBlocks('ingress', conn.to, conn.from).map((c) => ipBlockText(c, from)),
      ]
    : [];
  const addresses = blocks.length > 0 && ev ? [`  addresses used: ${from} ${ev.addressOf(from) ?? 'not known'}, ${to} ${ev.addressOf(to) ?? 'not known'}`] : [];
  return [
    `${from} -> ${to} ${conn.port}/${conn.protocol}: ${verdict}`,
    `  ${sideText('egress', from, v.egress, ev, known?.missing.egress)}`,
    `  ${sideText('ingress', to, v.ingress, ev, known?.missing.ingress)}`,
    ...addresses,
    ...blocks.map((b) => `  ${b}`),
  ].join('\n');
}
