// How scripts/lib/bundle.ts and scripts/lib/warm-code-cache.ts make a program (issue 17): a
// built-in that a program needs only later loads at its first use (node:dns/promises, node:dgram,
// node:v8 of prom-client's heap-space gauges at the first scrape), node:assert only when an
// assertion fails, fastify's router answers as unbundled despite its dependency edits, the names a
// program shows are kept, and an executable that has lost the bundle and code cache appended to it
// says so instead of running something else.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundleProgram } from '../scripts/lib/bundle.ts';
import { NODE, ROOT, tempDir } from './helpers/process.ts';

/** Bundles `source` as a program would be (scripts/lib/bundle.ts), runs it, and parses the JSON it prints. */
async function runBundled(source: string): Promise<unknown> {
  const dir = tempDir('starmap-bundle-');
  const entry = join(dir, 'entry.ts');
  writeFileSync(entry, source);
  const out = join(dir, 'entry.cjs');
  await bundleProgram(entry, out);
  return JSON.parse(execFileSync(NODE, [out], { encoding: 'utf8' }));
}

describe('lazy built-ins in a bundle', () => {
  it('loads node:dns/promises at its first use, and it works as the real module', async () => {
    const result = await runBundled(
      `import { Resolver } from 'node:dns/promises';
const loaded = () => (process as unknown as { moduleLoadList: string[] }).moduleLoadList.includes('NativeModule internal/dns/promises');
const before = loaded();
const resolver = new Resolver({ timeout: 100, tries: 1 });
resolver.setServers(['127.0.0.1:53']);
console.log(JSON.stringify({ before, after: loaded(), servers: resolver.getServers(), resolve4: typeof resolver.resolve4 }));
`,
    );
    expect(result).toEqual({ before: false, after: true, servers: ['127.0.0.1'], resolve4: 'function' });
  });

  it('loads node:dgram at its first use, and a socket made through it sends and receives on loopback', async () => {
    const result = await runBundled(
      `import dgram from 'node:dgram';
const loaded = () => (process as unknown as { moduleLoadList: string[] }).moduleLoadList.includes('NativeModule dgram');
const before = loaded();
const socket = dgram.createSocket('udp4');
socket.on('message', (msg) => {
  console.log(JSON.stringify({ before, after: loaded(), got: msg.toString(), isSocket: socket instanceof dgram.Socket }));
  socket.close();
});
socket.bind(0, '127.0.0.1', () => socket.send('ping', socket.address().port, '127.0.0.1'));
`,
    );
    expect(result).toEqual({ before: false, after: true, got: 'ping', isSocket: true });
  });
});

describe("prom-client's default metrics in a bundle", () => {
  it('load node:v8 at the first scrape, which reports every heap space', async () => {
    const result = await runBundled(
      `import { Registry, collectDefaultMetrics } from '${join(ROOT, 'shared', 'metrics-client.ts')}';
const loaded = () => (process as unknown as { moduleLoadList: string[] }).moduleLoadList.includes('NativeModule v8');
void (async () => {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'x_' });
  const before = loaded();
  const text = await registry.metrics();
  const spaces = [...text.matchAll(/^x_nodejs_heap_space_size_used_bytes\\{space="(\\w+)"\\} (\\d+)/gm)].map((m) => [m[1], Number(m[2]) > 0]);
  console.log(JSON.stringify({ before, after: loaded(), spaces: Object.fromEntries(spaces) }));
  process.exit(0); // the default metrics keep timers
})();
`,
    );
    expect(result).toMatchObject({ before: false, after: true, spaces: { old: true, new: true, code: true } });
  });
});

describe('node:assert in a bundle', () => {
  it("loads Node's module only when an assertion fails, which then throws what Node's throws", async () => {
    const result = (await runBundled(
      `import assert from 'node:assert';
import * as named from 'assert';
type Methods = Record<string, (...args: unknown[]) => void>;
const loaded = () => (process as unknown as { moduleLoadList: string[] }).moduleLoadList.includes('NativeModule internal/assert/assertion_error');
assert(1); assert.ok('x'); assert.equal(1, '1'); assert.equal(NaN, NaN); assert.notEqual(1, 2);
assert.strictEqual(2, 2); assert.notStrictEqual(1, '1'); named.strictEqual('a', 'a'); named.notStrictEqual(NaN, 0);
const before = loaded();
const real = process.getBuiltinModule('node:assert') as unknown as Methods;
const failing: [string, unknown[]][] = [
  ['ok', [0, 'why']], ['ok', []], ['equal', [1, 2]], ['equal', [1]], ['notEqual', [NaN, NaN, 'same']],
  ['notEqual', ['1', 1]], ['strictEqual', [1, '1']], ['strictEqual', [undefined]], ['notStrictEqual', [NaN, NaN]],
];
const thrown = (f: () => void) => {
  try { f(); return 'nothing'; } catch (e) { const x = e as Record<string, unknown>; return [x.name, x.code, x.message, x.actual, x.expected, x.operator]; }
};
const cases = failing.map(([m, args]) => ({ m, bundled: thrown(() => (assert as unknown as Methods)[m]!(...args)), node: thrown(() => real[m]!(...args)) }));
console.log(JSON.stringify({ before, after: loaded(), sameModule: named.strictEqual === assert.strictEqual, deepStrictEqual: typeof assert.deepStrictEqual, cases }));
`,
    )) as {
      before: boolean;
      after: boolean;
      sameModule: boolean;
      deepStrictEqual: string;
      cases: { m: string; bundled: unknown; node: unknown }[];
    };
    expect(result).toMatchObject({ before: false, after: true, sameModule: true, deepStrictEqual: 'function' });
    for (const c of result.cases) {
      expect(c.bundled, c.m).not.toBe('nothing');
      expect(c.bundled, c.m).toEqual(c.node);
    }
  });
});

describe("fastify's router in a bundle", () => {
  it('routes, reads params and answers 404s as unbundled fastify does (shared compiled matchers, prefixes by startsWith, 404 routes added at first use, safe-regex2 and proxy-addr loaded at first use)', async () => {
    const source = `import Fastify from '${join(ROOT, 'node_modules', 'fastify', 'fastify.js')}';
void (async () => {
  const app = Fastify();
  app.get('/a/:x', async (req) => req.params);
  app.get('/b/:y/:z', async (req) => req.params);
  app.get('/c/:x/d/:w', async (req) => req.params);
  app.get('/static/path', async () => ({ ok: 1 }));
  app.get('/static/other', async () => ({ ok: 2 }));
  app.post('/static/path', async () => ({ ok: 3 }));
  app.get('/status', async () => ({ st: 1 }));
  app.get('/statuses', async () => ({ st: 2 }));
  app.get('/v2/apps/:id', async (req) => req.params);
  app.get('/v2/artifacts', async () => ({ art: 1 }));
  await app.register(async (scoped) => {
    scoped.setNotFoundHandler(async (req, reply) => reply.code(404).send({ scoped: req.method + ' ' + req.url }));
    scoped.get('/x', async () => ({ inScope: true }));
  }, { prefix: '/api' });
  app.get('/r/:n(^[0-9]+)', async (req) => req.params);
  let unsafeRegex = 'accepted';
  try {
    Fastify().get('/u/:x(^(a+)+$)', async () => ({}));
  } catch (e) {
    unsafeRegex = (e as Error).message;
  }
  const proxied = Fastify({ trustProxy: '127.0.0.1' });
  proxied.get('/ip', async (req) => ({ ip: req.ip, ips: req.ips }));
  const viaProxy = (await proxied.inject({ url: '/ip', headers: { 'x-forwarded-for': '10.1.2.3' } })).json();
  const r = async (method: string, url: string) => {
    const res = await app.inject({ method: method as 'GET', url });
    return [res.statusCode, res.json()];
  };
  console.log(JSON.stringify({
    a: await r('GET', '/a/1'), b: await r('GET', '/b/2/3'), c: await r('GET', '/c/4/d/5'),
    s1: await r('GET', '/static/path'), s2: await r('GET', '/static/other'), s3: await r('POST', '/static/path'),
    notFound: await r('GET', '/nope'), otherMethod: await r('PROPFIND', '/a/1'), root: await r('DELETE', '/'),
    p1: await r('GET', '/status'), p2: await r('GET', '/statuses'), p3: await r('GET', '/statu'), p4: await r('GET', '/statuz'),
    p5: await r('GET', '/statusez'), p6: await r('GET', '/v2/apps/q'), p7: await r('GET', '/v2/artifacts'),
    p8: await r('GET', '/v2/artifactz'), p9: await r('GET', '/v2/ap'),
    scoped: await r('GET', '/api/x'), scopedNotFound: await r('PATCH', '/api/nope'), scopedRoot: await r('GET', '/api'),
    regex: await r('GET', '/r/12'), regexMiss: await r('GET', '/r/ab'), unsafeRegex, viaProxy,
  }));
})();
`;
    const bundled = await runBundled(source);
    const entry = join(tempDir('starmap-bundle-'), 'entry.ts');
    writeFileSync(entry, source);
    expect(bundled).toEqual(JSON.parse(execFileSync(NODE, [entry], { encoding: 'utf8' })));
    const notFound = (method: string, url: string) => [404, { message: `Route ${method}:${url} not found`, error: 'Not Found', statusCode: 404 }];
    expect(bundled).toEqual({
      a: [200, { x: '1' }],
      b: [200, { y: '2', z: '3' }],
      c: [200, { x: '4', w: '5' }],
      s1: [200, { ok: 1 }],
      s2: [200, { ok: 2 }],
      s3: [200, { ok: 3 }],
      notFound: notFound('GET', '/nope'),
      otherMethod: notFound('PROPFIND', '/a/1'),
      root: notFound('DELETE', '/'),
      p1: [200, { st: 1 }],
      p2: [200, { st: 2 }],
      p3: notFound('GET', '/statu'),
      p4: notFound('GET', '/statuz'),
      p5: notFound('GET', '/statusez'),
      p6: [200, { id: 'q' }],
      p7: [200, { art: 1 }],
      p8: notFound('GET', '/v2/artifactz'),
      p9: notFound('GET', '/v2/ap'),
      scoped: [200, { inScope: true }],
      scopedNotFound: [404, { scoped: 'PATCH /api/nope' }],
      scopedRoot: [404, { scoped: 'GET /api' }],
      regex: [200, { n: '12' }],
      regexMiss: notFound('GET', '/r/ab'),
      unsafeRegex: "The regex '(^(a+)+$)' is not safe!",
      viaProxy: { ip: '10.1.2.3', ips: ['127.0.0.1', '10.1.2.3'] },
    });
  });
});

describe('names in a bundle', () => {
  it("keep Starmap's own and the dependencies' error classes' names, as unbundled, and a logged error's type", async () => {
    const nm = (path: string) => join(ROOT, 'node_modules', path);
    const source = `import { errors as undiciErrors } from '${nm('undici/index.js')}';
import { errors as joseErrors } from '${nm('jose/dist/webapi/index.js')}';
import createError from '${nm('@fastify/error/index.js')}';
import { TypeBoxError } from '${nm('@sinclair/typebox/build/esm/index.mjs')}';
import { DeadlineExceeded } from '${join(ROOT, 'shared', 'get-once.ts')}';
import { NotFound } from '${join(ROOT, 'orchestrator', 'errors.ts')}';
import { createLogger } from '${join(ROOT, 'shared', 'logger.ts')}';
class LocalFailure extends Error {}
function localHelper() { return 1; }
const arrow = () => 2;
const lines: string[] = [];
const log = createLogger({ name: 'names', destination: { write: (line: string) => void lines.push(line) } });
const Fst = createError('FST_X', 'x %s');
const thrown = [new undiciErrors.SocketError('s'), new undiciErrors.ConnectTimeoutError(), new joseErrors.JWTExpired('e', {}),
  new Fst('y'), new TypeBoxError('t'), new DeadlineExceeded('d'), new NotFound('n'), new LocalFailure('l')];
for (const err of thrown) log.warn({ err }, 'failed');
console.log(JSON.stringify({
  classes: thrown.map((e) => [e.constructor.name, e.name, String(e).split(':')[0]]),
  logged: lines.map((l) => JSON.parse(l).err.type),
  functions: [localHelper.name, arrow.name],
}));
`;
    const bundled = await runBundled(source);
    const entry = join(tempDir('starmap-bundle-'), 'entry.ts');
    writeFileSync(entry, source);
    expect(bundled).toEqual(JSON.parse(execFileSync(NODE, [entry], { encoding: 'utf8' })));
    expect(bundled).toMatchObject({
      logged: ['SocketError', 'ConnectTimeoutError', 'JWTExpired', 'FastifyError', 'TypeBoxError', 'DeadlineExceeded', 'NotFound', 'LocalFailure'],
      functions: ['localHelper', 'arrow'],
    });
  });
});

describe('an executable whose appended bundle is gone', () => {
  it('exits non-zero and says to rebuild it', () => {
    const bin = join(ROOT, 'dist', 'bin', 'probe');
    const copy = join(tempDir('starmap-bundle-'), 'probe');
    copyFileSync(bin, copy);
    truncateSync(copy, statSync(copy).size - 1);
    const run = spawnSync(copy, ['--help'], { encoding: 'utf8', timeout: 30_000 });
    expect(run.status).toBe(1);
    expect(run.stderr).toBe('probe: the executable has lost its bundle: rebuild it (npm run build)\n');
  });
});
