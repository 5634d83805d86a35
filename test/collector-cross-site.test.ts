// The collector against pages on other sites (issue "Hardening and fidelity, round 2"), on real
// servers on loopback with the headers browsers send. Its cross-site check compared Origin with the
// request's own Host, which a DNS-rebinding page controls (the page at http://evil.example:9001,
// its name resolved to the collector, is same-origin with itself): now only Host values in the
// allow-list are answered (loopback names, IP addresses, this machine, --allowed-hosts), and a
// write's Origin must be the origin of such a Host.
import type net from 'node:net';
import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCollectorApp } from '../collector/app.ts';
import { Collector } from '../collector/collector.ts';
import { HostAllowList } from '../shared/web-guard.ts';
import { startCollector } from './helpers/collector.ts';
import { NODE, runToEnd, stopAll } from './helpers/process.ts';
import { sendRaw } from './helpers/raw-http.ts';

let collector: Collector;
let app: FastifyInstance;
let port = 0;

beforeAll(async () => {
  const logger = pino({ level: 'silent' });
  collector = new Collector({ resources: [], intervalMs: 60_000, concurrency: 4, fetch: { timeoutMs: 1000, maxBodyBytes: 10_000 }, logger });
  app = await createCollectorApp(collector, logger, { hosts: new HostAllowList({ listenAddress: '127.0.0.1', names: ['ui.example'] }) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as net.AddressInfo).port;
});

afterAll(async () => {
  await collector.stop();
  await app.close();
  await stopAll();
});

const JSON_TYPE = { 'content-type': 'application/json' };
const resource = (id: string) => JSON.stringify({ id, url: 'http://127.0.0.1:1/status' });
const ids = async () => ((await sendRaw(port, 'GET', '/resources')).body as { resources: { id: string }[] }).resources.map((r) => r.id);

describe('DNS rebinding', () => {
  const evil = () => ({ host: `evil.example:${port}`, origin: `http://evil.example:${port}`, 'sec-fetch-site': 'same-origin' });

  it("refuses the rebinding page's writes, though its Origin is its Host's own", async () => {
    const post = await sendRaw(port, 'POST', '/resources', { ...JSON_TYPE, ...evil() }, resource('rebound'));
    expect(post.status).toBe(403);
    expect(post.body.message).toMatch(
      new RegExp(
        `^Host "evil\\.example:${port}" is not a name this collector answers to \\(a guard against DNS rebinding; .*\\): start it with --allowed-hosts=evil\\.example to admit this name$`,
      ),
    );
    // curl -d's type, as star's scripts send it, from the page: refused the same way.
    const form = await sendRaw(port, 'POST', '/resources', { 'content-type': 'application/x-www-form-urlencoded', ...evil() }, resource('rebound'));
    expect(form.status).toBe(403);
    expect((await sendRaw(port, 'PUT', '/resources/rebound', { ...JSON_TYPE, ...evil() }, '{"url":"http://127.0.0.1:1/"}')).status).toBe(403);
    expect((await sendRaw(port, 'PUT', '/starmap/expectations', { ...JSON_TYPE, ...evil() }, '{}')).status).toBe(403);
    expect(await ids()).not.toContain('rebound');
  });

  it('refuses its reads too, except /healthz', async () => {
    for (const path of ['/', '/responses', '/resources', '/metrics', '/assets/app.js', '/starmap/expectations']) {
      expect((await sendRaw(port, 'GET', path, evil())).status, path).toBe(403);
    }
    const health = await sendRaw(port, 'GET', '/healthz', { host: 'health-checker.internal' });
    expect(health.status).toBe(200);
  });
});

describe("the collector's own origins", () => {
  it('takes writes from the page at an allowed Host: loopback names, IP addresses (port forwards too), this machine, the configured names', async () => {
    const hosts = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `10.9.8.7:30002`, `${hostname()}:${port}`, `ui.example:${port}`, 'ui.example'];
    for (const [i, host] of hosts.entries()) {
      const page = `http://${host}`;
      const r = await sendRaw(port, 'POST', '/resources', { ...JSON_TYPE, host, origin: page, 'sec-fetch-site': 'same-origin' }, resource(`own${i}`));
      expect(r.status, host).toBe(201);
    }
    expect(await ids()).toEqual(expect.arrayContaining(hosts.map((_h, i) => `own${i}`)));
  });

  it("refuses an Origin that is not the Host's own, even on this machine", async () => {
    // (https://127.0.0.1:<port> is the page of the same host and port behind a TLS proxy: the collector's own.)
    for (const origin of [`http://127.0.0.1:${port + 1}`, `http://localhost:${port}`, `https://127.0.0.1:${port + 1}`, 'null', 'http://ui.example']) {
      const r = await sendRaw(port, 'POST', '/resources', { ...JSON_TYPE, origin }, resource('other'));
      expect(r.status, origin).toBe(403);
      expect(r.body.message).toMatch(/^cross-site write refused: Origin .* is not this collector's own \(https?:\/\/127\.0\.0\.1:\d+\)/);
    }
    const sibling = await sendRaw(port, 'DELETE', '/resources/own0', { 'sec-fetch-site': 'same-site' });
    expect(sibling.status).toBe(403);
    expect(sibling.body.message).toContain('Sec-Fetch-Site is "same-site"');
    expect(await ids()).toContain('own0');
  });
});

describe('--allowed-hosts', () => {
  it('admits the names given (a leading dot: a whole domain) and tells a refused Host which flag admits it', async () => {
    const c = await startCollector(['--allowed-hosts=collector.example,.corp.example']);
    for (const host of ['collector.example', `ui.corp.example:${c.port}`, 'localhost'])
      expect((await sendRaw(c.port, 'GET', '/resources', { host })).status, host).toBe(200);
    const refused = await sendRaw(c.port, 'GET', '/resources', { host: 'other.example' });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/collector\.example, \.corp\.example\): start it with --allowed-hosts=other\.example to admit this name$/);
    await c.proc.stop();
  });

  it('refuses a value that is not a list of host names, naming the flag', async () => {
    for (const value of ['ui.example:9001', 'a b', 'http://ui.example', ',']) {
      const { code, output } = await runToEnd(NODE, ['collector/main.ts', `--allowed-hosts=${value}`, '--http-port=0']);
      expect(code, value).toBe(2);
      expect(output, value).toMatch(/collector: error: invalid value for --allowed-hosts: /);
    }
  });
});
