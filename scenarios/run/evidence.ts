// Evidence per blocked cell (pure): the rule the evaluator says decides the cell, compared with
// the drops the orchestrator counted for it during the step (drops.ts), and a positive control for
// its destination port: a cell from another pod to the same destination, port and protocol observed
// reachable in the same step (the server was up, so a blocked cell is not a dead server).
// A cell denied by the source's egress is decided there (its packets never reach the destination);
// otherwise by the destination's ingress. report/evidence.ts turns the verdicts into statuses.
import type { CellExpectation, StepExpectation } from '../model/expect.ts';
import type { DropRuleDoc, EvidenceDoc } from '../report/schema.ts';
import { cellDrops, type DropCounts } from './drops.ts';

/** The drop that decides a blocked cell according to the evaluator; null when it cannot say. */
export function decidingRule(c: CellExpectation): DropRuleDoc | null {
  if (c.tiered) return tieredRule(c);
  const { egress, ingress } = c.verdict;
  if (egress.decision === 'denied') return { side: 'egress', pod: c.cell.from, policies: [...egress.isolatedBy].sort() };
  if (ingress.decision === 'denied') return { side: 'ingress', pod: c.cell.to, policies: [...ingress.isolatedBy].sort() };
  return null;
}

/**
 * With admin tiers: the side that denies (egress first), and its drop site: the Admin or Baseline
 * rule that denied (`Admin cnp/x egress rule 2`, as the orchestrator tags it), or the isolating
 * NetworkPolicies when the NetworkPolicy section decided.
 */
function tieredRule(c: CellExpectation): DropRuleDoc | null {
  for (const side of ['egress', 'ingress'] as const) {
    const t = c.tiered![side];
    if (t.allowed !== false) continue;
    const pod = side === 'egress' ? c.cell.from : c.cell.to;
    if (t.decidedBy === 'networkpolicy') {
      const v = t.networkPolicy;
      return { side, pod, policies: v.decision === 'denied' ? [...v.isolatedBy].sort() : null };
    }
    const last = t.chain[t.chain.length - 1];
    if (last && last.tier !== 'NetworkPolicy') return { side, pod, policies: [`${last.tier} ${last.policy} ${side} rule ${last.rule}`] };
    return { side, pod, policies: null };
  }
  return null;
}

const sameRule = (a: DropRuleDoc, b: DropRuleDoc) =>
  a.side === b.side && a.pod === b.pod && a.policies !== null && b.policies !== null && a.policies.join('\n') === b.policies.join('\n');

/** Per destination, port and protocol: a source observed reaching it in the step (the first by key). */
export function positiveControls(exp: StepExpectation, observed: ReadonlyMap<string, boolean | null>): Map<string, string> {
  const out = new Map<string, string>();
  for (const c of [...exp.cells].sort((a, b) => a.cell.key.localeCompare(b.cell.key))) {
    const target = `${c.cell.to}@${c.cell.port}/${c.cell.protocol}`;
    // Not the destination itself: loopback is never filtered, so it proves nothing about the network.
    if (c.cell.from !== c.cell.to && observed.get(c.cell.key) === true && !out.has(target)) out.set(target, c.cell.from);
  }
  return out;
}

/**
 * The evidence of every cell judged blocked and observed in the step (key → evidence), from the
 * counters read before the step's write and after it settled. `observed`: the cells' values
 * checked since the step applied (null or absent: none).
 */
export function stepEvidence(
  exp: StepExpectation,
  observed: ReadonlyMap<string, boolean | null>,
  before: DropCounts,
  after: DropCounts,
  ips: ReadonlyMap<string, string>,
): Map<string, EvidenceDoc> {
  const controls = positiveControls(exp, observed);
  const out = new Map<string, EvidenceDoc>();
  for (const c of exp.cells) {
    const seen = observed.get(c.cell.key);
    if (c.expected !== false || seen === null || seen === undefined) continue;
    const rule = decidingRule(c);
    const drops = cellDrops(before, after, c.cell, ips);
    const unreadable = [c.cell.from, c.cell.to].some((p) => before.unreadable.has(p) || after.unreadable.has(p));
    const verdict: EvidenceDoc['verdict'] = drops.some((d) => (rule ? sameRule(rule, d) : true))
      ? 'proven'
      : unreadable
        ? 'counters unreadable'
        : drops.length > 0
          ? 'dropped by another rule'
          : 'not enforced';
    out.set(c.cell.key, { verdict, rule, drops, positiveControl: controls.get(`${c.cell.to}@${c.cell.port}/${c.cell.protocol}`) ?? null });
  }
  return out;
}
