// `scenario run --isolation=netns` of a scenario whose NetworkPolicy names an IPv4 and an IPv6
// block (model/coverage-externals.ts): the IPv4 stand-in is deployed and its cells observed; the
// IPv6 stand-in cannot exist in this layout (every task has one IPv4 address:
// orchestrator/isolation/netns.ts), so nothing is deployed for it and each of its cells is
// "not run: IPv6 externals are not supported by this layout", never a pass. Needs root, iproute2
// and nftables. Prefix smv6 and subnet 10.214.9.0/24 are this file's only.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ScenarioReportDoc } from '../../../scenarios/report/results.ts';
import { isolationLeftovers, isolationSkip } from '../../helpers/isolation.ts';
import { NODE, removeTempDirs, runToEnd, stopAll, tempDir } from '../../helpers/process.ts';

const skipReason = isolationSkip('ipv6-externals-run');
const PREFIX = 'smv6';
const SUBNET = '10.214.9.0/24';

afterAll(async () => {
  await stopAll();
  removeTempDirs();
});

const SCENARIO = `name: v6-out
apps:
  - { name: web, namespace: shop, kind: probe, labels: { app: web }, probes: [] }
policies:
  - apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: { name: out, namespace: shop }
    spec:
      podSelector: {}
      policyTypes: [Egress]
      egress: [{ to: [{ ipBlock: { cidr: 192.0.2.0/24 } }, { ipBlock: { cidr: "2001:db8::/32" } }] }]
steps:
  - { name: one, policies: [shop/out], expect: computed }
`;

describe.skipIf(skipReason !== undefined)('IPv6 externals on packets', () => {
  it('the IPv6 external is computed, not deployed, and its cells are not run; the IPv4 one is observed', async () => {
    const dir = tempDir('starmap-v6-run-');
    const file = join(dir, 'v6.yaml');
    const json = join(dir, 'report.json');
    writeFileSync(file, SCENARIO);
    const { code, output } = await runToEnd(
      NODE,
      ['scenarios/main.ts', 'run', file, '--isolation=netns', `--netns-prefix=${PREFIX}`, `--netns-subnet=${SUBNET}`, `--report-json=${json}`],
      { timeoutMs: 200_000 },
    );
    const report = JSON.parse(readFileSync(json, 'utf8')) as ScenarioReportDoc;
    const cells = report.steps[0]!.cells;
    const v6 = cells.filter((c) => c.from === 'external:out-e0p1' || c.to === 'external:out-e0p1');
    expect(v6.length, output).toBe(2); // web -> it (egress), it -> web (ingress)
    for (const c of v6) {
      expect(c.observed).toBeNull();
      expect(c.status).toBe('not run');
      expect(c.observedReason).toBe('not run: IPv6 externals are not supported by this layout');
    }
    expect(v6.find((c) => c.from === 'shop/web')!.computed).toBe(true);
    const v4 = cells.find((c) => c.from === 'shop/web' && c.to === 'external:out-e0p0')!;
    expect(v4.observed).toBe(true);
    expect(v4.computed).toBe(true);
    expect(report.pods.find((p) => p.id === 'external:out-e0p1')?.ip ?? null).toBeNull();
    expect(report.pods.find((p) => p.id === 'external:out-e0p0')?.ip).toBe('192.0.2.1');
    expect(output).toMatch(/4 cells: 2 as expected, 2 not run/);
    expect(code).toBe(0);
    expect(isolationLeftovers(PREFIX, [SUBNET.replace(/\.0\/24$/, '.')])).toEqual([]);
  }, 240_000);
});
