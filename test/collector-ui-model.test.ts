// How the collector web UI reads the data, in a real browser against the real collector: URLs are
// matched by scheme, host and port (case, default ports, bare host:port, IPv6), star's minimal
// target shape and null entries are tolerated, a failing resource stays on screen with its reason,
// targets that are no resource are counted but not drawn, and the layout stays put between polls.
import http from 'node:http';
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, haveChromium, launchChromium, warnIfNoChromium } from './helpers/browser.ts';
import { stopAll } from './helpers/process.ts';
import { startCollector } from './helpers/collector.ts';

interface Model {
  state: Record<string, unknown>;
  nodes: { id: string; failing: boolean; reason: string | null; x: number; y: number }[];
  edges: { id: string; status: string; reason: string | null }[];
  matrix: { ids: string[]; rows: Record<string, Record<string, string>> };
  normalise: (u: string) => { key: string; scheme: string; host: string; port: string } | undefined;
}
// Browser globals inside page.evaluate callbacks (the project's TS config has no DOM library).
declare const window: { __starmap: Model; devicePixelRatio: number };
declare const document: { querySelector(selector: string): { width: number; clientWidth: number; textContent: string | null } | null };

warnIfNoChromium('collector UI tests');

let chromiumHandle: Browser | undefined;
const servers: http.Server[] = [];

beforeAll(async () => {
  if (!haveChromium) return;
  chromiumHandle = await launchChromium();
});

afterAll(async () => {
  await chromiumHandle?.close();
  servers.forEach((s) => s.close());
  await stopAll();
});

async function serve(handler: http.RequestListener): Promise<number> {
  const s = http.createServer(handler);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  servers.push(s);
  return (s.address() as net.AddressInfo).port;
}

describe.skipIf(!haveChromium)('collector UI: reading the data', () => {
  it("matches targets by scheme, host and port; keeps failing resources; tolerates star's shapes", async () => {
    let p = 0;
    let q = 0;
    // One server holds two "probes" (A and B, told apart by path); another is C.
    p = await serve((req, res) => {
      if (req.url === '/a') {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            status: {
              targets: [
                { url: `HTTP://127.0.0.1:${p}/b`, reachable: true, reason: 'ok' },
                { url: `127.0.0.1:${q}`, reachable: false, reason: 'timeout', message: 'no answer within 300 ms' },
                null,
                { url: 'http://elsewhere.invalid:1/', reachable: false, reason: 'dns' },
              ],
            },
          }),
        );
      } else res.writeHead(500).end('{}');
    });
    q = await serve((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ status: { targets: [{ url: `http://127.0.0.1:${p}/a`, reachable: true }] } })); // star's two fields only
    });
    const collector = (await startCollector(['--http-request-seconds=0.5', '--log-level=warn'])).url;
    for (const [id, url] of [
      ['A', `http://127.0.0.1:${p}/a`],
      ['B', `http://127.0.0.1:${p}/b`],
      ['C', `http://127.0.0.1:${q}/status`],
    ]) {
      const res = await fetch(`${collector}/resources`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, url }) });
      expect(res.status).toBe(201);
    }
    const page = await chromiumHandle!.context.newPage();
    await page.goto(`${collector}/`);
    await page.waitForFunction(() => window.__starmap.edges.length === 3 && window.__starmap.nodes.some((n) => n.failing), null, { timeout: 15_000 });
    const m = await page.evaluate(
      () =>
        JSON.parse(
          JSON.stringify({
            nodes: window.__starmap.nodes.map(({ id, failing, reason }) => ({ id, failing, reason })),
            edges: window.__starmap.edges.map(({ id, status, reason }) => ({ id, status, reason })),
            matrix: window.__starmap.matrix,
          }),
        ) as Model,
    );
    expect(m.nodes).toEqual([
      { id: 'A', failing: false, reason: null },
      { id: 'B', failing: true, reason: 'http-status' },
      { id: 'C', failing: false, reason: null },
    ]);
    expect(m.edges).toEqual([
      { id: 'A->B', status: 'reachable', reason: 'ok' },
      { id: 'A->C', status: 'unreachable', reason: 'timeout' },
      { id: 'C->A', status: 'reachable', reason: 'ok' },
    ]);
    expect(m.matrix.rows).toEqual({ A: { A: '-', B: '.', C: 'X' }, B: { A: '?', B: '?', C: '?' }, C: { A: '.', B: '-', C: '-' } });
    await page.waitForFunction(() => document.querySelector('[data-testid="summary"]')?.textContent?.includes('1 target(s) that are no resource'));

    // The layout stays put: positions are the same a few polls later.
    const where = () => page.evaluate(() => window.__starmap.nodes.map((n) => `${n.id}@${Math.round(n.x)},${Math.round(n.y)}`).join(' '));
    const before = await where();
    const polls = await page.evaluate(() => window.__starmap.state.polls as number);
    await page.waitForFunction((n) => (window.__starmap.state.polls as number) >= n + 2, polls);
    expect(await where()).toBe(before);
    // HiDPI: the canvas is backed at device pixels.
    expect(
      await page.evaluate(
        () => document.querySelector('#graph')!.width === Math.round(document.querySelector('#graph')!.clientWidth * window.devicePixelRatio),
      ),
    ).toBe(true);
    await page.close();
  });

  it('normalises URLs and host:port targets to scheme, host and port', async () => {
    const pc = (await startCollector(['--log-level=warn'])).port;
    const page = await chromiumHandle!.context.newPage();
    await page.goto(`http://127.0.0.1:${pc}/`);
    const keys = await page.evaluate(
      (list) => list.map((u) => window.__starmap.normalise(u)?.key ?? null),
      [
        'http://x:80/status',
        'http://X/status',
        'x:80',
        'https://x/',
        'https://X:443/a',
        '[::1]:9000',
        'http://[::1]:9000/status',
        'http://Frontend.Stars.:80/status',
        'not a url at all',
        '',
      ],
    );
    expect(keys).toEqual([
      'http://x:80',
      'http://x:80',
      'tcp://x:80',
      'https://x:443',
      'https://x:443',
      'tcp://[::1]:9000',
      'http://[::1]:9000',
      'http://frontend.stars:80',
      null,
      null,
    ]);
    await page.close();
  });
});
