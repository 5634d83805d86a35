// The acceptance test of the NetworkPolicy work: the built-in k8s-e2e set (scenarios/builtin/k8s-e2e/,
// a rendering of kubernetes/kubernetes test/e2e/network/netpol, held to the upstream code by
// test/k8s-e2e-scenarios.test.ts) run through `scenario run` with real manifests and real packets,
// in network namespaces with nftables, through the bundled orchestrator. Every judged TCP and UDP
// cell of every step must be observed as the policies say; the SCTP tests are "not run" (this
// kernel has no SCTP), never passed. Root only (CI runs as root); run under
// `flock /tmp/starmap-netns.lock` beside other isolation tests.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { afterAll, describe, expect, it } from 'vitest';
import { leftovers } from '../orchestrator/isolation/index.ts';
import { SetReport, type SetReportDoc } from '../scenarios/report/schema.ts';
import { isolationSkip } from './helpers/isolation.ts';
import { NODE, ROOT, runToEnd, stopAll, tempDir } from './helpers/process.ts';

const skipReason = isolationSkip('k8s-e2e set with real isolation');
// Its own prefix and subnet: other isolated scenario tests may run at the same time (two workers).
const PREFIX = 'smke';
const SUBNET = '10.213.150.0/24';

afterAll(stopAll);

describe.skipIf(skipReason !== undefined)('the upstream Kubernetes e2e network-policy suite on real packets', () => {
  it('passes cell for cell: every judged TCP and UDP cell observed as computed, SCTP not run, nothing left behind', async () => {
    const json = join(tempDir('starmap-k8s-e2e-'), 'report.json');
    const { code, output } = await runToEnd(
      NODE,
      ['scenarios/main.ts', 'run', 'k8s-e2e', '--isolation=netns', `--netns-prefix=${PREFIX}`, `--netns-subnet=${SUBNET}`, `--report-json=${json}`],
      { timeoutMs: 900_000 },
    );
    const report = JSON.parse(readFileSync(json, 'utf8')) as SetReportDoc;
    expect([...Value.Errors(SetReport, report)]).toEqual([]);

    // One scenario per file of the set, each in the report.
    const files = readdirSync(join(ROOT, 'scenarios/builtin/k8s-e2e')).filter((f) => f.endsWith('.yaml'));
    expect(report.scenarios).toHaveLength(files.length);

    const failed: string[] = [];
    let judged = 0;
    for (const scenario of report.scenarios) {
      const sctpOnly = scenario.steps.every((s) => s.cells.every((c) => c.expected === null || c.protocol === 'SCTP'));
      expect(scenario.outcome, `${scenario.scenario}: ${scenario.error ?? scenario.failure ?? ''}`).toBe(sctpOnly ? 'not run' : 'pass');
      expect(scenario.isolated && scenario.enforced, scenario.scenario).toBe(true);
      for (const step of scenario.steps) {
        for (const c of step.cells) {
          if (c.expected === null) continue;
          if (c.protocol === 'SCTP') {
            if (c.status !== 'not run') failed.push(`${scenario.scenario} ${step.name}: SCTP ${c.from} -> ${c.to}:${c.port} is ${c.status}`);
            continue;
          }
          judged++;
          if (c.status !== 'pass' || c.observed !== c.expected) {
            failed.push(
              `${scenario.scenario} ${step.name}: ${c.from} -> ${c.to} ${c.port}/${c.protocol} ${c.status} (expected ${c.expected}, observed ${c.observed}: ${c.observedReason})`,
            );
          }
        }
      }
    }
    expect(failed, output).toEqual([]);
    // The set judges 4,464 TCP and UDP cells; a set that judged nothing would pass the loop above.
    expect(judged).toBeGreaterThan(4_000);
    expect(report.passed).toBe(true);
    expect(code).toBe(0);
    expect(await leftovers(PREFIX, SUBNET)).toEqual({ namespaces: [], links: [], tables: [], routes: [] });
  }, 960_000);
});
