// Hostile resources against a real collector on loopback: one never breaks the document of the
// others (10,000-deep JSON, JSON bombs below the byte cap), the document stays small, and
// blackholed resources do not stretch the refresh of a resource that answers. The body scanner is
// also checked on its own.
import http from 'node:http';
import type net from 'node:net';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createCollectorApp } from '../collector/app.ts';
import { jsonText, limitsFor, measureJson } from '../collector/body.ts';
import { Collector } from '../collector/collector.ts';
import { blackhole, type Blackhole } from './helpers/blackhole.ts';
import { waitFor } from './helpers/wait.ts';

const MiB = 1024 * 1024;
const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
/** 1 MiB of `[{},{},…]`: ~350,000 objects once parsed. */
const bomb = `[${Array(Math.floor(MiB / 3) - 1)
  .fill('{}')
  .join(',')}]`;
/** A probe's /status of about 1 MiB (5,000 targets): what the byte cap is for. */
const bigStatus = JSON.stringify({
  status: {
    targets: Array.from({ length: 5000 }, (_v, i) => ({
      reachable: i % 2 === 0,
      url: `http://10.0.${i >> 8}.${i & 255}:9000/status`,
      reason: 'ok',
      message: null,
      latencyMs: 1.25,
      statusCode: 200,
      checkedAt: '2026-11-21T18:00:00.000Z',
      changedAt: '2026-11-21T17:00:00.000Z',
    })),
  },
});

describe('bounded JSON bodies', () => {
  const limits = limitsFor(MiB);

  it('refuses nesting deeper than 128 levels as too-deep, without parsing', () => {
    expect(measureJson(Buffer.from(deep(128)), limits)).toBeUndefined();
    expect(measureJson(Buffer.from(deep(129)), limits)).toEqual({ reason: 'too-deep', message: 'JSON nested deeper than 128 levels' });
    expect(jsonText(Buffer.from(deep(10_000)), limits)).toMatchObject({ text: null, error: { reason: 'too-deep' } });
  });

  it('counts structure only outside strings, escaped quotes included', () => {
    const tricky = JSON.stringify({ s: `"${'['.repeat(500)}\\",{,`.repeat(10), t: ['\\', '"]'] });
    expect(measureJson(Buffer.from(tricky), { maxDepth: 3, maxValues: 5 })).toBeUndefined();
    expect(jsonText(Buffer.from(tricky), limits)).toEqual({ text: tricky, error: null });
  });

  it('refuses more values than one per 10 bytes of the cap; a big probe status fits', () => {
    expect(limits.maxValues).toBe(104_857);
    expect(jsonText(Buffer.from(bomb), limits)).toEqual({ text: null, error: { reason: 'too-large', message: 'JSON holds more than 104857 values' } });
    expect(bigStatus.length).toBeGreaterThan(MiB * 0.9);
    expect(jsonText(Buffer.from(bigStatus), limits).text).toBe(bigStatus);
  });

  it('keeps compact text, and refuses what grows past the cap once decoded', () => {
    expect(jsonText(Buffer.from(' { "a" : [ 1 , 2 ] } '), limits)).toEqual({ text: '{"a":[1,2]}', error: null });
    // 1,000 bytes of invalid UTF-8 in a string decode to 3,000 bytes of U+FFFD.
    const bad = Buffer.concat([Buffer.from('"'), Buffer.alloc(1000, 0xff), Buffer.from('"')]);
    expect(jsonText(bad, limitsFor(2000)).error).toEqual({ reason: 'too-large', message: 'body is larger than the 2000-byte limit once decoded' });
  });
});

describe('hostile resources', () => {
  let web: http.Server | undefined;
  let collector: Collector | undefined;
  let app: FastifyInstance | undefined;
  const holes: Blackhole[] = [];

  afterEach(async () => {
    await collector?.stop();
    await app?.close();
    web?.closeAllConnections();
    await new Promise((r) => (web ? web.close(r) : r(undefined)));
    holes.splice(0).forEach((h) => h.close());
  });
  afterAll(() => holes.forEach((h) => h.close()));

  let hits = 0;
  async function serve(): Promise<string> {
    hits = 0;
    web = http.createServer((req, res) => {
      const body = req.url === '/deep' ? deep(10_000) : req.url === '/bomb' ? bomb : req.url === '/big' ? bigStatus : '{"status":{"targets":[]}}';
      if (req.url === '/ok') hits++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
    await new Promise<void>((r) => web!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(web.address() as net.AddressInfo).port}`;
  }

  async function startCollector(
    resources: { id: string; url: string }[],
    opts: { intervalMs: number; concurrency: number; timeoutMs: number },
  ): Promise<string> {
    const logger = pino({ level: 'silent' });
    collector = new Collector({
      resources,
      intervalMs: opts.intervalMs,
      concurrency: opts.concurrency,
      fetch: { timeoutMs: opts.timeoutMs, maxBodyBytes: MiB },
      logger,
    });
    app = await createCollectorApp(collector, logger);
    await app.listen({ host: '127.0.0.1', port: 0 });
    collector.start();
    return `http://127.0.0.1:${(app.server.address() as net.AddressInfo).port}`;
  }

  it('10,000-deep JSON and JSON bombs cost one entry each, and the document of the others stays whole and small', async () => {
    const web = await serve();
    const resources = [
      { id: 'deep', url: `${web}/deep` },
      ...Array.from({ length: 10 }, (_v, i) => ({ id: `bomb-${i}`, url: `${web}/bomb` })),
      { id: 'ok', url: `${web}/ok` },
    ];
    const base = await startCollector(resources, { intervalMs: 200, concurrency: 20, timeoutMs: 5000 });
    const doc = await waitFor(async () => {
      const res = await fetch(`${base}/responses`);
      expect(res.status).toBe(200);
      const text = await res.text();
      const d = JSON.parse(text) as { responses: Record<string, unknown>; details: Record<string, { pending: boolean; error: { reason: string } | null }> };
      return Object.values(d.details).every((x) => !x.pending) && { d, bytes: text.length };
    });
    expect(doc.d.details.deep!.error).toEqual({ reason: 'too-deep', message: 'JSON nested deeper than 128 levels' });
    expect(doc.d.details['bomb-3']!.error).toEqual({ reason: 'too-large', message: 'JSON holds more than 104857 values' });
    expect(doc.d.responses.deep).toBeNull();
    expect(doc.d.responses['bomb-0']).toBeNull();
    expect(doc.d.responses.ok).toMatchObject({ statusCode: 200, json: { status: { targets: [] } } });
    // Twelve entries of detail, not ten copies of a 1 MiB bomb.
    expect(doc.bytes).toBeLessThan(10_000);
    expect((await fetch(`${base}/responses/deep`)).status).toBe(200);
  });

  it('a 1 MiB probe status is kept whole', async () => {
    const web = await serve();
    const base = await startCollector([{ id: 'big', url: `${web}/big` }], { intervalMs: 60_000, concurrency: 1, timeoutMs: 5000 });
    const d = await waitFor(async () => {
      const x = (await (await fetch(`${base}/responses/big`)).json()) as {
        response: { big: { json: unknown } | null };
        details: { big: { pending: boolean } };
      };
      return !x.details.big.pending && x;
    });
    expect(d.response.big!.json).toEqual(JSON.parse(bigStatus));
  });

  it('blackholed resources do not stretch the refresh of one that answers', async () => {
    const web = await serve();
    const hole = await blackhole();
    holes.push(hole);
    // Eight resources whose connects are never answered, two slots: one pass over all of them
    // takes four timeouts (2.4 s). The healthy one is due every 200 ms all the same.
    const resources = [
      { id: 'ok', url: `${web}/ok` },
      ...Array.from({ length: 8 }, (_v, i) => ({ id: `hole-${i}`, url: `http://${hole.host}:${hole.port}/${i}` })),
    ];
    const base = await startCollector(resources, { intervalMs: 200, concurrency: 2, timeoutMs: 600 });
    const fetchedAt = async () =>
      ((await (await fetch(`${base}/responses/hole-0`)).json()) as { details: { 'hole-0': { fetchedAt: string | null; error: { reason: string } | null } } })
        .details['hole-0'];
    const first = await waitFor(
      async () => {
        const d = await fetchedAt();
        return d.fetchedAt !== null && d;
      },
      { timeoutMs: 20_000 },
    );
    expect(first.error?.reason).toBe('timeout');
    const hitsThen = hits;
    // Three more fetches of the same blackholed resource (each its whole 600 ms deadline; the
    // intervals pass while they wait for a slot): meanwhile the healthy one kept its own 200 ms
    // clock (about 9 fetches; cycles over every resource made it one per pass).
    let last = first.fetchedAt;
    for (let i = 0; i < 3; i++) {
      last = await waitFor(
        async () => {
          const at = (await fetchedAt()).fetchedAt;
          return at !== last && at;
        },
        { timeoutMs: 20_000 },
      );
    }
    expect(hits - hitsThen).toBeGreaterThanOrEqual(4);
    expect(((await (await fetch(`${base}/healthz`)).json()) as { fetches: number }).fetches).toBeGreaterThan(0);
  });
});
