// `scenario diff` of two large manifest sets without a cell object per cell (issue 30): each side's
// manifest cells are left out of the resolved scenario (model/deferred-cells.ts) and read here as
// (pod, pod, port) lookups in the side's VerdictMatrix; a Cell is made only for what the diff shows
// (flips, undecided cells) and for the cells the dead rules' explanations name. The same walk,
// order and words as diffSides (diff.ts), which test/scenarios/model/diff-matrix.test.ts holds
// this to. Taken when both sides have deferred cells of the same pods and ports in the same order
// (a change of policies or labels) and no admin-tier policies (the matrix has no tiers); anything
// else has its cells put in and goes through diffSides.
import type { Verdict } from '../../shared/netpol/evaluate.ts';
import type { PodInfo } from '../../shared/netpol/types.ts';
import { materializeCells } from './deferred-cells.ts';
import { deadRulesOf, exercisedRules } from './diff-rules.ts';
import { computedSide } from './diff-side.ts';
import { assembleDiff, changeCauses, diffSides, flipCauses, type DiffParts, type DiffSide, type ScenarioDiff } from './diff.ts';
import type { Cell, PodSpec, ResolvedScenario } from './resolved.ts';
import { manifestCell } from './scenario-manifests.ts';

const sameCell = (c: Cell, d: Cell) => c.from === d.from && c.to === d.to && c.port === d.port && c.protocol === d.protocol;

const samePorts = (a: PodSpec, b: PodSpec) =>
  a.id === b.id && a.ports.length === b.ports.length && a.ports.every((p, k) => p.port === b.ports[k]!.port && p.protocol === b.ports[k]!.protocol);

/** Whether the two scenarios' cells, deferred ones included, are the same cells in the same order. */
function alignedDeferred(a: ResolvedScenario, b: ResolvedScenario): boolean {
  const da = a.deferredCells;
  const db = b.deferredCells;
  if (!da || !db || da.at !== db.at || da.pods.length !== db.pods.length) return false;
  if (a.cells.length !== b.cells.length || !a.cells.every((c, i) => sameCell(c, b.cells[i]!))) return false;
  return da.pods.every((p, i) => samePorts(p, db.pods[i]!));
}

/** The diff of two sides: without cell objects when their cells are deferred and aligned, else by diffSides. */
export function diffOf(base: DiffSide, head: DiffSide): ScenarioDiff {
  const tiers = (base.step.clusterPolicies?.length ?? 0) + (head.step.clusterPolicies?.length ?? 0) > 0;
  if (tiers || !alignedDeferred(base.scenario, head.scenario)) {
    materializeCells(base.scenario);
    materializeCells(head.scenario);
    return diffSides(base, head);
  }
  const ch = changeCauses(base, head);
  const A = computedSide(base);
  const B = computedSide(head);
  const cellsA = base.scenario.cells;
  const cellsB = head.scenario.cells;
  const { pods, at } = base.scenario.deferredCells!;
  const infosA = pods.map((p) => A.pod(p.id)!);
  const infosB = pods.map((p) => B.pod(p.id)!);
  const parts: DiffParts = { flips: [], added: [], removed: [], undecided: [], deadRules: [], cells: 0 };
  const verdictsA = new Set<Verdict>();
  const verdictsB = new Set<Verdict>();
  let lastA: Verdict | undefined;
  let lastB: Verdict | undefined;
  const total = cellsA.length + pods.reduce((n, p) => n + p.ports.length, 0) * (pods.length - 1);
  // HEAD's verdict of each cell in order, for the dead rules' explanations.
  const headVerdicts: Verdict[] = new Array<Verdict>(total);
  let n = 0;
  // One cell as diffSides's aligned walk has it: `cell` makes BASE's Cell (the same fields as HEAD's).
  const visit = (va: Verdict, vb: Verdict, cell: () => Cell) => {
    if (va !== lastA) verdictsA.add((lastA = va));
    if (vb !== lastB) verdictsB.add((lastB = vb));
    headVerdicts[n++] = vb;
    if (va.allowed === null || vb.allowed === null) {
      const c = cell();
      parts.undecided.push({ key: c.key, before: A.side(c, { verdict: va, computed: va.allowed }), after: B.side(c, { verdict: vb, computed: vb.allowed }) });
      return;
    }
    if (va.allowed === vb.allowed) return;
    const c = cell();
    const { key, from, to, port, protocol } = c;
    const a = { verdict: va, computed: va.allowed };
    const b = { verdict: vb, computed: vb.allowed };
    parts.flips.push({ key, from, to, port, protocol, before: A.side(c, a), after: B.side(c, b), causes: flipCauses(ch, c, [a, b]) });
  };
  const explicit = (i: number) => {
    const c = cellsA[i]!;
    visit(A.verdict(c), B.verdict(cellsB[i]!), () => c);
  };
  for (let i = 0; i < at; i++) explicit(i);
  walkDeferred(pods, infosA, infosB, (from, to, np, fa, ta, fb, tb) =>
    visit(A.verdictOf(fa, ta, np.port, np.protocol), B.verdictOf(fb, tb, np.port, np.protocol), () => manifestCell(from, to, np)),
  );
  for (let i = at; i < cellsA.length; i++) explicit(i);
  parts.cells = total;

  if (ch.causes.length > 0)
    parts.deadRules = deadRulesOf({
      base: { policies: base.step.policies, exercised: exercisedRules(verdictsA) },
      head: {
        policies: head.step.policies,
        exercised: exercisedRules(verdictsB),
        side: B,
        eachCell: (see) => {
          let j = 0;
          for (let i = 0; i < at; i++) see(headVerdicts[j++]!, () => cellsB[i]!);
          walkDeferred(pods, infosB, infosB, (from, to, np) => see(headVerdicts[j++]!, () => manifestCell(from, to, np)));
          for (let i = at; i < cellsB.length; i++) see(headVerdicts[j++]!, () => cellsB[i]!);
        },
      },
      changed: new Set(ch.policyCause.keys()),
    });
  return assembleDiff(base, head, ch, parts);
}

/** The deferred cells in manifestCells's order (each pod to every other, on each of the destination's ports). */
function walkDeferred(
  pods: readonly PodSpec[],
  infosA: readonly PodInfo[],
  infosB: readonly PodInfo[],
  cell: (from: PodSpec, to: PodSpec, np: PodSpec['ports'][number], fa: PodInfo, ta: PodInfo, fb: PodInfo, tb: PodInfo) => void,
): void {
  for (let i = 0; i < pods.length; i++) {
    const from = pods[i]!;
    for (let j = 0; j < pods.length; j++) {
      if (i === j) continue;
      const to = pods[j]!;
      for (const np of to.ports) cell(from, to, np, infosA[i]!, infosA[j]!, infosB[i]!, infosB[j]!);
    }
  }
}
