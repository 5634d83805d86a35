// `scenario observe FILE --collector URL [--step NAME]`: the step in force on a cluster where the
// scenario's export runs (docs/kubernetes.md), judged from the observer's /responses with the same
// tables and reports as `run`. Only checks that start after the command does count, so apply the
// step's policies first; it waits until every cell has such a value and the judged ones are as
// expected, or the step's timeout.
import type { Argv, CommandModule } from 'yargs';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { REPORT_FORMATS } from '../report/formats.ts';
import { stepText, type ScenarioReportDoc } from '../report/results.ts';
import { LEGEND } from '../report/truth-table.ts';
import type { ResolvedScenario } from '../model/resolve.ts';
import { exportScenario } from '../run/kubernetes-manifests.ts';
import { EVIDENCE_NOTICE, observeStep, readCollector } from '../run/kubernetes-observe.ts';
import { emptyReport, scenarioOutcome, settleBudgetMs } from '../run/steps.ts';
import { EXIT, fail, load, loadOptions, manifestOptions, scenarioPositional, scenarioRef } from './options.ts';
import { TerminalLines } from './terminal.ts';

/** A step by name or by number (1-based); exit 2 listing the steps when there is none. */
export function stepIndex(s: ResolvedScenario, ref: unknown): number {
  if (ref === undefined) return 0;
  const text = String(ref);
  const i = /^\d+$/.test(text) ? Number(text) - 1 : s.steps.findIndex((st) => st.name === text);
  if (i < 0 || i >= s.steps.length)
    fail(`--step ${JSON.stringify(text)}: ${s.name} has no such step (steps: ${s.steps.map((st, k) => `${k + 1} ${st.name}`).join(', ')})`);
  return i;
}

/** The deadline of a step as `run` sets it: its timeout, else --step-timeout, else four settle budgets (at least 10 s). */
export const stepDeadlineMs = (s: ResolvedScenario, i: number, flag?: number): number =>
  (s.steps[i]!.timeoutSeconds ?? flag ?? Math.max(10, (4 * settleBudgetMs(s)) / 1000)) * 1000;

/** The --report-json/--report-junit/--report-html flags given: flag, file, format. */
export function reportFlags(a: { [k: string]: unknown }): [string, string, 'json' | 'junit' | 'html'][] {
  const all: [string, unknown, 'json' | 'junit' | 'html'][] = [
    ['--report-json', a.reportJson, 'json'],
    ['--report-junit', a.reportJunit, 'junit'],
    ['--report-html', a.reportHtml, 'html'],
  ];
  return all.flatMap(([flag, file, format]) => (typeof file === 'string' ? [[flag, file, format] as [string, string, 'json' | 'junit' | 'html']] : []));
}

export function checkReportPaths(a: { [k: string]: unknown }): void {
  for (const [flag, file] of reportFlags(a)) if (!existsSync(dirname(file))) fail(`${flag}: no directory ${dirname(file)}`);
}

export function writeReports(a: { [k: string]: unknown }, doc: ScenarioReportDoc): void {
  for (const [, file, format] of reportFlags(a)) writeFileSync(file, REPORT_FORMATS[format](doc));
}

export const observeCommand: CommandModule = {
  command: 'observe <scenario>',
  describe: 'judge the step in force on a cluster from the exported observer (scenario export; docs/kubernetes.md): the same tables and reports as run',
  builder: (y: Argv) =>
    y
      .positional('scenario', scenarioPositional)
      .options(manifestOptions)
      .option('collector', {
        type: 'string',
        demandOption: true,
        describe: 'URL of the observer (kubectl port-forward -n starmap-<scenario> service/starmap-observer 19091: http://127.0.0.1:19091)',
      })
      .option('step', { type: 'string', describe: 'the step in force, by name or number (default: the first)' })
      .option('step-timeout', { type: 'number', describe: 'seconds to wait for the cells (default: as run)' })
      .option('report-json', { type: 'string', describe: 'write the JSON report here' })
      .option('report-junit', { type: 'string', describe: 'write a JUnit XML report here' })
      .option('report-html', { type: 'string', describe: 'write a self-contained HTML report here' })
      .check((a) => {
        if (a.stepTimeout != null && !(Number(a.stepTimeout) > 0)) throw new Error('invalid value for --step-timeout: expected seconds > 0');
        if (!/^https?:\/\/[^/\s]+/.test(String(a.collector)))
          throw new Error(`invalid value for --collector: ${JSON.stringify(a.collector)} (expected http://HOST:PORT)`);
        return true;
      }),
  handler: async (a) => {
    const s = load(scenarioRef(a.scenario), loadOptions(a));
    const i = stepIndex(s, a.step);
    checkReportPaths(a);
    const { plan } = exportScenario(s);
    const terminal = new TerminalLines(process.stdout);
    const url = String(a.collector);
    const report = emptyReport(s, true, true);
    report.notices.push(EVIDENCE_NOTICE);
    terminal.log(
      `observing step ${i + 1}/${s.steps.length} ${s.steps[i]!.name} of ${s.name} through ${url}${a.step === undefined && s.steps.length > 1 ? ' (--step for another)' : ''}`,
    );
    const ac = new AbortController();
    const stop = () => ac.abort();
    process.once('SIGINT', stop);
    const { result, blockedWithoutControl } = await observeStep({
      scenario: s,
      stepIndex: i,
      read: () => readCollector(url, plan),
      since: Date.now(),
      deadlineMs: stepDeadlineMs(s, i, a.stepTimeout as number | undefined),
      progress: terminal.progress,
      signal: ac.signal,
    });
    process.off('SIGINT', stop);
    terminal.clear();
    if (blockedWithoutControl.length > 0)
      report.notices.push(`step ${result.name}: blocked without a positive control (not evidence of the policy): ${blockedWithoutControl.join(', ')}`);
    report.steps.push(result);
    report.outcome = scenarioOutcome(report);
    report.passed = report.outcome === 'pass';
    report.failure = result.failure;
    report.finishedAt = new Date().toISOString();
    terminal.log(LEGEND);
    terminal.log(stepText(result, s.steps.length));
    for (const n of report.notices) terminal.log(`note: ${n}`);
    writeReports(a, report);
    process.exitCode = ac.signal.aborted ? 130 : result.outcome === 'fail' ? EXIT.fail : result.outcome === 'pass' ? EXIT.pass : EXIT.computedOnly;
  },
};
