// `scenario diff --approve FILE`: the flips the author meant, in the statement form of intents
// (statements.ts; the same file form as `--assert`). A statement approves the flips among its cells
// that went its way (`allow:` a flip to allowed, `deny:` a flip to blocked); the diff passes when
// every flip is approved by some statement and every statement approves some flip. A statement
// that matches no cell at all is bad input, as for intents. Statements are resolved against HEAD:
// the pods and labels of the step compared there. Pure.
import { ScenarioError } from '../errors.ts';
import type { AssertFile } from './assert-file.ts';
import { statementWorld } from './assertions.ts';
import type { ScenarioDiff } from './diff-schema.ts';
import type { ResolvedScenario, ResolvedStep } from './resolve.ts';
import { parseStatement, statementCells, StatementError } from './statements.ts';

export function approveFlips(
  diff: ScenarioDiff,
  file: AssertFile,
  head: { scenario: ResolvedScenario; step: ResolvedStep },
): NonNullable<ScenarioDiff['approval']> {
  // A list applies to the diff; a map names the step compared on HEAD (one diff, one step).
  const keys = [...file.byStep.keys()];
  const inputs = file.byStep.get(null) ?? file.byStep.get(head.step.name);
  if (!inputs)
    throw new ScenarioError(
      `${file.file}: no statements for the step compared on HEAD, ${JSON.stringify(head.step.name)} (the file names ${keys.map((k) => JSON.stringify(k)).join(', ')})`,
    );
  const world = statementWorld(head.scenario, head.step);
  const flips = new Map(diff.flips.map((f) => [f.key, f]));
  const approved = new Set<string>();
  const missing: string[] = [];
  for (const input of inputs) {
    try {
      const st = parseStatement(input.doc, input.where);
      const ways = statementCells(st, world).filter((c) => flips.get(c.key)?.after.allowed === c.intended);
      if (ways.length === 0) missing.push(st.text);
      for (const c of ways) approved.add(c.key);
    } catch (err) {
      if (err instanceof StatementError) throw new ScenarioError(err.message.startsWith(input.where) ? err.message : `${input.where}: ${err.message}`);
      throw err;
    }
  }
  const unapproved = diff.flips.filter((f) => !approved.has(f.key)).map((f) => f.key);
  return { file: file.file, passed: unapproved.length === 0 && missing.length === 0, unapproved, missing };
}
