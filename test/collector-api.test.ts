// The collector's REST API against a real server on loopback, fetching real local resources:
// every endpoint, every bad input, prompt fetching of new resources, DELETE leaving nothing
// behind, star's sample data and the UI files (from a temporary folder).
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCollectorApp } from '../collector/app.ts';
import { Collector } from '../collector/collector.ts';
import { freePort, removeTempDirs, tempDir } from './helpers/process.ts';
import { waitFor } from './helpers/wait.ts';

let web: http.Server;
let target: string;
let collector: Collector;
let app: FastifyInstance;
let base: string;
let uiDir: string;

/** star's part of an entry in `responses` (null when there is nothing to show). */
interface StarEntry {
  url: string;
  statusCode: number | null;
  json: unknown;
}

/** Starmap's part, from the sibling `details` map. */
interface Detail {
  url: string;
  statusCode: number | null;
  error: { reason: string; message: string } | null;
  fetchedAt: string | null;
  latencyMs: number | null;
  lastSuccessAt: string | null;
  pending: boolean;
}

/** Both parts of one resource's answer, as the tests read them. */
interface Entry extends Detail {
  json: unknown;
  response: StarEntry | null;
}

beforeAll(async () => {
  web = http.createServer((req, res) => {
    if (req.url === '/status') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":{"targets":[]}}');
    if (req.url === '/other') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"other":true}');
    if (req.url === '/silent') return;
    if (req.url === '/garbage') return res.writeHead(200).end(Buffer.from([0xff, 0xfe, 0x00, 0x7b]));
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  target = `http://127.0.0.1:${(web.address() as net.AddressInfo).port}`;
  uiDir = tempDir('starmap-ui-');
  writeFileSync(join(uiDir, 'index.html'), '<!doctype html><title>starmap</title>');
  writeFileSync(join(uiDir, 'app.js'), 'console.log(1);');
  writeFileSync(join(uiDir, 'style.css'), 'body{}');
  mkdirSync(join(uiDir, 'vendor'));
  writeFileSync(join(uiDir, 'vendor', 'lib.js'), '/* lib */');
  const logger = pino({ level: 'silent' });
  // A long interval: anything fetched during the test was fetched promptly after POST/PUT.
  collector = new Collector({ resources: [], intervalMs: 60_000, concurrency: 10, fetch: { timeoutMs: 1000, maxBodyBytes: 10_000 }, logger });
  app = await createCollectorApp(collector, logger, { uiDir });
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as net.AddressInfo).port}`;
  collector.start();
});

afterAll(async () => {
  await collector.stop();
  await app.close();
  web.closeAllConnections();
  await new Promise((r) => web.close(r));
  removeTempDirs();
});

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${base}${path}`, init);
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

async function responseOf(id: string): Promise<Entry> {
  const r = await call('GET', `/responses/${id}`);
  expect(r.status).toBe(200);
  const body = r.body as { response: Record<string, StarEntry | null>; details: Record<string, Detail> };
  expect(Object.keys(body)).toEqual(['response', 'details']);
  const response = body.response[id]!;
  return { ...body.details[id]!, json: response?.json ?? null, response };
}

describe('POST /resources', () => {
  it('adds a resource: 201 {resource}, a Location, and it is fetched at once', async () => {
    const r = await call('POST', '/resources', { id: 'a', url: `${target}/status` });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ resource: { id: 'a', url: `${target}/status` } });
    expect(r.headers.get('location')).toBe('/resources/a');
    const entry = await waitFor(
      async () => {
        const e = await responseOf('a');
        return !e.pending && e;
      },
      { timeoutMs: 1500 },
    );
    expect(entry).toMatchObject({ url: `${target}/status`, statusCode: 200, json: { status: { targets: [] } }, error: null, pending: false });
    expect(entry.lastSuccessAt).toBe(entry.fetchedAt);
    expect(entry.response).toEqual({ url: `${target}/status`, statusCode: 200, json: { status: { targets: [] } } });
  });

  it('the same pair again is harmless: 200 with the resource, still one entry', async () => {
    const r = await call('POST', '/resources', { id: 'a', url: `${target}/status` });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ resource: { id: 'a', url: `${target}/status` } });
    const list = await call('GET', '/resources');
    expect((list.body!.resources as unknown[]).filter((x) => (x as { id: string }).id === 'a')).toHaveLength(1);
  });

  it('the same id with another url is a 409 that says to DELETE or PUT', async () => {
    const r = await call('POST', '/resources', { id: 'a', url: `${target}/other` });
    expect(r.status).toBe(409);
    expect(r.body!.message).toMatch(/already exists.*DELETE \/resources\/a.*PUT \/resources\/a/);
    expect(r.body!.resource).toEqual({ id: 'a', url: `${target}/status` });
  });

  const bad: [string, string | unknown, RegExp, number?, Record<string, string>?][] = [
    ['not JSON', '{"id": "x", ', /not valid JSON/],
    ['an empty JSON body', '', /empty/],
    ['an array', [{ id: 'x', url: 'http://x/' }], /expected a JSON object.*got an array/],
    ['a string', '"hello"', /expected a JSON object.*got a string/],
    ['null', 'null', /expected a JSON object.*got null/],
    ['no id', { url: 'http://x/' }, /"id" is required/],
    ['no url', { id: 'x' }, /"url" is required/],
    ['a numeric id', { id: 5, url: 'http://x/' }, /"id" must be a string \(got a number\)/],
    ['an object url', { id: 'x', url: { href: 'http://x/' } }, /"url" must be a string \(got an object\)/],
    ['an id with a space', { id: 'a b', url: 'http://x/' }, /not a valid id \(1 to 128 characters/],
    ['an id with a slash', { id: '../x', url: 'http://x/' }, /not a valid id/],
    ['an empty id', { id: '', url: 'http://x/' }, /not a valid id/],
    ['an id of 129 characters', { id: 'x'.repeat(129), url: 'http://x/' }, /not a valid id/],
    ['the reserved id "example"', { id: 'example', url: 'http://x/' }, /reserved/],
    ['an ftp url', { id: 'x', url: 'ftp://x/' }, /must be an http:\/\/ or https:\/\/ URL/],
    ['a host:port url', { id: 'x', url: 'x:80' }, /must be an http:\/\/ or https:\/\/ URL/],
    ['a url without host', { id: 'x', url: 'http:///status' }, /not valid|URL has no host/],
    ['a url with a bad port', { id: 'x', url: 'http://x:99999/' }, /not valid/],
    ['a huge body', JSON.stringify({ id: 'x', url: 'http://x/', pad: 'y'.repeat(100_000) }), /larger than the limit/, 413],
    ['a form body that is not JSON', 'id=x&url=y', /not valid JSON/, 400, { 'content-type': 'application/x-www-form-urlencoded' }],
  ];
  for (const [what, body, message, status = 400, headers = {}] of bad) {
    it(`rejects ${what} with ${status} JSON`, async () => {
      const r = await call('POST', '/resources', typeof body === 'string' ? body : JSON.stringify(body), headers);
      expect(r.status).toBe(status);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(r.body!.message).toMatch(message);
    });
  }

  it('rejects a POST without a body', async () => {
    const r = await call('POST', '/resources');
    expect(r.status).toBe(400);
    expect(r.body!.message).toMatch(/got no body/);
  });
});

describe('GET /resources', () => {
  it('lists resources in the order added and gets one by id', async () => {
    await call('POST', '/resources', { id: 'b.2_x-y', url: `${target}/other` });
    const list = await call('GET', '/resources');
    expect(list.status).toBe(200);
    const ids = (list.body!.resources as { id: string }[]).map((r) => r.id);
    expect(ids.indexOf('a')).toBeLessThan(ids.indexOf('b.2_x-y'));
    expect((await call('GET', '/resources/b.2_x-y')).body).toEqual({ resource: { id: 'b.2_x-y', url: `${target}/other` } });
  });

  it('answers 404 JSON for unknown ids', async () => {
    for (const [method, path] of [
      ['GET', '/resources/nope'],
      ['DELETE', '/resources/nope'],
      ['GET', '/responses/nope'],
    ] as const) {
      const r = await call(method, path);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body).toEqual({ message: 'no resource with id "nope"' });
    }
  });
});

describe('PUT /resources/{id}', () => {
  it('creates (201), replaces the url (200, response starts over) and is idempotent', async () => {
    const created = await call('PUT', '/resources/p', { url: `${target}/status` });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ resource: { id: 'p', url: `${target}/status` } });
    await waitFor(async () => !(await responseOf('p')).pending, { timeoutMs: 1500 });
    const replaced = await call('PUT', '/resources/p', { id: 'p', url: `${target}/other` });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toEqual({ resource: { id: 'p', url: `${target}/other` } });
    const entry = await waitFor(
      async () => {
        const e = await responseOf('p');
        return e.url === `${target}/other` && !e.pending && e;
      },
      { timeoutMs: 1500 },
    );
    expect(entry.json).toEqual({ other: true });
    expect((await call('PUT', '/resources/p', { url: `${target}/other` })).status).toBe(200);
  });

  it('rejects a body id that differs from the path, bad ids and bad urls', async () => {
    expect((await call('PUT', '/resources/p', { id: 'q', url: `${target}/other` })).body!.message).toMatch(/does not match the id in the path/);
    expect((await call('PUT', '/resources/bad%20id', { url: `${target}/other` })).status).toBe(400);
    expect((await call('PUT', '/resources/example', { url: `${target}/other` })).status).toBe(400);
    const r = await call('PUT', '/resources/p', { url: 'gopher://x/' });
    expect(r.status).toBe(400);
    expect(r.body!.message).toMatch(/http:\/\//);
    expect((await call('PUT', '/resources/p', '[]')).status).toBe(400);
  });
});

describe('DELETE /resources/{id}', () => {
  it('removes the resource, its response and its metrics series', async () => {
    await call('POST', '/resources', { id: 'gone', url: `${target}/status` });
    await waitFor(async () => !(await responseOf('gone')).pending, { timeoutMs: 1500 });
    expect(await (await fetch(`${base}/metrics`)).text()).toContain('starmap_collector_resource_up{id="gone"');
    const r = await call('DELETE', '/resources/gone');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ resource: { id: 'gone', url: `${target}/status` } });
    expect((await call('GET', '/resources/gone')).status).toBe(404);
    expect((await call('GET', '/responses/gone')).status).toBe(404);
    expect(Object.keys((await call('GET', '/responses')).body!.responses as object)).not.toContain('gone');
    expect(await (await fetch(`${base}/metrics`)).text()).not.toContain('id="gone"');
    // A new resource with the same id starts afresh.
    expect((await call('POST', '/resources', { id: 'gone', url: `${target}/other` })).status).toBe(201);
    await call('DELETE', '/resources/gone');
  });
});

describe('GET /responses', () => {
  it('serves every entry with all fields, generatedAt and an ETag', async () => {
    const r = await call('GET', '/responses');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Object.keys(r.body!)).toEqual(['responses', 'details', 'generatedAt']);
    const responses = r.body!.responses as Record<string, StarEntry | null>;
    const details = r.body!.details as Record<string, Detail>;
    const ids = ((await call('GET', '/resources')).body!.resources as { id: string }[]).map((x) => x.id);
    expect(Object.keys(responses)).toEqual(ids);
    expect(Object.keys(details)).toEqual(ids);
    for (const e of Object.values(responses)) if (e !== null) expect(Object.keys(e)).toEqual(['url', 'statusCode', 'json']);
    for (const d of Object.values(details))
      expect(Object.keys(d)).toEqual(['url', 'statusCode', 'error', 'fetchedAt', 'latencyMs', 'lastSuccessAt', 'pending']);
    expect(Date.parse(r.body!.generatedAt as string)).not.toBeNaN();
    const etag = r.headers.get('etag')!;
    const again = await fetch(`${base}/responses`, { headers: { 'if-none-match': etag } });
    // Nothing was fetched in between unless a prompt fetch landed; then the tag moved on.
    expect([200, 304]).toContain(again.status);
  });

  it('shows a never-fetched resource as pending, and a failing one with its reason', async () => {
    await collector.stop(); // no prompt fetch: the entry stays pending
    await call('POST', '/resources', { id: 'later', url: `${target}/status` });
    expect(await responseOf('later')).toEqual({
      url: `${target}/status`,
      statusCode: null,
      json: null,
      response: null,
      error: null,
      fetchedAt: null,
      latencyMs: null,
      lastSuccessAt: null,
      pending: true,
    });
    // Nothing changes while stopped: a poller that sends the ETag back gets an empty 304.
    const etag = (await fetch(`${base}/responses`)).headers.get('etag')!;
    const unchanged = await fetch(`${base}/responses`, { headers: { 'if-none-match': etag } });
    expect(unchanged.status).toBe(304);
    expect(await unchanged.text()).toBe('');
    collector.start();
    const port = await freePort();
    await call('POST', '/resources', { id: 'refused', url: `http://127.0.0.1:${port}/status` });
    const e = await waitFor(
      async () => {
        const x = await responseOf('refused');
        return !x.pending && x;
      },
      { timeoutMs: 1500 },
    );
    expect(e).toMatchObject({ statusCode: null, response: null, error: { reason: 'refused' }, lastSuccessAt: null });
    await call('DELETE', '/resources/later');
    await call('DELETE', '/resources/refused');
  });

  it('a silent resource does not delay the others, and hostile bodies do not break the API', async () => {
    await call('POST', '/resources', { id: 'silent', url: `${target}/silent` });
    await call('POST', '/resources', { id: 'garbage', url: `${target}/garbage` });
    await call('POST', '/resources', { id: 'fast', url: `${target}/status` });
    await waitFor(async () => !(await responseOf('fast')).pending, { timeoutMs: 3000 });
    // The silent one (1 s deadline) is still waiting: it did not hold the fast one up.
    expect((await responseOf('silent')).pending).toBe(true);
    expect(await responseOf('garbage')).toMatchObject({ statusCode: 200, response: null, error: { reason: 'not-json' } });
    const silent = await waitFor(
      async () => {
        const x = await responseOf('silent');
        return !x.pending && x;
      },
      { timeoutMs: 3000 },
    );
    expect(silent.error?.reason).toBe('timeout');
    expect((await call('GET', '/responses')).status).toBe(200);
    for (const id of ['silent', 'garbage', 'fast']) await call('DELETE', `/resources/${id}`);
  });

  it("serves star's sample data at /responses/example", async () => {
    const r = await call('GET', '/responses/example');
    const responses = r.body!.responses as Record<string, StarEntry | null>;
    const details = r.body!.details as Record<string, Detail>;
    expect(Object.keys(responses)).toEqual(['A', 'B', 'C', 'D', 'E']);
    expect(Object.keys(details)).toEqual(['A', 'B', 'C', 'D', 'E']);
    const edges = (id: string) =>
      (responses[id]!.json as { status: { targets: { url: string; reachable: boolean }[] } }).status.targets.map((t) => `${t.url}:${t.reachable ? 'ok' : 'X'}`);
    expect(edges('A')).toEqual(['http://b/status:ok', 'http://c/status:ok', 'http://d/status:ok']);
    expect(edges('B')).toEqual(['http://a/status:ok', 'http://c/status:X', 'http://d/status:ok']);
    expect(edges('C')).toEqual(['http://a/status:X', 'http://b/status:X', 'http://d/status:X']);
    expect(edges('D')).toEqual(['http://a/status:X', 'http://b/status:X', 'http://foobar/status:X']);
    expect(responses.E).toBeNull();
    expect(details.E).toMatchObject({ url: 'http://e/status', error: { reason: 'timeout' }, pending: false });
    expect(responses.A).toMatchObject({ url: 'http://a/status', statusCode: 200 });
    expect(details.A).toMatchObject({ url: 'http://a/status', statusCode: 200, error: null });
  });
});

describe('operations', () => {
  it('GET /healthz', async () => {
    const r = await call('GET', '/healthz');
    expect(r.body).toMatchObject({ status: 'ok', resources: expect.any(Number), intervalSeconds: 60, version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
  });

  it('GET /metrics has per-resource series', async () => {
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toMatch(/starmap_collector_resource_up\{id="a",url="[^"]+"\} 1/);
    expect(text).toMatch(/starmap_collector_resource_latency_seconds\{id="a"\} \d/);
    expect(text).toContain('starmap_collector_fetches_total');
  });

  it('unknown routes and methods are JSON 404s', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['POST', '/responses'],
      ['PATCH', '/resources/a'],
      ['GET', '/resources/a/b'],
    ] as const) {
      const r = await call(method, path);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body!.message).toMatch(/^not found/);
    }
  });
});

describe('web UI files', () => {
  it('serves index.html at / and /?example=true, and the assets with their content types', async () => {
    for (const path of ['/', '/?example=true', '/index.html']) {
      const r = await fetch(`${base}${path}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await r.text()).toContain('<title>starmap</title>');
    }
    const types: Record<string, string> = {
      'app.js': 'text/javascript; charset=utf-8',
      'style.css': 'text/css; charset=utf-8',
      'vendor/lib.js': 'text/javascript; charset=utf-8',
    };
    for (const [name, type] of Object.entries(types)) {
      const r = await fetch(`${base}/assets/${name}`);
      expect(r.status, name).toBe(200);
      expect(r.headers.get('content-type')).toBe(type);
    }
  });

  it('answers 404 JSON for unknown assets and never leaves the UI folder', async () => {
    const missing = await call('GET', '/assets/nope.js');
    expect(missing.status).toBe(404);
    expect(missing.body!.message).toBe('no asset named "nope.js"');
    for (const path of [
      '/assets/%2e%2e/%2e%2e/etc/passwd',
      '/assets/..%2f..%2fetc%2fpasswd',
      '/assets/vendor/..%2f..%2fapp.js',
      '/assets/.hidden',
      '/assets/',
    ]) {
      expect((await call('GET', path)).status, path).toBe(404);
    }
    // A raw request line, as a hostile client would send it (fetch would normalise the dots).
    const raw = await new Promise<string>((resolve, reject) => {
      const s = net.connect(Number(new URL(base).port), '127.0.0.1', () =>
        s.write('GET /assets/../../../../etc/passwd HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
      );
      let out = '';
      s.on('data', (d) => (out += d.toString()));
      s.on('end', () => resolve(out));
      s.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1.1 404/);
    expect(raw).not.toContain('root:');
  });

  it('a missing UI gives a clear 404, not a crash', async () => {
    const logger = pino({ level: 'silent' });
    const c = new Collector({ resources: [], intervalMs: 60_000, concurrency: 1, fetch: { timeoutMs: 100, maxBodyBytes: 100 }, logger });
    const other = await createCollectorApp(c, logger, { uiDir: join(uiDir, 'does-not-exist') });
    const r = await other.inject({ method: 'GET', url: '/?example=true' });
    expect(r.statusCode).toBe(404);
    expect(r.json()).toEqual({ message: 'the web UI is not available: collector/ui/index.html is missing from this build' });
    await other.close();
  });
});
