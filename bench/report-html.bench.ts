// The HTML report's size and speed on the largest built-in set, k8s-e2e (48 scenarios, 58 steps on
// the 3 x 3 model): the page made from what `scenario check` computes (nothing observed), and the
// same with every cell observed as computed and a convergence time (what a passing run writes),
// each against the JSON report of the same data (the baseline: the same report as --report-json);
// the time to render it, and the time chromium takes to open it from a file. With isolation (root,
// iproute2, nftables; run under `flock /tmp/starmap-netns.lock`) also the page of a real
// `scenario run k8s-e2e --isolation=netns` (about two minutes).
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { expectStep } from '../scenarios/model/expect.ts';
import { loadTargets } from '../scenarios/model/load.ts';
import type { Observation } from '../scenarios/run/observe.ts';
import { reportHtml } from '../scenarios/report/html.ts';
import type { ScenarioReportDoc, SetReportDoc } from '../scenarios/report/schema.ts';
import { cellResults, stepResult } from '../scenarios/report/results.ts';
import { toJson } from '../scenarios/report/json.ts';
import type { ResolvedScenario } from '../scenarios/model/resolve.ts';
import { isolationMissing } from '../scenarios/cli/run.ts';
import { computedReport, emptyReport, notRunCells, settleBudgetMs } from '../scenarios/run/steps.ts';
import { haveChromium, launchChromium } from '../test/helpers/browser.ts';
import { NODE, removeTempDirs, ROOT, tempDir } from '../test/helpers/process.ts';
import { median, ratio, table, writeResults, type ResultRow } from './lib/results.ts';

// A browser global inside page.evaluate (the project's TS config has no DOM library).
declare const requestAnimationFrame: (cb: () => void) => void;

/** A report as a passing isolated run would write it: every cell observed as computed. */
function observedReport(s: ResolvedScenario): ScenarioReportDoc {
  const report = emptyReport(s, true, true);
  const later = new Date(Date.now() + 60_000).toISOString();
  report.steps = s.steps.map((st) => {
    const exp = expectStep(s, st);
    const notRun = notRunCells(exp, true);
    const observed = new Map<string, Observation>(
      exp.cells.map((c) => [c.cell.key, { allowed: c.computed, reason: c.computed ? 'ok' : 'timeout', checkedAt: later, changedAt: null }]),
    );
    const fresh = new Set(exp.cells.filter((c) => !notRun.has(c.cell.key)).map((c) => c.cell.key));
    const convergedAfterMs = new Map([...fresh].map((k, i) => [k, i % 3 === 0 ? 850 + (i % 400) : 0]));
    const cells = cellResults(exp, notRun, { observed, fresh, changedAfterMs: new Map(), convergedAfterMs, droppedBy: new Map() });
    return stepResult(exp, s.pods, cells, { settled: true, durationMs: 1400, budgetMs: settleBudgetMs(s), applyMs: 70, lastFlipMs: 1100, observed: true });
  });
  report.outcome = 'pass';
  report.passed = true;
  return report;
}

const mb = (n: number) => `${(n / 1e6).toFixed(2)} MB`;
const kb = (n: number) => `${(n / 1e3).toFixed(0)} kB`;

async function main(): Promise<void> {
  const { scenarios } = loadTargets('k8s-e2e');
  const steps = scenarios.reduce((n, s) => n + s.steps.length, 0);
  const cells = scenarios.reduce((n, s) => n + s.steps.length * s.cells.length, 0);
  const set = (docs: ScenarioReportDoc[]): SetReportDoc => ({ set: 'k8s-e2e', startedAt: '', finishedAt: '', passed: true, scenarios: docs });
  const variants = [
    { name: 'computed only (`scenario check`)', short: 'k8s-e2e computed only', doc: set(scenarios.map(computedReport)) },
    { name: 'observed as computed, with convergence times', short: 'k8s-e2e observed as computed', doc: set(scenarios.map(observedReport)) },
  ];
  const dir = tempDir('starmap-bench-html-');
  const missing = isolationMissing();
  if (!missing) {
    const json = join(dir, 'run.json');
    const r = spawnSync(NODE, [join(ROOT, 'scenarios', 'main.ts'), 'run', 'k8s-e2e', '--isolation=netns', `--report-json=${json}`], {
      stdio: 'ignore',
      timeout: 1_800_000,
    });
    // Exit 1 (a scenario failed) still writes the report; its page is what is measured.
    if (r.status === 0 || r.status === 1)
      variants.push({
        name: `a real run (\`scenario run k8s-e2e --isolation=netns\`, exit ${r.status})`,
        short: `k8s-e2e real isolated run (exit ${r.status})`,
        doc: JSON.parse(readFileSync(json, 'utf8')) as SetReportDoc,
      });
    else console.log(`the real k8s-e2e run failed (exit ${r.status ?? r.signal}): not measured`);
  }
  const browser = haveChromium ? await launchChromium() : undefined;
  const rows: (string | number)[][] = [];
  const results: ResultRow[] = [];
  try {
    for (const v of variants) {
      for (let i = 0; i < 3; i++) reportHtml(v.doc); // warm-up
      const times: number[] = [];
      let html = '';
      for (let i = 0; i < 15; i++) {
        const t0 = performance.now();
        html = reportHtml(v.doc);
        times.push(performance.now() - t0);
      }
      const json = toJson(v.doc);
      const file = join(dir, 'report.html');
      writeFileSync(file, html);
      let open = 'not measured (no chromium)';
      if (browser) {
        const loads: number[] = [];
        for (let i = 0; i < 6; i++) {
          const page = await browser.context.newPage();
          await page.route('**/*', (route) => (route.request().url() === pathToFileURL(file).href ? route.continue() : route.abort()));
          const t0 = performance.now();
          await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
          // The first frame painted after load: the page is on screen.
          await page.evaluate(() => new Promise<null>((res) => requestAnimationFrame(() => res(null))));
          loads.push(performance.now() - t0);
          await page.close();
        }
        open = `${Math.round(median(loads.slice(1)))} ms`;
      }
      const name = v.short;
      results.push(
        {
          measure: `${name}: HTML (gzipped)`,
          value: `${mb(html.length)} (${kb(gzipSync(html).length)})`,
          baseline: `JSON report: ${mb(json.length)}`,
          ratio: ratio(html.length, json.length),
          goal: '-',
          met: '-',
        },
        { measure: `${name}: render (median of 15)`, value: `${median(times).toFixed(0)} ms`, baseline: '-', ratio: '-', goal: '-', met: '-' },
        { measure: `${name}: open in chromium to first frame (median of 5)`, value: open, baseline: '-', ratio: '-', goal: '-', met: '-' },
      );
      rows.push([
        v.name,
        mb(html.length),
        kb(gzipSync(html).length),
        mb(json.length),
        `${((html.length / json.length) * 100).toFixed(0)} %`,
        `${median(times).toFixed(0)} ms`,
        open,
      ]);
      console.log(rows.at(-1)!.join('  '));
    }
  } finally {
    await browser?.close();
    removeTempDirs();
  }
  console.log(`k8s-e2e set: ${scenarios.length} scenarios, ${steps} steps, ${cells.toLocaleString('en')} cells; baseline: the JSON report of the same data`);
  console.log(table(['report', 'HTML', 'gzipped', 'JSON report', 'HTML vs JSON', 'render', 'open in chromium'], rows));
  writeResults('HTML report', results, {
    ...(missing ? { limitingFactor: `a real isolated run was not measured: network isolation is not available here (${missing})` } : {}),
  });
}

await main();
