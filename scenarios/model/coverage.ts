// Rule coverage: every rule of every policy in force at a step (spec.ingress[i], spec.egress[i],
// and each peer of it; the admin tiers' rules after them: cluster-coverage.ts) with the cells
// whose verdict that rule allowed on its side, and the rules no cell exercises: "dead" rules,
// which users write by mistake (a selector with a typo, a namespace label nobody set, a port no
// pod serves) and which no verdict ever shows. Read from the
// evaluator's verdicts (expect.ts), which name every rule that allows a side; a peer that is not
// the first to match is found by evaluating that peer alone. Pure.
import { Evaluator, type Direction, type Verdict } from '../../shared/netpol/evaluate.ts';
import { objectId, type NetworkPolicyObject, type NetworkPolicyPeer } from '../../shared/netpol/types.ts';
import { clusterRuleCoverage, podLookup } from './cluster-coverage.ts';
import type { CellExpectation, StepExpectation } from './expect.ts';

export interface PeerCoverage {
  /** Index in the rule's from/to. */
  peer: number;
  /** Keys of the cells this peer matched (the rule's ports too). */
  cells: string[];
}

export interface RuleCoverage {
  /** namespace/name */
  policy: string;
  direction: Direction;
  /** Index in spec.ingress / spec.egress. */
  rule: number;
  /** Keys of the cells whose verdict this rule allowed (on its side). */
  cells: string[];
  /** Cells it may allow once addresses are known ({{ip}} templates before a run). */
  pending: string[];
  /** Per peer; empty when the rule has no peers (it matches every peer). */
  peers: PeerCoverage[];
  /** Why no cell exercises it; absent when some cell (or a pending one) does. */
  dead?: string;
}

/** The rule `r` of `p` alone, optionally with only some peers and no ports, as a policy of its own. */
function alone(p: NetworkPolicyObject, d: Direction, r: number, change: { peers?: NetworkPolicyPeer[]; noPorts?: boolean }): NetworkPolicyObject {
  const rule = (d === 'ingress' ? p.spec.ingress : p.spec.egress)![r]!;
  const peerKey = d === 'ingress' ? 'from' : 'to';
  const { ports, ...rest } = rule as typeof rule & { ports?: unknown };
  const one = { ...rest, ...(change.noPorts || ports === undefined ? {} : { ports }), ...(change.peers ? { [peerKey]: change.peers } : {}) };
  return {
    ...p,
    metadata: { ...p.metadata, name: `${p.metadata.name}-alone` },
    spec: { podSelector: p.spec.podSelector, policyTypes: [d === 'ingress' ? 'Ingress' : 'Egress'], [d]: [one] },
  } as NetworkPolicyObject;
}

/** The cells whose `d` side `policy` alone allows. */
function allowedAlone(exp: StepExpectation, policy: NetworkPolicyObject, d: Direction, among: readonly CellExpectation[]): string[] {
  const ev = new Evaluator(exp.cluster, [policy]);
  const pod = podLookup(exp);
  return among
    .filter((c) => {
      const from = pod(c.cell.from);
      const to = pod(c.cell.to);
      if (!from || !to) return false;
      const v = ev.evaluate({ from, to, port: c.cell.port, protocol: c.cell.protocol });
      return v[d].decision === 'allowed';
    })
    .map((c) => c.cell.key);
}

const refs = (v: Verdict, d: Direction) => {
  const side = v[d];
  return side.decision === 'allowed' ? side.allowedBy : side.decision === 'undecided' ? side.pending : [];
};

export function ruleCoverage(exp: StepExpectation): RuleCoverage[] {
  const out: RuleCoverage[] = [];
  for (const p of exp.step.policies) {
    const id = objectId(p.metadata);
    for (const d of ['ingress', 'egress'] as const) {
      const rules = (d === 'ingress' ? p.spec.ingress : p.spec.egress) ?? [];
      rules.forEach((rule, r) => {
        const cells: CellExpectation[] = [];
        const pending: string[] = [];
        const firstPeer = new Map<number, string[]>();
        for (const c of exp.cells) {
          for (const ref of refs(c.verdict, d)) {
            if (ref.policy !== id || ref.rule !== r) continue;
            if (c.verdict[d].decision === 'undecided') pending.push(c.cell.key);
            else {
              cells.push(c);
              if (ref.peer !== null) firstPeer.set(ref.peer, [...(firstPeer.get(ref.peer) ?? []), c.cell.key]);
            }
          }
        }
        const peerList = (d === 'ingress' ? (rule as { from?: NetworkPolicyPeer[] }).from : (rule as { to?: NetworkPolicyPeer[] }).to) ?? [];
        // A cell two peers match names only the first: the others are evaluated alone, among the rule's cells.
        const peers = peerList.map((peer, i): PeerCoverage => {
          const first = firstPeer.get(i) ?? [];
          const rest = cells.filter((c) => !first.includes(c.cell.key));
          const more = peerList.length > 1 && rest.length > 0 ? allowedAlone(exp, alone(p, d, r, { peers: [peer] }), d, rest) : [];
          const keys = new Set([...first, ...more]);
          return { peer: i, cells: cells.filter((c) => keys.has(c.cell.key)).map((c) => c.cell.key) };
        });
        const entry: RuleCoverage = { policy: id, direction: d, rule: r, cells: cells.map((c) => c.cell.key), pending, peers };
        if (cells.length === 0 && pending.length === 0) entry.dead = whyDead(exp, p, d, r);
        out.push(entry);
      });
    }
  }
  // Then the admin tiers' rules, by policy id (cluster-coverage.ts).
  out.push(...clusterRuleCoverage(exp));
  return out;
}

/** Why nothing exercises a rule: nothing checked is selected, no peer matches, or no cell is on its ports. */
function whyDead(exp: StepExpectation, p: NetworkPolicyObject, d: Direction, r: number): string {
  const id = objectId(p.metadata);
  const subject = (c: CellExpectation) => {
    const side = c.verdict[d];
    return 'isolatedBy' in side && side.isolatedBy.includes(id);
  };
  const selected = exp.cells.filter(subject);
  if (selected.length === 0)
    return `dead: the policy selects no pod with ${d === 'ingress' ? 'an ingress' : 'an egress'} cell (its podSelector matches no pod checked here)`;
  if (allowedAlone(exp, alone(p, d, r, { noPorts: true }), d, selected).length > 0) return 'dead: its peers match, but no cell is on its ports';
  return 'dead: no pod or external matches its peers';
}

/** 'shop/api ingress[0]': how the terminal and reports name a rule. */
export const ruleName = (c: Pick<RuleCoverage, 'policy' | 'direction' | 'rule'>): string => `${c.policy} ${c.direction}[${c.rule}]`;
