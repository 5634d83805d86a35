// `scenario diff BASE HEAD`: which flows a change opens or closes, with the deciding rules on both
// sides and the change behind each flip. Each side is a scenario file, a manifest file or folder,
// `-` (one side only) or `git:REF:PATH` (read from the repository's history, no checkout). The step
// compared is each side's last, or --step (or --base-step/--head-step). Computed, unless
// --isolation=netns: then BASE is deployed and observed, HEAD applied in place and observed again
// (run/diff-run.ts), and each flip's observation and every enforcement fault is in the report.
// Exit codes for CI: 0 no flips (or exactly the approved ones with --approve), 1 flips (or not as
// approved, or an enforcement fault), 2 bad input.
import { existsSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { ScenarioError } from '../errors.ts';
import { approveFlips } from '../model/approval.ts';
import { readAssertFile } from '../model/assert-file.ts';
import type { DiffSide } from '../model/diff.ts';
import { diffOf } from '../model/diff-scale.ts';
import { materializeCells } from '../model/deferred-cells.ts';
import { diffCells, diffSideAt } from '../model/diff-side.ts';
import { DIFF_LIMITS } from '../model/limits.ts';
import { ScenarioDiffSchema, type ScenarioDiff } from '../model/diff-schema.ts';
import { plannedAddresses, RUN_SUBNET } from '../model/addresses.ts';
import { expectStep } from '../model/expect.ts';
import { checkoutGitPath, parseGitRef } from '../model/git-sources.ts';
import { loadScenario, type LoadOptions } from '../model/load.ts';
import type { ResolvedScenario, ResolvedStep } from '../model/resolve.ts';
import { DIFF_FORMATS, type DiffView } from '../report/diff-formats.ts';
import type { ScenarioReportDoc } from '../report/results.ts';
import { inPlaceScenario, withIntents, withObservation } from '../run/diff-run.ts';
import { prefixFlag, subnetFlag } from '../../orchestrator/isolation/flags.ts';
import { findStep } from './explain.ts';
import { EXIT, fail, loadOptions, manifestOptions, scenarioRef } from './options.ts';
import { RunError, runLoaded } from './run.ts';
import { InspectError } from '../errors.ts';

/** One side as given: a scenario, read from a temporary copy for git sides (removed after). */
function readSide(label: string, opts: LoadOptions): ResolvedScenario {
  if (!parseGitRef(label)) return loadScenario(label, opts);
  const copy = checkoutGitPath(label);
  try {
    return loadScenario(copy.path, opts);
  } catch (err) {
    if (err instanceof ScenarioError) throw new ScenarioError(copy.label(err.message));
    throw err;
  } finally {
    copy.remove();
  }
}

const stepOf = (scenario: ResolvedScenario, step: string | undefined): ResolvedStep =>
  step === undefined ? scenario.steps[scenario.steps.length - 1]! : findStep(scenario, step);

/** One side, read and computed at its step; git sides are read from a temporary copy, removed after. */
export function diffSide(label: string, step: string | undefined, opts: LoadOptions): DiffSide {
  const scenario = readSide(label, opts);
  const at = stepOf(scenario, step);
  // Address-dependent cells (ipBlocks) are decided with the addresses a run would assign, as check does.
  let ips = new Map<string, string>();
  try {
    ips = plannedAddresses(scenario.pods);
  } catch {
    /* more pods than the run's subnet holds: those cells stay undecided, and are counted */
  }
  return diffSideAt(label, scenario, at, ips);
}

export interface DiffArgs {
  base: string;
  head: string;
  step?: string;
  baseStep?: string;
  headStep?: string;
  reportMd?: string;
  reportJson?: string;
  reportJunit?: string;
  reportHtml?: string;
  approve?: string;
  namespace?: string;
  replicas?: boolean;
  /** netns: prove the flips on packets (BASE deployed, HEAD applied in place); off: computed only. */
  isolation?: 'off' | 'netns';
  netnsPrefix?: string;
  netnsSubnet?: string;
  stepTimeout?: number;
}

/** The diff of two sides, or a ScenarioError/InspectError saying which input is wrong. */
export function diffCommand(a: DiffArgs): ScenarioDiff {
  return diffView(a).diff;
}

/** The diff and every cell of both sides (for the HTML page). */
export function diffView(a: DiffArgs): DiffView {
  if (a.base === '-' && a.head === '-') throw new ScenarioError('only one side can be read from stdin (-)');
  // Computed only, each side a verdict matrix: bounds of its own (model/limits.ts).
  // A manifest set's cells are not made, but read as lookups (model/diff-scale.ts).
  const opts = { ...loadOptions(a as unknown as Record<string, unknown>), computedOnly: true, limits: DIFF_LIMITS, deferManifestCells: true };
  return viewOf(diffSide(a.base, a.baseStep ?? a.step, opts), diffSide(a.head, a.headStep ?? a.step, opts), a.approve);
}

function viewOf(base: DiffSide, head: DiffSide, approve: string | undefined): DiffView {
  const diff = diffOf(base, head);
  if (approve !== undefined) diff.approval = approveFlips(diff, readAssertFile(approve), { scenario: materializeCells(head.scenario), step: head.step });
  // Every cell of both sides only for the one format that draws them (HTML).
  let cells: DiffView['cells'] | undefined;
  return {
    diff,
    get cells() {
      return (cells ??= diffCells(base, head));
    },
  };
}

/**
 * The diff proven on packets: both sides read with a run's bounds and computed with the addresses
 * the run assigns (the pods of both sides, BASE's first), then run as one two-step scenario on the
 * bundled orchestrator with isolation. Throws ScenarioError/InspectError (bad input) or RunError
 * (cannot run here).
 */
export async function observedDiffView(a: DiffArgs): Promise<DiffView & { stoppedExit?: number }> {
  if (a.base === '-' && a.head === '-') throw new ScenarioError('only one side can be read from stdin (-)');
  const opts = loadOptions(a as unknown as Record<string, unknown>);
  const sides = [
    [a.base, a.baseStep ?? a.step],
    [a.head, a.headStep ?? a.step],
  ].map(([label, step]) => {
    const scenario = readSide(label!, opts);
    return { label: label!, scenario, step: stepOf(scenario, step) };
  });
  const combined = inPlaceScenario(sides[0]!, sides[1]!);
  let ips: Map<string, string>;
  try {
    ips = plannedAddresses(combined.pods, a.netnsSubnet ?? RUN_SUBNET);
  } catch (err) {
    throw new ScenarioError(`--isolation=netns: the pods of both sides: ${(err as Error).message}`);
  }
  const [base, head] = sides.map((side): DiffSide => ({ ...side, expectation: expectStep(side.scenario, side.step, ips) }));
  const view = viewOf(base!, head!, a.approve);
  const scenario = withIntents(combined, base!.expectation, head!.expectation);
  let report: ScenarioReportDoc | undefined;
  const code = await runLoaded(
    {
      scenario: scenario.name,
      uid: 'admin',
      isolation: 'netns',
      pause: 0,
      keep: false,
      hold: false,
      // Nothing to watch: no ports published on the host.
      publishAddress: 'off',
      ...(a.netnsPrefix ? { netnsPrefix: a.netnsPrefix } : {}),
      ...(a.netnsSubnet ? { netnsSubnet: a.netnsSubnet } : {}),
      ...(a.stepTimeout ? { stepTimeout: a.stepTimeout } : {}),
    },
    { scenarios: [scenario] },
    { onReports: (reports) => (report = reports[0]) },
  );
  if (!report) throw new RunError('the run of BASE and HEAD gave no report');
  // Stopped by a signal (130 Ctrl-C, 143 SIGTERM): the command exits so, as scenario run does.
  return { ...view, diff: withObservation(view.diff, scenario, report), ...(code >= 128 ? { stoppedExit: code } : {}) };
}

/** 0 no flips (or exactly the approved ones), 1 otherwise or on an enforcement fault. */
export function diffExitCode(d: ScenarioDiff): number {
  if (d.observation?.outcome === 'fail') return EXIT.fail;
  return d.approval ? (d.approval.passed ? 0 : 1) : d.counts.flips === 0 ? 0 : 1;
}

export const diffCommandModule: CommandModule = {
  command: 'diff <base> <head>',
  describe:
    'which flows a change opens or closes: each flip with the deciding rules before and after and the change that caused it (computed; --isolation=netns proves it on packets); exits 0 with no flips, 1 with flips or an enforcement fault, 2 on bad input',
  builder: (y: Argv) =>
    y
      .positional('base', {
        type: 'string',
        demandOption: true,
        describe: 'before: a scenario file, manifests (a file, a folder, -), a built-in, or git:REF:PATH',
      })
      .positional('head', { type: 'string', demandOption: true, describe: 'after: the same forms' })
      .options(manifestOptions)
      .option('step', { type: 'string', describe: 'the step compared on both sides (name or number; default: each side’s last)' })
      .option('base-step', { type: 'string', describe: 'the step compared on BASE' })
      .option('head-step', { type: 'string', describe: 'the step compared on HEAD' })
      .option('report-md', { type: 'string', describe: 'write a pull-request comment (Markdown, bounded in size) here' })
      .option('report-json', { type: 'string', describe: 'write the whole diff as JSON here (schema: scenario diff-schema)' })
      .option('report-junit', { type: 'string', describe: 'write JUnit XML here: one test case per flip' })
      .option('approve', {
        type: 'string',
        describe: 'a YAML list of the flips meant (allow: / deny: statements, as --assert): passes (exit 0) when the flips are exactly those',
      })
      .option('report-html', {
        type: 'string',
        describe: 'write a self-contained HTML page here: the two matrices side by side, flips marked, reasons on hover',
      })
      .option('isolation', {
        choices: ['off', 'netns'] as const,
        default: 'off' as const,
        describe:
          'netns: prove it on packets (root, iproute2, nftables): deploy BASE and observe every cell, apply HEAD in place and observe again; a flip the packets did not make, or one they made that the policies do not, fails the command',
      })
      .option('netns-prefix', {
        type: 'string',
        describe: 'with --isolation=netns: prefix of what the bundled orchestrator creates (default smap)',
        coerce: prefixFlag('netns-prefix'),
      })
      .option('netns-subnet', {
        type: 'string',
        describe: 'with --isolation=netns: the task subnet of the bundled orchestrator (default 10.213.0.0/24)',
        coerce: subnetFlag('netns-subnet'),
      })
      .option('step-timeout', { type: 'number', describe: 'with --isolation=netns: seconds each side may take to settle (as scenario run)' })
      .check((a) => {
        if (a.stepTimeout != null && !(Number(a.stepTimeout) > 0)) throw new Error('invalid value for --step-timeout: expected seconds > 0');
        return true;
      }),
  handler: async (a) => {
    let view: DiffView & { stoppedExit?: number };
    const args = { ...(a as unknown as DiffArgs), base: scenarioRef(a.base), head: scenarioRef(a.head) };
    // A report that cannot be written is said before a run on packets, not after it.
    if (args.isolation === 'netns')
      for (const [flag, file] of Object.entries({
        '--report-md': a.reportMd,
        '--report-json': a.reportJson,
        '--report-junit': a.reportJunit,
        '--report-html': a.reportHtml,
      }))
        if (typeof file === 'string' && !existsSync(dirname(file))) fail(`${flag}: no directory ${dirname(file)}`);
    try {
      view = args.isolation === 'netns' ? await observedDiffView(args) : diffView(args);
    } catch (err) {
      if (err instanceof ScenarioError || err instanceof InspectError || err instanceof RunError) fail(err.message);
      throw err;
    }
    for (const [file, format] of [
      [a.reportMd, 'md'],
      [a.reportJson, 'json'],
      [a.reportJunit, 'junit'],
      [a.reportHtml, 'html'],
    ] as const)
      if (typeof file === 'string') {
        try {
          writeFileSync(file, DIFF_FORMATS[format](view));
        } catch (err) {
          fail(`${file}: cannot write: ${(err as Error).message}`);
        }
      }
    const d = view.diff;
    process.stdout.write(`${DIFF_FORMATS.text(view)}\n`);
    process.exitCode = view.stoppedExit ?? diffExitCode(d);
  },
};

export const diffSchemaCommand: CommandModule = {
  command: 'diff-schema',
  describe: 'print the JSON Schema of the diff report (scenario diff --report-json)',
  handler: () => {
    process.stdout.write(`${JSON.stringify(ScenarioDiffSchema, null, 2)}\n`);
  },
};
