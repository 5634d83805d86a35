// `scenario diff BASE HEAD`: which flows a change opens or closes, with the deciding rules on both
// sides and the change behind each flip. Each side is a scenario file, a manifest file or folder,
// `-` (one side only) or `git:REF:PATH` (read from the repository's history, no checkout). Computed
// only: the step compared is each side's last, or --step (or --base-step/--head-step). Exit codes
// for CI: 0 no flips (or exactly the approved ones with --approve), 1 flips (or not as approved),
// 2 bad input.
import { writeFileSync } from 'node:fs';
import type { Argv, CommandModule } from 'yargs';
import { ScenarioError } from '../errors.ts';
import { approveFlips } from '../model/approval.ts';
import { readAssertFile } from '../model/assert-file.ts';
import { diffSides, type DiffSide } from '../model/diff.ts';
import { diffCells, diffSideAt } from '../model/diff-side.ts';
import { DIFF_LIMITS } from '../model/limits.ts';
import { ScenarioDiffSchema, type ScenarioDiff } from '../model/diff-schema.ts';
import { plannedAddresses } from '../model/addresses.ts';
import { checkoutGitPath, parseGitRef } from '../model/git-sources.ts';
import { loadScenario, type LoadOptions } from '../model/load.ts';
import type { ResolvedScenario } from '../model/resolve.ts';
import { DIFF_FORMATS, type DiffView } from '../report/diff-formats.ts';
import { findStep } from './explain.ts';
import { fail, loadOptions, manifestOptions, scenarioRef } from './options.ts';
import { InspectError } from '../errors.ts';

/** One side, read and computed at its step; git sides are read from a temporary copy, removed after. */
export function diffSide(label: string, step: string | undefined, opts: LoadOptions): DiffSide {
  let scenario: ResolvedScenario;
  if (parseGitRef(label)) {
    const copy = checkoutGitPath(label);
    try {
      scenario = loadScenario(copy.path, opts);
    } catch (err) {
      if (err instanceof ScenarioError) throw new ScenarioError(copy.label(err.message));
      throw err;
    } finally {
      copy.remove();
    }
  } else scenario = loadScenario(label, opts);
  const at = step === undefined ? scenario.steps[scenario.steps.length - 1]! : findStep(scenario, step);
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
}

/** The diff of two sides, or a ScenarioError/InspectError saying which input is wrong. */
export function diffCommand(a: DiffArgs): ScenarioDiff {
  return diffView(a).diff;
}

/** The diff and every cell of both sides (for the HTML page). */
export function diffView(a: DiffArgs): DiffView {
  if (a.base === '-' && a.head === '-') throw new ScenarioError('only one side can be read from stdin (-)');
  // Computed only, each side a verdict matrix: bounds of its own (model/limits.ts).
  const opts = { ...loadOptions(a as unknown as Record<string, unknown>), computedOnly: true, limits: DIFF_LIMITS };
  const base = diffSide(a.base, a.baseStep ?? a.step, opts);
  const head = diffSide(a.head, a.headStep ?? a.step, opts);
  const diff = diffSides(base, head);
  if (a.approve !== undefined) diff.approval = approveFlips(diff, readAssertFile(a.approve), head);
  // Every cell of both sides only for the one format that draws them (HTML).
  let cells: DiffView['cells'] | undefined;
  return {
    diff,
    get cells() {
      return (cells ??= diffCells(base, head));
    },
  };
}

export const diffCommandModule: CommandModule = {
  command: 'diff <base> <head>',
  describe:
    'which flows a change opens or closes (computed): each flip with the deciding rules before and after and the change that caused it; exits 0 with no flips, 1 with flips, 2 on bad input',
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
      }),
  handler: (a) => {
    let view: DiffView;
    try {
      view = diffView({ ...(a as unknown as DiffArgs), base: scenarioRef(a.base), head: scenarioRef(a.head) });
    } catch (err) {
      if (err instanceof ScenarioError || err instanceof InspectError) fail(err.message);
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
    process.exitCode = d.approval ? (d.approval.passed ? 0 : 1) : d.counts.flips === 0 ? 0 : 1;
  },
};

export const diffSchemaCommand: CommandModule = {
  command: 'diff-schema',
  describe: 'print the JSON Schema of the diff report (scenario diff --report-json)',
  handler: () => {
    process.stdout.write(`${JSON.stringify(ScenarioDiffSchema, null, 2)}\n`);
  },
};
