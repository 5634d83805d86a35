// The built-in set cnp-conformance (scenarios/builtin/cnp-conformance/<name>.yaml): generated from
// the transcription of upstream's suite (which test/cnp-conformance-computed.test.ts holds to the
// Go sources), so that `scenario check cnp-conformance` judges every transcribed check as a cell,
// `--report-conformance` writes the ConformanceReport YAML without claiming a pass. `scenario run
// cnp-conformance` on packets: test/scenario-cnp-conformance.test.ts.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkScenario } from '../scenarios/cli/check.ts';
import { loadTargets } from '../scenarios/model/load.ts';
import { conformanceTestResult, upstreamOf } from '../scenarios/report/conformance.ts';
import { objectId } from '../shared/netpol/types.ts';
import { conformanceCluster, CONFORMANCE_DIR, loadConformanceTests } from './helpers/cnp-conformance.ts';
import { conformanceScenarioFiles } from './helpers/cnp-conformance-scenarios.ts';
import { NODE, runToEnd, stopAll, tempDir } from './helpers/process.ts';

afterAll(stopAll);

const tests = loadConformanceTests();
const ips = new Map(
  conformanceCluster()
    .pods.filter((p) => !p.hostNetwork)
    .map((p) => [objectId(p), p.ip!]),
);
const ipFlags = [...ips].map(([pod, ip]) => `--ip=${pod}=${ip}`);

describe('the built-in set cnp-conformance', () => {
  it('is the transcription, made into scenarios (regenerate: node test/helpers/cnp-conformance-scenarios.ts --write)', () => {
    const committed = readdirSync(CONFORMANCE_DIR).filter((f) => f.endsWith('.yaml') && !/^CNP/.test(f));
    const generated = conformanceScenarioFiles();
    expect(committed.sort()).toEqual(generated.map((g) => g.file).sort());
    for (const g of generated) expect(readFileSync(join(CONFORMANCE_DIR, g.file), 'utf8'), g.file).toBe(g.text);
  });

  const { set, scenarios } = loadTargets('cnp-conformance');

  it('has one scenario per upstream test, and every check is a judged cell or named as not modelled (node peers)', () => {
    expect(set).toBe('cnp-conformance');
    expect(scenarios.map((s) => upstreamOf(s.description)!.shortName).sort()).toEqual(tests.map((t) => t.shortName).sort());
    for (const t of tests) {
      const s = scenarios.find((x) => upstreamOf(x.description)!.shortName === t.shortName)!;
      const checks = t.subtests.flatMap((sub) => sub.checks);
      const judged = s.steps.reduce((n, st) => n + (st.intended?.size ?? 0), 0);
      const notModelled = upstreamOf(s.description)!.notModelled;
      expect(judged + notModelled.length, t.shortName).toBe(checks.length);
      expect(notModelled.every((id) => checks.some((c) => c.id === id && (c.toNode || c.from.includes('forbidden-forrest'))))).toBe(true);
    }
  });

  it('scenario check judges every modelled check computed with the suite’s addresses: each agrees with upstream', () => {
    let agree = 0;
    let notModelled = 0;
    let checks = 0;
    for (const s of scenarios) {
      const r = checkScenario(s, { ips });
      expect(r.ok, `${s.name}\n${r.text}`).toBe(true);
      const t = conformanceTestResult(r.report)!;
      expect(t, s.name).toMatchObject({ computedDisagree: 0, observedPass: 0, result: 'Skipped' });
      agree += t.computedAgree;
      notModelled += t.notComputed;
      checks += t.checks;
    }
    // 301 transcribed checks: 292 computed as upstream expects, 9 node-peer checks not modelled.
    expect({ agree, notModelled, checks }).toEqual({ agree: 292, notModelled: 9, checks: 301 });
    // Without addresses, the CIDR tests' cells wait for them: not computed, never agreeing by luck.
    const cidr = scenarios.find((s) => s.name === 'admin-egress-cidr-peers')!;
    expect(conformanceTestResult(checkScenario(cidr, { ips: new Map() }).report)!.notComputed).toBeGreaterThan(0);
  });

  it('check --report-conformance writes upstream’s ConformanceReport with computed results as skipped, never passed', async () => {
    const file = join(tempDir('starmap-cnp-conf-'), 'report.yaml');
    const { code, output } = await runToEnd(NODE, ['scenarios/main.ts', 'check', 'cnp-conformance', ...ipFlags, `--report-conformance=${file}`], {
      timeoutMs: 60_000,
    });
    expect(code, output).toBe(0);
    expect(output).toContain('cnp-conformance: 24 of 24 scenarios say what they intend');
    const doc = parse(readFileSync(file, 'utf8')) as {
      kind: string;
      apiVersion: string;
      profiles: {
        name: string;
        standard: { result: string; statistics: object; skippedTests: string[]; summary: string };
        experimental: Record<string, unknown>;
      }[];
    };
    expect(doc).toMatchObject({ kind: 'ConformanceReport', apiVersion: 'policy.networking.k8s.io/v1alpha1' });
    const p = doc.profiles[0]!;
    expect(p.name).toBe('ClusterNetworkPolicy');
    expect(p.standard).toMatchObject({ result: 'partial', statistics: { Failed: 0, Passed: 0, Skipped: 18 } });
    expect(p.standard.summary).toMatch(/^Mode: computed by Starmap’s policy evaluator \(scenario check\); nothing was observed on packets/);
    expect(p.experimental).toMatchObject({
      result: 'partial',
      statistics: { Failed: 0, Passed: 0, Skipped: 6 },
      supportedFeatures: ['ClusterNetworkPolicyNamedPorts'],
      unsupportedFeatures: ['ClusterNetworkPolicyEgressNodePeers'],
    });
    expect([...p.standard.skippedTests, ...(p.experimental.skippedTests as string[])].sort()).toEqual(tests.map((t) => t.shortName).sort());
  }, 90_000);
});
