// The collector's live-expectations extension (/starmap/expectations) against a real server on
// loopback: none published is a JSON 404; PUT stores a valid document (GET gives it back with an
// ETag, a 304 when unchanged); every bad body gets a 4xx JSON answer naming what is wrong (schema,
// JSON, size, cross-site), and the stored document survives bad writes; unknown fields are
// dropped; DELETE removes it.
import type net from 'node:net';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCollectorApp } from '../collector/app.ts';
import { Collector } from '../collector/collector.ts';
import { EXPECTATIONS_BODY_LIMIT } from '../collector/expectations.ts';

let collector: Collector;
let app: FastifyInstance;
let url = '';

beforeAll(async () => {
  const logger = pino({ level: 'silent' });
  collector = new Collector({ resources: [], intervalMs: 60_000, concurrency: 10, fetch: { timeoutMs: 1000, maxBodyBytes: 10_000 }, logger });
  app = await createCollectorApp(collector, logger);
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as net.AddressInfo).port}/starmap/expectations`;
});

afterAll(async () => {
  await collector.stop();
  await app.close();
});

const doc = (over: Record<string, unknown> = {}) => ({
  scenario: 'stars',
  step: { index: 1, name: 'default-deny', total: 5, policies: ['stars/default-deny'] },
  phase: 'applying',
  collector: { id: 'management-ui', label: 'UI' },
  labels: { frontend: 'F', backend: 'B' },
  cells: [
    {
      from: 'frontend',
      to: 'backend',
      url: 'http://127.0.0.1:1/status',
      port: 6379,
      protocol: 'TCP',
      expected: false,
      reason: 'ingress isolated by stars/default-deny, no rule allows it',
      reasons: ['egress of stars/frontend: not isolated', 'ingress of stars/backend: isolated by stars/default-deny; no rule allows it'],
    },
    { from: 'management-ui', to: 'frontend', expected: true, reason: 'egress not isolated; ingress not isolated', status: 'not run' },
  ],
  ...over,
});

const put = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'PUT', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });

describe('collector: /starmap/expectations', () => {
  it('is a JSON 404 until something is published; PUT stores, GET returns it with an ETag, DELETE removes it', async () => {
    let res = await fetch(url);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { message: string }).message).toContain('no expectations published');

    res = await put(doc());
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ cells: 2, step: { index: 1, name: 'default-deny' } });

    res = await fetch(url);
    expect(res.status).toBe(200);
    const etag = res.headers.get('etag')!;
    expect(etag).toMatch(/^W\/"e\d+"$/);
    const got = (await res.json()) as Record<string, unknown>;
    expect(got).toMatchObject(doc());
    expect(Date.parse(got.publishedAt as string)).not.toBeNaN();
    expect((await fetch(url, { headers: { 'if-none-match': etag } })).status).toBe(304);

    res = await fetch(url, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect((await fetch(url)).status).toBe(404);
    expect((await fetch(url, { method: 'DELETE' })).status).toBe(404);
  });

  it('answers bad input with a 4xx JSON message and keeps what was stored', async () => {
    // Fields it does not know are dropped (a newer runner may send more), not stored.
    expect((await put(doc({ step: { index: 0, name: 'open' }, extra: 1 }))).status).toBe(200);
    expect(await (await fetch(url)).json()).not.toHaveProperty('extra');
    const bad: [unknown, number, RegExp][] = [
      [doc({ phase: 'later' }), 400, /phase/],
      [doc({ cells: [{ from: 'a', to: 'b', expected: 'yes', reason: '' }] }), 400, /expected/],
      [doc({ cells: [{ from: '', to: 'b', expected: true, reason: '' }] }), 400, /from/],
      [doc({ step: { index: -1, name: 'x' } }), 400, /index/],
      [{ scenario: 's' }, 400, /step|phase|cells/],
      ['[1,2', 400, /not valid JSON/],
      ['', 400, /empty/],
      [doc({ cells: Array.from({ length: 10_001 }, () => ({ from: 'a', to: 'b', expected: true, reason: '' })) }), 400, /cells/],
      [JSON.stringify(doc({ scenario: 'x'.repeat(EXPECTATIONS_BODY_LIMIT) })), 413, /larger than the limit/],
    ];
    for (const [i, [body, status, message]] of bad.entries()) {
      const res = await put(body);
      expect(res.status, `bad body ${i}`).toBe(status);
      expect(((await res.json()) as { message: string }).message).toMatch(message);
    }
    // A page on another site may not write (as for /resources).
    const cross = await put(doc(), { origin: 'http://elsewhere.example' });
    expect(cross.status).toBe(403);
    expect(((await cross.json()) as { message: string }).message).toContain('cross-site write refused');
    const res = await fetch(url);
    expect(((await res.json()) as { step: { name: string } }).step.name).toBe('open');
  });
});
