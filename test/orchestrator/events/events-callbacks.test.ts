// /v2/eventSubscriptions and callback delivery against real local receivers: one that answers,
// one that is down, one that never answers, one that fails with 500 and one that comes back.
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { DatabaseSync } from 'node:sqlite';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createServer, listen } from '../../../shared/http-server.ts';
import { EventBus, type MarathonEvent } from '../../../orchestrator/events/bus.ts';
import { CALLBACKS_DISABLED_MESSAGE, registerEvents, type EventsHandle, type EventsOptions } from '../../../orchestrator/events/routes.ts';
import { eventJson } from '../../../orchestrator/events/json.ts';
import { openDatabase } from '../../../orchestrator/storage/db.ts';
import { freePort, removeTempDirs, tempDir } from '../../helpers/process.ts';
import { waitFor } from '../../helpers/wait.ts';
import { openSse } from '../../orchestrator-events-sse-client.ts';

const logger = pino({ level: 'silent' });
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => removeTempDirs());

const FAST = { timeoutMs: 300, backoffUnitMs: 50, maxBackoffMs: 400 };

async function serve(opts: Partial<EventsOptions> = {}, db?: DatabaseSync) {
  const bus = new EventBus(logger);
  const database = db ?? openDatabase(tempDir('events-'));
  const app = createServer({ logger });
  const events: EventsHandle = registerEvents(app, { bus, db: database, logger, eventSubscriber: 'http_callback', callbacks: FAST, ...opts });
  const url = await listen(app, '127.0.0.1', 0);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await app.close();
  };
  cleanups.push(close);
  if (!db) cleanups.push(() => database.close());
  const seen: MarathonEvent[] = [];
  bus.subscribe((e) => seen.push(e));
  const call = async (method: string, query = '') => {
    const res = await fetch(`${url}/v2/eventSubscriptions${query}`, { method });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  return { bus, app, url, events, call, seen, close, db: database };
}

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A callback receiver on loopback; `answer` decides what each request gets. */
async function receiver(answer: (res: ServerResponse) => void = (res) => res.end('ok'), port = 0) {
  const got: Received[] = [];
  const server: Server = createHttpServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      answer(res);
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const addr = server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : port}/cb`;
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url, got, events: () => got.map((g) => JSON.parse(g.body) as MarathonEvent) };
}

const q = (url: string) => `?callbackUrl=${encodeURIComponent(url)}`;

describe('/v2/eventSubscriptions', () => {
  it("answers every call with 400 and Marathon's message when callbacks are not enabled", async () => {
    const { call, events } = await serve({ eventSubscriber: undefined });
    expect(events.dispatcher).toBeUndefined();
    for (const [method, query] of [
      ['POST', q('http://127.0.0.1:1/x')],
      ['GET', ''],
      ['DELETE', q('http://127.0.0.1:1/x')],
    ] as const) {
      const r = await call(method, query);
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ message: CALLBACKS_DISABLED_MESSAGE });
    }
    expect(CALLBACKS_DISABLED_MESSAGE).toBe(
      'http event callback system is not running on this Marathon instance. Please re-start this instance with "--event_subscriber http_callback".',
    );
  });

  it('subscribes, lists, re-subscribes as a no-op, unsubscribes, and publishes both events', async () => {
    const { call, seen } = await serve();
    const cb = 'http://127.0.0.1:9/hook?x=1';
    const r = await call('POST', q(cb));
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ callbackUrl: cb, clientIp: '127.0.0.1', eventType: 'subscribe_event' });
    expect(r.body.timestamp).toMatch(/Z$/);
    expect((await call('POST', q(cb))).status).toBe(200);
    expect((await call('GET')).body).toEqual({ callbackUrls: [cb] });
    const d = await call('DELETE', q(cb));
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ callbackUrl: cb, clientIp: '127.0.0.1', eventType: 'unsubscribe_event' });
    expect((await call('GET')).body).toEqual({ callbackUrls: [] });
    expect((await call('DELETE', q('http://127.0.0.1:9/never'))).status).toBe(200);
    expect(seen.filter((e) => e.eventType === 'subscribe_event')[0]).toMatchObject({ clientIp: '127.0.0.1', callbackUrl: cb });
    expect(seen.filter((e) => e.eventType === 'unsubscribe_event')[0]).toMatchObject({ clientIp: '127.0.0.1', callbackUrl: cb });
  });

  it('refuses missing, malformed and non-http callback URLs with 422', async () => {
    const { call } = await serve();
    for (const query of ['', '?callbackUrl=', q('not a url'), q('ftp://127.0.0.1/x'), q('file:///etc/passwd'), q('javascript:alert(1)')]) {
      const r = await call('POST', query);
      expect(r.status, query).toBe(422);
      expect(r.body).toMatchObject({ message: 'Object is not valid', details: [{ path: '/callbackUrl' }] });
    }
    expect((await call('DELETE')).status).toBe(422);
    expect((await call('GET')).body).toEqual({ callbackUrls: [] });
  });

  it('keeps subscriptions across a restart; --http_endpoints seeds the list', async () => {
    const dir = tempDir('events-');
    const db1 = openDatabase(dir);
    const first = await serve({ httpEndpoints: ['http://127.0.0.1:9/seed'] }, db1);
    await first.call('POST', q('http://127.0.0.1:9/added'));
    await first.close();
    db1.close();
    const db2 = openDatabase(dir);
    cleanups.push(() => db2.close());
    const rcv = await receiver();
    const second = await serve({}, db2);
    expect((await second.call('GET')).body).toEqual({ callbackUrls: ['http://127.0.0.1:9/seed', 'http://127.0.0.1:9/added'] });
    await second.call('POST', q(rcv.url));
    await second.close();
    // The restored list is delivered to, without anyone subscribing again.
    const third = await serve({}, db2);
    third.bus.publish('app_terminated_event', { appId: '/after-restart' });
    await waitFor(() => rcv.events().some((e) => e.appId === '/after-restart'));
  });
});

describe('callback delivery', () => {
  it('POSTs every event as the same JSON as the stream, with Accept: application/json, in order', async () => {
    const s = await serve();
    const rcv = await receiver();
    await s.call('POST', q(rcv.url));
    const stream = await openSse(s.url, '/v2/events?event_type=status_update_event');
    cleanups.push(() => stream.close());
    await waitFor(() => s.events.stream.clientCount === 1);
    const published: MarathonEvent[] = [];
    for (let i = 0; i < 50; i++) published.push(s.bus.publish('status_update_event', { taskId: `t${i}`, ports: [i] }));
    await waitFor(() => rcv.got.length >= 52 && stream.frames.length === 50);
    expect(rcv.got.every((g) => g.headers['content-type'] === 'application/json' && g.headers.accept === 'application/json')).toBe(true);
    const bodies = rcv.got.map((g) => g.body);
    expect(JSON.parse(bodies[0]!)).toMatchObject({ eventType: 'subscribe_event', callbackUrl: rcv.url });
    expect(JSON.parse(bodies[1]!)).toMatchObject({ eventType: 'event_stream_attached', remoteAddress: '127.0.0.1' });
    expect(bodies.slice(2)).toEqual(published.map((e) => eventJson(e)));
    expect(stream.frames.map((f) => JSON.stringify(f.data))).toEqual(bodies.slice(2));
    expect(s.events.dispatcher!.state(rcv.url)).toMatchObject({ delivered: 52, failed: 0, consecutiveFailures: 0 });
  });

  it('backs off a receiver that is down, times out a silent one, and never holds up the good one', async () => {
    const s = await serve({ callbacks: { ...FAST, timeoutMs: 2_000 } });
    const good = await receiver();
    const silent = await receiver(() => undefined); // reads the request, never answers
    const failing = await receiver((res) => {
      res.statusCode = 500;
      res.end('no');
    });
    const downUrl = `http://127.0.0.1:${await freePort()}/cb`;
    for (const u of [downUrl, silent.url, failing.url, good.url]) await s.call('POST', q(u));
    const d = s.events.dispatcher!;
    // While the silent receiver holds its first request for up to 2 s, the good one gets everything at once.
    for (let i = 0; i < 20; i++) s.bus.publish('deployment_info', { i });
    await waitFor(() => good.events().filter((e) => e.eventType === 'deployment_info').length === 20, { timeoutMs: 1_500 });
    expect(d.state(silent.url)!.delivered).toBe(0);
    await waitFor(() => d.state(downUrl)!.consecutiveFailures >= 1 && d.state(failing.url)!.consecutiveFailures >= 1);
    expect(d.state(downUrl)!.lastError).toBe('ECONNREFUSED');
    expect(d.state(failing.url)!.lastError).toBe('HTTP 500');
    // Events behind a failure and during the back-off are skipped, not retried later.
    expect(failing.got.length).toBeLessThan(25);
    await waitFor(() => d.state(silent.url)!.consecutiveFailures === 1, { timeoutMs: 5_000 });
    expect(d.state(silent.url)!.lastError).toMatch(/^no answer within 2000 ms/);
    expect(d.state(silent.url)!.skipped).toBeGreaterThan(0);
    expect(silent.got.length).toBe(1);
    // Back-off doubles with consecutive failures, up to the cap.
    const before = d.state(downUrl)!.consecutiveFailures;
    await waitFor(
      () => {
        s.bus.publish('deployment_info', { tick: true });
        return d.state(downUrl)!.consecutiveFailures >= before + 3;
      },
      { intervalMs: 20, timeoutMs: 5_000 },
    );
    const st = d.state(downUrl)!;
    expect(st.backedOffUntil - Date.now()).toBeLessThanOrEqual(FAST.maxBackoffMs);
    expect(st.skipped).toBeGreaterThan(0);
  });

  it('keeps two URLs on the same host independent when one of them never answers', async () => {
    const s = await serve({ callbacks: { ...FAST, timeoutMs: 5_000 } });
    const got: string[] = [];
    const server = createHttpServer((req, res) => {
      got.push(req.url ?? '');
      req.resume();
      if (req.url?.startsWith('/fast')) req.on('end', () => res.end());
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          server.closeAllConnections();
          server.close(() => r());
        }),
    );
    const addr = server.address();
    const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    for (const path of ['/slow1', '/slow2', '/slow3', '/fast']) await s.call('POST', q(base + path));
    for (let i = 0; i < 10; i++) s.bus.publish('deployment_step_success', { i });
    // Its own subscribe_event, then the 10 events, while the three slow paths hold their requests.
    await waitFor(() => got.filter((u) => u === '/fast').length === 11, { timeoutMs: 2_000, message: 'fast path got 11 events' });
    expect(got.filter((u) => u.startsWith('/slow')).length).toBeGreaterThanOrEqual(3);
  });

  it('resumes delivery to a receiver that comes back after its back-off', async () => {
    const s = await serve();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/cb`;
    await s.call('POST', q(url));
    const d = s.events.dispatcher!;
    await waitFor(
      () => {
        s.bus.publish('health_status_changed_event', { alive: false });
        return d.state(url)!.consecutiveFailures >= 2;
      },
      { intervalMs: 20 },
    );
    const back = await receiver(undefined, port);
    expect(back.url).toBe(url);
    await waitFor(
      () => {
        s.bus.publish('health_status_changed_event', { alive: true });
        return back.events().some((e) => e.alive === true);
      },
      { intervalMs: 20, message: 'delivery resumed' },
    );
    await waitFor(() => d.state(url)!.consecutiveFailures === 0 && d.state(url)!.backedOffUntil === 0);
    expect(d.state(url)!.delivered).toBeGreaterThan(0);
  });

  it('stops delivering after an unsubscribe', async () => {
    const s = await serve();
    const rcv = await receiver();
    await s.call('POST', q(rcv.url));
    s.bus.publish('app_terminated_event', { appId: '/one' });
    await waitFor(() => rcv.events().some((e) => e.appId === '/one'));
    await s.call('DELETE', q(rcv.url));
    s.bus.publish('app_terminated_event', { appId: '/two' });
    const other = await receiver();
    await s.call('POST', q(other.url));
    s.bus.publish('app_terminated_event', { appId: '/three' });
    await waitFor(() => other.events().some((e) => e.appId === '/three'));
    expect(rcv.events().map((e) => e.appId ?? e.eventType)).toEqual(['subscribe_event', '/one']);
  });
});
