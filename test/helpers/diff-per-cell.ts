// `scenario diff` as it was computed before the verdict matrices (model/diff.ts before
// model/diff-side.ts): every cell of both sides evaluated with its reason (expectStep), flips
// found cell by cell, dead rules from the rule coverage of every cell (ruleCoverage). The change
// causes, a flip's causes and the report's shape are model/diff.ts's own, so what this holds the
// matrix path to is the cells: their verdicts, reasons and the rules they exercise. Used by
// test/scenarios/model/diff-matrix.test.ts (same diff on every input) and bench/diff-scale.bench.ts
// (the baseline).
import { ruleCoverage, ruleName } from '../../scenarios/model/coverage.ts';
import { assembleDiff, changeCauses, flipCauses, oneSidedCell, type DiffParts, type DiffSide } from '../../scenarios/model/diff.ts';
import type { CellSide } from '../../scenarios/model/diff-schema.ts';
import type { CellExpectation } from '../../scenarios/model/expect.ts';
import type { ScenarioDiff } from '../../scenarios/model/diff-schema.ts';

const sideOf = (c: CellExpectation): CellSide => ({ allowed: c.computed, reason: c.reason });

export function diffSidesPerCell(base: DiffSide, head: DiffSide): ScenarioDiff {
  const ch = changeCauses(base, head);
  const cellsA = new Map(base.expectation.cells.map((c) => [c.cell.key, c]));
  const cellsB = new Map(head.expectation.cells.map((c) => [c.cell.key, c]));
  const parts: DiffParts = { flips: [], added: [], removed: [], undecided: [], deadRules: [], cells: 0 };
  for (const [key, a] of cellsA) {
    const b = cellsB.get(key);
    if (!b) {
      parts.removed.push(oneSidedCell(ch, a.cell, sideOf(a), true));
      continue;
    }
    if (a.computed === null || b.computed === null) {
      parts.undecided.push({ key, before: sideOf(a), after: sideOf(b) });
      continue;
    }
    if (a.computed === b.computed) continue;
    const { from, to, port, protocol } = a.cell;
    parts.flips.push({ key, from, to, port, protocol, before: sideOf(a), after: sideOf(b), causes: flipCauses(ch, a.cell, [a, b]) });
  }
  for (const [key, b] of cellsB) if (!cellsA.has(key)) parts.added.push(oneSidedCell(ch, b.cell, sideOf(b), false));
  parts.cells = new Set([...cellsA.keys(), ...cellsB.keys()]).size;
  if (ch.causes.length > 0) {
    const baseRules = new Map(ruleCoverage(base.expectation).map((r) => [ruleName(r), r]));
    parts.deadRules = ruleCoverage(head.expectation)
      .filter((r) => r.dead !== undefined && (baseRules.get(ruleName(r))?.dead === undefined || ch.policyCause.has(r.policy)))
      .map((r) => ({ rule: ruleName(r), why: r.dead! }));
  }
  return assembleDiff(base, head, ch, parts);
}
