// The HTML report (`scenario run --report-html`): the pure renderer on reports made by the pure
// parts of a run (every kind of cell, hostile strings, a set with its index, the size of the
// k8s-e2e set's page), and a page written by a real run on loopback (a set: one scenario with an
// app that does not listen, so a cell is computed allowed and observed blocked; one whose
// hand-written verdicts its policies contradict) opened in real chromium with the network
// blocked: three tables per step, the mismatch lists, tooltips with reasons, the SVG graph.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Value } from '@sinclair/typebox/value';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { loadScenario, loadTargets } from '../../../scenarios/model/load.ts';
import type { Observation } from '../../../scenarios/run/observe.ts';
import { graphEdges, graphSvg } from '../../../scenarios/report/graph.ts';
import { reportHtml } from '../../../scenarios/report/html.ts';
import { Report, type ScenarioReportDoc, type SetReportDoc } from '../../../scenarios/report/schema.ts';
import { cellResults, stepResult } from '../../../scenarios/report/results.ts';
import { cellKey } from '../../../scenarios/model/resolve.ts';
import { computedReport, emptyReport, notRunCells } from '../../../scenarios/run/steps.ts';
import { type Browser, haveChromium, launchChromium, warnIfNoChromium } from '../../helpers/browser.ts';
import { NODE, runToEnd, stopAll, tempDir } from '../../helpers/process.ts';

// Browser globals inside page.evaluate callbacks (the project's TS config has no DOM library).
declare const window: { pwned?: unknown };

afterAll(stopAll);

const HOSTILE = `<script>window.pwned = 1</script> & "double" 'single' <img src=x onerror="window.pwned=2">`;

function file(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const three = `probeSeconds: 1
apps:
  - { name: a, kind: probe, labels: { app: a }, probes: [b, c] }
  - { name: b, kind: probe, labels: { app: b }, probes: [a, c] }
  - { name: c, kind: probe, labels: { app: c }, probes: [a] }
policies:
  - apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: { name: only-a, namespace: default }
    spec: { podSelector: { matchLabels: { app: c } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: a } } }] }] }
`;

/**
 * A report with every kind of cell, made by the pure parts of a run: step 1 (computed) observed,
 * with a -> b blocked at b's ingress (computed != observed), c -> a without a value, convergence
 * times; step 2 (hand-written: b -> c allowed, which only-a blocks) not observed.
 */
function mixedReport(): ScenarioReportDoc {
  const dir = tempDir('starmap-html-');
  const s = loadScenario(
    file(
      dir,
      'mixed.yaml',
      `name: mixed\ndescription: ${JSON.stringify(HOSTILE)}\n${three}steps:\n  - { name: open, policies: [] }\n  - name: restrict\n    description: ${JSON.stringify(HOSTILE)}\n    policies: [default/only-a]\n    expect: { edges: [{ from: b, to: c, expect: allow }] }\n`,
    ),
  );
  const k = (from: string, to: string) => cellKey(`default/${from}`, `default/${to}`, 9000, 'TCP');
  const later = new Date(Date.now() + 60_000).toISOString();
  const obs = (allowed: boolean | null, reason: string): Observation => ({ allowed, reason, checkedAt: later, changedAt: null });
  const observed = new Map([
    [k('a', 'b'), obs(false, 'timeout </script><script>window.pwned = 3</script>')],
    [k('a', 'c'), obs(true, 'ok')],
    [k('b', 'a'), obs(true, 'ok')],
    [k('b', 'c'), obs(true, 'ok')],
    [k('c', 'a'), obs(null, 'not checked yet')],
  ]);
  const fresh = new Set([k('a', 'b'), k('a', 'c'), k('b', 'a'), k('b', 'c')]);
  const e1 = expectStep(s, s.steps[0]!);
  const step1 = stepResult(
    e1,
    s.pods,
    cellResults(e1, notRunCells(e1, true), {
      observed,
      fresh,
      changedAfterMs: new Map([[k('a', 'b'), 420]]),
      convergedAfterMs: new Map([
        [k('a', 'b'), 420],
        [k('a', 'c'), 0],
        [k('b', 'a'), 0],
        [k('b', 'c'), 1250],
      ]),
      droppedBy: new Map([[k('a', 'b'), 'ingress' as const]]),
    }),
    { settled: false, durationMs: 10_000, budgetMs: 3000, applyMs: 60, lastFlipMs: 480, observed: true },
  );
  const e2 = expectStep(s, s.steps[1]!);
  expect(e2.mistakes.map((m) => m.cell.key)).toEqual([k('b', 'c')]);
  const step2 = stepResult(e2, s.pods, cellResults(e2, notRunCells(e2, true)), {
    settled: null,
    durationMs: null,
    budgetMs: 3000,
    lastFlipMs: null,
    observed: false,
  });
  const report = emptyReport(s, true, true);
  report.steps = [step1, step2];
  report.outcome = 'fail';
  report.failure = 'computed != observed';
  report.notices.push(`a notice ${HOSTILE}`);
  return JSON.parse(JSON.stringify(report)) as ScenarioReportDoc;
}

/** The elements with `attr="value"` in an HTML string (good enough for the renderer's own output). */
const count = (html: string, re: RegExp) => html.match(new RegExp(re.source, 'g'))?.length ?? 0;

describe('the HTML report renderer (pure)', () => {
  const report = mixedReport();
  const html = reportHtml(report);

  it('the report with convergence times is valid against the published schema', () => {
    expect([...Value.Errors(Report, report)]).toEqual([]);
    expect(report.steps[0]!.cells.find((c) => c.to === 'default/c' && c.from === 'default/b')).toMatchObject({ convergedAfterMs: 1250 });
    // Not observed: null; a step not run: absent.
    expect(report.steps[0]!.cells.find((c) => c.from === 'default/c')).toMatchObject({ convergedAfterMs: null });
    expect(report.steps[1]!.cells.every((c) => !('convergedAfterMs' in c))).toBe(true);
  });

  it('per step the three tables: intended only when hand-written, observed only when observed', () => {
    const steps = html.split('<section class="step"').slice(1);
    expect(steps).toHaveLength(2);
    const kinds = (h: string) => [...h.matchAll(/<table class="tt" data-kind="(\w+)"/g)].map((m) => m[1]);
    expect(kinds(steps[0]!)).toEqual(['computed', 'observed']);
    expect(kinds(steps[1]!)).toEqual(['intended', 'computed']);
    expect(steps[1]).toContain('not observed: the run stopped at a policy-writing mistake');
  });

  it('lists the mismatches by kind with their reasons, and marks the cells with them inline', () => {
    expect(html).toContain('Enforcement faults: computed != observed (1)');
    expect(html).toContain('Policy-writing mistakes: intended != computed (1)');
    expect(html).toContain('No value (1)');
    expect(html).toContain(
      '<li>computed != observed: default/a -&gt; default/b 9000/TCP: expected allowed, observed blocked (timeout &lt;/script&gt;&lt;script&gt;window.pwned = 3&lt;/script&gt;; dropped by default/b&#39;s ingress); egress not isolated; ingress not isolated</li>',
    );
    expect(html).toContain(
      '<li>intended != computed: default/b -&gt; default/c 9000/TCP: intended allowed, the policies say blocked (ingress isolated by default/only-a, no rule allows it)</li>',
    );
    // The mismatching cells: outlined, with the whole story in their title.
    expect(html).toMatch(/<td class="b m2" title="computed != observed: default\/a -&gt; default\/b 9000\/TCP: [^"]*; converged after 0\.42 s">✗<\/td>/);
    expect(count(html, /<td class="[ab] m1" title="intended != computed: default\/b -&gt; default\/c/)).toBe(2);
    expect(html).toMatch(/<td class="q nv" title="no value: default\/c -&gt; default\/a/);
    // The others refer to the dictionary of reasons, each distinct reason stored once.
    const dict = JSON.parse(/<script type="application\/json" id="starmap-reasons">(.*?)<\/script>/.exec(html)![1]!) as string[];
    expect(new Set(dict).size).toBe(dict.length);
    expect(dict).toContain('egress not isolated; ingress not isolated');
    expect(dict).toContain('ok; converged after 1.25 s');
  });

  it('escapes every string from the report: the only scripts are its own, and nothing is fetched', () => {
    expect(count(html, /<script/)).toBe(2);
    expect(html).not.toContain('<img');
    expect(html).toContain(
      '&lt;script&gt;window.pwned = 1&lt;/script&gt; &amp; &quot;double&quot; &#39;single&#39; &lt;img src=x onerror=&quot;window.pwned=2&quot;&gt;',
    );
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<[a-z]+[^>]*\s(src|href)="(?!#)|@import|url\((?!#)/i);
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="default-src 'none';`);
  });

  it('shows each cell’s convergence time, the cells that flipped highlighted', () => {
    const conv = /<table class="tt conv"[\s\S]*?<\/table>/.exec(html)![0];
    expect(conv).toContain('<td class="flip">0.42</td>');
    expect(conv).toContain('<td>1.25</td>');
    expect(count(conv, /<td>0<\/td>/)).toBe(2);
  });

  it('no convergence table where no cell shown was observed (SCTP: not run)', () => {
    const s = loadScenario(
      file(
        tempDir('starmap-html-'),
        'sctp.yaml',
        'name: s\nmodel: { namespaces: [x], pods: [a, b], ports: [80], protocols: [SCTP] }\nsteps:\n  - { name: only-sctp }\n',
      ),
    );
    const e = expectStep(s, s.steps[0]!);
    const step = stepResult(
      e,
      s.pods,
      cellResults(e, notRunCells(e, true), {
        observed: new Map(),
        fresh: new Set(),
        changedAfterMs: new Map(),
        convergedAfterMs: new Map(),
        droppedBy: new Map(),
      }),
      { settled: true, durationMs: 0, budgetMs: 2500, lastFlipMs: null, observed: true },
    );
    const page = reportHtml({ ...emptyReport(s, true, true), steps: [step] });
    expect(count(page, /<td class="r" data-r="\d+" data-o="\d+">~<\/td>/)).toBe(2);
    expect(page).not.toContain('class="tt conv"');
    expect(page).toContain('NOT RUN');
  });

  it('draws the graph as inline SVG: observed edges, mismatching pairs marked with their reasons', () => {
    expect(count(html, /<svg class="graph"/)).toBe(2);
    const edges = graphEdges(report.steps[0]!.cells, true);
    expect(edges.map((e) => [e.from, e.to, e.kind, e.missing])).toEqual([
      ['default/a', 'default/b', 'computed != observed', true],
      ['default/a', 'default/c', 'allowed', false],
      ['default/b', 'default/a', 'allowed', false],
      ['default/b', 'default/c', 'allowed', false],
      ['default/c', 'default/a', 'no value', true],
    ]);
    expect(edges[0]!.title).toContain('computed != observed at 9000/TCP: expected allowed, observed blocked (timeout');
    expect(edges[3]!.title).toContain('converged after 1.25 s');
    // Not observed: the computed edges; the contradicted one marked.
    expect(graphEdges(report.steps[1]!.cells, false).map((e) => [e.from, e.to, e.kind])).toEqual([
      ['default/a', 'default/b', 'allowed'],
      ['default/a', 'default/c', 'allowed'],
      ['default/b', 'default/a', 'allowed'],
      ['default/b', 'default/c', 'intended != computed'],
      ['default/c', 'default/a', 'allowed'],
    ]);
    const svg = graphSvg(report.pods, report.steps[0]!.cells, { id: 'g"x', observed: true });
    expect(count(svg, /<path class="g-e/)).toBe(5);
    expect(count(svg, /<circle /)).toBe(3);
    expect(svg).toContain('marker-end="url(#g&quot;x-g-m2)"');
    expect(svg).toMatch(
      /<path class="g-e g-m2 g-missing" d="M[\d.]+,[\d.]+ Q[\d.]+,[\d.]+ [\d.]+,[\d.]+" marker-end="[^"]+" data-from="default\/a" data-to="default\/b" data-kind="computed != observed"><title>default\/a -&gt; default\/b: nothing observed allowed/,
    );
  });

  it('bounds the mismatch lists', () => {
    const capped = reportHtml(report, { maxMismatches: 0 });
    expect(capped).toContain('<li class="muted">… and 1 more (the JSON report has every cell)</li>');
  });

  it('a set: one page, an index at the top linking a section per scenario', () => {
    const set: SetReportDoc = {
      set: 'demo <set>',
      startedAt: report.startedAt,
      finishedAt: report.finishedAt,
      passed: false,
      scenarios: [report, { ...report, scenario: 'second' }],
    };
    const page = reportHtml(set);
    expect(page).toContain('<title>Starmap set demo &lt;set&gt;</title>');
    const index = /<nav id="index"[\s\S]*?<\/nav>/.exec(page)![0];
    expect([...index.matchAll(/<a href="#(sc\d+)">([^<]+)<\/a>/g)].map((m) => [m[1], m[2]])).toEqual([
      ['sc0', 'mixed'],
      ['sc1', 'second'],
    ]);
    expect(count(page, /<section class="scenario" id="sc\d+">/)).toBe(2);
    expect(page.indexOf('<nav id="index"')).toBeLessThan(page.indexOf('<section class="scenario"'));
  });

  it('the k8s-e2e set (48 scenarios) computed as `scenario check` sees it makes a page of bounded size', () => {
    const { scenarios } = loadTargets('k8s-e2e');
    const page = reportHtml({ set: 'k8s-e2e', startedAt: '', finishedAt: '', passed: true, scenarios: scenarios.map(computedReport) });
    expect(count(page, /<section class="scenario"/)).toBe(48);
    // bench/report-html.bench.ts measures it (about 1.5 MB); this guards against it growing unbounded.
    expect(page.length).toBeLessThan(4_000_000);
  });
});

describe('--report-html on the command line', () => {
  it('a file in a directory that does not exist is refused before anything runs, naming the flag', async () => {
    const r = await runToEnd(NODE, ['scenarios/main.ts', 'run', 'stars', `--report-html=${join(tempDir('starmap-html-'), 'missing', 'r.html')}`]);
    expect(r.code).toBe(2);
    expect(r.output).toMatch(/scenario: error: --report-html: no directory \S+\/missing\n/);
    expect(r.output).not.toContain('orchestrator:');
  });

  it('is in the help', async () => {
    const r = await runToEnd(NODE, ['scenarios/main.ts', 'run', '--help']);
    expect(r.output).toMatch(/--report-html +write a self-contained HTML report here/);
  });
});

warnIfNoChromium('HTML report browser test');

describe('a real run writes the page, and it opens in chromium with no network', () => {
  const out = tempDir('starmap-html-out-');
  const htmlFile = join(out, 'report.html');
  const jsonFile = join(out, 'report.json');
  let run: { code: number | string; output: string };
  let browser: Browser | undefined;

  beforeAll(async () => {
    const dir = tempDir('starmap-html-set-');
    // a -> c: c is an app that does not listen, so the policies allow what the packets cannot do
    // (refused at once; the 1 s check timeout keeps a loaded machine from failing a -> b too).
    file(
      dir,
      '1-pair.yaml',
      `name: pair\ndescription: ${JSON.stringify(HOSTILE)}\nprobeSeconds: 0.5\ntimeoutSeconds: 1\napps:\n  - { name: a, kind: probe, probes: [b, c] }\n  - { name: b, kind: probe, probes: [a] }\n  - { name: c, kind: app, cmd: "sleep 600" }\nsteps:\n  - { name: open, policies: [] }\n`,
    );
    // The author thinks a and b still reach each other under a default deny.
    file(
      dir,
      '2-wrong.yaml',
      `name: wrong\nprobeSeconds: 0.5\ntimeoutSeconds: 0.3\napps:\n  - { name: a, kind: probe, probes: [b] }\n  - { name: b, kind: probe, probes: [a] }\npolicies:\n  - { apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: { name: deny-all, namespace: default }, spec: { podSelector: {} } }\nsteps:\n  - { name: deny-all, policies: [default/deny-all], expect: { default: allow } }\n`,
    );
    run = await runToEnd(
      NODE,
      ['scenarios/main.ts', 'run', dir, '--isolation=off', '--step-timeout=5', `--report-html=${htmlFile}`, `--report-json=${jsonFile}`],
      { timeoutMs: 120_000 },
    );
    if (haveChromium) browser = await launchChromium();
  }, 150_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('the run fails both ways and records each observed cell’s convergence time', () => {
    expect(run.output).toContain('computed != observed: default/a -> default/c 8080/TCP: expected allowed, observed blocked (refused)');
    expect(run.output).toContain('wrong: FAIL: 0 of 1 steps as expected (intended != computed');
    expect(run.code).toBe(1);
    const report = JSON.parse(readFileSync(jsonFile, 'utf8')) as SetReportDoc;
    expect([...Value.Errors(Report, report)]).toEqual([]);
    const cells = report.scenarios[0]!.steps[0]!.cells;
    expect(cells.every((c) => typeof c.convergedAfterMs === 'number' && c.convergedAfterMs >= 0)).toBe(true);
    expect(readFileSync(htmlFile, 'utf8')).toMatch(/^<!doctype html>/);
  });

  async function open(): Promise<{ page: Page; requests: string[]; errors: string[] }> {
    const page = await browser!.context.newPage();
    const url = pathToFileURL(htmlFile).href;
    const requests: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => (m.type() === 'error' ? errors.push(m.text()) : undefined));
    // No network: anything but the file itself is refused.
    await page.route('**/*', (route) => (route.request().url() === url ? route.continue() : route.abort()));
    await page.goto(url);
    return { page, requests, errors };
  }

  it.skipIf(!haveChromium)('shows the index, three tables per step, the mismatches, tooltips with reasons and the graph', async () => {
    const { page, requests, errors } = await open();
    expect(await page.title()).toMatch(/^Starmap set \/.*starmap-html-set-/);
    // The index at the top links each scenario's section.
    expect(await page.$$eval('nav#index a', (as) => as.map((a) => a.getAttribute('href')))).toEqual(['#sc0', '#sc1']);
    const kinds = (sel: string) => page.$$eval(`${sel} table.tt:not(.conv)`, (ts) => ts.map((t) => t.getAttribute('data-kind')));
    expect(await kinds('#sc0-st0')).toEqual(['computed', 'observed']);
    expect(await kinds('#sc1-st0')).toEqual(['intended', 'computed']);
    // The description is text, not markup.
    expect(await page.locator('#sc0 > p').first().textContent()).toBe(HOSTILE);
    expect(await page.evaluate(() => window.pwned)).toBeUndefined();

    // Mismatches, named apart.
    expect(await page.locator('#sc0-st0 .mismatch[data-kind="computed != observed"] li').allTextContents()).toEqual([
      'computed != observed: default/a -> default/c 8080/TCP: expected allowed, observed blocked (refused); egress not isolated; ingress not isolated',
    ]);
    expect(await page.locator('#sc1-st0 .mismatch[data-kind="intended != computed"] li').allTextContents()).toEqual([
      'intended != computed: default/a -> default/b 9000/TCP: intended allowed, the policies say blocked (ingress isolated by default/deny-all, no rule allows it)',
      'intended != computed: default/b -> default/a 9000/TCP: intended allowed, the policies say blocked (ingress isolated by default/deny-all, no rule allows it)',
    ]);

    // A mismatching cell carries its reasons as its tooltip.
    const bad = page.locator('#sc0-st0 table[data-kind="observed"] td.m2');
    expect(await bad.count()).toBe(1);
    expect(await bad.getAttribute('title')).toMatch(
      /^computed != observed: default\/a -> default\/c 8080\/TCP: expected allowed, observed blocked \(refused\); egress not isolated; ingress not isolated; converged after \d+\.\d\d s$/,
    );
    expect(await page.locator('#sc1-st0 table[data-kind="computed"] td.m1').count()).toBe(2);
    // Any other cell gets its tooltip when hovered.
    const ok = page.locator('#sc0-st0 table[data-kind="observed"] td.a').first();
    await ok.hover();
    expect(await ok.getAttribute('title')).toMatch(
      /^default\/a -> default\/b: observed allowed\npolicies: egress not isolated; ingress not isolated\npackets: ok; converged after \d+\.\d\d s$/,
    );

    // A click (or tap) writes a cell's reasons under the tables, for screens without hover.
    const why = page.locator('#sc0-st0 .why');
    await bad.click();
    expect(await why.textContent()).toMatch(/^computed != observed: default\/a -> default\/c 8080\/TCP: expected allowed, observed blocked \(refused\)/);
    const fresh = page.locator('#sc0-st0 table[data-kind="computed"] td.a').first();
    await fresh.click();
    expect(await why.textContent()).toMatch(/^default\/a -> default\/b: computed allowed\npolicies: egress not isolated; ingress not isolated$/);

    // The graph: an SVG per step, drawn, with the mismatching edge marked and explained.
    expect(await page.locator('section.step svg.graph').count()).toBe(2);
    const box = await page.locator('#sc0-st0 svg.graph').boundingBox();
    expect(box!.width).toBeGreaterThan(100);
    const edge = page.locator('#sc0-st0 svg.graph path[data-kind="computed != observed"]');
    expect(await edge.getAttribute('data-from')).toBe('default/a');
    expect(await edge.getAttribute('data-to')).toBe('default/c');
    expect(await edge.locator('title').textContent()).toContain('computed != observed at 8080/TCP: expected allowed, observed blocked (refused)');
    await edge.dispatchEvent('click');
    expect(await why.textContent()).toContain('default/a -> default/c: nothing observed allowed\ncomputed != observed at 8080/TCP');
    expect(await page.locator('#sc0-st0 svg.graph path.g-ok').count()).toBe(2);
    expect(await page.locator('#sc1-st0 svg.graph path.g-m1').count()).toBe(2);
    expect(await page.locator('#sc0-st0 table.conv').count()).toBe(1);

    // Self-contained: the file was the only request, and nothing complained (CSP or script).
    expect(requests).toEqual([pathToFileURL(htmlFile).href]);
    expect(errors).toEqual([]);
    await page.close();
  });
});
