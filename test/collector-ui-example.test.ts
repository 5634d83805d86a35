// The collector web UI in a real browser (Debian's chromium via playwright-core) against the real
// collector: `/?example=true` draws star's sample (A, B, C, D with reachable and unreachable edges,
// E failing), the matrix holds the same truth table, toggles work, and with no resources the page
// shows its empty state. Assertions read the page's model (window.__starmap) and the DOM, not pixels.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, haveChromium, launchChromium, warnIfNoChromium } from './helpers/browser.ts';
import { stopAll } from './helpers/process.ts';
import { startCollector } from './helpers/collector.ts';

// Browser globals inside page.evaluate callbacks (the project's TS config has no DOM library).
declare const window: { __starmap: Model };
declare const document: { querySelector(selector: string): { textContent: string | null } | null };

warnIfNoChromium('collector UI tests');

let chromiumHandle: Browser | undefined;
let base = '';

beforeAll(async () => {
  if (!haveChromium) return;
  base = (await startCollector(['--log-level=warn'])).url;
  chromiumHandle = await launchChromium();
});

afterAll(async () => {
  await chromiumHandle?.close();
  await stopAll();
});

async function open(path: string, viewport = { width: 1366, height: 768 }): Promise<Page> {
  const page = await chromiumHandle!.context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // Network safety: the page may only talk to the collector on loopback.
  page.on('request', (r) => {
    if (!r.url().startsWith(base) && !r.url().startsWith('data:')) errors.push(`request to ${r.url()}`);
  });
  (page as Page & { errors: string[] }).errors = errors;
  await page.setViewportSize(viewport);
  await page.goto(base + path);
  await page.waitForFunction(() => ((window.__starmap?.state.polls as number | undefined) ?? 0) > 0);
  return page;
}

interface Model {
  state: Record<string, unknown>;
  nodes: { id: string; failing: boolean; reason: string | null }[];
  edges: { id: string; status: string; reason: string | null }[];
  matrix: { ids: string[]; rows: Record<string, Record<string, string>> };
}
const model = (page: Page): Promise<Model> =>
  page.evaluate(() => {
    const s = window.__starmap;
    return JSON.parse(
      JSON.stringify({
        state: s.state,
        nodes: s.nodes.map(({ id, failing, reason }) => ({ id, failing, reason })),
        edges: s.edges.map(({ id, status, reason }) => ({ id, status, reason })),
        matrix: s.matrix,
      }),
    ) as Model;
  });

describe.skipIf(!haveChromium)('collector UI: sample data and empty state', () => {
  it("/?example=true draws A-E, star's edges and the matrix, with E failing", async () => {
    const page = await open('/?example=true');
    const m = await model(page);
    expect(m.nodes.map((n) => n.id)).toEqual(['A', 'B', 'C', 'D', 'E']);
    expect(m.nodes.find((n) => n.id === 'E')).toMatchObject({ failing: true, reason: 'timeout' });
    expect(m.nodes.filter((n) => n.failing).map((n) => n.id)).toEqual(['E']);
    const edges = Object.fromEntries(m.edges.map((e) => [e.id, e.status]));
    expect(edges).toEqual({
      'A->B': 'reachable',
      'A->C': 'reachable',
      'A->D': 'reachable',
      'B->A': 'reachable',
      'B->C': 'unreachable',
      'B->D': 'reachable',
      'C->A': 'unreachable',
      'C->B': 'unreachable',
      'C->D': 'unreachable',
      'D->A': 'unreachable',
      'D->B': 'unreachable',
    });
    expect(m.edges.find((e) => e.id === 'C->D')!.reason).toBe('refused');
    expect(m.edges.find((e) => e.id === 'B->C')!.reason).toBe('timeout');
    // The matrix (the accessible view) holds the same table; D→foobar is no resource and is dropped.
    const text = await page.$$eval('table.matrix tbody tr', (rows) => rows.map((r) => [...r.querySelectorAll('th,td')].map((c) => c.textContent).join(' ')));
    expect(text).toEqual(['A - . . . -', 'B . - X . -', 'C X X - X -', 'D X X - - -', 'E ? ? ? ? ?']);
    expect(await page.getAttribute('[data-testid="cell-B-C"]', 'data-state')).toBe('blocked');
    expect(await page.getAttribute('[data-testid="cell-B-C"]', 'title')).toContain('timeout');
    expect(await page.isVisible('[data-testid="example-banner"]')).toBe(true);
    expect(await page.textContent('[data-testid="badge"]')).toBe('sample data');
    expect(await page.textContent('[data-testid="asof"]')).toMatch(/^as of /);
    expect(await page.isVisible('[data-testid="empty-state"]')).toBe(false);
    // The canvas is drawn at device resolution and animates.
    const frames = await page.evaluate(() => window.__starmap.state.frames as number);
    await page.waitForFunction((f) => (window.__starmap.state.frames as number) > f + 5, frames);
    expect((page as Page & { errors: string[] }).errors).toEqual([]);
    await page.close();
  });

  it("the toggles switch unreachable edges and markers, and hovering a cell shows the edge's details", async () => {
    const page = await open('/?example=true');
    await page.click('[data-testid="toggle-unreachable"]');
    expect(await page.getAttribute('[data-testid="toggle-unreachable"]', 'aria-pressed')).toBe('false');
    expect((await model(page)).state.showUnreachable).toBe(false);
    await page.click('[data-testid="toggle-markers"]');
    expect((await model(page)).state.showMarkers).toBe(false);
    await page.click('[data-testid="toggle-unreachable"]');
    expect((await model(page)).state.showUnreachable).toBe(true);
    await page.hover('[data-testid="cell-C-D"]');
    await page.waitForFunction(() => document.querySelector('[data-testid="details"]')!.textContent!.includes('C → D'));
    const details = await page.textContent('[data-testid="details"]');
    expect(details).toContain('refused');
    expect(details).toMatch(/changed\d+ s ago/);
    await page.close();
  });

  it('shows the empty state with a curl example when the collector has no resources', async () => {
    const page = await open('/', { width: 390, height: 844 });
    await page.waitForSelector('[data-testid="empty-state"]', { state: 'visible' });
    const text = await page.textContent('[data-testid="empty-state"]');
    expect(text).toContain('No resources yet');
    expect(text).toContain(`curl -X POST ${base}/resources`);
    expect(await page.textContent('[data-testid="badge"]')).toBe('live');
    expect((await model(page)).nodes).toEqual([]);
    // Nothing changes (same ETag on every poll): the model is built once, not again on each poll.
    await page.waitForFunction(() => (window.__starmap.state.polls as number) >= 3);
    expect((await model(page)).state.builds).toBe(1);
    await page.close();
  });
});
