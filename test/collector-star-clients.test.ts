// The collector as star's own clients use it, tested on the wire: star's web UI (and dashboards
// written like it) reading /responses, and scripts that add resources with `curl -d`. Browsers'
// cross-site writes are refused by their Origin. Everything against a real collector on loopback.
import http from 'node:http';
import type net from 'node:net';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCollectorApp } from '../collector/app.ts';
import { Collector } from '../collector/collector.ts';
import { freePort } from './helpers/process.ts';
import { waitFor } from './helpers/wait.ts';

let web: http.Server;
let collector: Collector;
let app: FastifyInstance;
let base: string;
let port: number;

/**
 * How star's UI (v0.5.0, assets/index.html) reads a `/responses` document, step for step: a node
 * for every entry that is not null; an edge n→m when n's `json.status.targets` has a target whose
 * `url` equals m's `url`. It reads `response.json.status` having checked only that the entry is
 * not null, so an entry that is an object with `json: null` throws here, as it blanked star's UI.
 */
function readLikeStarUi(doc: { responses: Record<string, unknown> }): { nodes: string[]; edges: string[] } {
  type Entry = { url: string; json: { status?: { targets?: { url: string; reachable: boolean }[] } } };
  const nodes = Object.entries(doc.responses)
    .filter(([, response]) => response)
    .map(([id, response]) => ({ id, response: response as Entry }));
  const edges: string[] = [];
  for (const n of nodes) {
    for (const m of nodes) {
      if (n.id === m.id) continue;
      const json = n.response.json;
      if (!json.status || !json.status.targets) continue;
      const target = json.status.targets.filter((t) => t.url === m.response.url).pop();
      if (target) edges.push(`${n.id}->${m.id}:${target.reachable ? 'reachable' : 'unreachable'}`);
    }
  }
  return { nodes: nodes.map((n) => n.id), edges };
}

/** One request exactly as given (fetch would add or forbid headers): method, path, headers, body. */
function raw(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; body: { message?: string; resource?: unknown } }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: { host: `127.0.0.1:${port}`, ...headers, ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }) },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body: text ? (JSON.parse(text) as { message?: string }) : {} }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The headers `curl -d '…' URL` sends with its body (and `-X PUT`/`-X DELETE` the same way). */
const CURL_D = { 'user-agent': 'curl/8.5.0', accept: '*/*', 'content-type': 'application/x-www-form-urlencoded' };

beforeAll(async () => {
  let webPort = 0;
  web = http.createServer((req, res) => {
    if (req.url === '/up') {
      const targets = ['up', 'down', 'html'].map((x) => ({
        url: x === 'down' ? `http://127.0.0.1:1/${x}` : `http://127.0.0.1:${webPort}/${x}`,
        reachable: x !== 'down',
      }));
      return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: { targets } }));
    }
    if (req.url === '/html') return res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>not json</h1>');
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  webPort = (web.address() as net.AddressInfo).port;
  const logger = pino({ level: 'silent' });
  const resources = [
    { id: 'up', url: `http://127.0.0.1:${webPort}/up` },
    { id: 'down', url: 'http://127.0.0.1:1/down' },
    { id: 'html', url: `http://127.0.0.1:${webPort}/html` },
  ];
  collector = new Collector({ resources, intervalMs: 200, concurrency: 4, fetch: { timeoutMs: 1000, maxBodyBytes: 100_000 }, logger });
  app = await createCollectorApp(collector, logger);
  port = await freePort();
  await app.listen({ host: '127.0.0.1', port });
  base = `http://127.0.0.1:${port}`;
  collector.start();
});

afterAll(async () => {
  await collector.stop();
  await app.close();
  web.closeAllConnections();
  await new Promise((r) => web.close(r));
});

describe("star's UI reading /responses", () => {
  it('draws the resources that answered and skips the failing ones, without throwing', async () => {
    const doc = await waitFor(async () => {
      const d = (await (await fetch(`${base}/responses`)).json()) as { responses: Record<string, unknown>; details: Record<string, { pending: boolean }> };
      return Object.values(d.details).every((x) => !x.pending) && d;
    });
    expect(doc.responses.down).toBeNull();
    expect(doc.responses.html).toBeNull();
    expect(readLikeStarUi(doc)).toEqual({ nodes: ['up'], edges: [] });
    // The detail of what went wrong is beside it, where star's clients do not look.
    expect(doc.details).toMatchObject({
      down: { error: { reason: 'refused' } },
      html: { statusCode: 200, error: { reason: 'not-json' } },
      up: { error: null },
    });
  });

  it('a resource not fetched yet is null too', async () => {
    await collector.stop();
    try {
      expect((await raw('PUT', '/resources/later', { 'content-type': 'application/json' }, JSON.stringify({ url: 'http://127.0.0.1:1/later' }))).status).toBe(
        201,
      );
      const doc = (await (await fetch(`${base}/responses`)).json()) as { responses: Record<string, unknown>; details: Record<string, unknown> };
      expect(doc.responses.later).toBeNull();
      expect(doc.details.later).toMatchObject({ pending: true });
      expect(() => readLikeStarUi(doc)).not.toThrow();
      const one = (await (await fetch(`${base}/responses/later`)).json()) as unknown;
      expect(one).toEqual({ response: { later: null }, details: { later: doc.details.later } });
    } finally {
      await raw('DELETE', '/resources/later');
      collector.start();
    }
  });

  it("draws star's sample data at /responses/example as star did, E (no response) left out", async () => {
    const doc = (await (await fetch(`${base}/responses/example`)).json()) as { responses: Record<string, unknown>; details: Record<string, unknown> };
    expect(doc.responses.E).toBeNull();
    expect(doc.details.E).toMatchObject({ error: { reason: 'timeout' } });
    const { nodes, edges } = readLikeStarUi(doc);
    expect(nodes).toEqual(['A', 'B', 'C', 'D']);
    expect(edges).toEqual([
      'A->B:reachable',
      'A->C:reachable',
      'A->D:reachable',
      'B->A:reachable',
      'B->C:unreachable',
      'B->D:reachable',
      'C->A:unreachable',
      'C->B:unreachable',
      'C->D:unreachable',
      'D->A:unreachable',
      'D->B:unreachable',
    ]);
  });
});

describe('writes as star accepted them: a JSON body whatever its content type', () => {
  it('curl -d (application/x-www-form-urlencoded) adds, replaces and deletes', async () => {
    const added = await raw('POST', '/resources', CURL_D, '{"id":"c1","url":"http://127.0.0.1:1/c1"}');
    expect(added).toEqual({ status: 201, body: { resource: { id: 'c1', url: 'http://127.0.0.1:1/c1' } } });
    const replaced = await raw('PUT', '/resources/c1', CURL_D, '{"url":"http://127.0.0.1:1/c1b"}');
    expect(replaced).toEqual({ status: 200, body: { resource: { id: 'c1', url: 'http://127.0.0.1:1/c1b' } } });
    expect((await raw('DELETE', '/resources/c1', { 'user-agent': 'curl/8.5.0', accept: '*/*' })).status).toBe(200);
  });

  it('takes text/plain, no content type at all, and a charset parameter alike', async () => {
    expect((await raw('POST', '/resources', { 'content-type': 'text/plain' }, '{"id":"c2","url":"http://127.0.0.1:1/"}')).status).toBe(201);
    expect((await raw('POST', '/resources', {}, '{"id":"c3","url":"http://127.0.0.1:1/"}')).status).toBe(201);
    expect((await raw('POST', '/resources', { 'content-type': 'application/json; charset=utf-8' }, '{"id":"c4","url":"http://127.0.0.1:1/"}')).status).toBe(
      201,
    );
    for (const id of ['c2', 'c3', 'c4']) expect((await raw('DELETE', `/resources/${id}`)).status).toBe(200);
  });

  it('a body that is not JSON is still a 400 that says so, whatever the type', async () => {
    const r = await raw('POST', '/resources', CURL_D, 'id=x&url=http://a/');
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/not valid JSON/);
  });
});

describe('cross-site writes from browsers are refused by their Origin', () => {
  const evil = { ...CURL_D, origin: 'http://evil.example' };

  it('POST, PUT and DELETE from another origin get 403 JSON and change nothing', async () => {
    expect((await raw('POST', '/resources', { 'content-type': 'application/json' }, '{"id":"keep","url":"http://127.0.0.1:1/keep"}')).status).toBe(201);
    const post = await raw('POST', '/resources', evil, '{"id":"x1","url":"http://127.0.0.1:1/"}');
    expect(post.status).toBe(403);
    expect(post.body.message).toMatch(/cross-site write refused: Origin "http:\/\/evil.example" is not this collector's own \(http:\/\/127\.0\.0\.1:\d+\)/);
    expect((await raw('PUT', '/resources/keep', evil, '{"url":"http://127.0.0.1:1/other"}')).status).toBe(403);
    expect((await raw('DELETE', '/resources/keep', { origin: 'http://evil.example' })).status).toBe(403);
    expect((await raw('POST', '/resources', { ...CURL_D, origin: 'null' }, '{"id":"x2","url":"http://127.0.0.1:1/"}')).status).toBe(403);
    expect((await raw('POST', '/resources', { ...CURL_D, 'sec-fetch-site': 'cross-site' }, '{"id":"x3","url":"http://127.0.0.1:1/"}')).status).toBe(403);
    const list = (await (await fetch(`${base}/resources`)).json()) as { resources: { id: string; url: string }[] };
    expect(list.resources.map((r) => r.id)).not.toContain('x1');
    expect(list.resources.find((r) => r.id === 'keep')).toEqual({ id: 'keep', url: 'http://127.0.0.1:1/keep' });
  });

  it("the collector's own page may write, and reads are open to everyone", async () => {
    const own = { 'content-type': 'application/json', origin: base, 'sec-fetch-site': 'same-origin' };
    expect((await raw('PUT', '/resources/keep', own, '{"url":"http://127.0.0.1:1/mine"}')).status).toBe(200);
    expect((await raw('DELETE', '/resources/keep', own)).status).toBe(200);
    expect((await raw('GET', '/resources', { origin: 'http://evil.example' })).status).toBe(200);
  });
});
