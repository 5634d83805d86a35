// The collector's fetcher against real local servers: JSON, non-JSON, HTTP errors, slow and
// silent servers, refused connections, huge and endless bodies, invalid UTF-8. Every case must end
// as a result with a reason, within the deadline, never as a throw.
import http from 'node:http';
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchResource } from '../collector/fetcher.ts';
import { blackhole, type Blackhole } from './helpers/blackhole.ts';
import { dnsServer, testResolver } from './helpers/dns.ts';
import { freePort } from './helpers/process.ts';

let server: http.Server;
let base: string;
let hole: Blackhole;
const sockets = new Set<net.Socket>();
const connections: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    connections.push(`${req.socket.remotePort}`);
    const path = req.url ?? '/';
    if (path === '/json') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":{"targets":[{"reachable":true,"url":"x"}]}}');
    if (path === '/text-json') return res.writeHead(200, { 'content-type': 'text/plain' }).end('[1,2,3]');
    if (path === '/html') return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>');
    if (path === '/empty') return res.writeHead(200).end();
    if (path === '/404') return res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"nope"}');
    if (path === '/500') return res.writeHead(500).end('boom');
    if (path === '/slow') return setTimeout(() => res.writeHead(200).end('{"slow":true}'), 300);
    if (path === '/silent') return; // never answers
    if (path === '/huge') return res.writeHead(200, { 'content-type': 'application/json' }).end(`"${'x'.repeat(300_000)}"`);
    if (path === '/huge-declared') return res.writeHead(200, { 'content-length': String(10 ** 9) }).write('[');
    if (path === '/endless') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[');
      const t = setInterval(() => res.write('1,'.repeat(1000)), 5);
      res.on('close', () => clearInterval(t));
      return;
    }
    if (path === '/trickle') {
      res.writeHead(200);
      res.write('[');
      const t = setInterval(() => res.write('1,'), 50);
      res.on('close', () => clearInterval(t));
      return;
    }
    if (path === '/bad-utf8')
      return res.writeHead(200, { 'content-type': 'application/json' }).end(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]));
    if (path === '/garbage-binary') return res.writeHead(200).end(Buffer.from([0, 1, 2, 0xff, 0xc3, 0x28]));
    res.writeHead(404).end();
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  hole = await blackhole();
});

afterAll(async () => {
  hole.close();
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
});

const opts = { timeoutMs: 1000, maxBodyBytes: 100_000 };

describe('fetchResource', () => {
  it('parses a JSON body and records status, latency and time', async () => {
    const r = await fetchResource(`${base}/json`, opts);
    expect(r).toMatchObject({ statusCode: 200, error: null, json: '{"status":{"targets":[{"reachable":true,"url":"x"}]}}' });
    expect(r.latencyMs).toBeGreaterThan(0);
    expect(Date.parse(r.fetchedAt)).not.toBeNaN();
  });

  it('parses JSON whatever the content type (as star)', async () => {
    expect(await fetchResource(`${base}/text-json`, opts)).toMatchObject({ statusCode: 200, json: '[1,2,3]', error: null });
  });

  it('reports a body that is not JSON as not-json, keeping the status code', async () => {
    const r = await fetchResource(`${base}/html`, opts);
    expect(r).toMatchObject({ statusCode: 200, json: null, error: { reason: 'not-json' } });
    expect(r.error!.message).toContain('<html>');
    expect(await fetchResource(`${base}/empty`, opts)).toMatchObject({ statusCode: 200, json: null, error: { reason: 'not-json', message: 'empty body' } });
  });

  it('reports 404 and 500 as http-status (a JSON body is still kept, as star)', async () => {
    expect(await fetchResource(`${base}/404`, opts)).toMatchObject({
      statusCode: 404,
      json: '{"message":"nope"}',
      error: { reason: 'http-status', message: 'HTTP 404' },
    });
    expect(await fetchResource(`${base}/500`, opts)).toMatchObject({ statusCode: 500, json: null, error: { reason: 'http-status', message: 'HTTP 500' } });
  });

  it('waits for a slow server within the deadline', async () => {
    const r = await fetchResource(`${base}/slow`, opts);
    expect(r).toMatchObject({ statusCode: 200, json: '{"slow":true}', error: null });
    expect(r.latencyMs).toBeGreaterThanOrEqual(250);
  });

  it('gives up on a server that accepts but never answers, at the deadline', async () => {
    const t0 = Date.now();
    const r = await fetchResource(`${base}/silent`, { ...opts, timeoutMs: 300 });
    expect(r).toMatchObject({ statusCode: null, json: null, error: { reason: 'timeout' } });
    expect(Date.now() - t0).toBeLessThan(2500); // the deadline, with room for a busy machine (not the minutes of an OS connect timeout)
  });

  it('gives up on a connect that is never answered (dropped SYNs), at the deadline', async () => {
    const t0 = Date.now();
    const r = await fetchResource(`http://127.0.0.1:${hole.port}/status`, { ...opts, timeoutMs: 300 });
    expect(r.error?.reason).toBe('timeout');
    expect(Date.now() - t0).toBeLessThan(2500); // the deadline, with room for a busy machine (not the minutes of an OS connect timeout)
  });

  it('reports refused connections and unknown hosts', async () => {
    const port = await freePort();
    expect(await fetchResource(`http://127.0.0.1:${port}/`, opts)).toMatchObject({ statusCode: null, json: null, error: { reason: 'refused' } });
    const dns = await dnsServer({});
    try {
      expect((await fetchResource('http://no-such-host.invalid/', { ...opts, resolver: testResolver(dns) })).error?.reason).toBe('dns');
    } finally {
      dns.close();
    }
  });

  it('stops reading a body larger than the cap: too-large', async () => {
    const r = await fetchResource(`${base}/huge`, opts);
    expect(r).toMatchObject({ statusCode: 200, json: null, error: { reason: 'too-large' } });
    expect(r.error!.message).toContain('100000');
    const declared = await fetchResource(`${base}/huge-declared`, opts);
    expect(declared).toMatchObject({ statusCode: 200, error: { reason: 'too-large' } });
    expect(declared.error!.message).toContain('1000000000');
  });

  it('ends an endless body at the cap, and a trickling one at the deadline', async () => {
    const t0 = Date.now();
    expect((await fetchResource(`${base}/endless`, opts)).error?.reason).toBe('too-large');
    const trickle = await fetchResource(`${base}/trickle`, { ...opts, timeoutMs: 400 });
    expect(trickle).toMatchObject({ statusCode: 200, json: null, error: { reason: 'timeout' } });
    expect(trickle.error!.message).toContain('body not complete');
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('survives invalid UTF-8: decoded with replacement characters', async () => {
    const r = await fetchResource(`${base}/bad-utf8`, opts);
    expect(r).toMatchObject({ statusCode: 200, error: null, json: JSON.stringify({ a: '\uFFFD\uFFFD' }) });
    expect((await fetchResource(`${base}/garbage-binary`, opts)).error?.reason).toBe('not-json');
  });

  it('opens a fresh connection for every fetch', async () => {
    connections.length = 0;
    await fetchResource(`${base}/json`, opts);
    await fetchResource(`${base}/json`, opts);
    expect(connections).toHaveLength(2);
    expect(connections[0]).not.toBe(connections[1]);
  });
});
