// `scenario check FILE`: every step's computed tables beside the intended ones, and whether the
// policies say what the scenario intends, without deploying anything (no root needed). Cells that
// depend on pod addresses (ipBlock) are decided with the addresses an isolated run assigns
// (model/addresses.ts) or those given with --ip; a cell left undecided is listed and makes the
// check exit 3 unless --allow-undecided (issue 32).
// Manifests past the per-cell bound (or with --summary) are checked by classes and reported by
// workload instead (cli/check-scale.ts).
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { cidrTexts } from '../../shared/netpol/ip-template.ts';
import { plural } from '../../shared/plural.ts';
import { subnetFlag } from '../../orchestrator/isolation/flags.ts';
import { plannedAddresses, RUN_SUBNET } from '../model/addresses.ts';
import { expectStep } from '../model/expect.ts';
import { externalsSummary } from '../model/externals.ts';
import { PodNames } from '../model/matrix.ts';
import { MAX_CELLS_COMPUTED, MAX_PODS_COMPUTED } from '../model/limits.ts';
import type { ResolvedScenario } from '../model/resolve.ts';
import { REPORT_FORMATS } from '../report/formats.ts';
import { cellResults, failureLine, stepResult } from '../report/results.ts';
import { assertionLines, ruleLines } from '../report/intents.ts';
import { LEGEND } from '../report/truth-table.ts';
import { CNP_CONFORMANCE_VERSION, conformanceReportYaml } from '../report/conformance.ts';
import type { ScenarioReportDoc } from '../report/schema.ts';
import { checkedReport, emptyReport, notRunCells, settleBudgetMs } from '../run/steps.ts';
import { loadTargets } from '../model/load.ts';
import { VERSION } from '../../shared/version.ts';
import { InspectError, ScenarioError } from '../errors.ts';
import { parseIps } from './explain.ts';
import { isManifestRef, scaleCheck } from './check-scale.ts';
import { summaryHtml } from '../report/summary-html.ts';
import { toJson } from '../report/json.ts';
import { addAssertFile, assertOption, EXIT, fail, loadOptions, manifestOptions, scenarioPositional, scenarioRef } from './options.ts';

export interface CheckResult {
  /** false: a policy-writing mistake (intended != computed). */
  ok: boolean;
  /** The cells no address decides, one line each: `step 2 s: y/a -> z/b 81/UDP: depends on …`. */
  undecided: string[];
  text: string;
  /** The check as a report document (computed, nothing observed), for --report-conformance. */
  report: ScenarioReportDoc;
}

/** Whether any policy of the scenario has an ipBlock (then the addresses used are worth saying). */
const usesIpBlocks = (s: ResolvedScenario) => s.steps.some((st) => st.policies.some((p) => cidrTexts(p).length > 0));

/**
 * Every step's tables and whether intended = computed, with the addresses `ips` (default: those an
 * isolated run of the bundled orchestrator assigns; an empty map: none known).
 */
export function checkScenario(s: ResolvedScenario, opts: { ips?: ReadonlyMap<string, string> } = {}): CheckResult {
  const ips = opts.ips ?? plannedAddresses(s.pods);
  // Manifests: what was read, ignored and noted comes first; then the hosts outside the cluster.
  const head = [...(s.manifests ?? []), ...externalsSummary(s.pods)];
  const out = [...(head.length > 0 ? [...head, ''] : []), LEGEND];
  if (usesIpBlocks(s))
    out.push(
      ips.size > 0
        ? `addresses used for ipBlocks: ${s.pods.map((p) => `${p.id} ${p.external ?? ips.get(p.id) ?? 'not known'}`).join(', ')}`
        : 'addresses used for ipBlocks: none (cells that depend on one are undecided)',
    );
  let ok = true;
  const undecided: string[] = [];
  const report = emptyReport(s, false, false);
  for (const step of s.steps) {
    const exp = expectStep(s, step, ips);
    const cells = cellResults(exp, notRunCells(exp, true));
    const result = stepResult(exp, s.pods, cells, { settled: null, durationMs: null, budgetMs: settleBudgetMs(s), lastFlipMs: null, observed: false });
    report.steps.push(result);
    const judged = exp.cells.filter((c) => c.intended !== null).length;
    const head = `step ${step.index + 1}/${s.steps.length} ${step.name}`;
    // By index: an external is `external:<name>` in cells but `external/<name>` in the cluster.
    const pod = (id: string) => exp.cluster.pods[s.pods.findIndex((p) => p.id === id)]!;
    const open = exp.cells
      .filter((c) => c.computed === null)
      .map((c) => {
        const { answer: a } = exp.evaluator.answer({ from: pod(c.cell.from), to: pod(c.cell.to), port: c.cell.port, protocol: c.cell.protocol });
        return `${c.cell.from} -> ${c.cell.to} ${c.cell.port}/${c.cell.protocol}: undecided: ${a.answer === 'undecided' ? a.why : c.reason}`;
      });
    undecided.push(...open.map((line) => `step ${step.index + 1} ${step.name}: ${line}`));
    const openLines = open.map((line) => `  ${line}`);
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
        ...openLines,
        ...orderLines,
      );
    } else
      out.push(
        '',
        `${head}: ${step.intended ? `intended = computed (${plural(judged, 'judged cell')}${open.length ? `, ${open.length} undecided` : ''})` : `computed (${plural(exp.cells.length, 'cell')}${open.length ? `, ${open.length} undecided` : ''})`}`,
        result.tables,
        ...openLines,
        ...orderLines,
      );
    // Intents (a failing one names its cells) and every rule with the cells it allowed, dead ones said.
    out.push(...assertionLines(result.assertions ?? [], false), ...ruleLines(result.rules ?? []));
  }
  out.push(
    '',
    !ok
      ? `${s.name}: FAIL: intended != computed (a policy-writing mistake)`
      : undecided.length > 0
        ? `${s.name}: UNDECIDED: ${plural(undecided.length, 'cell')} depend on addresses not known (give them with --ip ns/pod=address, or accept them with --allow-undecided)`
        : `${s.name}: the policies say what every step intends`,
  );
  report.failure = ok ? null : 'intended != computed';
  report.outcome = ok ? 'not run' : 'fail';
  return { ok, undecided, text: out.join('\n'), report };
}

/** The addresses check assumes: an isolated run's in `subnet` (none for `--addresses=unknown`), then --ip's. */
export function checkAddresses(s: ResolvedScenario, opts: { addresses: 'run' | 'unknown'; subnet?: string; ips?: readonly string[] }): Map<string, string> {
  const out = opts.addresses === 'run' ? plannedAddresses(s.pods, opts.subnet ?? RUN_SUBNET) : new Map<string, string>();
  for (const [id, ip] of parseIps(opts.ips ?? [], new PodNames(s.pods))) out.set(id, ip);
  return out;
}

/** The exit code of a check: 1 on a policy-writing mistake, 3 when cells are left undecided (unless allowed), else 0. */
export function checkExit(r: CheckResult, allowUndecided: boolean): number {
  if (!r.ok) return EXIT.fail;
  return r.undecided.length > 0 && !allowUndecided ? EXIT.computedOnly : EXIT.pass;
}

export const checkCommand: CommandModule = {
  command: 'check <scenario>',
  describe: `show every step's computed truth tables (and the intended ones) without deploying anything; exits ${EXIT.fail} when the policies do not say what the scenario intends, ${EXIT.computedOnly} when cells are left undecided`,
  builder: (y: Argv) =>
    y
      .positional('scenario', {
        ...scenarioPositional,
        describe: `${scenarioPositional.describe}, or a set (a built-in folder such as cnp-conformance, a directory)`,
      })
      .options(manifestOptions)
      .options(assertOption)
      .option('addresses', {
        choices: ['run', 'unknown'] as const,
        default: 'run' as const,
        describe:
          'pod addresses for ipBlocks: run: those an isolated scenario run gives the pods (in --netns-subnet, pod order from its third address); unknown: none (as for another orchestrator)',
      })
      .option('netns-subnet', {
        type: 'string',
        describe: `the task subnet of the isolated run whose addresses are assumed (default ${RUN_SUBNET}, as scenario run)`,
        coerce: subnetFlag('netns-subnet'),
      })
      .option('ip', { type: 'string', array: true, default: [] as string[], describe: 'ns/pod=address: the address of a pod for ipBlocks (over --addresses)' })
      .option('allow-undecided', { type: 'boolean', default: false, describe: `exit 0 rather than ${EXIT.computedOnly} when cells are left undecided` })
      .option('report-html', { type: 'string', describe: 'write the HTML report of a run here, computed only (nothing is observed)' })
      .option('report-json', {
        type: 'string',
        describe: 'write the JSON report here (report-schema), computed only; past the per-cell bound, the summary by workload',
      })
      .option('summary', {
        type: 'boolean',
        default: false,
        describe: `manifests: verdicts by classes of identical pods, reports by workload (the form past ${MAX_PODS_COMPUTED} pods or ${MAX_CELLS_COMPUTED} cells)`,
      })
      .option('report-cells', { type: 'string', describe: 'manifests: write every cell here, one JSON object a line (NDJSON, streamed; implies --summary)' })
      .option('report-conformance', {
        type: 'string',
        describe:
          'write the ConformanceReport YAML of upstream’s ClusterNetworkPolicy suite (the set cnp-conformance) here; computed results are reported skipped, never passed',
      }),
  handler: (a) => {
    if (checkSummary(a)) return;
    let targets: { set?: string; scenarios: ResolvedScenario[] };
    try {
      targets = loadTargets(scenarioRef(a.scenario), { ...loadOptions(a), computedOnly: true });
      addAssertFile(targets.scenarios, a.assert);
    } catch (err) {
      if (err instanceof ScenarioError) fail(err.message);
      throw err;
    }
    const results: { s: ResolvedScenario; ips: Map<string, string>; r: CheckResult }[] = [];
    for (const s of targets.scenarios) {
      let ips: Map<string, string>;
      try {
        ips = checkAddresses(s, {
          addresses: a.addresses as 'run' | 'unknown',
          ...(typeof a.netnsSubnet === 'string' ? { subnet: a.netnsSubnet } : {}),
          ips: a.ip as string[],
        });
      } catch (err) {
        if (err instanceof InspectError || err instanceof Error) fail(`${targets.set ? s.file : String(a.scenario)}: ${err.message}`);
        throw err;
      }
      const r = checkScenario(s, { ips });
      process.stdout.write(`${targets.set ? `\n== ${s.name}\n` : ''}${r.text}\n`);
      results.push({ s, ips, r });
    }
    if (targets.set) process.stdout.write(`\n${targets.set}: ${results.filter((x) => x.r.ok).length} of ${results.length} scenarios say what they intend\n`);
    if (typeof a.reportHtml === 'string') {
      const docs = results.map((x) => checkedReport(x.s, x.ips));
      const now = new Date().toISOString();
      try {
        writeFileSync(
          a.reportHtml,
          REPORT_FORMATS.html(
            targets.set ? { set: targets.set, startedAt: now, finishedAt: now, passed: results.every((x) => x.r.ok), scenarios: docs } : docs[0]!,
          ),
        );
      } catch (err) {
        fail(`--report-html: ${(err as Error).message}`);
      }
    }
    if (typeof a.reportJson === 'string') {
      const docs = results.map((x) => checkedReport(x.s, x.ips));
      const now = new Date().toISOString();
      write('--report-json', a.reportJson, () =>
        toJson(targets.set ? { set: targets.set, startedAt: now, finishedAt: now, passed: results.every((x) => x.r.ok), scenarios: docs } : docs[0]!),
      );
    }
    if (typeof a.reportConformance === 'string') {
      if (!existsSync(join(a.reportConformance, '..'))) fail(`--report-conformance: no directory ${join(a.reportConformance, '..')}`);
      writeFileSync(
        a.reportConformance,
        conformanceReportYaml(
          results.map((x) => x.r.report),
          { mode: 'computed', date: new Date().toISOString(), version: VERSION, apiVersion: CNP_CONFORMANCE_VERSION },
        ),
      );
    }
    const codes = results.map((x) => checkExit(x.r, a.allowUndecided === true));
    process.exitCode = codes.includes(EXIT.fail) ? EXIT.fail : codes.includes(EXIT.computedOnly) ? EXIT.computedOnly : EXIT.pass;
  },
};

/** A report file, or exit 2 naming the flag. */
function write(flag: string, file: string, text: () => string): void {
  try {
    writeFileSync(file, text());
  } catch (err) {
    fail(`${flag}: ${(err as Error).message}`);
  }
}

/** Manifests past the per-cell bound (or --summary, --report-cells): the summary by workload (cli/check-scale.ts); false: not that form. */
function checkSummary(a: { readonly [flag: string]: unknown }): boolean {
  const ref = scenarioRef(a.scenario);
  const asked = a.summary === true || typeof a.reportCells === 'string';
  if (!isManifestRef(ref)) {
    if (asked) fail('--summary and --report-cells are for manifests with no scenario file (a scenario file is checked cell by cell)');
    return false;
  }
  const refuse = () => {
    const with_ = [
      a.assert !== undefined && '--assert',
      a.reportConformance !== undefined && '--report-conformance',
      a.external !== undefined && '--external',
    ].filter(Boolean);
    if (with_.length > 0)
      fail(`${with_.join(', ')}: not in the summary form of scenario check (past ${MAX_PODS_COMPUTED} pods or ${MAX_CELLS_COMPUTED} cells, or --summary)`);
  };
  if (asked) refuse();
  let sc: ReturnType<typeof scaleCheck>;
  try {
    sc = scaleCheck(ref, {
      ...(typeof a.namespace === 'string' ? { namespace: a.namespace } : {}),
      replicas: a.replicas === true,
      addresses: a.addresses as 'run' | 'unknown',
      ...(typeof a.netnsSubnet === 'string' ? { subnet: a.netnsSubnet } : {}),
      ips: a.ip as string[],
      summary: a.summary === true,
      ...(typeof a.reportCells === 'string' ? { cellsFile: a.reportCells } : {}),
    });
  } catch (err) {
    if (err instanceof ScenarioError) fail(err.message);
    throw err;
  }
  if (!sc) return false;
  refuse();
  process.stdout.write(`${sc.text}\n`);
  if (typeof a.reportJson === 'string') write('--report-json', a.reportJson, () => `${JSON.stringify(sc.doc, null, 2)}\n`);
  if (typeof a.reportHtml === 'string') write('--report-html', a.reportHtml, () => summaryHtml(sc.doc));
  process.exitCode = sc.doc.counts.undecided > 0 && a.allowUndecided !== true ? EXIT.computedOnly : EXIT.pass;
  return true;
}
