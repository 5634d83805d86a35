// A step's intents (`assert:` in the step, and `--assert FILE`): each statement (statements.ts)
// resolved against the step's pods and labels in force, its cells added to the step's intended
// verdicts, so that they are judged like a hand-written matrix (intended != computed before
// anything runs, computed != observed on packets). A step with a matrix and intents judges both;
// a cell the two (or two intents) give different verdicts is an error naming both. A step with
// intents and no matrix judges its other cells against what the policies compute, as `computed`
// does. Pure; problems are returned for the caller to say where they are.
import type { Cell, ResolvedScenario, ResolvedStep } from './resolve.ts';
import { absentAt } from './step-workloads.ts';
import { parseStatement, statementCells, StatementError, type StatementWorld } from './statements.ts';

/** One intent of a step, as the reports show it: the statement and the cells behind it. */
export interface StepAssertion {
  /** `deny: * -> shop/db except shop/api` */
  statement: string;
  /** Where it was written: `steps/1/assert/0` or `asserts.yaml #2`. */
  source: string;
  verdict: 'allow' | 'deny';
  /** Cell keys it judges. */
  cells: string[];
}

export interface StatementInput {
  doc: unknown;
  /** How a message names it (a JSON pointer into the scenario file, or a file and entry). */
  where: string;
  /** How the reports name it. */
  source: string;
}

/** The endpoints external to the pods are the cells' `external:<name>` ends (whatever the model has). */
export function externalsOf(cells: readonly Cell[]): string[] {
  const names = new Set<string>();
  for (const c of cells) for (const end of [c.from, c.to]) if (end.startsWith('external:')) names.add(end.slice('external:'.length));
  return [...names];
}

/** What a step's statements resolve against: the pods there at that step (a later step's workloads are not). */
export function statementWorld(s: Pick<ResolvedScenario, 'pods' | 'cells'>, step: Pick<ResolvedStep, 'podLabels' | 'index'>): StatementWorld {
  const absent = absentAt(s.pods, step.index);
  const cells = s.cells.filter((c) => !absent.has(c.from) && !absent.has(c.to));
  return { pods: s.pods.filter((p) => !absent.has(p.id)), podLabels: step.podLabels, externals: externalsOf(cells), cells };
}

const cellName = (c: Cell) => `${c.from} -> ${c.to} ${c.port}/${c.protocol}`;
const word = (v: boolean) => (v ? 'allowed' : 'blocked');

/**
 * Adds the statements' cells to `step.intended` (in place) and returns the step's assertions and
 * the problems (`where: message`). `handWritten` names the step's own expectation in conflicts.
 */
export function applyAssertions(
  s: Pick<ResolvedScenario, 'pods' | 'cells'>,
  step: ResolvedStep,
  inputs: readonly StatementInput[],
  handWritten = "the step's expect",
): { assertions: StepAssertion[]; problems: { input: StatementInput; message: string }[] } {
  const problems: { input: StatementInput; message: string }[] = [];
  const assertions: StepAssertion[] = [];
  if (inputs.length === 0) return { assertions, problems };
  const world = statementWorld(s, step);
  const intended = step.intended ?? new Map<string, boolean>();
  // Who set each verdict, to name both sides of a conflict.
  const origin = new Map<string, string>([...intended.keys()].map((k) => [k, handWritten]));
  for (const a of step.assertions ?? []) for (const k of a.cells) origin.set(k, `"${a.statement}" (${a.source})`);
  for (const input of inputs) {
    try {
      const st = parseStatement(input.doc, input.where);
      const cells = statementCells(st, world);
      for (const c of cells) {
        const before = intended.get(c.key);
        if (before !== undefined && before !== c.intended) {
          problems.push({
            input,
            message: `"${st.text}" intends ${cellName(c.cell)} ${word(c.intended)}, but ${origin.get(c.key)} intends it ${word(before)}: say it once`,
          });
          continue;
        }
        intended.set(c.key, c.intended);
        origin.set(c.key, before === undefined ? `"${st.text}" (${input.source})` : origin.get(c.key)!);
      }
      assertions.push({ statement: st.text, source: input.source, verdict: st.verdict, cells: cells.map((c) => c.key) });
    } catch (err) {
      if (!(err instanceof StatementError)) throw err;
      const prefix = `${input.where}: `;
      problems.push({ input, message: err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message });
    }
  }
  if (step.intended === null) {
    step.intended = intended;
    step.computedRest = true;
  }
  step.assertions = [...(step.assertions ?? []), ...assertions];
  return { assertions, problems };
}
