// `scenario run` end to end against the bundled orchestrator (auth on, real processes), on
// loopback: reports, exit codes, the mismatch table of a deliberately wrong expectation, and
// nothing left behind.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NODE, runToEnd, stopAll, tempDir } from './helpers/process.ts';

afterAll(stopAll);

const scenario = (expectBtoA: '.' | 'X') => `
name: pair
description: two probes that check each other
probeSeconds: 0.5
timeoutSeconds: 0.3
apps:
  - { name: a, kind: probe, probes: [b] }
  - { name: b, kind: probe, probes: [a] }
steps:
  - name: open
    policies: []
    expect:
      matrix: |
        .  a b
        a  - .
        b  ${expectBtoA} -
`;

/** Processes still running for the scenario "pair" (tasks carry MARATHON_APP_ID=/starmap/pair/…). */
function leftovers(): string {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').some((v) => v.startsWith('MARATHON_APP_ID=/starmap/pair/'))) found.push(pid);
    } catch {
      /* gone, or not ours to read */
    }
  }
  return found.join(' ');
}

describe('scenario run (loopback, bundled orchestrator)', () => {
  it('passes, writes JSON and JUnit reports, exits 0 and cleans up', async () => {
    const dir = tempDir('starmap-scenario-');
    const file = join(dir, 'pair.yaml');
    writeFileSync(file, scenario('.'));
    const json = join(dir, 'report.json');
    const junit = join(dir, 'report.xml');
    const { code, output } = await runToEnd(NODE, ['scenarios/main.ts', 'run', file, '--isolation=off', `--report-json=${json}`, `--report-junit=${junit}`, '--step-timeout=20'], { timeoutMs: 90_000 });
    expect(output).toContain('running on loopback without isolation');
    expect(output).toMatch(/step 1 open: PASS/);
    expect(output).toMatch(/pair: PASS: 1 of 1 steps/);
    expect(code).toBe(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as { passed: boolean; isolated: boolean; steps: { name: string; passed: boolean; edges: { from: string; to: string; observed: string }[] }[] };
    expect(report).toMatchObject({ passed: true, isolated: false });
    expect(report.steps[0]!.edges).toEqual(expect.arrayContaining([expect.objectContaining({ from: 'a', to: 'b', observed: 'allow' })]));
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toMatch(/<testsuite name="pair" tests="1" failures="0"/);
    expect(xml).toMatch(/<testcase classname="starmap.scenario.pair" name="open"/);
    expect(leftovers()).toBe('');
  }, 120_000);

  it('a deliberately wrong expectation fails with the mismatch table and exit code 1', async () => {
    const dir = tempDir('starmap-scenario-');
    const file = join(dir, 'pair.yaml');
    writeFileSync(file, scenario('X'));
    const junit = join(dir, 'report.xml');
    const { code, output } = await runToEnd(NODE, ['scenarios/main.ts', 'run', file, '--isolation=off', '--step-timeout=4', `--report-junit=${junit}`], { timeoutMs: 90_000 });
    expect(code).toBe(1);
    expect(output).toMatch(/step 1 open: FAIL \(not settled within/);
    // expected | observed | mismatches, side by side; b→a is marked.
    expect(output).toMatch(/b {2}X {2}-\s+b {2}\. {2}-\s+b {2}\.! -/);
    expect(output).toContain('b -> a: expected deny, observed allow (ok)');
    expect(output).toContain('1 wrong, 0 no value, 1 correct, 0 ignored out of 2');
    expect(readFileSync(junit, 'utf8')).toMatch(/<failure message="1 wrong, 0 no value, 1 correct/);
    // The failure text names the edge as the terminal does.
    expect(readFileSync(junit, 'utf8')).toContain('type="mismatch">b -&gt; a: expected deny, observed allow (ok)\n');
    expect(leftovers()).toBe('');
  }, 120_000);

  it('bad input: unknown scenario and invalid file exit 2 with a clear message', async () => {
    const missing = await runToEnd(NODE, ['scenarios/main.ts', 'run', 'no-such-scenario']);
    expect(missing.code).toBe(2);
    expect(missing.output).toMatch(/no scenario file "no-such-scenario" and no built-in of that name \(built-in: .*stars/);
    const dir = tempDir('starmap-scenario-');
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'name: x\napps: []\nsteps: []\n');
    const bad = await runToEnd(NODE, ['scenarios/main.ts', 'run', file]);
    expect(bad.code).toBe(2);
    expect(bad.output).toContain(`${file}: invalid scenario`);
    const list = await runToEnd(NODE, ['scenarios/main.ts', 'list']);
    expect(list.output).toMatch(/stars\s+Calico stars demo/);
  });
});
