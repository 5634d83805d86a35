// The stars demo with real isolation (root, nftables; run under `flock /tmp/starmap-netns.lock`),
// watched in a real browser: the collector UI's matrix matches the terminal's observed truth
// table of the last step cell for cell (same order, same UI row), the page says which step is in
// force and that every judged cell is as expected; Ctrl-C leaves nothing behind.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, haveChromium, launchChromium, warnIfNoChromium } from './helpers/browser.ts';
import { isolationSkip } from './helpers/isolation.ts';
import { NODE, ROOT, start, stopAll } from './helpers/process.ts';
import { waitFor } from './helpers/wait.ts';

const skipReason = isolationSkip('isolated stars in the collector UI') ?? (haveChromium ? undefined : 'chromium is missing');
warnIfNoChromium('isolated stars in the collector UI');
declare const window: { __starmap: { expectations: { mismatches: number } | null } };
declare const document: { querySelector(selector: string): { textContent: string | null } | null };

let chromiumHandle: Browser | undefined;
beforeAll(async () => {
  if (skipReason === undefined) chromiumHandle = await launchChromium();
});
afterAll(async () => {
  await chromiumHandle?.close();
  await stopAll();
});

/** The last "observed" table the runner printed: rows of marks, the header first. */
function lastObserved(output: string): string[] {
  const lines = output.split('\n');
  const at = lines
    .map((l, i) => (/^intended +computed +observed$/.test(l.trim()) ? i : -1))
    .filter((i) => i >= 0)
    .pop()!;
  const rows: string[] = [];
  for (const line of lines.slice(at + 1)) {
    const tokens = line.trim().split(/\s+/);
    if (!/^[A-Z.X?~!-]/.test(line.trim()) || tokens.length < 3) break;
    // Three tables side by side (intended, computed, observed): the observed one is the last third.
    rows.push(tokens.slice((tokens.length * 2) / 3).join(' '));
  }
  return rows;
}

describe.skipIf(skipReason !== undefined)('stars with isolation, in the collector UI', () => {
  it("the UI matrix is the terminal's observed table, cell for cell, and the page names the step in force", async () => {
    const run = start(NODE, ['scenarios/main.ts', 'run', 'stars', '--isolation=netns', '--netns-prefix=smui', '--netns-subnet=10.213.151.0/24', '--hold']);
    await waitFor(() => run.output().includes('all steps done'), {
      timeoutMs: 240_000,
      message: `the run did not finish its steps: ${run.output().slice(-2000)}`,
    });
    const ui = /collector UI: (\S+)/.exec(run.output())![1]!;
    const page = await chromiumHandle!.context.newPage();
    await page.setViewportSize({ width: 1400, height: 900 });
    await page.goto(ui);
    await page.waitForFunction(() => document.querySelector('[data-testid="step"]')?.textContent?.includes('step 5/5 frontend-policy (judged: pass)'), null, {
      timeout: 20_000,
    });
    await page.waitForFunction(() => window.__starmap.expectations?.mismatches === 0);
    const terminal = lastObserved(run.output());
    const rows = await page.$$eval('table.matrix tr', (trs) => trs.map((r) => [...r.querySelectorAll('th,td')].map((c) => c.textContent).join(' ')));
    // The header's corner says "from \ to"; the terminal's is blank.
    expect([rows[0]!.replace('from \\ to ', ''), ...rows.slice(1)]).toEqual(terminal);
    expect(terminal).toEqual(['F B C', 'F . . X', 'B X . X', 'C . X -', 'UI . . .']);
    mkdirSync(join(ROOT, 'test-output', 'ui-screenshots'), { recursive: true });
    await page.screenshot({ path: join(ROOT, 'test-output', 'ui-screenshots', 'stars-isolated-1400x900.png') });
    await page.close();
    await run.stop('SIGINT');
    expect(run.output()).toContain('stars: PASS: 5 of 5 steps as expected');
    expect(
      execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.startsWith('smui-')),
    ).toEqual([]);
  }, 300_000);
});
