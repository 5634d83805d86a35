// The rules a change leaves dead (`scenario diff`'s deadRules), read from the matrices' verdicts:
// a rule is exercised on a side when some cell's verdict names it (allowedBy, or pending once
// addresses are known) on the rule's direction, which is ruleCoverage's test (coverage.ts) with
// each distinct verdict looked at once instead of every cell. Only the rules reported are then
// explained (whyDead), over the cells their policy isolates.
import type { Direction, Verdict } from '../../shared/netpol/evaluate.ts';
import { objectId, type NetworkPolicyObject } from '../../shared/netpol/types.ts';
import { ruleCoverage, ruleName, whyDead } from './coverage.ts';
import type { StepExpectation } from './expect.ts';
import type { ComputedSide } from './diff-side.ts';
import type { Cell } from './resolve.ts';

const ruleKey = (policy: string, d: Direction, rule: number) => `${policy}\0${d}\0${rule}`;

/** The rules (policy, direction, index) the given verdicts name on their side. */
export function exercisedRules(verdicts: Iterable<Verdict>): Set<string> {
  const out = new Set<string>();
  for (const v of verdicts)
    for (const d of ['ingress', 'egress'] as const) {
      const side = v[d];
      const refs = side.decision === 'allowed' ? side.allowedBy : side.decision === 'undecided' ? side.pending : [];
      for (const r of refs) out.add(ruleKey(r.policy, d, r.rule));
    }
  return out;
}

const rulesOf = (p: NetworkPolicyObject) =>
  (['ingress', 'egress'] as const).flatMap((d) => ((d === 'ingress' ? p.spec.ingress : p.spec.egress) ?? []).map((_, r) => ({ d, r })));

export interface DeadRuleInputs {
  base: { policies: readonly NetworkPolicyObject[]; exercised: Set<string> };
  head: {
    policies: readonly NetworkPolicyObject[];
    exercised: Set<string>;
    side: ComputedSide;
    /** Visits every HEAD cell in order with its verdict; the cell made only when asked (model/diff-scale.ts makes few). */
    eachCell: (visit: (verdict: Verdict, cell: () => Cell) => void) => void;
  };
  /** Policies added, removed or edited (namespace/name). */
  changed: ReadonlySet<string>;
}

/** Rules dead on HEAD that were alive on BASE (or that BASE does not have), or whose policy changed; in ruleCoverage's order. */
export function deadRulesOf(x: DeadRuleInputs): { rule: string; why: string }[] {
  const onBase = new Set(x.base.policies.flatMap((p) => rulesOf(p).map(({ d, r }) => ruleKey(objectId(p.metadata), d, r))));
  const dead: { p: NetworkPolicyObject; id: string; d: Direction; r: number }[] = [];
  for (const p of x.head.policies) {
    const id = objectId(p.metadata);
    for (const { d, r } of rulesOf(p)) {
      const key = ruleKey(id, d, r);
      if (x.head.exercised.has(key)) continue;
      const deadOnBase = onBase.has(key) && !x.base.exercised.has(key);
      if (!deadOnBase || x.changed.has(id)) dead.push({ p, id, d, r });
    }
  }
  if (dead.length === 0) return [];
  // The cells each reported rule's policy isolates on its side, in one pass over HEAD's verdicts
  // (which of them isolate by which reported policy is worked out once per distinct verdict).
  const wanted = new Set(dead.map((x) => `${x.id}\0${x.d}`));
  const selected = new Map<string, { cell: Cell; verdict: Verdict }[]>();
  const isolating = new Map<Verdict, string[]>();
  const keysOf = (v: Verdict): string[] => {
    let keys = isolating.get(v);
    if (!keys) {
      keys = (['ingress', 'egress'] as const).flatMap((d) => {
        const side = v[d];
        return 'isolatedBy' in side ? side.isolatedBy.map((id) => `${id}\0${d}`).filter((k) => wanted.has(k)) : [];
      });
      isolating.set(v, keys);
    }
    return keys;
  };
  x.head.eachCell((verdict, made) => {
    const keys = keysOf(verdict);
    if (keys.length === 0) return;
    const cell = made();
    for (const k of keys) {
      const list = selected.get(k);
      if (list) list.push({ cell, verdict });
      else selected.set(k, [{ cell, verdict }]);
    }
  });
  const cluster = x.head.side.cluster;
  return dead.map(({ p, id, d, r }) => ({
    rule: ruleName({ policy: id, direction: d, rule: r }),
    why: whyDead({ cluster, cells: selected.get(`${id}\0${d}`) ?? [] }, p, d, r),
  }));
}

/**
 * The same from every cell's rule coverage (coverage.ts), for steps with admin-tier policies in
 * force: their rules' coverage is read from the tiered chains, which the matrix does not have yet.
 */
export function deadRulesPerCell(base: StepExpectation, head: StepExpectation, changed: ReadonlySet<string>): { rule: string; why: string }[] {
  const baseRules = new Map(ruleCoverage(base).map((r) => [ruleName(r), r]));
  return ruleCoverage(head)
    .filter((r) => r.dead !== undefined && (baseRules.get(ruleName(r))?.dead === undefined || changed.has(r.policy)))
    .map((r) => ({ rule: ruleName(r), why: r.dead! }));
}
