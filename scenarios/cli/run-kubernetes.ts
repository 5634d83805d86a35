// `scenario run FILE --kubernetes`: run/kubernetes.ts for each scenario of the file, directory or
// set, one after the other (each its own export, deployed and removed), with the reports and exit
// codes of `run`. Ctrl-C stops the step being observed and removes what was made.
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { ScenarioError } from '../errors.ts';
import { tmpdir } from 'node:os';
import { basename, delimiter, join } from 'node:path';
import { loadTargets } from '../model/load.ts';
import type { ResolvedScenario } from '../model/resolve.ts';
import { REPORT_FORMATS } from '../report/formats.ts';
import { scenarioSummaryLine, type ScenarioReportDoc } from '../report/results.ts';
import type { SetReportDoc } from '../report/schema.ts';
import { runKubernetes } from '../run/kubernetes.ts';
import { addAssertFile, EXIT, externalFlags } from './options.ts';
import { TerminalLines } from './terminal.ts';

export interface KubernetesRunArgs {
  scenario: string;
  kubectl?: string;
  image?: string;
  stepTimeout?: number;
  keep: boolean;
  namespace?: string;
  replicas?: boolean;
  external?: string[];
  assert?: string;
  reportJson?: string;
  reportJunit?: string;
  reportHtml?: string;
}

/** Is `program` (a path, or a name looked up on $PATH) an executable file? */
function executable(program: string): boolean {
  const ok = (f: string) => {
    try {
      accessSync(f, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  return program.includes('/') ? ok(program) : (process.env.PATH ?? '').split(delimiter).some((d) => d !== '' && ok(join(d, program)));
}

/** Runs the scenarios on the cluster kubectl points at; the exit code of run. Throws ScenarioError (model/) on bad input. */
export async function runOnKubernetes(args: KubernetesRunArgs): Promise<number> {
  const targets = loadTargets(args.scenario, {
    ...(args.namespace !== undefined ? { namespace: args.namespace } : {}),
    ...(args.replicas ? { replicas: true } : {}),
    ...(args.external?.length ? { externals: externalFlags(args.external) } : {}),
  });
  addAssertFile(targets.scenarios, args.assert);
  const terminal = new TerminalLines(process.stdout);
  const program = args.kubectl ?? process.env.KUBECTL ?? 'kubectl';
  if (!executable(program)) throw new ScenarioError(`--kubernetes: no kubectl program ${JSON.stringify(program)} (give --kubectl PATH or set $KUBECTL)`);
  const ac = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => ac.abort(signal);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const startedAt = new Date().toISOString();
  const reports: ScenarioReportDoc[] = [];
  try {
    for (const s of targets.scenarios as ResolvedScenario[]) {
      if (ac.signal.aborted) break;
      if (targets.set) terminal.log(`\n== ${s.name}`);
      const workDir = mkdtempSync(join(tmpdir(), `starmap-k8s-${basename(s.name)}-`));
      try {
        reports.push(
          await runKubernetes({
            scenario: s,
            kubectl: program,
            workDir: join(workDir, 'export'),
            ...(args.image ? { image: args.image } : {}),
            ...(args.stepTimeout ? { stepTimeoutSeconds: args.stepTimeout } : {}),
            keep: args.keep,
            log: terminal.log,
            progress: terminal.progress,
            signal: ac.signal,
          }),
        );
      } finally {
        rmSync(workDir, { recursive: true, force: true });
      }
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  terminal.clear();
  const doc: ScenarioReportDoc | SetReportDoc = targets.set
    ? { set: targets.set, startedAt, finishedAt: new Date().toISOString(), passed: reports.every((r) => r.passed), scenarios: reports }
    : reports[0]!;
  for (const [file, format] of [
    [args.reportJson, 'json'],
    [args.reportHtml, 'html'],
    [args.reportJunit, 'junit'],
  ] as const)
    if (file && reports.length > 0) writeFileSync(file, REPORT_FORMATS[format](doc));
  terminal.log('');
  for (const [i, r] of reports.entries()) terminal.log(scenarioSummaryLine(r, targets.scenarios[i]!.steps.length));
  if (ac.signal.aborted) return ac.signal.reason === 'SIGTERM' ? 143 : 130;
  if (reports.some((r) => r.outcome === 'fail')) return EXIT.fail;
  return reports.every((r) => r.outcome === 'pass') ? EXIT.pass : EXIT.computedOnly;
}
