// `scenario check FILE`: every step's computed tables beside the intended ones, and whether the
// policies say what the scenario intends, without deploying anything (no root needed).
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { plural } from '../../shared/plural.ts';
import { expectStep } from '../model/expect.ts';
import type { ResolvedScenario } from '../model/resolve.ts';
import { cellResults, failureLine, stepResult } from '../report/results.ts';
import { assertionLines, ruleLines } from '../report/intents.ts';
import { LEGEND } from '../report/truth-table.ts';
import { CNP_CONFORMANCE_VERSION, conformanceReportYaml } from '../report/conformance.ts';
import type { ScenarioReportDoc } from '../report/schema.ts';
import { emptyReport, notRunCells, settleBudgetMs } from '../run/steps.ts';
import { loadTargets } from '../model/load.ts';
import { PodNames } from '../model/matrix.ts';
import { ScenarioError } from '../errors.ts';
import { InspectError, parseIps } from './explain.ts';
import { VERSION } from '../../shared/version.ts';
import { addAssertFile, assertOption, fail, loadOptions, manifestOptions, scenarioPositional, scenarioRef } from './options.ts';


/** Every step's tables and whether intended = computed; `ok` false on a policy-writing mistake. */
export function checkScenario(s: ResolvedScenario, ips?: ReadonlyMap<string, string>): { ok: boolean; text: string; report: ScenarioReportDoc } {
  // Manifests: what was read, ignored and noted comes first.
  const out = [...(s.manifests ? [...s.manifests, ''] : []), LEGEND];
  let ok = true;
  const report = emptyReport(s, false, false);
  for (const step of s.steps) {
    const exp = expectStep(s, step, ips);
    const cells = cellResults(exp, notRunCells(exp, true));
    const result = stepResult(exp, s.pods, cells, { settled: null, durationMs: null, budgetMs: settleBudgetMs(s), lastFlipMs: null, observed: false });
    report.steps.push(result);
    const judged = exp.cells.filter((c) => c.intended !== null).length;
    const head = `step ${step.index + 1}/${s.steps.length} ${step.name}`;
    const order = exp.cells.filter((c) => c.orderDependsOn);
    const orderLines =
      order.length > 0
        ? [
            `${plural(order.length, 'cell')} depend on an order upstream leaves undefined (admin-tier policies of one tier and priority that disagree):`,
            ...order.slice(0, 10).map((c) => `  ${c.cell.from} -> ${c.cell.to} ${c.cell.port}/${c.cell.protocol}: ${c.orderDependsOn!.join(', ')}`),
            ...(order.length > 10 ? [`  … and ${order.length - 10} more (see the JSON report's orderDependsOn)`] : []),
          ]
        : [];
    if (exp.mistakes.length > 0) {
      ok = false;
      out.push(
        '',
        `${head}: FAIL: intended != computed at ${plural(exp.mistakes.length, 'cell')} (a policy-writing mistake)`,
        result.tables,
        ...cells.filter((c) => c.status === 'intended != computed').map((c) => `  ${failureLine(c)}`),
        ...orderLines,
      );
    } else
      out.push(
        '',
        `${head}: ${step.intended ? `intended = computed (${plural(judged, 'judged cell')})` : `computed (${plural(exp.cells.length, 'cell')})`}`,
        result.tables,
        ...orderLines,
      );
    // Intents (a failing one names its cells) and every rule with the cells it allowed, dead ones said.
    out.push(...assertionLines(result.assertions ?? [], false), ...ruleLines(result.rules ?? []));
  }
  out.push('', ok ? `${s.name}: the policies say what every step intends` : `${s.name}: FAIL: intended != computed (a policy-writing mistake)`);
  report.failure = ok ? null : 'intended != computed';
  report.outcome = ok ? 'not run' : 'fail';
  return { ok, text: out.join('\n'), report };
}

export const checkCommand: CommandModule = {
  command: 'check <scenario>',
  describe:
    "show every step's computed truth tables (and the intended ones) without deploying anything; exits 1 when the policies do not say what the scenario intends",
  builder: (y: Argv) =>
    y
      .positional('scenario', { ...scenarioPositional, describe: `${scenarioPositional.describe}, or a set (a built-in folder such as cnp-conformance, a directory)` })
      .options(manifestOptions)
      .options(assertOption)
      .option('ip', {
        type: 'string',
        array: true,
        default: [] as string[],
        describe: 'ns/pod=address, for ipBlocks and networks peers (addresses are otherwise known only once deployed)',
      })
      .option('report-conformance', {
        type: 'string',
        describe:
          'write the ConformanceReport YAML of upstream’s ClusterNetworkPolicy suite (the set cnp-conformance) here; computed results are reported skipped, never passed',
      }),
  handler: (a) => {
    const ref = scenarioRef(a.scenario);
    let targets: { set?: string; scenarios: ResolvedScenario[] };
    try {
      targets = loadTargets(ref, { ...loadOptions(a), computedOnly: true });
      addAssertFile(targets.scenarios, a.assert);
    } catch (err) {
      if (err instanceof ScenarioError) fail(err.message);
      throw err;
    }
    const reports: ScenarioReportDoc[] = [];
    let ok = true;
    for (const s of targets.scenarios) {
      let ips: Map<string, string>;
      try {
        ips = parseIps(a.ip as string[], new PodNames(s.pods));
      } catch (err) {
        if (err instanceof InspectError) fail(`${s.file}: ${err.message}`);
        throw err;
      }
      const r = checkScenario(s, ips);
      process.stdout.write(`${targets.set ? `\n== ${s.name}\n` : ''}${r.text}\n`);
      reports.push(r.report);
      ok &&= r.ok;
    }
    if (targets.set) process.stdout.write(`\n${targets.set}: ${reports.filter((r) => r.outcome !== 'fail').length} of ${reports.length} scenarios say what they intend\n`);
    if (typeof a.reportConformance === 'string') {
      if (!existsSync(join(a.reportConformance, '..'))) fail(`--report-conformance: no directory ${join(a.reportConformance, '..')}`);
      writeFileSync(
        a.reportConformance,
        conformanceReportYaml(reports, { mode: 'computed', date: new Date().toISOString(), version: VERSION, apiVersion: CNP_CONFORMANCE_VERSION }),
      );
    }
    process.exitCode = ok ? 0 : 1;
  },
};
