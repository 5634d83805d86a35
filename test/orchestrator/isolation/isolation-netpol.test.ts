// The orchestrator program with --isolation=netns and NetworkPolicy objects: apps become pods
// (namespace and named ports from the app), the test-only fault switch leaves one rule out, and
// after kill -9 the next start has every NetworkPolicy, namespace label and pod-label replacement
// back and enforces them on the restarted tasks; SIGTERM leaves nothing. Needs root (run under
// flock /tmp/starmap-netns.lock). Prefix smnpo and subnet 10.213.125.0/24 are this file's only.
import { afterAll, describe, expect, it } from 'vitest';
import { leftovers } from '../../../orchestrator/isolation/index.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { NODE, stopAll, tempDir } from '../../helpers/process.ts';
import { isolationSkip } from '../../helpers/isolation.ts';
import { waitFor } from '../../helpers/wait.ts';

const PREFIX = 'smnpo';
const SUBNET = '10.213.125.0/24';
const skipReason = isolationSkip('orchestrator-isolation-netpol');

const SERVER = `require('net').createServer(s=>s.end('ok')).listen(80,'0.0.0.0')`;

function app(ns: string, name: string): Record<string, unknown> {
  return {
    id: `/npo/${ns}/${name}`,
    args: [NODE, '-e', SERVER],
    labels: { 'starmap.namespace': ns, pod: name },
    ipAddress: { networkName: 'starmap', discovery: { ports: [{ number: 80, name: 'http', protocol: 'tcp' }] } },
    taskKillGracePeriodSeconds: 1,
  };
}

const POLICY = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'p', namespace: 'x' },
  spec: {
    podSelector: { matchLabels: { pod: 'a' } },
    ingress: [
      { from: [{ namespaceSelector: { matchLabels: { team: 'blue' } } }], ports: [{ port: 'http' }] },
      { from: [{ podSelector: { matchLabels: { role: 'client' } } }] },
    ],
  },
};

interface NetTask {
  namespace: string;
  pod: string;
  ports: unknown[];
  ingress: { isolated: boolean; rules: { origin: string; ports: unknown }[] };
}

async function network(o: StartedOrchestrator): Promise<NetTask[]> {
  return (await o.call('GET', '/v2/starmap/network')).body.tasks as NetTask[];
}

afterAll(async () => {
  await stopAll();
});

describe.skipIf(skipReason !== undefined)('orchestrator --isolation=netns with NetworkPolicy objects (root)', () => {
  it('keeps NetworkPolicies, namespace labels and pod labels across kill -9; the fault switch leaves out exactly its rule', async () => {
    const dataDir = tempDir('orch-np-');
    const flags = ['--isolation=netns', `--netns-prefix=${PREFIX}`, `--netns-subnet=${SUBNET}`];
    process.env.STARMAP_TEST_FAULT_DROP_RULE = 'x/p:ingress:1';
    let first: StartedOrchestrator;
    try {
      first = await startOrchestrator(flags, { dataDir });
    } finally {
      delete process.env.STARMAP_TEST_FAULT_DROP_RULE;
    }
    await waitFor(() => first.proc.output().includes('TEST FAULT'), { message: 'the fault is announced at start' });
    for (const a of [app('x', 'a'), app('y', 'b')]) expect((await first.call('POST', '/v2/apps', a)).status).toBe(201);
    await waitFor(async () => (await network(first)).length === 2, { timeoutMs: 20_000, message: 'two isolated tasks' });

    expect((await first.call('PUT', '/v2/starmap/policies/x/p', POLICY)).status).toBe(201);
    expect((await first.call('PUT', '/v2/starmap/namespaces/y', { labels: { team: 'blue' } })).status).toBe(201);
    expect((await first.call('PUT', '/v2/starmap/pods/y/b/labels', { labels: { role: 'client' } })).status).toBe(201);
    const a1 = (await network(first)).find((t) => t.pod === 'a')!;
    expect(a1).toMatchObject({ namespace: 'x', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] });
    // The named port resolved from the app's discovery ports; rule 1 left out by the fault.
    expect(a1.ingress).toEqual({ isolated: true, rules: [{ origin: 'x/p ingress 0', peer: expect.anything(), ports: [{ protocol: 'TCP', port: 80 }] }] });
    await first.proc.stop('SIGKILL');

    const second = await startOrchestrator(flags, { dataDir });
    expect(second.proc.output()).not.toContain('TEST FAULT');
    expect((await second.call('GET', '/v2/starmap/policies/x/p')).body).toEqual({
      ...POLICY,
      spec: {
        ...POLICY.spec,
        policyTypes: ['Ingress'],
        ingress: [{ ...POLICY.spec.ingress[0], ports: [{ protocol: 'TCP', port: 'http' }] }, POLICY.spec.ingress[1]],
      },
    });
    expect((await second.call('GET', '/v2/starmap/namespaces/y')).body).toEqual({ name: 'y', labels: { team: 'blue', 'kubernetes.io/metadata.name': 'y' } });
    expect((await second.call('GET', '/v2/starmap/pods/y/b/labels')).body).toEqual({ namespace: 'y', pod: 'b', labels: { role: 'client' }, replaced: true });
    // The apps start again in fresh namespaces, under every stored rule.
    const a2 = await waitFor(async () => (await network(second)).find((t) => t.pod === 'a' && t.ingress.rules.length === 2), {
      timeoutMs: 20_000,
      message: 'x/a back with both rules',
    });
    expect(a2.ingress.rules.map((r) => r.origin)).toEqual(['x/p ingress 0', 'x/p ingress 1']);
    expect(
      (await second.call('POST', '/v2/starmap/changes', { policies: { delete: ['x/p'] }, namespaces: { y: null }, podLabels: { 'y/b': null } })).status,
    ).toBe(200);

    expect(await second.proc.stop('SIGTERM')).toBe(0);
    expect(await leftovers(PREFIX, SUBNET)).toEqual({ namespaces: [], links: [], tables: [], routes: [] });
  }, 120_000);
});
