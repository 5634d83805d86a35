// The collector UI's layout in a real browser at 1400x900, 1920x1080 and a phone (390x844), with
// 3, 12 and 50 nodes against the real collector: no node, label or self-loop outside the canvas,
// no two drawn labels overlapping nor a label over a circle (where they would crowd, 50 nodes on a
// phone, a label is hidden and shown when its node is tapped or hovered), the matrix in the
// collector's order (not alphabetical) with the collector's own row last, as the terminal's truth
// tables have it. Each of the nine views is saved as a PNG in test-output/ui-screenshots/ (the
// folder is printed) so that a regression can be seen, not only asserted.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, haveChromium, launchChromium, warnIfNoChromium } from './helpers/browser.ts';
import { fakeProbes, type FakeProbes } from './helpers/fake-probes.ts';
import { ROOT, stopAll } from './helpers/process.ts';
import { startCollector } from './helpers/collector.ts';

interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}
interface Geometry {
  width: number;
  height: number;
  raisedLabel: string | null;
  nodes: { id: string; x: number; y: number; r: number; label: Box | null; hiddenLabel: Box | null }[];
  loops: (Box & { id: string })[];
}
// Browser globals inside page.evaluate callbacks (the project's TS config has no DOM library).
declare const window: {
  __starmap: {
    state: Record<string, unknown>;
    nodes: { id: string; pending: boolean }[];
    edges: unknown[];
    matrix: { ids: string[] };
    geometry: () => Geometry;
  };
};

warnIfNoChromium('collector UI layout tests');

const SHOTS = join(ROOT, 'test-output', 'ui-screenshots');
const VIEWPORTS = [
  { width: 1400, height: 900 },
  { width: 1920, height: 1080 },
  { width: 390, height: 844 },
];
/** Ids in the order they are added: a scenario's order, deliberately not alphabetical. */
const GRAPHS: Record<number, { ids: string[]; failing: string[] }> = {
  3: { ids: ['frontend', 'backend', 'client'], failing: [] },
  12: { ids: ['frontend', 'backend', 'client', 'a.x', 'b.x', 'c.x', 'a.y', 'b.y', 'c.y', 'a.z', 'b.z', 'c.z'], failing: ['c.z'] },
  50: { ids: Array.from({ length: 50 }, (_, i) => `p${String(50 - i).padStart(2, '0')}`), failing: ['p07'] },
};

let chromiumHandle: Browser | undefined;
const fakes: FakeProbes[] = [];

beforeAll(async () => {
  if (!haveChromium) return;
  mkdirSync(SHOTS, { recursive: true });
  console.log(`collector UI screenshots: ${SHOTS}`);
  chromiumHandle = await launchChromium();
});

afterAll(async () => {
  await chromiumHandle?.close();
  await Promise.all(fakes.map((f) => f.close()));
  await stopAll();
});

const inside = (b: Box, g: Geometry) => b.x >= 0 && b.y >= 0 && b.x + b.w <= g.width && b.y + b.h <= g.height;
const overlap = (a: Box, b: Box) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
/** Whether a box covers part of a circle. */
const coversCircle = (b: Box, c: { x: number; y: number; r: number }) => {
  const nx = Math.max(b.x, Math.min(c.x, b.x + b.w)),
    ny = Math.max(b.y, Math.min(c.y, b.y + b.h));
  return Math.hypot(nx - c.x, ny - c.y) < c.r;
};

async function collectorWith(n: number): Promise<string> {
  const { ids, failing } = GRAPHS[n]!;
  const fake = await fakeProbes(ids, failing);
  fakes.push(fake);
  const base = (await startCollector(['--http-request-seconds=0.5', '--log-level=error'])).url;
  for (const id of ids) {
    const res = await fetch(`${base}/resources`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id, url: fake.url(id) }),
    });
    expect(res.status).toBe(201);
  }
  return base;
}

async function look(base: string, n: number, viewport: { width: number; height: number }): Promise<{ page: Page; g: Geometry }> {
  const page = await chromiumHandle!.context.newPage();
  await page.setViewportSize(viewport);
  await page.goto(`${base}/`);
  const { ids, failing } = GRAPHS[n]!;
  const edges = (ids.length - failing.length) * ids.length;
  await page.waitForFunction(
    ([count, e]) => window.__starmap.nodes.length === count && window.__starmap.nodes.every((x) => !x.pending) && window.__starmap.edges.length === e,
    [ids.length, edges] as const,
    { timeout: 20_000 },
  );
  // Nodes ease into place: wait until none moves, a few frames later.
  const frames = await page.evaluate(() => window.__starmap.state.frames as number);
  await page.waitForFunction((f) => window.__starmap.state.settled === true && (window.__starmap.state.frames as number) > f + 3, frames);
  const g = await page.evaluate(() => JSON.parse(JSON.stringify(window.__starmap.geometry())) as Geometry);
  await page.screenshot({ path: join(SHOTS, `${n}-nodes-${viewport.width}x${viewport.height}.png`), fullPage: viewport.width < 600 });
  return { page, g };
}

describe.skipIf(!haveChromium)('collector UI layout at three sizes with 3, 12 and 50 nodes', () => {
  for (const n of [3, 12, 50]) {
    it(`${n} nodes: everything inside the canvas, labels apart, the matrix in the collector's order`, async () => {
      const base = await collectorWith(n);
      const { ids } = GRAPHS[n]!;
      for (const viewport of VIEWPORTS) {
        const { page, g } = await look(base, n, viewport);
        const where = `${n} nodes at ${viewport.width}x${viewport.height}`;
        expect(
          g.nodes.map((x) => x.id),
          where,
        ).toEqual(ids);
        for (const node of g.nodes) {
          expect(inside({ x: node.x - node.r, y: node.y - node.r, w: 2 * node.r, h: 2 * node.r }, g), `${where}: node ${node.id} inside`).toBe(true);
          // Every node has a label box: drawn, or hidden for lack of room (shown on hover or tap).
          const box = node.label ?? node.hiddenLabel;
          expect(box, `${where}: ${node.id} has a label`).not.toBeNull();
          expect(inside(box!, g), `${where}: label of ${node.id} inside ${JSON.stringify(box)}`).toBe(true);
          // Labels sit beside or under their circle, never on one.
          for (const other of g.nodes) expect(coversCircle(box!, other), `${where}: label of ${node.id} over node ${other.id}`).toBe(false);
        }
        for (const loop of g.loops) expect(inside(loop, g), `${where}: self-loop ${loop.id} inside ${JSON.stringify(loop)}`).toBe(true);
        expect(g.loops.length).toBeGreaterThan(0);
        // No two drawn labels overlap, at any size; a label is hidden only where it would overlap a
        // drawn one, and the failing node's label (it says why) is always drawn.
        const shown = g.nodes.filter((x) => x.label);
        for (const [i, a] of shown.entries())
          for (const b of shown.slice(i + 1)) expect(overlap(a.label!, b.label!), `${where}: labels of ${a.id} and ${b.id} overlap`).toBe(false);
        for (const h of g.nodes.filter((x) => x.hiddenLabel))
          expect(
            shown.some((x) => overlap(x.label!, h.hiddenLabel!)),
            `${where}: label of ${h.id} hidden without need`,
          ).toBe(true);
        for (const id of GRAPHS[n]!.failing) expect(g.nodes.find((x) => x.id === id)?.label, `${where}: failing ${id} labelled`).not.toBeNull();
        if (n <= 12) expect(shown.length, `${where}: every label drawn`).toBe(n);
        else expect(shown.length, `${where}: most labels drawn`).toBeGreaterThan(n * 0.6);
        // A tap on a node whose label is hidden shows that label.
        const quiet = g.nodes.find((x) => x.hiddenLabel);
        if (quiet) {
          const canvas = (await page.locator('#graph').boundingBox())!;
          await page.mouse.click(canvas.x + quiet.x, canvas.y + quiet.y);
          await page.waitForFunction((id) => window.__starmap.geometry().raisedLabel === id, quiet.id, { timeout: 10_000 });
        }
        // The graph uses the space it has: the nodes span most of the canvas both ways.
        const xs = g.nodes.map((x) => x.x),
          ys = g.nodes.map((x) => x.y);
        expect((Math.max(...xs) - Math.min(...xs)) / g.width, `${where}: horizontal spread`).toBeGreaterThan(0.35);
        expect((Math.max(...ys) - Math.min(...ys)) / g.height, `${where}: vertical spread`).toBeGreaterThan(0.6);
        // The matrix: the collector's order, and its own row ("UI") last.
        const head = await page.$$eval('table.matrix thead th:not(.corner)', (cells) => cells.map((c) => c.textContent));
        expect(head).toEqual(ids.map((id) => (id.length > 18 ? `${id.slice(0, 17)}…` : id)));
        const rows = await page.$$eval('table.matrix tbody th', (cells) => cells.map((c) => c.textContent));
        expect(rows).toEqual(ids);
        expect(await page.textContent('table.matrix tfoot th')).toBe('UI');
        await page.close();
      }
    }, 120_000);
  }
});
