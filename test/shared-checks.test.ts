// Reachability checks against real listeners on loopback, one per outcome.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { check, classifyError, parseStatusRule } from '../shared/checks.ts';
import { parseTarget } from '../shared/targets.ts';
import { blackhole, type Blackhole } from './helpers/blackhole.ts';
import { dnsServer, testResolver } from './helpers/dns.ts';
import { CLOSED_PORT, freePort, removeTempDirs, tempDir } from './helpers/process.ts';

const closers: (() => void)[] = [];
afterAll(() => {
  closers.forEach((c) => c());
  removeTempDirs();
});

function listen(server: net.Server, host = '127.0.0.1'): Promise<number> {
  return new Promise((res) => server.listen(0, host, () => res((server.address() as net.AddressInfo).port)));
}

async function httpServer(handler: http.RequestListener, host = '127.0.0.1'): Promise<number> {
  const s = http.createServer(handler);
  const port = await listen(s, host);
  closers.push(() => s.closeAllConnections() ?? s.close());
  return port;
}

const opts = { timeoutMs: 500 };

describe('TCP checks', () => {
  it('an open listener is reachable, with latency and time of check', async () => {
    const s = net.createServer((c) => c.destroy());
    const port = await listen(s);
    closers.push(() => s.close());
    const before = Date.now();
    const r = await check(parseTarget(`127.0.0.1:${port}`), opts);
    expect(r).toMatchObject({ reachable: true, reason: 'ok' });
    expect(r.latencyMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(r.checkedAt)).toBeGreaterThanOrEqual(before - 1);
  });

  it('a closed port is refused', async () => {
    const port = await freePort();
    expect(await check(parseTarget(`127.0.0.1:${port}`), opts)).toMatchObject({ reachable: false, reason: 'refused' });
  });

  it('a connect that is never answered times out at the deadline', async () => {
    const hole: Blackhole = await blackhole();
    closers.push(hole.close);
    const r = await check(parseTarget(`127.0.0.1:${hole.port}`), { timeoutMs: 300 });
    expect(r).toMatchObject({ reachable: false, reason: 'timeout' });
    expect(r.latencyMs).toBeGreaterThanOrEqual(295);
  });

  it('IPv6 loopback works', async () => {
    const s = net.createServer((c) => c.destroy());
    const port = await listen(s, '::1');
    closers.push(() => s.close());
    expect(await check(parseTarget(`[::1]:${port}`), opts)).toMatchObject({ reachable: true, reason: 'ok' });
    expect(await check(parseTarget(`tcp://[::1]:${await freePort('::1')}`), opts)).toMatchObject({ reason: 'refused' });
  });

  it('a name that does not resolve is a dns failure', async () => {
    const dns = await dnsServer({});
    closers.push(dns.close);
    expect(await check(parseTarget('no-such-host.invalid:80'), { timeoutMs: 3000, resolver: testResolver(dns) })).toMatchObject({
      reachable: false,
      reason: 'dns',
    });
  });

  it('every check uses a fresh connection', async () => {
    let connections = 0;
    const s = net.createServer((c) => {
      connections++;
      c.destroy();
    });
    const port = await listen(s);
    closers.push(() => s.close());
    const t = parseTarget(`127.0.0.1:${port}`);
    for (let i = 0; i < 3; i++) await check(t, opts);
    await expect.poll(() => connections).toBe(3);
  });
});

describe('HTTP checks', () => {
  it('any HTTP response is reachable and its status code is recorded', async () => {
    const port = await httpServer((_req, res) => res.writeHead(500).end('boom'));
    expect(await check(parseTarget(`http://127.0.0.1:${port}/x`), opts)).toMatchObject({ reachable: true, reason: 'ok', statusCode: 500 });
  });

  it('a status rule narrows what counts as reachable', async () => {
    const port = await httpServer((_req, res) => res.writeHead(503).end());
    const r = await check(parseTarget(`http://127.0.0.1:${port}/`), { ...opts, acceptStatus: parseStatusRule('200-399') });
    expect(r).toMatchObject({ reachable: false, reason: 'http-status', statusCode: 503 });
  });

  it('a server that accepts but never answers times out', async () => {
    const port = await httpServer(() => {});
    const r = await check(parseTarget(`http://127.0.0.1:${port}/`), { timeoutMs: 300 });
    expect(r).toMatchObject({ reachable: false, reason: 'timeout' });
    expect(r.latencyMs).toBeLessThan(2000);
  });

  it('a connection reset before the answer is reset', async () => {
    const s = net.createServer((c) => c.once('data', () => c.resetAndDestroy()));
    const port = await listen(s);
    closers.push(() => s.close());
    expect(await check(parseTarget(`http://127.0.0.1:${port}/`), opts)).toMatchObject({ reachable: false, reason: 'reset' });
  });

  it('refused, dns and IPv6 work for URLs too', async () => {
    expect(await check(parseTarget(`http://127.0.0.1:${CLOSED_PORT}/`), opts)).toMatchObject({ reason: 'refused' });
    const dns = await dnsServer({});
    closers.push(dns.close);
    expect(await check(parseTarget('http://no-such-host.invalid/'), { timeoutMs: 3000, resolver: testResolver(dns) })).toMatchObject({ reason: 'dns' });
    const port = await httpServer((_req, res) => res.end('ok'), '::1');
    expect(await check(parseTarget(`http://[::1]:${port}/status`), opts)).toMatchObject({ reachable: true, statusCode: 200 });
  });

  it('sends Connection: close and never reuses a connection', async () => {
    const sockets = new Set<net.Socket>();
    const headers: string[] = [];
    const port = await httpServer((req, res) => {
      sockets.add(req.socket);
      headers.push(String(req.headers.connection));
      res.end('ok');
    });
    const t = parseTarget(`http://127.0.0.1:${port}/`);
    for (let i = 0; i < 3; i++) await check(t, opts);
    expect(sockets.size).toBe(3);
    expect(headers).toEqual(['close', 'close', 'close']);
  });

  const haveOpenssl = (() => {
    try {
      execFileSync('openssl', ['version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();

  describe.skipIf(!haveOpenssl)('HTTPS (needs openssl to make a self-signed certificate)', () => {
    let port = 0;
    beforeAll(async () => {
      const dir = tempDir('starmap-tls-');
      execFileSync(
        'openssl',
        ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem'), '-days', '1', '-subj', '/CN=localhost'],
        { stdio: 'ignore' },
      );
      const s = https.createServer({ key: readFileSync(join(dir, 'k.pem')), cert: readFileSync(join(dir, 'c.pem')) }, (_req, res) => res.end('ok'));
      port = await listen(s);
      closers.push(() => s.close());
    });

    it('an untrusted certificate is a tls failure', async () => {
      expect(await check(parseTarget(`https://127.0.0.1:${port}/`), opts)).toMatchObject({ reachable: false, reason: 'tls' });
    });

    it('is reachable when verification is off', async () => {
      expect(await check(parseTarget(`https://127.0.0.1:${port}/`), { ...opts, verifyTls: false })).toMatchObject({ reachable: true, statusCode: 200 });
    });
  });
});

describe('error classification', () => {
  it.each([
    ['ECONNREFUSED', 'refused'],
    ['ECONNRESET', 'reset'],
    ['EHOSTUNREACH', 'unreachable'],
    ['ENETUNREACH', 'unreachable'],
    ['ENOTFOUND', 'dns'],
    ['ETIMEDOUT', 'timeout'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'tls'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'tls'],
    ['EWHATEVER', 'error'],
  ])('%s is %s', (code, reason) => {
    expect(classifyError(Object.assign(new Error('x'), { code })).reason).toBe(reason);
    // undici wraps socket errors in `cause`
    expect(classifyError(Object.assign(new Error('fetch failed'), { cause: Object.assign(new Error('x'), { code }) })).reason).toBe(reason);
  });

  it('status rules parse ranges and lists and reject nonsense', () => {
    const rule = parseStatusRule('200,204,300-399');
    expect([200, 204, 302, 201, 404].map(rule)).toEqual([true, true, true, false, false]);
    expect(() => parseStatusRule('2xx')).toThrow(/200-399/);
    expect(() => parseStatusRule('399-300')).toThrow(/reversed/);
  });
});
