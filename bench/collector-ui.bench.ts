// Collector UI smoothness: 50 resources whose probes each report 50 targets (2,500 edges, a third
// of them unreachable) served on loopback by a stub of the collector's /responses, the page
// drawn in headless chromium with markers animating; frames per second counted with
// requestAnimationFrame over a few seconds, next to a baseline page that only runs an empty rAF
// loop in the same browser, in the same run. Also: the time the page takes to turn one /responses
// document into its model (nodes, edges, matrix) and the size of that document.
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from '../test/helpers/browser.ts';
import { ROOT } from '../test/helpers/process.ts';
import { median, ratio, table, writeResults, type ResultRow } from './lib/results.ts';

const N = 50;
const SECONDS = 4;
const TRIES = 3;
const UI = join(ROOT, 'collector', 'ui');

if (!existsSync(CHROMIUM)) {
  console.log(`skipped: ${CHROMIUM} is missing`);
  process.exit(0);
}

function responses(): string {
  const now = new Date().toISOString();
  const out: Record<string, unknown> = {};
  for (let i = 0; i < N; i++) {
    const targets = Array.from({ length: N }, (_, j) => {
      const reachable = (i + 2 * j) % 3 !== 0;
      return {
        reachable,
        url: `http://svc-${j}.bench:9000/status`,
        reason: reachable ? 'ok' : j % 2 ? 'timeout' : 'refused',
        message: null,
        latencyMs: 1.2,
        statusCode: reachable ? 200 : null,
        checkedAt: now,
        changedAt: now,
      };
    });
    out[`svc-${i}`] = {
      url: `http://svc-${i}.bench:9000/status`,
      statusCode: 200,
      json: { status: { targets } },
      error: null,
      fetchedAt: now,
      latencyMs: 2,
      lastSuccessAt: now,
      pending: false,
    };
  }
  return JSON.stringify({ responses: out, generatedAt: now });
}

const BASELINE =
  '<!doctype html><html><body style="background:#0d1117"><script>window.__frames=0;(function f(){window.__frames++;requestAnimationFrame(f)})()</script></body></html>';

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  const send = (type: string, body: string | Buffer) => res.writeHead(200, { 'content-type': type, 'cache-control': 'no-cache' }).end(body);
  if (url === '/' || url.startsWith('/?')) return send('text/html', readFileSync(join(UI, 'index.html')));
  if (url === '/baseline') return send('text/html', BASELINE);
  // The UI's modules (app.js imports model.js, layout.js, draw.js, panels.js) and its style sheet.
  const asset = /^\/assets\/([a-z-]+\.(js|css))$/.exec(url);
  if (asset && existsSync(join(UI, asset[1]!))) return send(asset[2] === 'js' ? 'text/javascript' : 'text/css', readFileSync(join(UI, asset[1]!)));
  if (url === '/responses') return send('application/json', responses());
  if (url === '/healthz') return send('application/json', JSON.stringify({ status: 'ok', resources: N, intervalSeconds: 5 }));
  res.writeHead(404).end();
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;

// chromium.launch starts from a fresh temporary profile of its own, removed on close.
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: CHROMIUM_ARGS,
});

declare const window: { __frames?: number; __starmap?: { state: { frames: number; polls: number; buildMs: number }; edges: unknown[] } };
const frames = (page: Page) => page.evaluate(() => window.__frames ?? window.__starmap?.state.frames ?? 0);

async function fps(page: Page): Promise<number> {
  const f0 = await frames(page);
  const t0 = Date.now();
  await page.waitForTimeout(SECONDS * 1000); // measuring over a fixed window, not synchronising
  return ((await frames(page)) - f0) / ((Date.now() - t0) / 1000);
}

try {
  const rows: (string | number)[][] = [];
  const results: ResultRow[] = [];
  const docBytes = Buffer.byteLength(responses());
  for (const [w, h, dpr] of [
    [1920, 1080, 1],
    [1920, 1080, 2],
  ] as const) {
    const context = await browser.newContext({ viewport: { width: w, height: h }, deviceScaleFactor: dpr });
    const page = await context.newPage();
    page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
    await page.goto(`${base}/baseline`);
    const baseline: number[] = [];
    for (let i = 0; i < TRIES; i++) baseline.push(await fps(page));
    await page.goto(`${base}/`);
    await page.waitForFunction(() => (window.__starmap?.edges.length ?? 0) >= 2500, null, { timeout: 20_000 });
    const ui: number[] = [];
    for (let i = 0; i < TRIES; i++) ui.push(await fps(page));
    const build = await page.evaluate(() => window.__starmap!.state.buildMs);
    const edges = await page.evaluate(() => window.__starmap!.edges.length);
    if (process.env.SCREENSHOT) await page.screenshot({ path: `${process.env.SCREENSHOT}-${w}x${h}@${dpr}.png` });
    const b = median(baseline),
      u = median(ui);
    rows.push([`${w}×${h} @${dpr}x`, edges, b.toFixed(1), u.toFixed(1), `${((u / b) * 100).toFixed(0)} %`, `${build.toFixed(1)} ms`]);
    console.log(rows.at(-1)!.join('  '));
    results.push(
      {
        measure: `fps, ${N} nodes, ${edges} edges, ${w}×${h} @${dpr}x (median of ${TRIES} × ${SECONDS} s)`,
        value: `${u.toFixed(1)} fps`,
        baseline: `empty rAF loop: ${b.toFixed(1)} fps`,
        ratio: ratio(u, b),
        goal: '-',
        met: '-',
      },
      {
        measure: `model build per poll of /responses (${(docBytes / 1024).toFixed(0)} KiB), ${w}×${h} @${dpr}x`,
        value: `${build.toFixed(1)} ms`,
        baseline: '-',
        ratio: '-',
        goal: '-',
        met: '-',
      },
    );
    await context.close();
  }
  console.log(table(['viewport', 'edges', 'baseline fps', 'UI fps', 'UI / baseline', 'model build per poll'], rows));
  writeResults('Collector UI', results);
} finally {
  await browser.close();
  server.close();
}
