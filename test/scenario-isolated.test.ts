// Scenarios end to end with real network namespaces and nftables, through the bundled orchestrator
// (root only; CI runs as root; run under `flock /tmp/starmap-netns.lock`): the built-ins pass with
// intended = computed = observed; the 3 x 3 model (288 cells, TCP and UDP) passes with the drop
// side measured; and a renderer broken on purpose (the fault switch) is reported as
// "computed != observed" at exactly the cells its missing rule governs, naming that rule.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { afterAll, describe, expect, it } from 'vitest';
import { expectStep } from '../scenarios/model/expect.ts';
import { loadScenario } from '../scenarios/model/load.ts';
import { ScenarioReport } from '../scenarios/report/schema.ts';
import type { ScenarioReportDoc } from '../scenarios/report/results.ts';
import { isolationSkip, isolationLeftovers } from './helpers/isolation.ts';
import { NODE, runToEnd, stopAll, tempDir } from './helpers/process.ts';

const skipReason = isolationSkip('isolated scenario');

afterAll(stopAll);

/** Everything the bundled orchestrator creates carries the default prefix "smap". */

async function run(name: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | string; output: string; report: ScenarioReportDoc }> {
  const json = join(tempDir('starmap-iso-'), 'report.json');
  const { code, output } = await runToEnd(NODE, ['scenarios/main.ts', 'run', name, '--isolation=netns', `--report-json=${json}`], {
    timeoutMs: 280_000,
    env: { ...process.env, ...env },
  });
  const report = JSON.parse(readFileSync(json, 'utf8')) as ScenarioReportDoc;
  expect([...Value.Errors(ScenarioReport, report)]).toEqual([]);
  return { code, output, report };
}

describe.skipIf(skipReason !== undefined)('scenarios with real isolation', () => {
  it.each([
    ['stars', 5],
    ['matrix-3x3', 4],
  ])(
    '%s passes every step: intended = computed = observed, blocked cells dropped by the ingress side, nothing left',
    async (name, steps) => {
      const { code, output, report } = await run(String(name));
      expect(output, output).toMatch(new RegExp(`${name}: PASS: ${steps} of ${steps} steps as expected`));
      expect(code).toBe(0);
      expect(report).toMatchObject({ isolated: true, enforced: true, passed: true, failure: null });
      expect(report.steps.map((s) => s.passed)).toEqual(Array(steps).fill(true));
      // These scenarios only isolate ingress: every blocked observation was counted on the destination's side.
      const blocked = report.steps.flatMap((s) => s.cells.filter((c) => c.observed === false));
      expect(blocked.length).toBeGreaterThan(0);
      expect(new Set(blocked.map((c) => c.droppedBy))).toEqual(new Set(['ingress']));
      expect(isolationLeftovers('smap', ['10.213.0.0/24'])).toEqual([]);
    },
    300_000,
  );

  it('the 3 x 3 model: 288 cells per step over TCP and UDP, egress by address, named ports, ranges and label changes', async () => {
    const { code, output, report } = await run('netpol-3x3');
    expect(output, output).toMatch(/netpol-3x3: PASS: 4 of 4 steps as expected/);
    expect(code).toBe(0);
    expect(report.steps.map((s) => s.counts.cells)).toEqual([288, 288, 288, 288]);
    expect(report.steps.map((s) => s.counts.pass)).toEqual([288, 288, 72, 288]);
    // y/a may only send UDP to z/b: its other packets never leave, counted by its own egress.
    const deny = report.steps[1]!.cells;
    expect(deny.find((c) => c.from === 'y/a' && c.to === 'z/c' && c.port === 80 && c.protocol === 'TCP')).toMatchObject({
      observed: false,
      droppedBy: 'egress',
    });
    expect(deny.find((c) => c.from === 'y/a' && c.to === 'z/b' && c.port === 81 && c.protocol === 'UDP')).toMatchObject({ observed: true, status: 'pass' });
    expect(deny.find((c) => c.from === 'z/a' && c.to === 'x/b' && c.port === 81 && c.protocol === 'UDP')).toMatchObject({
      observed: false,
      droppedBy: 'ingress',
    });
    expect(isolationLeftovers('smap', ['10.213.0.0/24'])).toEqual([]);
  }, 300_000);

  it('a renderer that leaves one rule out is caught: computed != observed at exactly the cells that rule governs, naming it', async () => {
    const rule = { policy: 'stars/backend-policy', direction: 'ingress', rule: 0 } as const;
    const { code, output, report } = await run('stars', { STARMAP_TEST_FAULT_DROP_RULE: `${rule.policy}:${rule.direction}:${rule.rule}` });
    expect(code).toBe(1);
    expect(report.failure).toBe('computed != observed');
    // The cells that rule governs: allowed, and on its side allowed by that rule alone.
    const s = loadScenario('stars');
    const ips = new Map(report.pods.map((p) => [p.id, p.ip!]));
    const governed = s.steps.map((step) =>
      expectStep(s, step, ips)
        .cells.filter(
          (c) =>
            c.computed === true &&
            c.verdict.ingress.decision === 'allowed' &&
            c.verdict.ingress.allowedBy.every((r) => r.policy === rule.policy && r.direction === rule.direction && r.rule === rule.rule),
        )
        .map((c) => `${c.cell.from}>${c.cell.to} ${c.cell.port}/${c.cell.protocol}`)
        .sort(),
    );
    const faults = report.steps.map((st) =>
      st.cells
        .filter((c) => c.status === 'computed != observed')
        .map((c) => `${c.from}>${c.to} ${c.port}/${c.protocol}`)
        .sort(),
    );
    expect(faults).toEqual(governed);
    expect(governed.flat()).toEqual(['stars/frontend>stars/backend 6379/TCP', 'stars/frontend>stars/backend 6379/TCP']);
    // No other cell failed, and each fault names the rule and the side that dropped it.
    expect(report.steps.flatMap((st) => st.cells.filter((c) => c.status === 'no value' || c.status === 'intended != computed'))).toEqual([]);
    for (const c of report.steps.flatMap((st) => st.cells.filter((x) => x.status === 'computed != observed'))) {
      expect(c).toMatchObject({ expected: true, observed: false, droppedBy: 'ingress', reason: expect.stringContaining(`${rule.policy} ingress rule 0`) });
    }
    expect(output).toContain(
      `computed != observed: stars/frontend -> stars/backend 6379/TCP: expected allowed, observed blocked (timeout; dropped by stars/backend's ingress); egress not isolated; ingress allowed by ${rule.policy} ingress rule 0 peer 0 port 0`,
    );
    expect(isolationLeftovers('smap', ['10.213.0.0/24'])).toEqual([]);
  }, 300_000);
});
