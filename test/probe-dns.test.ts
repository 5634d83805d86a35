// Name resolution without libuv's thread pool, against a DNS server the test runs on loopback (no
// test asks the machine's resolver): names that never answer cost only their own checks, /etc/hosts
// names and localhost need no DNS, resolv.conf's search list applies, and the probe and the
// collector both resolve this way.
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { Collector } from '../collector/collector.ts';
import { checkTcp, checkUdp } from '../shared/checks.ts';
import { NameResolver, ResolveError, candidates, parseDnsServers, parseHosts, parseResolvConf } from '../shared/resolver.ts';
import { dnsServer, type TestDns } from './helpers/dns.ts';
import { stopAll, tempDir } from './helpers/process.ts';
import { startProbe } from './helpers/probe.ts';
import { waitFor } from './helpers/wait.ts';

const closers: (() => void)[] = [];
afterAll(async () => {
  closers.forEach((c) => c());
  await stopAll();
});

async function dns(records: Record<string, string[]>, silent?: (name: string) => boolean): Promise<TestDns> {
  const d = await dnsServer(records, silent ? { silent } : {});
  closers.push(d.close);
  return d;
}

async function tcpServer(): Promise<number> {
  const s = net.createServer((c) => c.destroy());
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  closers.push(() => s.close());
  return (s.address() as net.AddressInfo).port;
}

/** A resolver that reads only the test's files and asks only the test's DNS server. */
function resolver(d: TestDns, opts: { hosts?: string; resolvConf?: string; env?: Record<string, string>; timeoutMs?: number } = {}): NameResolver {
  const dir = tempDir('starmap-dns-');
  const hostsPath = join(dir, 'hosts');
  const resolvConfPath = join(dir, 'resolv.conf');
  writeFileSync(hostsPath, opts.hosts ?? '');
  writeFileSync(resolvConfPath, opts.resolvConf ?? '');
  return new NameResolver({ timeoutMs: opts.timeoutMs ?? 500, servers: [d.server], hostsPath, resolvConfPath, env: opts.env ?? {} });
}

describe('resolver configuration', () => {
  it("reads /etc/hosts, resolv.conf, glibc's environment overrides and --dns-servers", () => {
    const hosts = parseHosts('127.0.0.1 localhost\n# comment\n10.1.0.2  task-1 Task-1.alias # trailing\n::1 localhost ip6-localhost\nbogus line\n');
    expect(hosts.get('task-1')).toEqual([{ address: '10.1.0.2', family: 4 }]);
    expect(hosts.get('task-1.alias')).toEqual([{ address: '10.1.0.2', family: 4 }]);
    expect(hosts.get('localhost')).toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
    const conf = 'nameserver 10.96.0.10\nsearch stars.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5 timeout:2\n';
    expect(parseResolvConf(conf)).toEqual({ search: ['stars.svc.cluster.local', 'svc.cluster.local', 'cluster.local'], ndots: 5 });
    expect(parseResolvConf(conf, { LOCALDOMAIN: 'a.test b.test', RES_OPTIONS: 'ndots:1' })).toEqual({ search: ['a.test', 'b.test'], ndots: 1 });
    expect(parseResolvConf('domain example.test\n')).toEqual({ search: ['example.test'], ndots: 1 });
    expect(candidates('frontend.stars', { search: ['svc.cluster.local'], ndots: 5 })).toEqual(['frontend.stars.svc.cluster.local', 'frontend.stars']);
    expect(candidates('a.b.c', { search: ['x'], ndots: 1 })).toEqual(['a.b.c', 'a.b.c.x']);
    expect(candidates('fqdn.test.', { search: ['x'], ndots: 5 })).toEqual(['fqdn.test']);
    expect(parseDnsServers('10.96.0.10, 127.0.0.1:5353,[::1]:53,::1')).toEqual(['10.96.0.10', '127.0.0.1:5353', '[::1]:53', '::1']);
    for (const bad of ['dns.test', '10.0.0.1:0', '1.2.3.4:99999', '[nope]:53', '']) expect(() => parseDnsServers(bad), bad).toThrow();
  });
});

describe('NameResolver', () => {
  it('answers from DNS, says ENOTFOUND for unknown names and EAI_AGAIN at its deadline', async () => {
    const d = await dns({ 'web.test': ['127.0.0.1', '::1'] }, (n) => n.startsWith('silent'));
    const r = resolver(d, { timeoutMs: 300 });
    expect(await r.resolve('web.test')).toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
    expect(await r.resolve('WEB.test.')).toHaveLength(2);
    await expect(r.resolve('nope.test')).rejects.toMatchObject({ code: 'ENOTFOUND', hostname: 'nope.test' });
    const err = await r.resolve('silent.test').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResolveError);
    expect(err).toMatchObject({ code: 'EAI_AGAIN', message: 'no DNS answer for silent.test within 300 ms' });
  });

  it('serves /etc/hosts names and localhost without DNS, and reads the hosts file again when it changes', async () => {
    const d = await dns({});
    const r = resolver(d, { hosts: '10.9.0.1 task-a\n' });
    expect(await r.resolve('task-a')).toEqual([{ address: '10.9.0.1', family: 4 }]);
    expect(await r.resolve('localhost')).toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
    expect(await r.resolve('probe.localhost')).toHaveLength(2);
    expect(d.queries).toEqual([]);
    // The orchestrator rewrites a namespace's hosts file as tasks come and go.
    const dir = tempDir('starmap-dns-');
    const hosts = join(dir, 'hosts');
    writeFileSync(hosts, '10.9.0.1 task-a\n');
    const live = new NameResolver({ timeoutMs: 300, servers: [d.server], hostsPath: hosts, resolvConfPath: join(dir, 'none'), env: {} });
    expect(await live.resolve('task-a')).toEqual([{ address: '10.9.0.1', family: 4 }]);
    writeFileSync(hosts, '10.9.0.7 task-a task-b\n');
    await waitFor(async () => (await live.resolve('task-b').catch(() => undefined))?.[0]?.address === '10.9.0.7', { timeoutMs: 5000 });
    expect(await live.resolve('task-a')).toEqual([{ address: '10.9.0.7', family: 4 }]);
  });

  it('applies the search list and ndots, as getaddrinfo does', async () => {
    const d = await dns({ 'web.svc.test': ['127.0.0.1'] });
    const r = resolver(d, { resolvConf: 'search ns.test svc.test\noptions ndots:2\n' });
    expect(await r.resolve('web')).toEqual([{ address: '127.0.0.1', family: 4 }]);
    expect(d.queries.filter((q) => q.endsWith(' A'))).toEqual(['web.ns.test A', 'web.svc.test A']);
    const env = resolver(d, { env: { LOCALDOMAIN: 'svc.test' } });
    expect(await env.resolve('web')).toHaveLength(1);
  });

  it('gives checks their addresses and blames DNS when a name never answers', async () => {
    const d = await dns({ 'open.test': ['127.0.0.1'] }, (n) => n.startsWith('silent'));
    const r = resolver(d, { timeoutMs: 300 });
    const port = await tcpServer();
    expect(await checkTcp({ host: 'open.test', port }, { timeoutMs: 1000, resolver: r })).toMatchObject({ reachable: true, reason: 'ok' });
    expect(await checkTcp({ host: 'silent.test', port }, { timeoutMs: 300, resolver: r })).toMatchObject({
      reachable: false,
      reason: 'dns',
      message: 'EAI_AGAIN: no DNS answer for silent.test within 300 ms',
    });
    expect(await checkTcp({ host: 'nope.test', port }, { timeoutMs: 1000, resolver: r })).toMatchObject({
      reachable: false,
      reason: 'dns',
      message: expect.stringMatching(/ENOTFOUND/),
    });
    expect(await checkUdp({ host: 'silent.test', port }, { timeoutMs: 300, resolver: r })).toMatchObject({ reason: 'dns' });
  });
});

describe('a hostile answer costs only its own lookup', () => {
  it('one malformed answer beside 60 healthy names in flight fails only its name, with its own reason', async () => {
    const healthy = Array.from({ length: 60 }, (_v, i) => `web-${i}.test`);
    const d = await dnsServer(Object.fromEntries(healthy.map((n) => [n, ['127.0.0.1']])), { malformed: (n) => n === 'hostile.test', delayMs: 50 });
    closers.push(d.close);
    const r = resolver(d, { timeoutMs: 2000 });
    const port = await tcpServer();
    // The hostile name goes first, so that its answer arrives while every healthy query waits.
    const results = await Promise.all(['hostile.test', ...healthy].map((host) => checkTcp({ host, port }, { timeoutMs: 2000, resolver: r })));
    expect(results[0]).toMatchObject({ reachable: false, reason: 'dns', message: 'EAI_AGAIN: DNS failed for hostile.test: EBADRESP' });
    expect(results.slice(1).map((x) => x.reason)).toEqual(healthy.map(() => 'ok'));
    // The same over several cycles: the hostile answer does not poison what comes after it either.
    for (let round = 0; round < 3; round++) {
      const again = await Promise.allSettled(['hostile.test', ...healthy].map((host) => r.resolve(host)));
      expect(again.map((x) => x.status)).toEqual(['rejected', ...healthy.map(() => 'fulfilled')]);
    }
  });
});

describe('the probe and the collector resolve without the thread pool', () => {
  it('eight names that never answer do not hold up localhost targets (no timeouts), and DNS time is theirs only', async () => {
    const d = await dns({ 'web.test': ['127.0.0.1'] }, (n) => n.startsWith('silent'));
    const open = await tcpServer();
    const web = http.createServer((req, res) => res.writeHead(200).end(req.headers.host));
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    closers.push(() => web.close());
    const webPort = (web.address() as net.AddressInfo).port;
    const silent = Array.from({ length: 8 }, (_v, i) => `http://silent-${i}.test:${open}/`);
    const good = [`localhost:${open}`, `tcp://127.0.0.1:${open}`, `http://localhost:${webPort}/`, `http://web.test:${webPort}/`];
    const probe = await startProbe([
      `--urls=${[...silent, ...good].join(',')}`,
      `--dns-servers=${d.server}`,
      '--http-probe-seconds=0.2',
      '--timeout-seconds=1',
    ]);
    // Three rounds of the silent names, each waiting out its whole deadline.
    await waitFor(async () => d.queries.filter((q) => q === 'silent-0.test A').length >= 3, { timeoutMs: 20_000 });
    const targets = await probe.status();
    expect(targets.slice(0, 8).map((t) => [t.reason, t.message])).toEqual(
      silent.map((u) => ['dns', `EAI_AGAIN: no DNS answer for ${new URL(u).hostname} within 1000 ms`]),
    );
    expect(targets.slice(8).map((t) => [t.url, t.reachable, t.reason])).toEqual(good.map((u) => [u, true, 'ok']));
    // Not one check of the good targets timed out meanwhile (with dns.lookup, all of them did).
    const metrics = await (await fetch(`${probe.url}/metrics`)).text();
    expect(metrics).not.toMatch(/starmap_probe_checks_total\{reason="timeout"\} [1-9]/);
    expect(metrics).toMatch(/starmap_probe_checks_total\{reason="ok"\} \d{2,}/);
    // Only the names that need DNS were asked; localhost never was.
    expect(d.queries.some((q) => q.startsWith('localhost'))).toBe(false);
  });

  it('the collector fetches resources by name through the same resolver', async () => {
    const d = await dns({ 'probe.test': ['127.0.0.1'] }, (n) => n.startsWith('silent'));
    const web = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":{"targets":[]}}'));
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    closers.push(() => web.close());
    const port = (web.address() as net.AddressInfo).port;
    const collector = new Collector({
      resources: [
        { id: 'named', url: `http://probe.test:${port}/status` },
        { id: 'silent', url: `http://silent.test:${port}/status` },
      ],
      intervalMs: 60_000,
      concurrency: 2,
      fetch: { timeoutMs: 400, maxBodyBytes: 10_000, resolver: resolver(d, { timeoutMs: 400 }) },
      logger: pino({ level: 'silent' }),
    });
    await collector.fetchAll();
    expect(collector.responses.get('named')).toMatchObject({ statusCode: 200, error: null });
    expect(collector.responses.get('silent')).toMatchObject({
      statusCode: null,
      error: { reason: 'dns', message: 'EAI_AGAIN: no DNS answer for silent.test within 400 ms' },
    });
  });
});
