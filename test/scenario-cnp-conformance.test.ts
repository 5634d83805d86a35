// The acceptance test of the admin tiers: the built-in cnp-conformance set (scenarios/builtin/
// cnp-conformance/, a transcription of kubernetes-sigs/network-policy-api's conformance suite held
// to the upstream code by test/cnp-conformance-computed.test.ts) run through `scenario run` with
// real packets, in network namespaces with nftables, through the bundled orchestrator, which takes
// the ClusterNetworkPolicies in its changes. Every judged TCP and UDP cell of every step must be
// observed as the policies say; SCTP cells are "not run" (this kernel has no SCTP), never passed;
// the node-peer checks upstream has are not cells of the set (no node model: the scenarios say so in
// their descriptions), and no cell may pass through a rule this orchestrator does not enforce (a
// cell under a nodes or domainNames rule is "not run" naming it). Root only (CI runs as root); run
// under `flock /tmp/starmap-netns.lock` beside other isolation tests.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { leftovers } from '../orchestrator/isolation/index.ts';
import { SetReport, type SetReportDoc } from '../scenarios/report/schema.ts';
import { isolationSkip } from './helpers/isolation.ts';
import { NODE, ROOT, runToEnd, stopAll, tempDir } from './helpers/process.ts';

const skipReason = isolationSkip('cnp-conformance set with real isolation');
// Its own prefix and subnet: other isolated scenario tests may run at the same time.
const PREFIX = 'smcn';
const SUBNET = '10.213.152.0/24';

afterAll(stopAll);

describe.skipIf(skipReason !== undefined)('the upstream ClusterNetworkPolicy conformance suite on real packets', () => {
  it('passes cell for cell: every judged TCP and UDP cell observed as computed, SCTP not run, nothing left behind', async () => {
    const dir = tempDir('starmap-cnp-conformance-');
    const json = join(dir, 'report.json');
    const conformance = join(dir, 'conformance.yaml');
    const { code, output } = await runToEnd(
      NODE,
      [
        'scenarios/main.ts',
        'run',
        'cnp-conformance',
        '--isolation=netns',
        `--netns-prefix=${PREFIX}`,
        `--netns-subnet=${SUBNET}`,
        `--report-json=${json}`,
        `--report-conformance=${conformance}`,
      ],
      { timeoutMs: 900_000 },
    );
    const report = JSON.parse(readFileSync(json, 'utf8')) as SetReportDoc;
    expect([...Value.Errors(SetReport, report)]).toEqual([]);

    // One scenario per generated file of the set (the transcriptions are the CNP*.yaml beside them).
    const files = readdirSync(join(ROOT, 'scenarios/builtin/cnp-conformance')).filter((f) => /^(admin|baseline)-.*\.yaml$/.test(f));
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
          // Not run, said why, never passed: a cell to an external under a nodes peer rule (no node
          // model here) or to an IPv6 external (this layout has none).
          if (c.status === 'not run' && /not enforced by this orchestrator|IPv6 externals are not supported/.test(c.observedReason ?? '')) continue;
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
    // The set judges 204 TCP and UDP cells; a set that judged nothing would pass the loop above.
    expect(judged).toBeGreaterThanOrEqual(200);
    // Every blocked cell's drop was counted under the rule the evaluator says denies it
    // (`Admin cnp/x egress rule 2`, or the isolating NetworkPolicies): proven, not just unreachable.
    const evidence = report.scenarios.flatMap((s) =>
      s.steps.flatMap((st) => st.cells.flatMap((c) => (c.evidence ? [`${s.scenario} ${c.from} -> ${c.to} ${c.evidence.verdict}`] : []))),
    );
    expect(evidence.length).toBeGreaterThan(0);
    expect(evidence.filter((e) => !e.endsWith(' proven'))).toEqual([]);
    expect(report.passed).toBe(true);
    expect(code).toBe(0);
    // The ConformanceReport now says what was observed on packets, and no test failed.
    const doc = parse(readFileSync(conformance, 'utf8')) as { profiles: { standard: { statistics: { Failed: number; Passed: number } } }[] };
    expect(doc.profiles[0]!.standard.statistics.Failed).toBe(0);
    expect(doc.profiles[0]!.standard.statistics.Passed).toBeGreaterThan(0);
    expect(await leftovers(PREFIX, SUBNET)).toEqual({ namespaces: [], links: [], tables: [], routes: [] });
  }, 960_000);
});
