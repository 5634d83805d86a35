// `scenario run` end to end against the bundled orchestrator (auth on, real processes), on
// loopback: reports, exit codes, the mismatch table of a deliberately wrong expectation, and
// nothing left behind.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { afterAll, describe, expect, it } from 'vitest';
import { Report, ScenarioReport } from '../../../scenarios/report/schema.ts';
import type { ScenarioReportDoc } from '../../../scenarios/report/results.ts';
import { NODE, runToEnd, stopAll, tempDir } from '../../helpers/process.ts';

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

/** Processes still running under a Marathon group (tasks carry MARATHON_APP_ID=<group>/…); default: the scenario "pair". */
function leftovers(group = '/starmap/pair/'): string {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (
        readFileSync(`/proc/${pid}/environ`, 'utf8')
          .split('\0')
          .some((v) => v.startsWith(`MARATHON_APP_ID=${group}`))
      )
        found.push(pid);
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
    const { code, output } = await runToEnd(
      NODE,
      ['scenarios/main.ts', 'run', file, '--isolation=off', `--report-json=${json}`, `--report-junit=${junit}`, '--step-timeout=20'],
      { timeoutMs: 90_000 },
    );
    expect(output).toContain('running on loopback without isolation');
    expect(output).toContain('note: policies are not enforced here');
    expect(output).toMatch(/step 1\/1 open: PASS/);
    expect(output).toMatch(/pair: PASS: 1 of 1 steps/);
    expect(code).toBe(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as ScenarioReportDoc;
    expect([...Value.Errors(ScenarioReport, report)]).toEqual([]);
    expect(report).toMatchObject({ passed: true, isolated: false, enforced: false, failure: null });
    expect(report.steps[0]!.cells).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          from: 'default/a',
          to: 'default/b',
          port: 9000,
          protocol: 'TCP',
          expected: true,
          observed: true,
          status: 'pass',
          reason: 'egress not isolated; ingress not isolated',
        }),
      ]),
    );
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toMatch(/<testsuite name="pair" tests="2" failures="0"/);
    expect(xml).toMatch(/<testcase classname="starmap.scenario.pair" name="open: intended = computed"/);
    expect(leftovers()).toBe('');
  }, 120_000);

  it('an expectation the policies contradict fails as intended != computed, before anything is deployed', async () => {
    const dir = tempDir('starmap-scenario-');
    const file = join(dir, 'pair.yaml');
    writeFileSync(file, scenario('X'));
    const junit = join(dir, 'report.xml');
    const json = join(dir, 'report.json');
    const { code, output } = await runToEnd(NODE, ['scenarios/main.ts', 'run', file, '--isolation=off', `--report-junit=${junit}`, `--report-json=${json}`], {
      timeoutMs: 90_000,
    });
    expect(code).toBe(1);
    expect(output).toContain('intended != computed: the policies do not say what the scenario intends (a policy-writing mistake); nothing was deployed.');
    expect(output).not.toContain('deploying /starmap/pair');
    // intended | computed side by side; b→a is marked in the computed table.
    expect(output).toMatch(/b {2}X {2}- {4}b {2}\.! -/);
    expect(output).not.toContain('orchestrator: http');
    expect(output).toContain(
      'intended != computed: default/b -> default/a 9000/TCP: intended blocked, the policies say allowed (egress not isolated; ingress not isolated)',
    );
    expect(output).toContain('pair: FAIL: 0 of 1 steps as expected (intended != computed: a policy-writing mistake, nothing observed)');
    expect(readFileSync(junit, 'utf8')).toContain(
      '<failure message="intended != computed at 1 cell (a policy-writing mistake)" type="intended != computed">intended != computed: default/b -&gt; default/a',
    );
    const report = JSON.parse(readFileSync(json, 'utf8')) as ScenarioReportDoc;
    expect(report.failure).toBe('intended != computed');
    expect(report.steps[0]!.cells.filter((c) => c.status === 'intended != computed').map((c) => `${c.from}>${c.to}`)).toEqual(['default/b>default/a']);
    expect(leftovers()).toBe('');
  }, 120_000);

  it('a set: scenarios with the same pods share one deployment; one whose policies contradict it is refused, the others run', async () => {
    const dir = tempDir('starmap-set-');
    const pods = 'probeSeconds: 0.5\ntimeoutSeconds: 0.3\napps:\n  - { name: a, kind: probe, probes: [b] }\n  - { name: b, kind: probe, probes: [a] }\n';
    writeFileSync(join(dir, '1-open.yaml'), `name: one\n${pods}steps:\n  - { name: open }\n`);
    writeFileSync(join(dir, '2-open-again.yaml'), `name: two\n${pods}steps:\n  - { name: again, expect: { default: allow } }\n`);
    writeFileSync(join(dir, '3-wrong.yaml'), `name: three\n${pods}steps:\n  - { name: wrong, expect: { default: deny } }\n`);
    writeFileSync(join(dir, 'notes.yaml'), 'just: data\n');
    const json = join(dir, 'report.json');
    const junit = join(dir, 'report.xml');
    const { code, output } = await runToEnd(NODE, ['scenarios/main.ts', 'run', dir, '--isolation=off', `--report-json=${json}`, `--report-junit=${junit}`], {
      timeoutMs: 90_000,
    });
    expect(code).toBe(1);
    expect(output.match(/deploying \/starmap\//g)).toHaveLength(1);
    expect(output).toContain('one: PASS: 1 of 1 steps as expected');
    expect(output).toContain('two: PASS: 1 of 1 steps as expected');
    expect(output).toContain('three: FAIL: 0 of 1 steps as expected (intended != computed: a policy-writing mistake, nothing observed)');
    expect(output).toMatch(/starmap-set-\w+: 2 of 3 scenarios as expected/);
    const report = JSON.parse(readFileSync(json, 'utf8')) as { set: string; passed: boolean; scenarios: ScenarioReportDoc[] };
    expect([...Value.Errors(Report, report)]).toEqual([]);
    expect(report.passed).toBe(false);
    expect(report.scenarios.map((r) => [r.scenario, r.passed, r.failure])).toEqual([
      ['one', true, null],
      ['two', true, null],
      ['three', false, 'intended != computed'],
    ]);
    expect(readFileSync(junit, 'utf8').match(/<testsuite name=/g)).toHaveLength(3);
    expect(leftovers('/starmap/starmap-set-')).toBe('');
  }, 120_000);

  it('without isolation the 3 x 3 model still runs: UDP and TCP served and checked on loopback; the cells policies block are not proven (never PASS), the run computed only (exit 3)', async () => {
    const json = join(tempDir('starmap-scenario-'), 'report.json');
    const { code, output } = await runToEnd(NODE, ['scenarios/main.ts', 'run', 'netpol-3x3', '--isolation=off', `--report-json=${json}`], {
      timeoutMs: 120_000,
    });
    const report = JSON.parse(readFileSync(json, 'utf8')) as ScenarioReportDoc;
    const notProven = report.steps.reduce((n, st) => n + st.counts.notProven, 0);
    expect(notProven).toBeGreaterThan(100);
    expect(output, output).toContain(
      `netpol-3x3: COMPUTED ONLY: 1 of 4 steps as expected, 3 computed only; ${notProven} cells the policies block not proven: policies are not enforced here (no isolation); a run as root with nftables would prove them`,
    );
    expect(output).not.toMatch(/step 2\/4 deny: PASS/);
    expect(output).toMatch(/step 2\/4 deny: COMPUTED ONLY: \d+ cells the policies block not proven/);
    expect(code).toBe(3);
    expect([...Value.Errors(ScenarioReport, report)]).toEqual([]);
    expect(report).toMatchObject({ enforced: false, isolated: false, outcome: 'computed only', passed: false });
    expect(report.steps.map((s) => s.outcome)).toEqual(['pass', 'computed only', 'computed only', 'computed only']);
    // Every step settled (no deadline waited out); the blocked cells are not proven, never passed.
    expect(report.steps.map((s) => s.settled)).toEqual([true, true, true, true]);
    const deny = report.steps[1]!;
    expect(deny.cells.filter((c) => c.computed === false).every((c) => c.status === 'not proven' && c.observed === null)).toBe(true);
    expect(deny.cells.find((c) => c.from === 'x/a' && c.to === 'y/b' && c.port === 81 && c.protocol === 'UDP')).toMatchObject({
      status: 'pass',
      observed: true,
    });
    expect(leftovers('/starmap/netpol-3x3/')).toBe('');
  }, 150_000);

  it('a default-deny step without isolation is computed only: exit 3, and 0 with --computed-only', async () => {
    const dir = tempDir('starmap-scenario-');
    const file = join(dir, 'deny.yaml');
    writeFileSync(
      file,
      `name: deny
probeSeconds: 0.5
timeoutSeconds: 0.3
apps:
  - { name: a, kind: probe, probes: [b] }
  - { name: b, kind: probe, labels: { app: b }, probes: [a] }
policies:
  - { apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: { name: deny-b, namespace: default }, spec: { podSelector: { matchLabels: { app: b } } } }
steps:
  - name: default-deny
    policies: [default/deny-b]
`,
    );
    const junit = join(dir, 'report.xml');
    const plain = await runToEnd(NODE, ['scenarios/main.ts', 'run', file, '--isolation=off', `--report-junit=${junit}`, '--step-timeout=20'], {
      timeoutMs: 90_000,
    });
    expect(plain.output).toMatch(/step 1\/1 default-deny: COMPUTED ONLY: 1 cell the policies block not proven \(not enforced here\)/);
    expect(plain.output).toContain(
      'deny: COMPUTED ONLY: 0 of 1 steps as expected, 1 computed only; 1 cell the policies block not proven: policies are not enforced here (no isolation); a run as root with nftables would prove them',
    );
    expect(plain.output).not.toMatch(/PASS/);
    expect(plain.code).toBe(3);
    expect(readFileSync(junit, 'utf8')).toContain('<skipped message="computed only: 1 cell the policies block not proven (policies are not enforced here)"/>');
    const asked = await runToEnd(NODE, ['scenarios/main.ts', 'run', file, '--isolation=off', '--computed-only', '--step-timeout=20'], { timeoutMs: 90_000 });
    expect(asked.output).toContain('deny: COMPUTED ONLY: 0 of 1 steps as expected');
    expect(asked.code).toBe(0);
    expect(leftovers('/starmap/deny/')).toBe('');
  }, 200_000);

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

  it('check and explain work without deploying anything', async () => {
    const check = await runToEnd(NODE, ['scenarios/main.ts', 'check', 'stars']);
    expect(check.code).toBe(0);
    expect(check.output).toContain('stars: the policies say what every step intends');
    const explain = await runToEnd(NODE, [
      'scenarios/main.ts',
      'explain',
      'stars',
      '--step',
      'backend-policy',
      '--from',
      'stars/frontend',
      '--to',
      'stars/backend:6379/TCP',
    ]);
    expect(explain.code).toBe(0);
    expect(explain.output).toContain('allowed by stars/backend-policy ingress rule 0 (peer 0: pods {role=frontend} in namespace stars; port 0: 6379/TCP)');
    const bad = await runToEnd(NODE, ['scenarios/main.ts', 'explain', 'stars', '--step', 'nope', '--from', 'F', '--to', 'B']);
    expect(bad.code).toBe(2);
    expect(bad.output).toContain('--step: no step "nope"');
  });
});
