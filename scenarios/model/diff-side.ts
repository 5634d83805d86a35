// One side of `scenario diff`, computed at scale. The step's NetworkPolicy verdicts come from a
// VerdictMatrix (shared/netpol/matrix.ts): pods equal in namespace, labels and named ports form a
// class and each class pair is evaluated once, so a cell's verdict is a lookup of an interned
// Verdict, not an evaluation. A cell's reason (the deciding rules in words) is written only for
// the cells the diff shows (flips, cells of one side, undecided ones), and once per distinct
// verdict. With admin-tier policies in force the tiered evaluator decides each cell as
// `scenario check` does (expect.ts): the matrix has no tiers yet, so that path is per cell.
// The lines and verdicts are those of expectStep (expect.ts), which test/scenarios/diff*.test.ts
// hold this to through the command's output.
import type { Cluster, Verdict } from '../../shared/netpol/evaluate.ts';
import { reasonLine } from '../../shared/netpol/explain.ts';
import { VerdictMatrix } from '../../shared/netpol/matrix.ts';
import { chainText, TieredEvaluator, type TieredVerdict } from '../../shared/netpol/tiers.ts';
import type { PodInfo, Protocol } from '../../shared/netpol/types.ts';
import type { CellSide } from './diff-schema.ts';
import type { DiffSide } from './diff.ts';
import { clusterAt, expectStep, type StepExpectation } from './expect.ts';
import { materializeCells } from './deferred-cells.ts';
import type { Cell, ResolvedScenario, ResolvedStep } from './resolve.ts';

/**
 * A side whose cells are not evaluated until something asks: the diff reads them through
 * computedSide(); `expectation` (every cell with its reason, as `scenario check` has it) is computed
 * on first use only, for callers that want it.
 */
export function diffSideAt(label: string, scenario: ResolvedScenario, step: ResolvedStep, ips: ReadonlyMap<string, string>): DiffSide {
  let expectation: StepExpectation | undefined;
  return {
    label,
    scenario,
    step,
    cluster: clusterAt(scenario, step, ips),
    get expectation() {
      return (expectation ??= expectStep(materializeCells(scenario), step, ips));
    },
  };
}

/** A cell as one side decides it: the NetworkPolicy verdict, and the tiered one when admin tiers are in force. */
export interface DecidedCell {
  verdict: Verdict;
  tiered?: TieredVerdict;
  /** What the side says: the tiered verdict's `allowed` when there is one, else the NetworkPolicy verdict's. */
  computed: boolean | null;
}

export class ComputedSide {
  readonly cluster: Cluster;
  readonly matrix: VerdictMatrix;
  readonly tiered?: TieredEvaluator;
  readonly #pods: Map<string, PodInfo>;
  readonly #reasons = new Map<Verdict, string>();

  constructor(side: DiffSide) {
    this.cluster = side.cluster ?? side.expectation.cluster;
    this.matrix = new VerdictMatrix(this.cluster, side.step.policies);
    if (side.step.clusterPolicies?.length || side.scenario.dns)
      this.tiered = new TieredEvaluator(this.cluster, side.step.policies, side.step.clusterPolicies ?? []);
    // The cluster's pods follow the scenario's in order (clusterAt).
    this.#pods = new Map(side.scenario.pods.map((p, i) => [p.id, this.cluster.pods[i]!]));
  }

  /** The pod of a scenario id (`ns/pod`, `external:<name>`), or undefined when this side has none. */
  pod(id: string): PodInfo | undefined {
    return this.#pods.get(id);
  }

  /** The NetworkPolicy verdict between two of this side's pods (a cell not made: model/diff-scale.ts). */
  verdictOf(from: PodInfo, to: PodInfo, port: number, protocol: Protocol): Verdict {
    return this.matrix.evaluate({ from, to, port, protocol });
  }

  /** The NetworkPolicy verdict of a cell: an interned object, the same for every cell of a class pair. */
  verdict(cell: Cell): Verdict {
    return this.matrix.evaluate({ from: this.#pods.get(cell.from)!, to: this.#pods.get(cell.to)!, port: cell.port, protocol: cell.protocol });
  }

  decide(cell: Cell): DecidedCell {
    const verdict = this.verdict(cell);
    if (!this.tiered) return { verdict, computed: verdict.allowed };
    const tiered = this.tiered.evaluate({ from: this.#pods.get(cell.from)!, to: this.#pods.get(cell.to)!, port: cell.port, protocol: cell.protocol });
    return { verdict, tiered, computed: tiered.allowed };
  }

  /** What the diff shows of a cell on this side: its verdict and reason, in expectStep's words. */
  side(cell: Cell, decided: DecidedCell = this.decide(cell)): CellSide {
    if (!decided.tiered) {
      let reason = this.#reasons.get(decided.verdict);
      if (reason === undefined) this.#reasons.set(decided.verdict, (reason = reasonLine(decided.verdict)));
      return { allowed: decided.computed, reason };
    }
    const egress = chainText('egress', this.#pods.get(cell.from)!, decided.tiered.egress);
    const ingress = chainText('ingress', this.#pods.get(cell.to)!, decided.tiered.ingress);
    return { allowed: decided.computed, reason: `egress: ${egress}; ingress: ${ingress}` };
  }
}

const computed = new WeakMap<DiffSide, ComputedSide>();

/** The side's matrix and evaluators, built once per side (the diff and the HTML page's cells share them). */
export function computedSide(side: DiffSide): ComputedSide {
  let c = computed.get(side);
  if (!c) computed.set(side, (c = new ComputedSide(side)));
  return c;
}

/** Every cell of the two sides with its verdict and reason on each (absent: the side has no such cell), for the HTML page. */
export function diffCells(
  base: DiffSide,
  head: DiffSide,
): { key: string; from: string; to: string; port: number; protocol: Protocol; before?: CellSide; after?: CellSide }[] {
  const cells = new Map<string, ReturnType<typeof diffCells>[number]>();
  for (const [side, which] of [
    [base, 'before'],
    [head, 'after'],
  ] as const) {
    const c = computedSide(side);
    for (const cell of materializeCells(side.scenario).cells) {
      const { key, from, to, port, protocol } = cell;
      const entry = cells.get(key) ?? { key, from, to, port, protocol };
      entry[which] = c.side(cell);
      cells.set(key, entry);
    }
  }
  return [...cells.values()];
}
