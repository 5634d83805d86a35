// The orchestrator program with --isolation=netns: tasks of apps with ipAddress in their own
// namespaces (addresses reported, reachable from the host, names resolved between tasks, health
// checks at their address), a policy changed under running tasks, and nothing left after SIGTERM
// or after kill -9 and the next start. Also (no root needed): the flags and the policy paths
// without isolation. Prefixes smoi/smok and subnets 10.213.110-111.0/24 are this file's only.
import { existsSync, readdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupAll, leftovers } from '../../../orchestrator/isolation/index.ts';
import { NETNS_ETC, prefixLockFile } from '../../../orchestrator/isolation/cleanup.ts';
import { findTaskProcesses } from '../../../orchestrator/tasks/process-group.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { NODE, runToEnd, stopAll, tempDir } from '../../helpers/process.ts';
import { isolationSkip } from '../../helpers/isolation.ts';
import { waitFor } from '../../helpers/wait.ts';

const PREFIX = 'smoi';
const SUBNET = '10.213.110.0/24';
const CRASH_PREFIX = 'smok';
const CRASH_SUBNET = '10.213.111.0/24';

const skipReason = isolationSkip('orchestrator-isolation');

// A task: serves /hello and /status on port 80 of its own address, and every 200 ms asks its peer
// (by name) for /hello, like a probe; /status shows the last outcome and the task's HOST.
const TASK = `const http=require('http');const [me,peer]=process.argv.slice(1);let last='none';
setInterval(()=>{let done=false;const end=(v)=>{if(!done){done=true;last=v}};
const r=http.get({host:peer,port:80,path:'/hello',timeout:400},res=>{let d='';res.on('data',x=>d+=x);res.on('end',()=>end('ok:'+d))});
r.on('timeout',()=>{end('timeout');r.destroy()});r.on('error',e=>end('error:'+e.code))},200);
http.createServer((q,s)=>{if(q.url==='/status')s.end(JSON.stringify({me,host:process.env.HOST,peer:last}));else s.end('hello from '+me)}).listen(80,'0.0.0.0');`;

function app(name: string, peer: string, role: string): Record<string, unknown> {
  return {
    id: `/itest/grp/${name}`,
    args: [NODE, '-e', TASK, name, peer],
    labels: { role },
    ipAddress: { groups: [], networkName: 'starmap' },
    healthChecks: [{ protocol: 'HTTP', path: '/hello', port: 80, gracePeriodSeconds: 10, intervalSeconds: 1, timeoutSeconds: 1, maxConsecutiveFailures: 3 }],
    taskKillGracePeriodSeconds: 1,
  };
}

interface Status {
  me: string;
  host: string;
  peer: string;
}

async function status(ip: string): Promise<Status | undefined> {
  try {
    const res = await fetch(`http://${ip}/status`, { signal: AbortSignal.timeout(1000) });
    return (await res.json()) as Status;
  } catch {
    return undefined;
  }
}

async function runningTask(
  o: StartedOrchestrator,
  id: string,
): Promise<{ id: string; host: string; ipAddresses?: { ipAddress: string; protocol: string }[]; ports: number[] }> {
  return waitFor(
    async () => {
      const r = await o.call('GET', `/v2/apps${id}/tasks`);
      const t = r.body?.tasks?.[0];
      return t?.state === 'TASK_RUNNING' ? t : undefined;
    },
    { timeoutMs: 20_000, message: `task of ${id} running` },
  );
}

function etcNetns(prefix: string): string[] {
  return existsSync(NETNS_ETC) ? readdirSync(NETNS_ETC).filter((n) => n.startsWith(`${prefix}-`)) : [];
}

async function expectNothingLeft(prefix: string, subnet: string): Promise<void> {
  expect(await leftovers(prefix, subnet)).toEqual({ namespaces: [], links: [], tables: [], routes: [] });
  expect(etcNetns(prefix)).toEqual([]);
  expect(existsSync(prefixLockFile(prefix))).toBe(false);
}

const EMPTY = { namespaces: [], links: [], tables: [], routes: [] };

afterAll(async () => {
  await stopAll();
  if (!skipReason) {
    // Only after a failed test is there anything to remove.
    await cleanupAll({ prefix: PREFIX, subnet: SUBNET });
    await cleanupAll({ prefix: CRASH_PREFIX, subnet: CRASH_SUBNET });
  }
});

describe('orchestrator isolation flags and endpoint without isolation', () => {
  it('--help explains --isolation, --netns-subnet and --netns-prefix; bad values exit 2 naming the flag', async () => {
    const help = await runToEnd(NODE, ['orchestrator/main.ts', '--help']);
    expect(help.code).toBe(0);
    for (const f of ['--isolation', '--netns-subnet', '--netns_subnet', '--netns-prefix', '--netns_prefix', 'nftables']) expect(help.output).toContain(f);
    for (const [arg, flag] of [
      ['--isolation=docker', 'isolation'],
      ['--netns-subnet=8.8.8.0/24', '--netns-subnet'],
      ['--netns_subnet=10.0.0.0/8', '--netns-subnet'],
      ['--netns-prefix=NOPE', '--netns-prefix'],
    ] as const) {
      const bad = await runToEnd(NODE, ['orchestrator/main.ts', arg]);
      expect(bad.code, arg).toBe(2);
      expect(bad.output, arg).toContain(flag);
    }
  }, 30_000);

  it('without --isolation the policy paths answer 501 with a JSON message, behind the login like the rest of the API', async () => {
    const o = await startOrchestrator();
    for (const [method, path] of [
      ['GET', '/v2/starmap/policies'],
      ['PUT', '/v2/starmap/policies/x'],
      ['GET', '/v2/starmap/network'],
    ] as const) {
      const r = await o.call(method, path, method === 'PUT' ? { selector: {}, ingress: [] } : undefined);
      expect(r.status, path).toBe(501);
      expect(r.body.message).toMatch(/--isolation=netns/);
    }
    expect((await fetch(`${o.url}/v2/starmap/policies`)).status).toBe(401);
    // Without isolation an app with ipAddress runs on the host network (no namespace, no address).
    expect((await o.call('POST', '/v2/apps', { id: '/plain', cmd: 'exec sleep 100', ipAddress: {} })).status).toBe(201);
    const t = await runningTask(o, '/plain');
    expect(t.ipAddresses).toBeUndefined();
    expect(t.host).toBe('127.0.0.1');
    await o.proc.stop('SIGTERM');
  }, 30_000);
});

describe.skipIf(skipReason !== undefined)('orchestrator --isolation=netns (root, iproute2, nftables)', () => {
  it('runs ipAddress apps in their namespaces; names, health checks and a policy change work; SIGTERM leaves nothing', async () => {
    const o = await startOrchestrator(['--auth=off', '--isolation=netns', `--netns-prefix=${PREFIX}`, `--netns_subnet=${SUBNET}`]);
    expect((await o.call('POST', '/v2/apps', app('alpha', 'beta.grp', 'client'))).status).toBe(201);
    expect((await o.call('POST', '/v2/apps', app('beta', 'alpha', 'server'))).status).toBe(201);
    const a = await runningTask(o, '/itest/grp/alpha');
    const b = await runningTask(o, '/itest/grp/beta');
    const ipA = a.ipAddresses?.[0]?.ipAddress;
    const ipB = b.ipAddresses?.[0]?.ipAddress;
    expect(a.ipAddresses).toEqual([{ ipAddress: expect.stringMatching(/^10\.213\.110\.\d+$/), protocol: 'IPv4' }]);
    expect(ipB).toMatch(/^10\.213\.110\.\d+$/);
    expect(ipA).not.toBe(ipB);
    expect(a.host).toBe(ipA);
    expect(a.ports).toEqual([]); // no host ports for ipAddress apps

    // From the host at their addresses; HOST is the address; each reaches the other by name.
    const sa = await waitFor(
      async () => {
        const s = await status(ipA!);
        return s?.peer.startsWith('ok:') ? s : undefined;
      },
      { timeoutMs: 15_000, message: 'alpha reaches beta.grp' },
    );
    expect(sa).toEqual({ me: 'alpha', host: ipA, peer: 'ok:hello from beta' });
    await waitFor(async () => (await status(ipB!))?.peer === 'ok:hello from alpha', { timeoutMs: 15_000, message: 'beta reaches alpha' });

    // Health checks reach the tasks at their addresses.
    await waitFor(async () => (await o.call('GET', '/v2/apps/itest/grp/alpha')).body.app.tasksHealthy === 1, { timeoutMs: 15_000, message: 'alpha healthy' });
    const ns = (await o.call('GET', '/v2/starmap/network')).body;
    expect(ns.gateway).toBe('10.213.110.1');
    expect(ns.tasks.map((t: { ip: string }) => t.ip).sort()).toEqual([ipA, ipB].sort());

    // A default deny on beta: alpha loses it without restarts; the host (health checks) still reaches it.
    const put = await o.call('PUT', '/v2/starmap/policies/deny-server', { selector: { labels: { role: 'server' } }, ingress: [] });
    expect(put.status).toBe(201);
    // Both tasks got their rules before the answer (a failure here names the stage that broke).
    const enforcement = put.headers.get('starmap-enforcement');
    expect(enforcement).toMatch(/ failed=0$/);
    // Deadlines leave room for a loaded machine (two test files at once on two cores): the task
    // looks every 200 ms, but its own /status may answer slowly; the error says how many looks we got.
    let lastPeer: string | undefined;
    let looks = 0;
    let reads = 0;
    await waitFor(
      async () => {
        looks++;
        const peer = (await status(ipA!))?.peer;
        if (peer !== undefined) reads++;
        return (lastPeer = peer ?? lastPeer) === 'timeout';
      },
      { timeoutMs: 30_000, message: 'alpha blocked from beta' },
    ).catch((err: Error) => {
      throw new Error(
        `${err.message} (enforcement: ${enforcement}; alpha's last look at beta: ${lastPeer}; ${reads} of ${looks} reads of its /status answered)`,
      );
    });
    expect((await status(ipB!))?.peer).toBe('ok:hello from alpha');
    expect((await status(ipB!))?.me).toBe('beta');
    expect((await runningTask(o, '/itest/grp/beta')).id).toBe(b.id);
    expect((await o.call('DELETE', '/v2/starmap/policies/deny-server')).status).toBe(200);
    await waitFor(async () => (await status(ipA!))?.peer === 'ok:hello from beta', { timeoutMs: 30_000, message: 'alpha reaches beta again' });
    expect((await runningTask(o, '/itest/grp/alpha')).id).toBe(a.id);

    // A task that ends gives back its namespace.
    expect((await o.call('DELETE', '/v2/apps/itest/grp/beta')).status).toBe(200);
    await waitFor(async () => (await leftovers(PREFIX, SUBNET)).namespaces.length === 1, { timeoutMs: 15_000, message: "beta's namespace removed" });

    expect(await o.proc.stop('SIGTERM')).toBe(0);
    await expectNothingLeft(PREFIX, SUBNET);
    expect(findTaskProcesses(new Set([a.id, b.id])).size).toBe(0);
  }, 90_000);

  it('after kill -9 the next start removes what the crashed run left', async () => {
    const dataDir = tempDir('orch-iso-');
    const flags = ['--auth=off', '--isolation=netns', `--netns-prefix=${CRASH_PREFIX}`, `--netns-subnet=${CRASH_SUBNET}`];
    const first = await startOrchestrator(flags, { dataDir });
    expect((await first.call('POST', '/v2/apps', app('solo', 'solo', 'x'))).status).toBe(201);
    const t1 = await runningTask(first, '/itest/grp/solo');
    await first.proc.stop('SIGKILL');
    // The crash left the namespace, the task and the bridge.
    const left = await leftovers(CRASH_PREFIX, CRASH_SUBNET);
    expect(left.namespaces.length).toBe(1);
    expect(left.links).toContain(`${CRASH_PREFIX}-br`);
    expect(findTaskProcesses(new Set([t1.id])).size).toBe(1);

    const second = await startOrchestrator(flags, { dataDir });
    expect(findTaskProcesses(new Set([t1.id])).size).toBe(0);
    const t2 = await runningTask(second, '/itest/grp/solo'); // the app is started again, in a fresh namespace
    expect(t2.id).not.toBe(t1.id);
    expect(t2.ipAddresses?.[0]?.ipAddress).toMatch(/^10\.213\.111\.\d+$/);
    await waitFor(async () => (await status(t2.ipAddresses![0]!.ipAddress))?.me === 'solo', { timeoutMs: 15_000, message: 'solo answers' });
    expect((await leftovers(CRASH_PREFIX, CRASH_SUBNET)).namespaces.length).toBe(1);

    expect(await second.proc.stop('SIGTERM')).toBe(0);
    await expectNothingLeft(CRASH_PREFIX, CRASH_SUBNET);
    expect(await leftovers(CRASH_PREFIX, CRASH_SUBNET)).toEqual(EMPTY);
    expect(findTaskProcesses(new Set([t1.id, t2.id])).size).toBe(0);
  }, 90_000);
});
