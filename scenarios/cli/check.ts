// `scenario check FILE`: every step's computed tables beside the intended ones, and whether the
// policies say what the scenario intends, without deploying anything (no root needed).
import type { Argv, CommandModule } from 'yargs';
import { plural } from '../../shared/plural.ts';
import { expectStep } from '../model/expect.ts';
import type { ResolvedScenario } from '../model/resolve.ts';
import { cellResults, failureLine, stepResult } from '../report/results.ts';
import { assertionLines, ruleLines } from '../report/intents.ts';
import { LEGEND } from '../report/truth-table.ts';
import { notRunCells, settleBudgetMs } from '../run/steps.ts';
import { assertOption, loadAsserted, manifestOptions, scenarioPositional, scenarioRef } from './options.ts';

/** Every step's tables and whether intended = computed; `ok` false on a policy-writing mistake. */
export function checkScenario(s: ResolvedScenario): { ok: boolean; text: string } {
  // Manifests: what was read, ignored and noted comes first.
  const out = [...(s.manifests ? [...s.manifests, ''] : []), LEGEND];
  let ok = true;
  for (const step of s.steps) {
    const exp = expectStep(s, step);
    const cells = cellResults(exp, notRunCells(exp, true));
    const result = stepResult(exp, s.pods, cells, { settled: null, durationMs: null, budgetMs: settleBudgetMs(s), lastFlipMs: null, observed: false });
    const judged = exp.cells.filter((c) => c.intended !== null).length;
    const head = `step ${step.index + 1}/${s.steps.length} ${step.name}`;
    if (exp.mistakes.length > 0) {
      ok = false;
      out.push(
        '',
        `${head}: FAIL: intended != computed at ${plural(exp.mistakes.length, 'cell')} (a policy-writing mistake)`,
        result.tables,
        ...cells.filter((c) => c.status === 'intended != computed').map((c) => `  ${failureLine(c)}`),
      );
    } else
      out.push(
        '',
        `${head}: ${step.intended ? `intended = computed (${plural(judged, 'judged cell')})` : `computed (${plural(exp.cells.length, 'cell')})`}`,
        result.tables,
      );
    // Intents (a failing one names its cells) and every rule with the cells it allowed, dead ones said.
    out.push(...assertionLines(result.assertions ?? [], false), ...ruleLines(result.rules ?? []));
  }
  out.push('', ok ? `${s.name}: the policies say what every step intends` : `${s.name}: FAIL: intended != computed (a policy-writing mistake)`);
  return { ok, text: out.join('\n') };
}

export const checkCommand: CommandModule = {
  command: 'check <scenario>',
  describe:
    "show every step's computed truth tables (and the intended ones) without deploying anything; exits 1 when the policies do not say what the scenario intends",
  builder: (y: Argv) => y.positional('scenario', scenarioPositional).options(manifestOptions).options(assertOption),
  handler: (a) => {
    const r = checkScenario(loadAsserted(scenarioRef(a.scenario), a));
    process.stdout.write(`${r.text}\n`);
    process.exitCode = r.ok ? 0 : 1;
  },
};
