// The orchestrator program with --isolation=netns under the reported large policy set: 40
// NetworkPolicies of 28 ingress rules x 40 ipBlock /32 peers over TCP, UDP and SCTP, all selecting
// the pods of one namespace, applied through the policy API to real namespaces. Every write is
// stored and enforced in bounded time (the 40th included), a write to another namespace is not held
// up by it, a set past the per-pod bound is refused whole, and after kill -9 the next start brings
// the namespace's pod back under all 40. Needs root. Prefix smbig and subnet 10.213.160.0/24 are
// this file's only.
import { afterAll, describe, expect, it } from 'vitest';
import { leftovers } from '../../../orchestrator/isolation/index.ts';
import { RULESET_LIMITS } from '../../../orchestrator/isolation/render.ts';
import { largePolicy, largePolicySet } from '../../helpers/large-policies.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { NODE, runToEnd, stopAll, tempDir } from '../../helpers/process.ts';
import { isolationSkip } from '../../helpers/isolation.ts';
import { waitFor } from '../../helpers/wait.ts';

const PREFIX = 'smbig';
const SUBNET = '10.213.160.0/24';
const skipReason = isolationSkip('orchestrator-isolation-large');

const SERVER = `require('net').createServer(s=>s.end('ok')).listen(80,'0.0.0.0')`;
/** Connects from inside a namespace; prints what happened. */
const CLIENT = `const s=require('net').connect(80,process.argv[1]);s.setTimeout(1500);let d='';s.on('data',x=>d+=x);s.on('end',()=>{console.log('got:'+d);process.exit(0)});s.on('timeout',()=>{console.log('timeout');process.exit(0)});s.on('error',e=>{console.log('error:'+e.code);process.exit(0)})`;

function app(ns: string, name: string): Record<string, unknown> {
  return {
    id: `/big/${ns}/${name}`,
    args: [NODE, '-e', SERVER],
    labels: { 'starmap.namespace': ns, pod: name },
    ipAddress: { networkName: 'starmap' },
    taskKillGracePeriodSeconds: 1,
  };
}

interface Pod {
  namespace: string;
  pod: string;
  tasks: { taskId: string; ip: string }[];
}

async function pods(o: StartedOrchestrator): Promise<Pod[]> {
  return (await o.call('GET', '/v2/starmap/pods')).body.pods as Pod[];
}

async function netnsOf(o: StartedOrchestrator): Promise<Map<string, { ip: string; netns: string }>> {
  const tasks = (await o.call('GET', '/v2/starmap/network')).body.tasks as { namespace: string; pod: string; ip: string; netns: string }[];
  return new Map(tasks.map((t) => [`${t.namespace}/${t.pod}`, { ip: t.ip, netns: t.netns }]));
}

/** What a TCP connection to port 80 of `ip` from inside `netns` gets. */
async function connect(netns: string, ip: string): Promise<string> {
  return (await runToEnd('ip', ['netns', 'exec', netns, NODE, '-e', CLIENT, ip])).output.trim();
}

/** The accept rules of the large set in a namespace's input chain, as nft lists them. */
async function largeRules(netns: string): Promise<number> {
  const r = await runToEnd('ip', ['netns', 'exec', netns, 'nft', 'list', 'chain', 'inet', 'starmap', 'input']);
  return r.output.split('\n').filter((l) => l.includes('comment "big/big-')).length;
}

afterAll(async () => {
  await stopAll();
});

describe.skipIf(skipReason !== undefined)('orchestrator --isolation=netns with 40 large NetworkPolicies in one namespace (root)', () => {
  it('stores and enforces every write in bounded time, does not hold up other namespaces, refuses past the bound, and restarts the pods', async () => {
    const dataDir = tempDir('orch-big-');
    const flags = ['--isolation=netns', `--netns-prefix=${PREFIX}`, `--netns-subnet=${SUBNET}`];
    const first = await startOrchestrator(flags, { dataDir });
    for (const a of [app('big', 'a'), app('other', 'b')]) expect((await first.call('POST', '/v2/apps', a)).status).toBe(201);
    await waitFor(async () => (await pods(first)).length === 2, { timeoutMs: 30_000, message: 'two isolated tasks' });
    let net = await netnsOf(first);
    const a = net.get('big/a')!;
    const b = net.get('other/b')!;
    await waitFor(async () => (await connect(b.netns, a.ip)) === 'got:ok', { timeoutMs: 20_000, message: 'other/b reaches big/a before any policy' });

    const set = largePolicySet('big', 40);
    let t = Date.now();
    const first39 = await first.call('POST', '/v2/starmap/changes', { policies: { put: set.slice(0, 39) } });
    expect(first39.status).toBe(200);
    expect(first39.body).toMatchObject({ failed: [] });
    const fortieth = await first.call('PUT', '/v2/starmap/policies/big/big-39', set[39]);
    expect(fortieth.status).toBe(201);
    expect(fortieth.headers.get('starmap-enforcement')).toBe('applied=1 unchanged=1 failed=0');
    const enforcedMs = Date.now() - t;
    // Bounded: the two writes were rejected or killed at nft's 15 s limit before.
    expect(enforcedMs).toBeLessThan(60_000);
    expect(await largeRules(a.netns)).toBe(40 * 28);
    expect(await connect(b.netns, a.ip)).toBe('timeout');

    // A write of the large namespace while writes to the other one go on: those answer first.
    const order: string[] = [];
    const big = first.call('PUT', '/v2/starmap/policies/big/big-40', largePolicy('big', 40)).then((r) => (order.push('big'), r));
    const other = first.call('PUT', '/v2/starmap/policies/other/deny', {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'deny', namespace: 'other' },
      spec: { podSelector: {}, policyTypes: ['Ingress'] },
    });
    t = Date.now();
    const otherReply = await other.then((r) => (order.push('other'), r));
    const otherMs = Date.now() - t;
    expect(otherReply.status).toBe(201);
    expect(otherReply.headers.get('starmap-enforcement')).toBe('applied=1 unchanged=1 failed=0');
    expect((await big).status).toBe(201);
    expect(order).toEqual(['other', 'big']);
    expect((await first.call('PUT', '/v2/starmap/namespaces/other', { labels: { team: 'x' } })).status).toBe(201);

    // Past the per-pod bound: refused whole, nothing stored.
    const past = await first.call('POST', '/v2/starmap/changes', { policies: { put: Array.from({ length: 40 }, (_, i) => largePolicy('big', 41 + i)) } });
    expect(past.status).toBe(422);
    expect(past.body.details[0].errors[0]).toContain(`${81 * 28 + 6} nftables rules; at most ${RULESET_LIMITS.rules} can be enforced per pod`);
    expect(((await first.call('GET', '/v2/starmap/policies')).body.policies as unknown[]).length).toBe(42);
    console.log(`orchestrator-isolation-large: 40 policies enforced in ${enforcedMs} ms; a write to another namespace answered in ${otherMs} ms`);
    await first.proc.stop('SIGKILL');

    const second = await startOrchestrator(flags, { dataDir });
    await waitFor(async () => (await pods(second)).length === 2, { timeoutMs: 60_000, message: 'both pods back after the restart' });
    await waitFor(async () => (await second.call('GET', '/v2/apps/big/big/a')).body?.app?.tasksRunning === 1, {
      timeoutMs: 60_000,
      message: 'big/a running again after the restart',
    });
    net = await netnsOf(second);
    const a2 = net.get('big/a')!;
    const b2 = net.get('other/b')!;
    expect(await largeRules(a2.netns)).toBe(41 * 28);
    expect(await connect(b2.netns, a2.ip)).toBe('timeout');
    expect(second.proc.output()).not.toContain('Maximum call stack');

    expect(await second.proc.stop('SIGTERM')).toBe(0);
    expect(await leftovers(PREFIX, SUBNET)).toEqual({ namespaces: [], links: [], tables: [], routes: [] });
  }, 300_000);
});
