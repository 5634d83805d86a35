// Manifests proved on packets: `scenario run DIR --isolation=netns` deploys one probe per workload
// (serving its declared ports, probing every other workload's), applies the manifests'
// NetworkPolicies and passes with computed = observed; a scenario whose step is a rollout (new
// pod-template labels, then new policies) passes too. Root only (CI runs as root); its own
// namespace prefix and subnet, so it runs beside the other isolated tests.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ScenarioReportDoc } from '../scenarios/report/results.ts';
import { isolationSkip, isolationLeftovers } from './helpers/isolation.ts';
import { NODE, runToEnd, stopAll, tempDir } from './helpers/process.ts';

const skipReason = isolationSkip('isolated manifests scenario');
const PREFIX = 'smmf';
const SUBNET = '10.213.171.0/24';

afterAll(stopAll);

async function run(target: string): Promise<{ code: number | string; output: string; report: ScenarioReportDoc }> {
  const json = join(tempDir('starmap-mf-iso-'), 'report.json');
  const { code, output } = await runToEnd(
    NODE,
    ['scenarios/main.ts', 'run', target, '--isolation=netns', `--netns-prefix=${PREFIX}`, `--netns-subnet=${SUBNET}`, `--report-json=${json}`],
    { timeoutMs: 200_000 },
  );
  return { code, output, report: JSON.parse(readFileSync(json, 'utf8')) as ScenarioReportDoc };
}

describe.skipIf(skipReason !== undefined)('manifests on packets', () => {
  it('examples/shop: every workload probes every other; computed = observed on every cell', async () => {
    const { code, output, report } = await run('examples/shop');
    expect(output, output).toContain('manifests: 2 files: 4 workloads (3 Deployment, 1 StatefulSet) making 4 pods');
    expect(output, output).toMatch(/shop: PASS: 1 of 1 steps as expected/);
    expect(code).toBe(0);
    expect(report).toMatchObject({ isolated: true, enforced: true, passed: true });
    const cells = report.steps[0]!.cells;
    expect(cells).toHaveLength(28); // 18 between pods, 10 with the external standing in shop/api's ipBlock (model/externals.ts)
    expect(cells.filter((c) => c.observed === false).length).toBeGreaterThan(0);
    expect(cells.every((c) => c.observed === c.expected)).toBe(true);
    expect(isolationLeftovers(PREFIX, [SUBNET])).toEqual([]);
  }, 240_000);

  it('examples/shop-rollout.yaml: the relabelled api is cut off its database, then let in again by the new policies', async () => {
    const { code, output, report } = await run('examples/shop-rollout.yaml');
    expect(output, output).toMatch(/shop-rollout: PASS: 3 of 3 steps as expected/);
    expect(code).toBe(0);
    const db = (step: number) => report.steps[step]!.cells.find((c) => c.from === 'shop/api' && c.to === 'shop-data/postgres' && c.port === 5432);
    expect([0, 1, 2].map((i) => db(i)?.observed)).toEqual([true, false, true]);
    expect(isolationLeftovers(PREFIX, [SUBNET])).toEqual([]);
  }, 240_000);
});
