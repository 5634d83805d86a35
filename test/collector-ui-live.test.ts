// The collector web UI live, in a real browser: two real probes watching each other and the real
// collector fetching both. Stopping one probe turns its node into failing (with the reason) and the
// edge towards it into unreachable, without a reload; starting it again on the same port restores
// both. Stopping the collector shows the error state and the stale badge. Assertions read the
// page's model (window.__starmap) and the DOM, never pixels; every wait polls with a deadline.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, haveChromium, launchChromium, warnIfNoChromium } from './helpers/browser.ts';
import { NODE, freePort, start, stopAll, waitForHttp, type Running } from './helpers/process.ts';
import { startCollector } from './helpers/collector.ts';

interface Model {
  state: Record<string, unknown>;
  nodes: { id: string; failing: boolean; reason: string | null }[];
  edges: { id: string; status: string; reason: string | null }[];
  matrix: { ids: string[]; rows: Record<string, Record<string, string>> };
}
// Browser globals inside page.evaluate callbacks (the project's TS config has no DOM library).
declare const window: { __starmap: Model };

warnIfNoChromium('collector UI tests');

let chromiumHandle: Browser | undefined;

beforeAll(async () => {
  if (!haveChromium) return;
  chromiumHandle = await launchChromium();
});

afterAll(async () => {
  await chromiumHandle?.close();
  await stopAll();
});

function probe(port: number, urls: string): Running {
  return start(NODE, [
    'probe/main.ts',
    `--urls=${urls}`,
    '--http-address=127.0.0.1',
    `--http-port=${port}`,
    '--http-probe-seconds=0.5',
    '--timeout-seconds=0.3',
    '--logfile=/dev/null',
  ]);
}

/** The page's view of the graph: node id → failing reason or "ok"; edge id → status. */
const view = (page: Page) =>
  page.evaluate(() => {
    const s = window.__starmap;
    return {
      nodes: Object.fromEntries(s.nodes.map((n) => [n.id, n.failing ? `failing:${n.reason}` : 'ok'])),
      edges: Object.fromEntries(s.edges.map((e) => [e.id, e.status === 'unreachable' ? `unreachable:${e.reason}` : e.status])),
      cells: { ab: s.matrix.rows.A?.B, ba: s.matrix.rows.B?.A },
      polls: s.state.polls as number,
    };
  });
type View = Awaited<ReturnType<typeof view>>;

/** Polls the page's model until `ok` holds (deadline 15 s), returning the last view seen. */
async function until(page: Page, ok: (v: View) => boolean, what: string): Promise<View> {
  const deadline = Date.now() + 15_000;
  let last: View | undefined;
  while (Date.now() < deadline) {
    last = await view(page);
    if (ok(last)) return last;
    await page.waitForFunction((n) => (window.__starmap.state.polls as number) > n, last.polls, { timeout: 5_000 }).catch(() => undefined);
  }
  throw new Error(`the UI never showed ${what}; last: ${JSON.stringify(last)}`);
}

/** A collector that fetches every 0.5 s and gives up on a resource after 0.3 s. */
const COLLECTOR_FLAGS = ['--http-request-seconds=0.5', '--timeout-seconds=0.3', '--log-level=warn'];

describe.skipIf(!haveChromium)('collector UI: live updates from real probes', () => {
  it('a stopped probe turns failing and its incoming edge unreachable without a reload; restarting restores both', async () => {
    const [pa, pb] = [await freePort(), await freePort()];
    const { url: collector, proc: coll } = await startCollector(COLLECTOR_FLAGS);
    // A probes B as a bare host:port (TCP), B probes A as a URL: both must match the resources' URLs.
    probe(pa, `127.0.0.1:${pb}`);
    let b = probe(pb, `http://127.0.0.1:${pa}/status`);
    await waitForHttp(`http://127.0.0.1:${pa}/status`);
    await waitForHttp(`http://127.0.0.1:${pb}/status`);
    for (const [id, port] of [
      ['A', pa],
      ['B', pb],
    ] as const) {
      const res = await fetch(`${collector}/resources`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id, url: `http://127.0.0.1:${port}/status` }),
      });
      expect(res.status).toBe(201);
    }

    const page = await chromiumHandle!.context.newPage();
    await page.goto(`${collector}/`);
    await until(
      page,
      (v) => v.nodes.A === 'ok' && v.nodes.B === 'ok' && v.edges['A->B'] === 'reachable' && v.edges['B->A'] === 'reachable',
      'A and B ok with both edges reachable',
    );
    expect(await page.textContent('[data-testid="cell-A-B"]')).toBe('.');
    const loads: string[] = [];
    page.on('load', () => loads.push(page.url()));

    await b.stop('SIGKILL');
    // A fetch or check in flight at the kill is reset (CI saw `failing:reset`); every later one is
    // refused: wait for that, the state a stopped probe stays in.
    const down = await until(
      page,
      (v) => v.nodes.B === 'failing:refused' && v.edges['A->B'] === 'unreachable:refused',
      'B failing and A→B unreachable, refused',
    );
    expect(down.nodes.B).toBe('failing:refused');
    expect(down.edges['A->B']).toBe('unreachable:refused');
    // B's own probe no longer reports: its edge is kept on screen as unknown, never as reachable.
    expect(down.edges['B->A']).toBe('unknown');
    expect(down.cells).toEqual({ ab: 'X', ba: '?' });
    await page.waitForFunction(() => document.querySelector('[data-testid="cell-A-B"]')?.textContent === 'X');
    expect(await page.textContent('[data-testid="resource-B"]')).toContain('failing: refused');

    b = probe(pb, `http://127.0.0.1:${pa}/status`);
    const up = await until(
      page,
      (v) => v.nodes.B === 'ok' && v.edges['A->B'] === 'reachable' && v.edges['B->A'] === 'reachable',
      'B ok again with both edges reachable',
    );
    expect(up.cells).toEqual({ ab: '.', ba: '.' });
    expect(loads).toEqual([]);

    // The collector itself goes away: the last data stays, marked stale, with the error state.
    await coll.stop('SIGKILL');
    await page.waitForSelector('[data-testid="error-state"]', { state: 'visible', timeout: 10_000 });
    expect(await page.getAttribute('[data-testid="badge"]', 'data-state')).toBe('stale');
    expect(await page.textContent('[data-testid="badge"]')).toContain('collector unreachable');
    expect((await view(page)).nodes).toEqual({ A: 'ok', B: 'ok' });
    await page.close();
  });

  it("keeps the collector's order of ids that look like integers (not the numeric order JSON.parse gives)", async () => {
    const closed = await freePort(); // nothing listens: every resource fails, which is enough here
    const collector = (await startCollector(COLLECTOR_FLAGS)).url;
    const ids = ['10', 'b', '2', '1'];
    for (const id of ids) {
      const res = await fetch(`${collector}/resources`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id, url: `http://127.0.0.1:${closed}/${id}` }),
      });
      expect(res.status).toBe(201);
    }
    const page = await chromiumHandle!.context.newPage();
    await page.goto(`${collector}/`);
    await page.waitForFunction((n) => window.__starmap.matrix.ids.length === n, ids.length, { timeout: 15_000 });
    expect(await page.evaluate(() => window.__starmap.matrix.ids)).toEqual(ids);
    expect(await page.evaluate(() => window.__starmap.nodes.map((n) => n.id))).toEqual(ids);
    await page.close();
  });
});

declare const document: { querySelector(selector: string): { textContent: string | null } | null };
