// Deterministic addressing with real isolation (root; netns prefix smn4, subnet 10.214.5.0/24):
// an isolated `scenario run` of an ipBlock scenario gives every pod the address `scenario check`
// assumes for that subnet, and the verdicts check computes with them are the ones the run
// computes and observes (issue 32: check and run agree).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkAddresses } from '../scenarios/cli/check.ts';
import { expectStep } from '../scenarios/model/expect.ts';
import { loadScenario } from '../scenarios/model/load.ts';
import type { ScenarioReportDoc } from '../scenarios/report/results.ts';
import { isolationSkip } from './helpers/isolation.ts';
import { NODE, runToEnd, stopAll, tempDir } from './helpers/process.ts';

const skipReason = isolationSkip('isolated addressing');
const SUBNET = '10.214.5.0/24';
const NAME = 'k8s-e2e/tcp-35-egress-cidr-except';

afterAll(stopAll);

describe.skipIf(skipReason !== undefined)('check and an isolated run agree on addresses', () => {
  it('every pod gets the address check assumes, and check computes what the run observes', async () => {
    const json = join(tempDir('starmap-smn4-'), 'report.json');
    const { code, output } = await runToEnd(
      NODE,
      [
        'scenarios/main.ts',
        'run',
        NAME,
        '--isolation=netns',
        '--netns-prefix=smn4',
        `--netns-subnet=${SUBNET}`,
        '--publish-address=off',
        `--report-json=${json}`,
      ],
      { timeoutMs: 280_000 },
    );
    const report = JSON.parse(readFileSync(json, 'utf8')) as ScenarioReportDoc;
    const s = loadScenario(NAME);
    const assumed = checkAddresses(s, { addresses: 'run', subnet: SUBNET });
    expect(Object.fromEntries(report.pods.map((p) => [p.id, p.ip]))).toEqual(Object.fromEntries(assumed));
    expect(output).not.toContain('not every pod got the address scenario check assumes');
    expect(code, output).toBe(0);
    expect(report.outcome).toBe('pass');
    // check's computed verdicts with those addresses are the run's, cell by cell, and were observed.
    const checked = expectStep(s, s.steps[0]!, assumed);
    const byKey = new Map(checked.cells.map((c) => [c.cell.key, c.computed]));
    const step = report.steps[0]!;
    expect(step.cells.every((c) => c.computed !== null)).toBe(true);
    for (const c of step.cells) {
      const key = s.cells.find((x) => x.from === c.from && x.to === c.to && x.port === c.port && x.protocol === c.protocol)!.key;
      expect(c.computed, `${c.from} -> ${c.to} ${c.port}/${c.protocol}`).toBe(byKey.get(key));
      if (c.status === 'pass') expect(c.observed).toBe(c.computed);
    }
    expect(step.cells.find((c) => c.from === 'x/a' && c.to === 'x/b' && c.port === 80 && c.protocol === 'TCP')).toMatchObject({
      computed: false,
      observed: false,
      status: 'pass',
    });
  }, 300_000);
});
