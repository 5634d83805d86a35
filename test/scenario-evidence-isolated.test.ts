// Evidence per blocked cell, end to end (issue 32): a small scenario (test/fixtures/evidence.yaml:
// three probes under an ingress default deny with a -> b allowed, then an egress policy on a) run
// with real isolation against the orchestrator's data plane as it is, and as the test switch
// STARMAP_ISOLATION_TEST_MODE breaks it: accept-all (rules rendered, nothing dropped) must fail every
// blocked cell with "not enforced", wrong-rule (every drop counted under a rule no policy has) with
// "dropped by another rule". Root + nftables; namespaces prefixed sme4 on 10.214.4.0/24.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { afterAll, describe, expect, it } from 'vitest';
import { ScenarioReport, type CellResultDoc, type ScenarioReportDoc } from '../scenarios/report/schema.ts';
import { isolationSkip, isolationLeftovers } from './helpers/isolation.ts';
import { NODE, ROOT, runToEnd, stopAll, tempDir } from './helpers/process.ts';

const skipReason = isolationSkip('scenario evidence');
const PREFIX = 'sme4';
const SUBNET = '10.214.4.0/24';
const SCENARIO = join(ROOT, 'test', 'fixtures', 'evidence.yaml');

afterAll(stopAll);

async function run(mode?: string): Promise<{ code: number | string; output: string; report: ScenarioReportDoc }> {
  const json = join(tempDir('starmap-evidence-'), 'report.json');
  const { code, output } = await runToEnd(
    NODE,
    ['scenarios/main.ts', 'run', SCENARIO, '--isolation=netns', `--netns-prefix=${PREFIX}`, `--netns-subnet=${SUBNET}`, `--report-json=${json}`],
    { timeoutMs: 200_000, env: { ...process.env, STARMAP_ISOLATION_TEST_MODE: mode ?? '' } },
  );
  const report = JSON.parse(readFileSync(json, 'utf8')) as ScenarioReportDoc;
  expect([...Value.Errors(ScenarioReport, report)]).toEqual([]);
  return { code, output, report };
}

const name = (c: CellResultDoc) => `${c.from}>${c.to}`;
const blockedCells = (r: ScenarioReportDoc) => r.steps.flatMap((s) => s.cells.filter((c) => c.expected === false));

describe.skipIf(skipReason !== undefined)('evidence per blocked cell, on packets', () => {
  it('as it is: every blocked cell is proven by the counter of the rule that decides it; each blocked port has a positive control or says it has none', async () => {
    const { code, output, report } = await run();
    expect(output, output).toMatch(/evidence: PASS: 2 of 2 steps as expected/);
    expect(code).toBe(0);
    const blocked = blockedCells(report);
    expect(blocked.length).toBe(10);
    for (const c of blocked) {
      expect(c, name(c)).toMatchObject({ status: 'pass', observed: false, evidence: { verdict: 'proven' } });
      const e = c.evidence!;
      expect(e.drops.find((d) => d.side === e.rule!.side && d.pod === e.rule!.pod)!.packets, name(c)).toBeGreaterThan(0);
    }
    const [deny, egress] = report.steps.map((s) => new Map(s.cells.map((c) => [name(c), c])));
    // a -> c: the ingress default drop of c in step 1; a's egress (its only isolating policy) in step 2.
    expect(deny!.get('default/a>default/c')!.evidence).toMatchObject({
      rule: { side: 'ingress', pod: 'default/c', policies: ['default/deny-all'] },
      drops: [{ side: 'ingress', pod: 'default/c', policies: ['default/deny-all'] }],
    });
    // (Checks that ran before step 2's write may still have been dropped by step 1's rule: the
    // window starts before the write, so that no check of the step falls outside it.)
    const ac = egress!.get('default/a>default/c')!.evidence!;
    expect(ac.rule).toEqual({ side: 'egress', pod: 'default/a', policies: ['default/a-egress-to-b'] });
    expect(ac.drops[0]).toMatchObject({ side: 'egress', pod: 'default/a', policies: ['default/a-egress-to-b'] });
    expect(ac.drops.slice(1).map((d) => d.policies)).toEqual(ac.drops.length > 1 ? [['default/deny-all']] : []);
    expect(deny!.get('default/c>default/b')!.evidence!.rule).toEqual({ side: 'ingress', pod: 'default/b', policies: ['default/a-to-b', 'default/deny-all'] });
    // b:8080 is reached by a (its positive control); nobody reaches a or c, which says so.
    expect(deny!.get('default/c>default/b')!.evidence!.positiveControl).toBe('default/a');
    expect(deny!.get('default/b>default/a')!.evidence!.positiveControl).toBeNull();
    expect(deny!.get('default/a>default/c')!.evidence!.positiveControl).toBeNull();
    expect(output).toMatch(/no positive control: default\/a 8080\/TCP, default\/c 8080\/TCP/);
    expect(isolationLeftovers(PREFIX, [SUBNET])).toEqual([]);
  }, 240_000);

  it('accept-all (rules rendered, nothing dropped): every blocked cell fails "not enforced" and the run exits non-zero', async () => {
    const { code, output, report } = await run('accept-all');
    expect(code).not.toBe(0);
    const blocked = blockedCells(report);
    expect(blocked.length).toBe(10);
    for (const c of blocked) expect(c, name(c)).toMatchObject({ status: 'not enforced', evidence: { verdict: 'not enforced', drops: [] } });
    expect(report.steps.map((s) => s.failure)).toEqual(['not enforced', 'not enforced']);
    expect(output).toMatch(
      /not enforced: default\/a -> default\/c 8080\/TCP: computed: dropped by default\/deny-all ingress of default\/c; observed: allowed, no drop counted/,
    );
    expect(isolationLeftovers(PREFIX, [SUBNET])).toEqual([]);
  }, 240_000);

  it('wrong-rule (drops counted under a rule no policy has): every blocked cell fails "dropped by another rule", not computed != observed', async () => {
    const { code, output, report } = await run('wrong-rule');
    expect(code).not.toBe(0);
    const blocked = blockedCells(report);
    expect(blocked.length).toBe(10);
    for (const c of blocked)
      expect(c, name(c)).toMatchObject({ status: 'dropped by another rule', observed: false, evidence: { verdict: 'dropped by another rule' } });
    expect(report.steps.flatMap((s) => s.cells).filter((c) => c.status === 'computed != observed')).toEqual([]);
    expect(output).toMatch(
      /dropped by another rule: default\/a -> default\/c 8080\/TCP: computed: dropped by default\/a-egress-to-b egress of default\/a; observed: dropped by \(test switch: wrong-rule\) egress of default\/a \(\d+ packets?\)/,
    );
    expect(isolationLeftovers(PREFIX, [SUBNET])).toEqual([]);
  }, 240_000);
});
