// The proof of an export without a cluster: the exported probe, collector and observer commands
// (the same executables and flags the pods run, with loopback addresses for the cluster's names)
// run locally, and `scenario observe` against that observer gives the same tables as a local
// `scenario run --isolation=off`. Nothing enforces policies on loopback, so a step that blocks
// cells must show them as computed != observed through observe: what a CNI that does not enforce
// NetworkPolicy looks like (run says "not proven" for them instead).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadScenario } from '../../../scenarios/model/load.ts';
import type { ScenarioReportDoc } from '../../../scenarios/report/results.ts';
import { assignHostPorts, planApps } from '../../../scenarios/run/deploy-plan.ts';
import { exportScenario, observerResources } from '../../../scenarios/run/kubernetes-manifests.ts';
import { observationsFrom, readCollector } from '../../../scenarios/run/kubernetes-observe.ts';
import { locatePrograms } from '../../../scenarios/run/programs.ts';
import { freePort, NODE, runToEnd, start, stopAll, tempDir, waitForHttp } from '../../helpers/process.ts';
import { waitFor } from '../../helpers/wait.ts';

afterAll(stopAll);

const SCENARIO = `
name: trio
probeSeconds: 0.5
timeoutSeconds: 0.3
apps:
  - { name: a, kind: probe, probes: [b, c] }
  - { name: b, kind: probe, probes: [a, c] }
  - { name: c, kind: probe, labels: { role: c }, probes: [a, b] }
  - { name: ui, kind: collector, collects: [a, b, c] }
policies:
  - apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: { name: deny-to-c, namespace: default }
    spec: { podSelector: { matchLabels: { role: c } }, policyTypes: [Ingress] }
steps:
  - name: open
    policies: []
    expect: computed
  - name: closed
    policies: [default/deny-to-c]
    expect: computed
`;

/** The flags of an argv without their values (and the addresses in them). */
const flagNames = (argv: readonly string[]) => argv.filter((x) => x.startsWith('--')).map((x) => x.split('=')[0]);

describe('an export run locally', () => {
  it('runs the exported commands on loopback, and observe gives the tables of a local run', { timeout: 120_000 }, async () => {
    const dir = tempDir('starmap-k8s-local-');
    const file = join(dir, 'trio.yaml');
    writeFileSync(file, SCENARIO);
    const s = loadScenario(file);
    const ex = exportScenario(s);
    // The loopback layout of a run without isolation: every port of every pod on its own host port.
    const ports: number[] = [];
    for (let i = 0; i < s.pods.length * 3 + 1; i++) ports.push(await freePort());
    let next = 0;
    const hostPorts = assignHostPorts(s.pods, () => ports[next++]!);
    const { programs } = locatePrograms();
    let resources = '';
    const local = planApps(s, programs, { isolated: false, hostPorts }, (content) => {
      resources = join(dir, 'ui-resources.json');
      writeFileSync(resources, content);
      return resources;
    });
    // The same flags as the pods', the same targets in the same order: only addresses differ.
    for (const [i, app] of local.entries()) {
      const pod = ex.plan[i]!;
      expect(pod.pod.id).toBe(app.pod.id);
      const args = app.definition.args as string[];
      const exported = pod.definition.args as string[];
      expect(flagNames(args), app.pod.id).toEqual(flagNames(exported));
      expect([...app.targets.values()].map((c) => c.key)).toEqual([...pod.targets.values()].map((c) => c.key));
      if (app.pod.kind === 'probe') expect(exported.find((x) => x.startsWith('--urls='))).toContain(`.starmap-pods.default.svc:`);
      start(args[0]!, args.slice(1));
    }
    const observerFile = join(dir, 'observer.json');
    writeFileSync(observerFile, JSON.stringify(observerResources(local, (a) => `http://127.0.0.1:${a.port}`)));
    const observerPort = ports[next++]!;
    const observerArgs = ex.observerArgs
      .slice(1)
      .map((x) =>
        x.startsWith('--resources-file=')
          ? `--resources-file=${observerFile}`
          : x.startsWith('--http-port=')
            ? `--http-port=${observerPort}`
            : x === '--http-address=0.0.0.0'
              ? '--http-address=127.0.0.1'
              : x,
      );
    expect(flagNames(observerArgs)).toEqual(flagNames(ex.observerArgs));
    start(programs.collector[0]!, [...programs.collector.slice(1), ...observerArgs]);
    const url = `http://127.0.0.1:${observerPort}`;
    await waitForHttp(`${url}/healthz`);
    // Every cell of the probes and of the model collector comes back through the observer.
    const seen = await waitFor(
      async () => {
        const m = await readCollector(url, local);
        return [...m.values()].every((o) => o.allowed !== null) && m.size === s.cells.length ? m : undefined;
      },
      { timeoutMs: 30_000, message: 'the observer never had every cell' },
    );
    expect([...seen.keys()].sort()).toEqual(s.cells.map((c) => c.key).sort());

    const observed = join(dir, 'observed-open.json');
    const o1 = await runToEnd(NODE, ['scenarios/main.ts', 'observe', file, '--collector', url, '--report-json', observed], { timeoutMs: 60_000 });
    expect(o1.code, o1.output).toBe(0);
    const closed = join(dir, 'observed-closed.json');
    const o2 = await runToEnd(NODE, ['scenarios/main.ts', 'observe', file, '--collector', url, '--step', 'closed', '--report-json', closed], {
      timeoutMs: 60_000,
    });
    const ran = join(dir, 'run.json');
    const r = await runToEnd(NODE, ['scenarios/main.ts', 'run', file, '--isolation=off', '--computed-only', '--report-json', ran], { timeoutMs: 90_000 });
    expect(r.code, r.output).toBe(0);
    const runDoc = JSON.parse(readFileSync(ran, 'utf8')) as ScenarioReportDoc;
    const openDoc = JSON.parse(readFileSync(observed, 'utf8')) as ScenarioReportDoc;
    const closedDoc = JSON.parse(readFileSync(closed, 'utf8')) as ScenarioReportDoc;
    // Step open: the same tables, intended, computed and observed, and a pass.
    expect(openDoc.steps[0]!.tables).toBe(runDoc.steps[0]!.tables);
    expect(openDoc.steps[0]!.outcome).toBe('pass');
    expect(o1.output).toContain(runDoc.steps[0]!.tables.split('\n')[0]!);
    // Step closed: the same computed verdicts; nothing enforces them here, so observe sees the
    // blocked cells reachable and says so (exit 1), where run marks them not proven.
    const judge = (d: ScenarioReportDoc) => d.steps.at(-1)!.cells.map((c) => [c.from, c.to, c.port, c.computed, c.reason]);
    expect(judge(closedDoc)).toEqual(judge(runDoc));
    expect(o2.code, o2.output).toBe(1);
    const toC = closedDoc.steps[0]!.cells.filter((c) => c.to === 'default/c' && c.from !== 'default/c');
    expect(toC.map((c) => c.status)).toEqual(toC.map(() => 'computed != observed'));
    expect(runDoc.steps[1]!.cells.filter((c) => c.to === 'default/c' && c.from !== 'default/c').map((c) => c.status)).toEqual(toC.map(() => 'not proven'));
    expect(o2.output).toMatch(/computed != observed/);
  });

  it('maps a probe status by position, and a failed name lookup or a short list to no value', () => {
    const s = loadScenario('stars');
    const { plan } = exportScenario(s);
    const frontend = plan.find((a) => a.pod.id === 'stars/frontend')!;
    const t = (reachable: boolean, reason: string) => ({ url: 'x', reachable, reason, checkedAt: '2026-01-01T00:00:00Z', changedAt: null });
    const doc = {
      responses: {
        'probe.stars.frontend': { json: { status: { targets: [t(true, 'ok'), t(false, 'timeout'), t(false, 'dns')] } } },
        'probe.stars.backend': { json: { status: { targets: [] } } },
      },
      details: { 'probe.client.client': { error: { reason: 'timeout' }, fetchedAt: '2026-01-01T00:00:00Z' } },
    };
    const m = observationsFrom(doc, plan);
    const [toF, toB, toC] = [...frontend.targets.values()].map((c) => m.get(c.key)!);
    expect([toF!.allowed, toB!.allowed, toC!.allowed]).toEqual([true, false, null]);
    expect(toC!.reason).toMatch(/name lookup failed/);
    const backend = [...plan.find((a) => a.pod.id === 'stars/backend')!.targets.values()];
    expect(m.get(backend[0]!.key)!.reason).toMatch(/checks 0 targets, not the 3 exported/);
    const client = [...plan.find((a) => a.pod.id === 'client/client')!.targets.values()];
    expect(m.get(client[0]!.key)).toMatchObject({ allowed: null, reason: 'the observer could not read client/client (timeout)' });
  });
});
