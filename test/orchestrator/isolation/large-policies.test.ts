// Large policy sets without touching the machine (test/orchestrator/isolation/isolation-large.test.ts applies them
// to real namespaces): the 40 NetworkPolicies of 28 ingress rules x 40 ipBlock /32 peers over TCP,
// UDP and SCTP render as sets with the same verdicts, are stored and enforced through the API, a
// set past the per-pod bound is refused whole (422 naming the bound and the count), a failure after
// the commit answers 202 with the enforcement state (never 503 "nothing was changed"), and a slow
// namespace does not hold up writes that change only other namespaces.
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { compileRules } from '../../../orchestrator/isolation/compile.ts';
import { PolicyEngine, type RulesetTarget } from '../../../orchestrator/isolation/policy-engine.ts';
import { policyPlugin } from '../../../orchestrator/isolation/policy-routes.ts';
import type { TaskNetInfo } from '../../../orchestrator/isolation/policy.ts';
import { RULESET_LIMITS, renderTask } from '../../../orchestrator/isolation/render.ts';
import { largePolicy, largePolicySet, peerAddress } from '../../helpers/large-policies.ts';
import { evaluateRuleset } from '../../helpers/nft-sim.ts';
import { waitFor } from '../../helpers/wait.ts';

const GW = '10.213.0.1';
const P = '/v2/starmap';

function task(taskId: string, ip: string, namespace: string): TaskNetInfo {
  return {
    taskId,
    appId: `/big/${namespace}/${taskId}`,
    labels: { 'starmap.namespace': namespace, pod: taskId },
    groups: [],
    ip,
    netns: `ns-${taskId}`,
    ports: [],
  };
}

const TASKS = () => [task('big-a', '10.213.0.2', 'big'), task('other-b', '10.213.0.3', 'other')];

const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
});

function setup(target: RulesetTarget, tasks = TASKS()) {
  const engine = new PolicyEngine({ target, listTasks: () => tasks });
  const app = Fastify({ bodyLimit: 64 * 1024 * 1024 });
  void app.register(policyPlugin, { engine });
  apps.push(app);
  const call = async (method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: unknown) => {
    const res = await app.inject({ method, url, ...(payload !== undefined ? { payload: payload as object } : {}) });
    return { status: res.statusCode, body: res.body ? res.json() : undefined, enforcement: res.headers['starmap-enforcement'] };
  };
  return { engine, call };
}

function recording() {
  const applied: { netns: string; text: string }[] = [];
  const target: RulesetTarget = { gateway: GW, applyRuleset: async (netns, text) => void applied.push({ netns, text }) };
  return { target, applied, latest: (netns: string) => applied.filter((a) => a.netns === netns).at(-1)?.text ?? '' };
}

const netpol = (namespace: string, name: string, spec: unknown) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace },
  spec,
});

describe('the reported large policy set (40 policies x 28 ingress rules x 40 ipBlock /32 peers, TCP, UDP and SCTP)', () => {
  it('renders with its peers as sets, inside the per-pod bound, with the verdicts of one rule per peer', () => {
    const pod = { taskId: 't', appId: '/a', netns: 'n', ip: '10.213.0.2', namespace: 'big', pod: 'a', labels: {}, dialectLabels: {}, groups: [], ports: [] };
    const [rules] = compileRules({ pods: [pod], namespaces: [], dialect: [], policies: largePolicySet('big', 40), gateway: GW });
    const { text, size } = renderTask(rules!);
    // One rule per policy rule, and the fixed ones; each with its 40 addresses and 3 protocol . port pairs.
    expect(size.rules).toBe(40 * 28 + 6);
    expect(size.elements).toBe(40 * 28 * (40 + 3));
    expect(size.rules).toBeLessThanOrEqual(RULESET_LIMITS.rules);
    expect(size.elements).toBeLessThanOrEqual(RULESET_LIMITS.elements);
    const verdict = (src: string, port: number, protocol: 'TCP' | 'UDP' | 'SCTP') => evaluateRuleset(text, 'input', { src, dst: pod.ip, port, protocol });
    for (const [policy, rule, peer] of [
      [0, 0, 0],
      [17, 13, 21],
      [39, 27, 39],
    ] as const) {
      const src = peerAddress(policy, rule, peer);
      const origin = `big/big-${policy} ingress ${rule}`;
      expect(verdict(src, 1000 + rule, 'TCP')).toEqual({ verdict: 'accept', counted: false, rule: origin });
      expect(verdict(src, 2000 + rule, 'UDP')).toEqual({ verdict: 'accept', counted: false, rule: origin });
      expect(verdict(src, 3000 + rule, 'SCTP')).toEqual({ verdict: 'accept', counted: false, rule: origin });
      // Another rule's port, or the TCP port over UDP: dropped, through the counting chain.
      expect(verdict(src, 1000 + ((rule + 1) % 28), 'TCP')).toMatchObject({ verdict: 'drop', counted: true });
      expect(verdict(src, 1000 + rule, 'UDP')).toMatchObject({ verdict: 'drop', counted: true });
    }
    expect(verdict('100.63.255.255', 1000, 'TCP')).toMatchObject({ verdict: 'drop', counted: true });
  }, 60_000);

  it('is stored and enforced through the API, the 40th write included; other namespaces and later writes go on', async () => {
    const { target, latest } = recording();
    const { call } = setup(target);
    const set = largePolicySet('big', 40);
    const first = await call('POST', `${P}/changes`, { policies: { put: set.slice(0, 39) } });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ applied: 2, unchanged: 0, failed: [] });
    const fortieth = await call('PUT', `${P}/policies/big/big-39`, set[39]);
    expect(fortieth.status).toBe(201);
    expect(fortieth.enforcement).toBe('applied=1 unchanged=1 failed=0');
    expect(latest('ns-big-a')).toContain(`ip saddr { ${peerAddress(39, 27, 0)}, `);
    // A write in another namespace, and a label write, after the large set.
    expect((await call('PUT', `${P}/policies/other/deny`, netpol('other', 'deny', { podSelector: {} }))).status).toBe(201);
    expect((await call('PUT', `${P}/namespaces/other`, { labels: { team: 'x' } })).status).toBe(201);
    expect((await call('GET', `${P}/policies`)).body.policies).toHaveLength(41);
    expect(latest('ns-other-b')).toContain('policy drop;');
  }, 120_000);

  it('refuses whole, with 422 naming the bound and the count, a write that takes a pod past it; deleting still works', async () => {
    const { target } = recording();
    const { call } = setup(target);
    expect((await call('POST', `${P}/changes`, { policies: { put: largePolicySet('big', 40) } })).status).toBe(200);
    const more = Array.from({ length: 40 }, (_, i) => largePolicy('big', 40 + i));
    const r = await call('POST', `${P}/changes`, { policies: { put: more }, namespaces: { other: { labels: { team: 'x' } } } });
    expect(r.status).toBe(422);
    const count = 80 * 28 + 6;
    expect(r.body).toEqual({
      message: 'Object is not valid',
      details: [
        {
          path: '/',
          errors: [
            `the policies would give pod big/big-a (task big-a) ${count} nftables rules; at most ${RULESET_LIMITS.rules} can be enforced per pod: nothing was stored`,
          ],
        },
      ],
    });
    // Nothing of it was stored: neither the policies nor the namespace labels of the same change.
    expect((await call('GET', `${P}/policies`)).body.policies).toHaveLength(40);
    expect((await call('GET', `${P}/namespaces/other`)).body.labels).toEqual({ 'kubernetes.io/metadata.name': 'other' });
    expect((await call('PUT', `${P}/policies/big/big-40`, more[0])).status).toBe(201);
    expect((await call('DELETE', `${P}/policies/big/big-0`)).status).toBe(200);
  }, 120_000);
});

describe('a write whose rules cannot be applied after it is stored', () => {
  it('answers 202 with the enforcement state, keeps the write, and the next change applies the rules again', async () => {
    let failing = true;
    const applied: string[] = [];
    const target: RulesetTarget = {
      gateway: GW,
      applyRuleset: async (netns) => {
        if (failing && netns === 'ns-big-a')
          throw new Error('ip netns exec ns-big-a nft -f - failed (1): Error: Could not process rule: No buffer space available');
        applied.push(netns);
      },
    };
    const { call } = setup(target);
    const doc = netpol('big', 'deny', { podSelector: {} });
    const r = await call('PUT', `${P}/policies/big/deny`, doc);
    expect(r.status).toBe(202);
    expect(r.enforcement).toBe('applied=1 unchanged=0 failed=1');
    expect(r.body).toEqual({
      message: 'The change was stored, but the rules of 1 of 2 tasks could not be applied; the next change or task start or stop tries again',
      stored: true,
      enforcement: {
        applied: 1,
        unchanged: 0,
        failed: [{ taskId: 'big-a', error: 'ip netns exec ns-big-a nft -f - failed (1): Error: Could not process rule: No buffer space available' }],
      },
    });
    expect((await call('GET', `${P}/policies/big/deny`)).body).toMatchObject({ metadata: { name: 'deny', namespace: 'big' } });
    // POST /v2/starmap/changes keeps its body and adds message and stored.
    const c = await call('POST', `${P}/changes`, { namespaces: { big: { labels: { team: 'x' } } } });
    expect(c.status).toBe(202);
    expect(c.body).toMatchObject({ message: expect.stringContaining('stored'), stored: true, applied: 0, unchanged: 1, failed: [{ taskId: 'big-a' }] });
    failing = false;
    const again = await call('PUT', `${P}/namespaces/other`, { labels: { team: 'y' } });
    expect(again.status).toBe(201);
    expect(again.enforcement).toBe('applied=1 unchanged=1 failed=0');
    expect(applied.at(-1)).toBe('ns-big-a');
  });
});

describe('one slow namespace', () => {
  it('holds up only the writes that change its rules', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    const target: RulesetTarget = {
      gateway: GW,
      applyRuleset: async (netns) => {
        started.push(netns);
        if (netns === 'ns-big-a') await gate;
      },
    };
    const { call } = setup(target);
    let bigDone = false;
    const big = call('PUT', `${P}/policies/big/deny`, netpol('big', 'deny', { podSelector: {} })).then((r) => ((bigDone = true), r));
    await waitFor(() => started.includes('ns-big-a'), { message: "the big namespace's nft run starts" });
    try {
      let other: Awaited<ReturnType<typeof call>> | undefined;
      void call('PUT', `${P}/policies/other/deny`, netpol('other', 'deny', { podSelector: {} })).then((r) => (other = r));
      await waitFor(() => other, { timeoutMs: 10_000, message: 'the write in the other namespace answers while the big one is still being applied' });
      expect(other!.status).toBe(201);
      expect(other!.enforcement).toBe('applied=1 unchanged=1 failed=0');
      expect(bigDone).toBe(false);
    } finally {
      release();
    }
    expect((await big).status).toBe(201);
  });
});
