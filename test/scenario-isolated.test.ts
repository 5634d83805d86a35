// The built-in scenarios end to end with real network namespaces and nftables policies, through the
// bundled orchestrator (root only; CI runs as root). Checks the verdicts, how fast policy changes
// show, and that nothing is left on the machine afterwards.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isolationSkip } from './helpers/isolation.ts';
import { NODE, runToEnd, stopAll, tempDir } from './helpers/process.ts';

const skipReason = isolationSkip('isolated scenario');

afterAll(stopAll);

/** Everything the bundled orchestrator creates carries the default prefix "smap". */
function leftovers(): string[] {
  const out: string[] = [];
  const sh = (cmd: string) => execFileSync('sh', ['-c', cmd], { encoding: 'utf8' });
  out.push(...sh('ip netns list').split('\n').filter((l) => l.startsWith('smap-')));
  out.push(...sh('ip -o link').split('\n').filter((l) => / smap-/.test(l)));
  out.push(...sh('nft list tables').split('\n').filter((l) => /smap_/.test(l)));
  out.push(...sh('ip route show table all').split('\n').filter((l) => l.includes('10.213.0.0/24')));
  return out;
}

interface Report {
  passed: boolean;
  isolated: boolean;
  steps: { name: string; passed: boolean; edges: { from: string; to: string; changedAfterMs: number | null }[] }[];
}

describe.skipIf(skipReason !== undefined)('built-in scenarios with real isolation', () => {
  it.each([['stars', 5], ['matrix-3x3', 4]])('%s passes every step, policy changes show within one probe and collector cycle, nothing is left', async (name, steps) => {
    const dir = tempDir('starmap-iso-');
    const json = join(dir, 'report.json');
    const { code, output } = await runToEnd(NODE, ['scenarios/main.ts', 'run', String(name), '--isolation=netns', `--report-json=${json}`], { timeoutMs: 240_000 });
    expect(output, output).toMatch(new RegExp(`${name}: PASS: ${steps} of ${steps} steps as expected`));
    expect(code).toBe(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as Report;
    expect(report.isolated).toBe(true);
    expect(report.steps.map((s) => s.passed)).toEqual(Array(steps).fill(true));
    // Probe interval 1 s + check timeout 0.5 s + collector interval 1 s, plus the runner's 0.25 s
    // polling and a second of slack for a busy two-core machine.
    const timings = report.steps.slice(1).flatMap((s) => s.edges.map((e) => e.changedAfterMs).filter((ms): ms is number => ms !== null));
    expect(timings.length).toBeGreaterThan(0);
    expect(Math.max(...timings)).toBeLessThan(3_750);
    expect(leftovers()).toEqual([]);
  }, 300_000);
});
