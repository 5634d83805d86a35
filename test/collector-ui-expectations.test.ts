// Live expectations in the collector UI, in a real browser: expectations PUT to a real collector
// make the page say which step is in force, mark exactly the edges and matrix cells (the
// collector's own row included) where what it observes is not what the step expects, and show
// the reasons in the cell's title, in the details of a tapped cell and in the tooltip of a tapped
// edge; deleting them gives the page back as it was. Then a real `scenario run` on loopback
// (no isolation) with a collector pod publishes its steps and the page shows the step in force.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, haveChromium, launchChromium, warnIfNoChromium } from './helpers/browser.ts';
import { fakeProbes, fakeReachable, type FakeProbes } from './helpers/fake-probes.ts';
import { NODE, ROOT, start, stopAll, tempDir } from './helpers/process.ts';
import { waitFor } from './helpers/wait.ts';
import { startCollector } from './helpers/collector.ts';

interface Expect {
  mismatch: boolean;
  unproven?: boolean;
  expectedMark: string;
  reasons: string[];
}
// Browser globals inside page.evaluate callbacks (the project's TS config has no DOM library).
declare const window: {
  __starmap: {
    state: Record<string, unknown>;
    nodes: { id: string; pending: boolean }[];
    edges: { id: string; expect?: Expect; geo?: { mid: { x: number; y: number } } }[];
    expectations: { mismatches: number; step: { name: string } } | null;
  };
};

warnIfNoChromium('collector UI expectation tests');

const SHOTS = join(ROOT, 'test-output', 'ui-screenshots');
const IDS = ['frontend', 'backend', 'client'];
let chromiumHandle: Browser | undefined;
let fake: FakeProbes | undefined;

beforeAll(async () => {
  if (!haveChromium) return;
  mkdirSync(SHOTS, { recursive: true });
  chromiumHandle = await launchChromium();
});

afterAll(async () => {
  await chromiumHandle?.close();
  await fake?.close();
  await stopAll();
});

const DENY = [
  'egress of stars/frontend: not isolated (no policy selects it for egress)',
  'ingress of stars/backend: isolated by stars/default-deny; no rule allows it',
];

/** Expectations as a runner sends them: every cell as the fake network behaves, except two. */
function expectations(): Record<string, unknown> {
  const cells: Record<string, unknown>[] = [];
  for (const from of IDS) {
    for (const to of IDS) {
      const really = fakeReachable(IDS, from, to);
      // frontend → backend is observed allowed but expected blocked (a mismatch).
      const expected = from === 'frontend' && to === 'backend' ? false : really;
      cells.push({
        from,
        to,
        expected,
        reason: expected ? 'egress not isolated; ingress not isolated' : 'ingress isolated by stars/default-deny, no rule allows it',
        reasons: expected ? [] : DENY,
      });
    }
    // The collector's own row: it fetches every resource, but the step says it may not reach client.
    cells.push({
      from: 'management-ui',
      to: from,
      expected: from !== 'client',
      reason: from === 'client' ? 'ingress isolated by client/default-deny, no rule allows it' : 'ingress allowed by stars/allow-ui rule 0',
      reasons: from === 'client' ? ['ingress of client/client: isolated by client/default-deny; no rule allows it'] : [],
    });
  }
  return {
    scenario: 'stars',
    step: { index: 1, name: 'default-deny', total: 5, description: 'both namespaces deny all ingress', policies: ['stars/default-deny'] },
    phase: 'judged',
    outcome: 'fail',
    collector: { id: 'management-ui', label: 'UI' },
    labels: { frontend: 'F', backend: 'B', client: 'C' },
    cells,
  };
}

describe.skipIf(!haveChromium)('collector UI: live expectations', () => {
  it('marks exactly the mismatching edges and cells with their reasons, says the step, and is as before without them', async () => {
    expect(fakeReachable(IDS, 'frontend', 'backend')).toBe(true);
    fake = await fakeProbes(IDS);
    const base = (await startCollector(['--http-request-seconds=0.5', '--log-level=error'])).url;
    for (const id of IDS)
      expect(
        (await fetch(`${base}/resources`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, url: fake.url(id) }) }))
          .status,
      ).toBe(201);

    const page = await chromiumHandle!.context.newPage();
    await page.setViewportSize({ width: 1400, height: 900 });
    await page.goto(`${base}/`);
    await page.waitForFunction(
      () => window.__starmap.edges.length === 9 && window.__starmap.nodes.every((n) => !n.pending) && (window.__starmap.state.expectationPolls as number) > 0,
    );
    // Nothing published: no step, no marks.
    expect(await page.isVisible('[data-testid="step"]')).toBe(false);
    expect(await page.$$('[data-mismatch]')).toHaveLength(0);
    expect(await page.evaluate(() => window.__starmap.expectations)).toBeNull();

    const res = await fetch(`${base}/starmap/expectations`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(expectations()),
    });
    expect(res.status).toBe(200);
    await page.waitForFunction(() => window.__starmap.expectations?.mismatches === 2, null, { timeout: 10_000 });
    await page.waitForSelector('[data-testid="step"]', { state: 'visible' });
    expect(await page.textContent('[data-testid="step"]')).toContain('stars: step 2/5 default-deny (judged: fail)');
    expect(await page.textContent('[data-testid="step"]')).toContain('2 cell(s) not as expected');
    // The marks: exactly the two cells, one an edge of the graph and one in the collector's row.
    const marked = await page.$$eval('td[data-mismatch="true"]', (cells) => cells.map((c) => c.getAttribute('data-testid')));
    expect(marked.sort()).toEqual(['cell-frontend-backend', 'cell-self-client']);
    const edges = await page.evaluate(() => window.__starmap.edges.filter((e) => e.expect?.mismatch).map((e) => e.id));
    expect(edges).toEqual(['frontend->backend']);
    expect(await page.getAttribute('[data-testid="cell-frontend-backend"]', 'data-expected')).toBe('X');
    expect(await page.getAttribute('[data-testid="cell-frontend-backend"]', 'title')).toContain(DENY[1]);
    expect(await page.getAttribute('[data-testid="cell-backend-client"]', 'data-mismatch')).toBe('false');
    // Headers use the scenario's short names, as the terminal's tables do.
    expect(await page.$$eval('table.matrix thead th:not(.corner)', (c) => c.map((x) => x.textContent))).toEqual(['F', 'B', 'C']);
    // Tapping a cell shows why in the details; tapping the edge on the canvas shows it in the tooltip.
    await page.click('[data-testid="cell-self-client"]');
    await page.waitForFunction(() => document.querySelector('[data-testid="details"]')!.textContent!.includes('client/default-deny'));
    expect(await page.textContent('[data-testid="details"]')).toContain('not as expected');
    await page.waitForFunction(() => window.__starmap.state.settled === true);
    const mid = await page.evaluate(() => window.__starmap.edges.find((e) => e.id === 'frontend->backend')!.geo!.mid);
    const box = (await page.locator('#graph').boundingBox())!;
    await page.mouse.click(box.x + mid.x, box.y + mid.y);
    await page.waitForSelector('[data-testid="tooltip"]', { state: 'visible' });
    const tip = await page.textContent('[data-testid="tooltip"]');
    expect(tip).toContain('frontend → backend');
    expect(tip).toContain(DENY[1]);
    await page.screenshot({ path: join(SHOTS, 'expectations-3-nodes-1400x900.png') });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForFunction(() => window.__starmap.state.settled === true);
    await page.screenshot({ path: join(SHOTS, 'expectations-3-nodes-390x844.png'), fullPage: true });

    // Deleted: the page is as it was.
    expect((await fetch(`${base}/starmap/expectations`, { method: 'DELETE' })).status).toBe(200);
    await page.waitForFunction(() => window.__starmap.expectations === null);
    await page.waitForSelector('[data-testid="step"]', { state: 'hidden' });
    expect(await page.$$('[data-mismatch]')).toHaveLength(0);
    expect(await page.$$eval('table.matrix thead th:not(.corner)', (c) => c.map((x) => x.textContent))).toEqual(IDS);
    await page.close();
  }, 60_000);

  it('a scenario run on loopback publishes its steps: the page says which step is in force, and that policies are not enforced here instead of a pass', async () => {
    const dir = tempDir('starmap-live-');
    const file = join(dir, 'live.yaml');
    writeFileSync(
      file,
      `name: live
description: two probes and the management UI
probeSeconds: 0.5
timeoutSeconds: 0.3
apps:
  - { name: a, kind: probe, probes: [b] }
  - { name: b, kind: probe, labels: { app: b }, probes: [a] }
  - { name: ui, short: UI, kind: collector, collects: [a, b] }
policies:
  - apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: { name: deny-all, namespace: default }
    spec: { podSelector: { matchLabels: { app: b } } }
steps:
  - name: open
    policies: []
  - name: closed
    description: b denies all ingress
    policies: [default/deny-all]
`,
    );
    const run = start(NODE, ['scenarios/main.ts', 'run', file, '--isolation=off', '--hold', '--step-timeout=20']);
    const ui = await waitFor(() => /collector UI: (http:\/\/\S+)/.exec(run.output())?.[1], {
      timeoutMs: 90_000,
      message: 'the run printed no collector UI address',
    });
    const page = await chromiumHandle!.context.newPage();
    await page.goto(ui);
    await page.waitForFunction(() => document.querySelector('[data-testid="step"]')?.textContent?.includes('step 2/2 closed (judged'), null, {
      timeout: 90_000,
    });
    const step = await page.textContent('[data-testid="step"]');
    expect(step).toContain('live: step 2/2 closed (judged: computed only)');
    expect(step).toContain('b denies all ingress');
    // No green without enforcement (issue 32): the banner warns where the pass line would be.
    expect(step).not.toContain('every judged cell as expected');
    expect(await page.textContent('[data-testid="step"] .warn')).toBe(
      'policies are not enforced here: 2 cell(s) the policies block not proven (run as root with nftables to prove them)',
    );
    expect(await page.$eval('[data-testid="step"] .warn', (el) => getComputedStyle(el).color)).toBe('rgb(255, 179, 71)');
    expect(await page.$$eval('[data-testid="step"] .ok', (els) => els.length)).toBe(0);
    // Without isolation a blocked cell cannot be observed: expected blocked, shown, never marked, not proven.
    expect(await page.getAttribute('[data-testid="cell-a-b"]', 'data-expected')).toBe('X');
    expect(await page.getAttribute('[data-testid="cell-a-b"]', 'data-mismatch')).toBe('false');
    expect(await page.getAttribute('[data-testid="cell-a-b"]', 'title')).toContain('not proven: policies are not enforced here');
    // The graph marks the unproven edge (model.js's unproven, drawn as a dashed band).
    expect(await page.evaluate(() => window.__starmap.edges.find((e) => e.id === 'a->b')?.expect?.unproven)).toBe(true);
    expect(await page.evaluate(() => window.__starmap.edges.find((e) => e.id === 'b->a')?.expect?.unproven)).toBe(false);
    expect(await page.getAttribute('[data-testid="cell-a-b"]', 'title')).toContain('default/deny-all');
    expect(await page.getAttribute('[data-testid="cell-b-a"]', 'data-expected')).toBe('.');
    expect(await page.textContent('table.matrix tfoot th')).toBe('UI');
    await page.close();
    await run.stop('SIGINT');
    expect(run.output()).not.toContain('will not show the expected cells');
  }, 150_000);
});

declare const document: { querySelector(selector: string): { textContent: string | null } | null };
declare function getComputedStyle(el: unknown): { color: string };
