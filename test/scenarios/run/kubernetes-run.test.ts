// scenario run --kubernetes, tested up to its kubectl command lines: a fake kubectl records its
// argv and answers plausibly (pod addresses; port-forward prints where it listens, which is an
// observer this test serves with what a cluster enforcing the policies would show once the step's
// directory is applied). The recorded command lines are compared with the expected ones, and
// Ctrl-C still removes everything. No real cluster is involved (docs/kubernetes.md).
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import type { ScenarioReportDoc } from '../../../scenarios/report/results.ts';
import { exportScenario, observerId } from '../../../scenarios/run/kubernetes-manifests.ts';
import { podAddresses } from '../../../scenarios/run/kubernetes.ts';
import { NODE, runToEnd, start, stopAll, tempDir } from '../../helpers/process.ts';
import { waitFor } from '../../helpers/wait.ts';

const servers: Server[] = [];
afterAll(async () => {
  for (const s of servers) s.close();
  await stopAll();
});

const SCENARIO = `
name: trio
probeSeconds: 0.5
timeoutSeconds: 0.3
namespaces:
  default: { labels: { team: t } }
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
  - apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: { name: c-egress-to-b, namespace: default }
    spec:
      podSelector: { matchLabels: { role: c } }
      policyTypes: [Egress]
      egress: [{ to: [{ ipBlock: { cidr: "{{ip default/b}}/32" } }] }]
steps:
  - name: open
    policies: []
    expect: computed
  - name: closed
    policies: [default/deny-to-c, default/c-egress-to-b]
    expect: computed
  - name: open-again
    policies: []
    expect: computed
`;

/** A kubectl that records each argv as a JSON line and answers what the runner reads. */
const FAKE = `#!/bin/sh
node -e 'process.stdout.write(JSON.stringify(process.argv.slice(1)) + "\\n")' -- "$@" >> "$FAKE_LOG"
case "$1" in
  get) cat "$FAKE_PODS" ;;
  port-forward) echo "Forwarding from 127.0.0.1:$FAKE_PORT -> 19091"; exec sleep 600 ;;
  *) echo ok ;;
esac
`;

function setup() {
  const dir = tempDir('starmap-k8s-run-');
  const file = join(dir, 'trio.yaml');
  writeFileSync(file, SCENARIO);
  const s = loadScenario(file);
  const kubectl = join(dir, 'kubectl');
  writeFileSync(kubectl, FAKE);
  chmodSync(kubectl, 0o755);
  const log = join(dir, 'kubectl.log');
  writeFileSync(log, '');
  const pods = join(dir, 'pods.json');
  const ips = { 'default/a': '10.1.0.1', 'default/b': '10.1.0.2', 'default/c': '10.1.0.3', 'default/ui': '10.1.0.4' };
  writeFileSync(
    pods,
    JSON.stringify({
      items: Object.entries(ips).map(([id, ip]) => ({
        metadata: { namespace: 'default', name: id.split('/')[1], labels: { 'starmap.pod': id.split('/')[1] } },
        status: { podIP: ip },
      })),
    }),
  );
  const calls = () =>
    readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as string[]).join(' ').replace(/\/tmp\/starmap-k8s-trio-[^/ ]+\/export/g, 'DIR'));
  // The observer: what an enforcing cluster shows once a step's directory was applied (the last
  // `apply -f …/step-N` in the log), every check fresh.
  const { plan } = exportScenario(s);
  const server = createServer((_req, res) => {
    const applied = calls().filter((c) => /^apply -f DIR\/step-\d+$/.test(c));
    const step = applied.length === 0 ? undefined : Number(/step-(\d+)$/.exec(applied.at(-1)!)![1]) - 1;
    const computed =
      step === undefined
        ? new Map<string, boolean>()
        : new Map(expectStep(s, s.steps[step]!, new Map(Object.entries(ips))).cells.map((c) => [c.cell.key, c.computed === true]));
    const now = new Date().toISOString();
    const responses: Record<string, unknown> = {};
    for (const a of plan) {
      const cells = [...a.targets.entries()];
      if (a.pod.kind === 'probe')
        responses[observerId(a.pod)] = {
          json: {
            status: {
              targets: cells.map(([url, c]) => ({
                url,
                reachable: computed.get(c.key) ?? false,
                reason: computed.get(c.key) ? 'ok' : 'timeout',
                checkedAt: now,
              })),
            },
          },
        };
      else
        responses[observerId(a.pod)] = {
          json: { details: Object.fromEntries(cells.map(([id, c]) => [id, { fetchedAt: now, error: computed.get(c.key) ? null : { reason: 'timeout' } }])) },
        };
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ responses, details: {} }));
  });
  servers.push(server);
  return { dir, file, kubectl, log, pods, server, calls };
}

const listen = (server: Server) => new Promise<number>((res) => server.listen(0, '127.0.0.1', () => res((server.address() as { port: number }).port)));

const CLEANUP = [
  'delete pod,deployment,service,configmap,networkpolicy -A -l starmap.scenario=trio --ignore-not-found --wait=false',
  'label namespace default team-',
  'delete namespace -l starmap.scenario=trio --ignore-not-found --wait=false',
];

describe('scenario run --kubernetes', () => {
  it('runs these kubectl command lines, observes each step through the port-forward, and removes what it made', { timeout: 90_000 }, async () => {
    const t = setup();
    const port = await listen(t.server);
    const report = join(t.dir, 'report.json');
    const r = await runToEnd(NODE, ['scenarios/main.ts', 'run', t.file, '--kubernetes', '--step-timeout', '20', '--report-json', report], {
      env: { KUBECTL: t.kubectl, FAKE_LOG: t.log, FAKE_PODS: t.pods, FAKE_PORT: String(port) },
      timeoutMs: 80_000,
    });
    expect(r.code, r.output).toBe(0);
    expect(t.calls()).toEqual([
      'apply -f DIR',
      'label namespace default --overwrite team=t',
      'wait --for=condition=Available deployment -A -l starmap.scenario=trio --timeout=180s',
      'wait --for=condition=Ready pod -A -l starmap.scenario=trio --timeout=180s',
      'get pods -A -l starmap.scenario=trio -o json',
      'port-forward -n starmap-trio service/starmap-observer :19091',
      'apply -f DIR/step-1',
      'apply -f DIR/step-2',
      'apply -f DIR/step-2/addressed.yaml',
      'apply -f DIR/step-3',
      'delete networkpolicy -n default deny-to-c --ignore-not-found',
      'delete networkpolicy -n default c-egress-to-b --ignore-not-found',
      ...CLEANUP,
    ]);
    const doc = JSON.parse(readFileSync(report, 'utf8')) as ScenarioReportDoc;
    expect(doc.steps.map((st) => [st.name, st.outcome])).toEqual([
      ['open', 'pass'],
      ['closed', 'pass'],
      ['open-again', 'pass'],
    ]);
    expect(doc.pods.find((p) => p.id === 'default/b')!.ip).toBe('10.1.0.2');
    // Blocked cells carry their positive control: b reaches a, so a's "blocked" from c means something.
    const closed = doc.steps[1]!.cells.find((c) => c.from === 'default/a' && c.to === 'default/c')!;
    expect(closed.observedReason).toMatch(/no positive control|positive control: /);
    expect(doc.notices.join('\n')).toMatch(/no drop counters/);
  });

  it('Ctrl-C while a step is observed still removes everything, and exits 130', { timeout: 90_000 }, async () => {
    const t = setup();
    const run = start(NODE, ['scenarios/main.ts', 'run', t.file, '--kubernetes', '--kubectl', t.kubectl, '--step-timeout', '60'], {
      // The observer does not answer: the first step waits for its cells until it is stopped.
      env: { FAKE_LOG: t.log, FAKE_PODS: t.pods, FAKE_PORT: '1' },
    });
    await waitFor(() => t.calls().includes('apply -f DIR/step-1') || undefined, { timeoutMs: 60_000, message: 'step 1 was never applied' });
    process.kill(-run.child.pid!, 'SIGINT');
    expect(await run.exited).toBe(130);
    expect(t.calls().slice(-3)).toEqual(CLEANUP);
    expect(run.output()).toMatch(/removing what it made/);
  });

  it('a kubectl that is not there is bad input: exit 2 naming it, nothing run', async () => {
    const t = setup();
    const missing = join(t.dir, 'no-kubectl');
    const r = await runToEnd(NODE, ['scenarios/main.ts', 'run', t.file, '--kubernetes', '--kubectl', missing]);
    expect(r.code, r.output).toBe(2);
    expect(r.output).toContain(`scenario: error: --kubernetes: no kubectl program "${missing}"`);
  });

  it('reads the pods’ addresses by their starmap.pod label, not the observer', () => {
    const json = JSON.stringify({
      items: [
        { metadata: { namespace: 'x', name: 'ui-7d9f-abcde', labels: { 'starmap.pod': 'ui' } }, status: { podIP: '10.0.0.9' } },
        { metadata: { namespace: 'starmap-s', name: 'o-1', labels: { 'starmap.pod': 'starmap-observer' } }, status: { podIP: '10.0.0.1' } },
        { metadata: { namespace: 'x', name: 'a', labels: { 'starmap.pod': 'a' } }, status: {} },
      ],
    });
    expect([...podAddresses(json)]).toEqual([['x/ui', '10.0.0.9']]);
  });
});
