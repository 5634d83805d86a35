// Real namespaces, veths, nftables and TCP connections: the task network, network groups,
// Kubernetes-style policies changed under running servers, and cleanup after a simulated crash.
// Needs root, iproute2 and nftables. Prefixes smtn/smtc/smtk/smtx/smtl and subnets 10.213.101-104.0/24 are this file's only.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createServer, type Server } from 'node:net';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupAll, Isolation, leftovers, policyPlugin, POLICY_PATH } from '../../../orchestrator/isolation/index.ts';
import { prefixLockFile } from '../../../orchestrator/isolation/netns.ts';
import { readLimits } from '../../../orchestrator/isolation/neighbours.ts';
import { NODE, ROOT, start, stopAll, type Running } from '../../helpers/process.ts';
import { isolationSkip } from '../../helpers/isolation.ts';
import { waitFor } from '../../helpers/wait.ts';

const execFileAsync = promisify(execFile);
const PREFIX = 'smtn';
const SUBNET = '10.213.101.0/24';
const CRASH_PREFIX = 'smtc';
const CRASH_SUBNET = '10.213.102.0/24';
const KILL_PREFIX = 'smtk';
const KILL_SUBNET = '10.213.103.0/24';

const skipReason = isolationSkip('isolation-netns');

const SERVER = `const net=require('net');net.createServer(s=>s.end(process.argv[2])).listen(+process.argv[1],'0.0.0.0',()=>console.log('listening'))`;
const ECHO = `const net=require('net');net.createServer(s=>s.pipe(s)).listen(+process.argv[1],'0.0.0.0',()=>console.log('listening'))`;
// Sends a numbered line every 50 ms on ONE connection and prints every echoed number.
const CHAT = `const net=require('net');const s=net.connect({host:process.argv[1],port:+process.argv[2]});let n=0;s.on('connect',()=>setInterval(()=>s.write((n++)+'\\n'),50));s.on('data',d=>process.stdout.write(d));s.on('error',e=>{console.log('error:'+e.code);process.exit(0)})`;
const CLIENT = `const net=require('net');const [h,p,t]=process.argv.slice(1);const s=net.connect({host:h,port:+p});setTimeout(()=>{console.log('timeout');process.exit(0)},+t);let d='';s.on('data',x=>d+=x);s.on('end',()=>{console.log('ok:'+d);process.exit(0)});s.on('error',e=>{console.log('error:'+e.code);process.exit(0)})`;

function nsExec(ns: string, args: string[]): string {
  return execFileSync('ip', ['netns', 'exec', ns, ...args], { encoding: 'utf8' });
}

async function serve(ns: string, port: number, reply: string): Promise<Running> {
  const r = start('ip', ['netns', 'exec', ns, NODE, '-e', SERVER, String(port), reply]);
  await waitFor(() => r.output().includes('listening'), { message: `server in ${ns}:${port}` });
  return r;
}

/** One fresh TCP connection from inside `ns` (or from the host when ns is null): "ok:<reply>", "timeout" or "error:<code>". */
async function connect(ns: string | null, ip: string, port: number, timeoutMs = 400): Promise<string> {
  if (ns === null) {
    const { connect: tcp } = await import('node:net');
    return new Promise((res) => {
      const s = tcp({ host: ip, port });
      let d = '';
      const t = setTimeout(() => (s.destroy(), res('timeout')), timeoutMs);
      s.on('data', (x) => (d += x.toString()));
      s.on('end', () => (clearTimeout(t), res(`ok:${d}`)));
      s.on('error', (e: NodeJS.ErrnoException) => (clearTimeout(t), res(`error:${e.code}`)));
    });
  }
  // Asynchronously: a server in this test process (the host side) must keep accepting meanwhile.
  const { stdout } = await execFileAsync('ip', ['netns', 'exec', ns, NODE, '-e', CLIENT, ip, String(port), String(timeoutMs)]);
  return stdout.trim();
}

/** Polls until the connection outcome is `want` (rules apply at once; polling only absorbs process start-up). */
async function expectConnect(ns: string | null, ip: string, port: number, want: 'ok' | 'blocked'): Promise<void> {
  await waitFor(
    async () => {
      const got = await connect(ns, ip, port);
      return want === 'ok' ? got.startsWith('ok:') : got === 'timeout';
    },
    { timeoutMs: 8000, message: `${ns ?? 'host'} → ${ip}:${port} should be ${want}` },
  );
}

async function assertClean(prefix: string, subnet: string): Promise<void> {
  expect(await leftovers(prefix, subnet)).toEqual({ namespaces: [], links: [], tables: [], routes: [] });
  expect(execFileSync('ip', ['route'], { encoding: 'utf8' })).not.toContain(subnet.split('/')[0]);
  expect(existsSync('/etc/netns') ? readdirSync('/etc/netns').filter((e) => e.startsWith(`${prefix}-`)) : []).toEqual([]);
  expect(existsSync(prefixLockFile(prefix))).toBe(false);
}

describe.skipIf(skipReason !== undefined)('task network isolation (root, real packets)', () => {
  let iso: Isolation;

  beforeAll(async () => {
    iso = await Isolation.open({ prefix: PREFIX, subnet: SUBNET });
  });

  afterAll(async () => {
    await iso?.close();
    await stopAll();
    await assertClean(PREFIX, SUBNET);
  });

  it('creates the bridge with the gateway address and the host guards', () => {
    expect(iso.gateway).toBe('10.213.101.1');
    const addr = execFileSync('ip', ['-4', '-o', 'addr', 'show', 'dev', `${PREFIX}-br`], { encoding: 'utf8' });
    expect(addr).toContain('10.213.101.1/24');
    expect(execFileSync('ip', ['-4', 'route', 'show', 'type', 'unreachable'], { encoding: 'utf8' })).toContain('10.213.101.0/24');
    expect(execFileSync('nft', ['list', 'table', 'inet', `${PREFIX}_guard`], { encoding: 'utf8' })).toContain(`oifname "${PREFIX}-br"`);
    expect(readFileSync(prefixLockFile(PREFIX), 'utf8').trim()).toBe(String(process.pid));
    expect(execFileSync('sysctl', ['-n', 'net.ipv4.ip_forward'], { encoding: 'utf8' }).trim()).toBe(readForwardAtStart);
    // Room in the machine-wide neighbour table for every task of the /24 talking to every other.
    expect(readLimits().gcThresh3).toBeGreaterThanOrEqual(251 * 251);
  });

  it('refuses a subnet the machine already uses, creating nothing', async () => {
    await expect(Isolation.open({ prefix: 'smtx', subnet: '10.213.101.128/25' })).rejects.toThrow(
      /10\.213\.101\.128\/25 is already in use on this machine .*--netns-subnet/,
    );
    expect(await leftovers('smtx')).toEqual({ namespaces: [], links: [], tables: [], routes: [] });
    expect(existsSync(prefixLockFile('smtx'))).toBe(false);
  });

  it('refuses a prefix owned by another running process', async () => {
    writeFileSync(prefixLockFile('smtl'), '1\n'); // pid 1 always runs
    try {
      await expect(Isolation.open({ prefix: 'smtl', subnet: '10.213.104.0/24' })).rejects.toThrow(/prefix smtl is in use by another running process \(pid 1/);
      expect(await leftovers('smtl', '10.213.104.0/24')).toEqual({ namespaces: [], links: [], tables: [], routes: [] });
    } finally {
      rmSync(prefixLockFile('smtl'), { force: true });
    }
  });

  it('tasks reach each other and the host, the host reaches them, and nothing else is routed', async () => {
    const a = await iso.taskStarting({ taskId: 'a', appId: '/a', labels: {}, groups: [], hostnames: ['alpha'] });
    const b = await iso.taskStarting({ taskId: 'b', appId: '/b', labels: {}, groups: [], hostnames: ['beta'] });
    expect(a.ip).not.toBe(b.ip);
    // Only the connected subnet route: no default route, so any other address is unreachable.
    const routes = nsExec(a.netns, ['ip', '-4', 'route']).trim().split('\n');
    expect(routes).toHaveLength(1);
    expect(routes[0]).toMatch(new RegExp(`^${SUBNET.replace(/\./g, '\\.')} dev eth0 proto kernel scope link src ${a.ip.replace(/\./g, '\\.')}`));
    expect(nsExec(a.netns, ['ip', '-4', 'route'])).not.toContain('default');
    // Names of the other tasks resolve through the namespace's /etc/hosts.
    expect(nsExec(a.netns, ['getent', 'hosts', 'beta'])).toContain(b.ip);

    const sb = await serve(b.netns, 8080, 'from-b');
    await expectConnect(a.netns, b.ip, 8080, 'ok');
    await expectConnect(null, b.ip, 8080, 'ok');
    const host: Server = createServer((s) => s.end('from-host'));
    await new Promise<void>((r) => host.listen(0, iso.gateway, r));
    const hostPort = (host.address() as { port: number }).port;
    await expectConnect(b.netns, iso.gateway, hostPort, 'ok');
    await new Promise((r) => host.close(r));

    await iso.taskStopped('a');
    await iso.taskStopped('b');
    await waitFor(() => sb.child.exitCode !== null || sb.child.signalCode !== null, { message: 'server killed with its namespace' });
    expect(await leftovers(PREFIX, SUBNET)).toMatchObject({ namespaces: [], links: [`${PREFIX}-br`] });
  });

  it('starts and stops many tasks at once, each with its own address', async () => {
    const ids = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'];
    const started = await Promise.all(ids.map((taskId) => iso.taskStarting({ taskId, appId: `/${taskId}`, labels: { app: 'm' }, groups: [] })));
    expect(new Set(started.map((s) => s.ip)).size).toBe(ids.length);
    expect(new Set(started.map((s) => s.netns)).size).toBe(ids.length);
    const m6 = started[5]!;
    await serve(m6.netns, 7000, 'm6');
    await expectConnect(started[0]!.netns, m6.ip, 7000, 'ok');
    await Promise.all(ids.map((id) => iso.taskStopped(id)));
    expect(await leftovers(PREFIX, SUBNET)).toMatchObject({ namespaces: [], links: [`${PREFIX}-br`] });
  });

  it('network groups: a task accepts only tasks that share a group (and the host)', async () => {
    const x1 = await iso.taskStarting({ taskId: 'x1', appId: '/x1', labels: {}, groups: ['x'] });
    const x2 = await iso.taskStarting({ taskId: 'x2', appId: '/x2', labels: {}, groups: ['x', 'y'] });
    const y = await iso.taskStarting({ taskId: 'y', appId: '/y', labels: {}, groups: ['y'] });
    const open = await iso.taskStarting({ taskId: 'open', appId: '/open', labels: {}, groups: [] });
    await serve(x1.netns, 7000, 'x1');
    await serve(y.netns, 7000, 'y');
    await serve(open.netns, 7000, 'open');
    await expectConnect(x2.netns, x1.ip, 7000, 'ok');
    await expectConnect(y.netns, x1.ip, 7000, 'blocked');
    await expectConnect(open.netns, x1.ip, 7000, 'blocked');
    await expectConnect(null, x1.ip, 7000, 'ok');
    await expectConnect(x2.netns, y.ip, 7000, 'ok');
    await expectConnect(x1.netns, y.ip, 7000, 'blocked');
    // A task without groups accepts everyone.
    await expectConnect(x1.netns, open.ip, 7000, 'ok');
    await expectConnect(y.netns, open.ip, 7000, 'ok');
    for (const t of ['x1', 'x2', 'y', 'open']) await iso.taskStopped(t);
  });

  it('Kubernetes-style policies: default deny, then allow from a label on one port, changed under running servers', async () => {
    const app = Fastify();
    await app.register(policyPlugin, { engine: iso.engine });
    try {
      const fe = await iso.taskStarting({ taskId: 'fe', appId: '/fe', labels: { role: 'frontend' }, groups: [] });
      const be = await iso.taskStarting({ taskId: 'be', appId: '/be', labels: { role: 'backend' }, groups: [] });
      const cl = await iso.taskStarting({ taskId: 'cl', appId: '/cl', labels: { role: 'client' }, groups: [] });
      const s80 = await serve(be.netns, 8080, 'be8080');
      const echo = start('ip', ['netns', 'exec', be.netns, NODE, '-e', ECHO, '7070']);
      await waitFor(() => echo.output().includes('listening'));
      const chat = start('ip', ['netns', 'exec', fe.netns, NODE, '-e', CHAT, be.ip, '7070']);
      const echoed = () =>
        chat
          .output()
          .split('\n')
          .filter((l) => /^\d+$/.test(l)).length;
      await waitFor(() => echoed() > 3, { message: 'echoes over an open connection' });
      const s90 = await serve(be.netns, 9090, 'be9090');
      await expectConnect(fe.netns, be.ip, 8080, 'ok');
      await expectConnect(cl.netns, be.ip, 9090, 'ok');

      let res = await app.inject({ method: 'PUT', url: `${POLICY_PATH}/deny-backend`, payload: { selector: { labels: { role: 'backend' } }, ingress: [] } });
      expect(res.statusCode).toBe(201);
      expect(res.headers['starmap-enforcement']).toMatch(/failed=0/);
      expect(await connect(fe.netns, be.ip, 8080)).toBe('timeout');
      expect(await connect(cl.netns, be.ip, 9090)).toBe('timeout');
      // The connection opened before the policy is cut too (rules are checked on every inbound
      // packet, not only on new connections). Absence can only be observed over a window: lines the
      // echo server had received before the change may still come back (on a loaded machine it can
      // be behind by many), then no more. A connection left open would echo every 50 ms forever.
      await waitFor(
        async () => {
          const before = echoed();
          await new Promise((r) => setTimeout(r, 800));
          return echoed() <= before;
        },
        { timeoutMs: 15_000, intervalMs: 0, message: 'the connection opened before the policy still echoes' },
      );
      await expectConnect(null, be.ip, 8080, 'ok'); // the host (health checks) still gets in
      // An unselected task is not affected: it answers (refused, nobody listens there) instead of dropping.
      expect(await connect(be.netns, fe.ip, 8080)).toBe('error:ECONNREFUSED');

      res = await app.inject({
        method: 'PUT',
        url: `${POLICY_PATH}/allow-frontend`,
        payload: {
          selector: { labels: { role: 'backend' } },
          ingress: [{ from: [{ labels: { role: 'frontend' } }], ports: [{ port: 8080, protocol: 'tcp' }] }],
        },
      });
      expect(res.statusCode).toBe(201);
      await expectConnect(fe.netns, be.ip, 8080, 'ok');
      expect(await connect(fe.netns, be.ip, 9090)).toBe('timeout');
      expect(await connect(cl.netns, be.ip, 8080)).toBe('timeout');

      res = await app.inject({ method: 'DELETE', url: `${POLICY_PATH}/deny-backend` });
      expect(res.statusCode).toBe(200);
      // Still selected by allow-frontend: default deny for everything else remains.
      expect(await connect(cl.netns, be.ip, 8080)).toBe('timeout');
      res = await app.inject({ method: 'DELETE', url: `${POLICY_PATH}/allow-frontend` });
      expect(res.statusCode).toBe(200);
      await expectConnect(cl.netns, be.ip, 9090, 'ok');
      // The open connection recovers (TCP retransmits what was dropped).
      const after = echoed();
      await waitFor(() => echoed() > after + 3, { timeoutMs: 20_000, message: 'echoes again once the policies are gone' });
      // The same server processes served throughout: rules changed, tasks were not restarted.
      expect(s80.child.exitCode).toBeNull();
      expect(s90.child.exitCode).toBeNull();

      const net = await app.inject({ method: 'GET', url: '/v2/starmap/network' });
      expect(net.json<{ tasks: { taskId: string; restricted: boolean }[] }>().tasks.map((t) => [t.taskId, t.restricted])).toEqual([
        ['fe', false],
        ['be', false],
        ['cl', false],
      ]);
      for (const t of ['fe', 'be', 'cl']) await iso.taskStopped(t);
    } finally {
      await app.close();
    }
  });

  it('cleans up after an orchestrator process killed with SIGKILL', async () => {
    const script = [
      `import { Isolation } from ${JSON.stringify(join(ROOT, 'orchestrator/isolation/index.ts'))};`,
      `const iso = await Isolation.open({ prefix: '${KILL_PREFIX}', subnet: '${KILL_SUBNET}' });`,
      `const a = await iso.taskStarting({ taskId: 'a', appId: '/a', labels: {}, groups: ['g'] });`,
      `await iso.engine.put({ id: 'deny', selector: { labels: {} }, ingress: [] });`,
      `console.log('ready ' + a.netns);`,
      `setInterval(() => {}, 1000);`,
    ].join('\n');
    const orch = start(NODE, ['--input-type=module', '-e', script]);
    try {
      await waitFor(() => orch.output().includes('ready'), { timeoutMs: 15_000, message: 'isolation process ready' }).catch((err: Error) => {
        throw new Error(`${err.message}: ${orch.output()}`);
      });
      expect((await leftovers(KILL_PREFIX, KILL_SUBNET)).namespaces).toEqual([`${KILL_PREFIX}-t2`]);
      await orch.stop('SIGKILL');
      const next = await Isolation.open({ prefix: KILL_PREFIX, subnet: KILL_SUBNET });
      expect(next.leftovers).toMatchObject({ namespaces: [`${KILL_PREFIX}-t2`], tables: [`inet ${KILL_PREFIX}_guard`], routes: [KILL_SUBNET], errors: [] });
      await next.close();
    } finally {
      await orch.stop('SIGKILL');
      await cleanupAll({ prefix: KILL_PREFIX, subnet: KILL_SUBNET });
    }
    await assertClean(KILL_PREFIX, KILL_SUBNET);
  });

  it('cleans up everything a crashed instance left behind', async () => {
    const crashed = await Isolation.open({ prefix: CRASH_PREFIX, subnet: CRASH_SUBNET });
    const t1 = await crashed.taskStarting({ taskId: 't1', appId: '/t1', labels: { a: 'b' }, groups: ['g'] });
    await crashed.taskStarting({ taskId: 't2', appId: '/t2', labels: {}, groups: ['g'] });
    const server = await serve(t1.netns, 7000, 't1');
    expect((await leftovers(CRASH_PREFIX, CRASH_SUBNET)).namespaces).toHaveLength(2);
    // The object is dropped without close() (kill -9); a new instance starts with the same prefix…
    const next = await Isolation.open({ prefix: CRASH_PREFIX, subnet: CRASH_SUBNET });
    expect(next.leftovers?.namespaces.sort()).toEqual([`${CRASH_PREFIX}-t2`, `${CRASH_PREFIX}-t3`]);
    expect(next.leftovers?.killed.length).toBeGreaterThan(0);
    await waitFor(() => server.child.exitCode !== null || server.child.signalCode !== null, { message: 'orphan server killed' });
    // Guard: without the bridge, the subnet is unreachable from the host instead of following the
    // default route (`ip route get` only asks the routing table; nothing is sent).
    const t = await next.taskStarting({ taskId: 't3', appId: '/t3', labels: {}, groups: [] });
    expect(execFileSync('ip', ['-4', 'route', 'get', t.ip], { encoding: 'utf8' })).toContain(`dev ${CRASH_PREFIX}-br`);
    execFileSync('ip', ['link', 'set', `${CRASH_PREFIX}-br`, 'down']);
    expect(() => execFileSync('ip', ['-4', 'route', 'get', t.ip], { encoding: 'utf8', stdio: 'pipe' })).toThrow(/unreachable|No route to host/i);
    execFileSync('ip', ['link', 'set', `${CRASH_PREFIX}-br`, 'up']);
    // …and, crashed again, is found by cleanupAll with only the prefix (subnet read from the bridge).
    const report = await cleanupAll({ prefix: CRASH_PREFIX });
    expect(report.links).toContain(`${CRASH_PREFIX}-br`);
    expect(report.routes).toEqual([CRASH_SUBNET]);
    await assertClean(CRASH_PREFIX, CRASH_SUBNET);
  });
});

const readForwardAtStart = (() => {
  try {
    return execFileSync('sysctl', ['-n', 'net.ipv4.ip_forward'], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
})();
