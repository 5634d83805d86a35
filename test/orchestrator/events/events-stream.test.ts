// GET /v2/events against a real fastify server and real sockets: framing, attach/detach events,
// filters, heartbeat, Accept handling, a stalled client, many clients, an auth hook in front.
import { connect, type Socket } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createServer, listen } from '../../../shared/http-server.ts';
import { EventBus } from '../../../orchestrator/events/bus.ts';
import { registerEvents, type EventsHandle } from '../../../orchestrator/events/routes.ts';
import type { MarathonEvent } from '../../../orchestrator/events/bus.ts';
import { eventJson } from '../../../orchestrator/events/json.ts';
import { FrameCache, acceptsEventStream } from '../../../orchestrator/events/sse.ts';
import type { EventStreamOptions } from '../../../orchestrator/events/sse.ts';
import { waitFor } from '../../helpers/wait.ts';
import { openSse, type SseClient } from '../../orchestrator-events-sse-client.ts';

const logger = pino({ level: 'silent' });
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function serve(stream: Omit<EventStreamOptions, 'bus'> = {}, setup?: (app: FastifyInstance) => void) {
  const bus = new EventBus(logger);
  const app = createServer({ logger });
  setup?.(app);
  const events: EventsHandle = registerEvents(app, { bus, stream });
  const url = await listen(app, '127.0.0.1', 0);
  cleanups.push(() => app.close());
  return { bus, app, url, events };
}

async function sse(url: string, path?: string, headers?: Record<string, string>): Promise<SseClient> {
  const c = await openSse(url, path, headers);
  cleanups.push(() => c.close());
  return c;
}

describe('GET /v2/events', () => {
  it('streams CRLF-framed events with the SSE content type, and the attach event first', async () => {
    const { bus, url } = await serve();
    const c = await sse(url);
    expect(c.status).toBe(200);
    expect(c.headers['content-type']).toBe('text/event-stream; charset=UTF-8');
    expect(c.headers['cache-control']).toContain('no-cache');
    await waitFor(() => c.frames.length >= 1);
    const attached = c.frames[0]!;
    expect(attached.event).toBe('event_stream_attached');
    expect(attached.data).toMatchObject({ eventType: 'event_stream_attached', remoteAddress: '127.0.0.1' });
    expect((attached.data as { timestamp: string }).timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    bus.publish('app_terminated_event', { appId: '/a\nb' });
    await waitFor(() => c.frames.length >= 2);
    const raw = c.frames[1]!.raw;
    expect(raw).toMatch(/^event: app_terminated_event\r\ndata: \{[^\r\n]*\}$/);
    expect(c.frames[1]!.data).toMatchObject({ eventType: 'app_terminated_event', appId: '/a\nb' });
    expect(c.raw()).toContain(`${raw}\r\n\r\n`);
  });

  it('tells every client about attaches and detaches (remoteAddress), and unsubscribes on close', async () => {
    const { bus, url, events } = await serve();
    const base = bus.listenerCount;
    const a = await sse(url);
    await waitFor(() => events.stream.clientCount === 1);
    const b = await sse(url);
    await waitFor(() => a.frames.filter((f) => f.event === 'event_stream_attached').length === 2);
    b.close();
    await waitFor(() => a.frames.some((f) => f.event === 'event_stream_detached'));
    expect(a.frames.find((f) => f.event === 'event_stream_detached')!.data).toMatchObject({ remoteAddress: '127.0.0.1' });
    await waitFor(() => events.stream.clientCount === 1 && bus.listenerCount === base + 1);
    a.close();
    await waitFor(() => events.stream.clientCount === 0 && bus.listenerCount === base);
  });

  it('filters on repeated event_type values (exact match); empty means all', async () => {
    const { bus, url } = await serve();
    const one = await sse(url, '/v2/events?event_type=status_update_event');
    const two = await sse(url, '/v2/events?event_type=status_update_event&event_type=deployment_success');
    const all = await sse(url, '/v2/events?event_type=');
    const prefix = await sse(url, '/v2/events?event_type=status');
    await waitFor(() => all.frames.filter((f) => f.event === 'event_stream_attached').length === 1);
    for (const t of ['status_update_event', 'deployment_success', 'deployment_info', 'status_update_event']) bus.publish(t, { n: 1 });
    bus.publish('app_terminated_event', { appId: '/end' });
    await waitFor(() => all.frames.some((f) => f.event === 'app_terminated_event'));
    expect(one.frames.map((f) => f.event)).toEqual(['status_update_event', 'status_update_event']);
    expect(two.frames.map((f) => f.event)).toEqual(['status_update_event', 'deployment_success', 'status_update_event']);
    expect(all.frames.map((f) => f.event)).toEqual([
      'event_stream_attached',
      'event_stream_attached',
      'status_update_event',
      'deployment_success',
      'deployment_info',
      'status_update_event',
      'app_terminated_event',
    ]);
    expect(prefix.frames).toEqual([]);
  });

  it('drops plan.original and plan.target for ?plan-format=light clients only', async () => {
    const { bus, url } = await serve();
    const full = await sse(url, '/v2/events?event_type=deployment_info');
    const light = await sse(url, '/v2/events?event_type=deployment_info&event_type=app_terminated_event&plan-format=light');
    const plan = { id: 'd1', version: 'v', steps: [], original: { id: '/', apps: [] }, target: { id: '/', apps: [{ id: '/a' }] } };
    bus.publish('deployment_info', { plan, currentStep: { actions: [] } });
    bus.publish('app_terminated_event', { appId: '/a' });
    await waitFor(() => full.frames.length === 1 && light.frames.length === 2);
    expect((full.frames[0]!.data as { plan: unknown }).plan).toEqual(plan);
    expect((light.frames[0]!.data as { plan: unknown }).plan).toEqual({ id: 'd1', version: 'v', steps: [] });
    expect(light.frames[0]!.data).toMatchObject({ eventType: 'deployment_info', currentStep: { actions: [] } });
    expect(light.frames[1]!.data).toMatchObject({ eventType: 'app_terminated_event', appId: '/a' });
  });

  it('sends a bare CRLF heartbeat', async () => {
    const { url } = await serve({ heartbeatMs: 50 });
    const c = await sse(url, '/v2/events?event_type=none');
    await waitFor(() => c.raw().length >= 6, { message: 'three heartbeats' });
    expect(c.raw()).toMatch(/^(\r\n){3,}$/);
  });

  it('refuses requests that do not accept text/event-stream with 405 as Marathon, and a JSON message', async () => {
    const { url } = await serve();
    for (const accept of [undefined, '*/*', 'application/json', 'text/event-stream;q=0']) {
      const res = await fetch(`${url}/v2/events`, { headers: accept ? { accept } : { accept: '' } });
      expect(res.status, String(accept)).toBe(405);
      expect(((await res.json()) as { message: string }).message).toContain('Accept: text/event-stream');
    }
    expect(acceptsEventStream('application/json, text/event-stream;q=0.5')).toBe(true);
    expect(acceptsEventStream('TEXT/EVENT-STREAM')).toBe(true);
  });

  it('runs after an authentication hook like any route', async () => {
    const { url, events } = await serve({}, (app) => {
      app.addHook('onRequest', async (req, reply) => {
        if (req.headers.authorization !== 'token=good') return reply.code(401).send({ message: 'Invalid username or password.' });
      });
    });
    const denied = await fetch(`${url}/v2/events`, { headers: { accept: 'text/event-stream' } });
    expect(denied.status).toBe(401);
    expect(events.stream.clientCount).toBe(0);
    const c = await sse(url, '/v2/events', { authorization: 'token=good' });
    expect(c.status).toBe(200);
    await waitFor(() => c.frames.some((f) => f.event === 'event_stream_attached'));
  });

  it('disconnects a client that stops reading; the others get every event of a 10,000-event burst', async () => {
    // Bursts of 100 published in one tick: nobody can read during a tick, so the limit must be above that.
    const lines: { msg: string; remoteAddress?: string; outstandingEvents?: number }[] = [];
    const capture = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
    const { bus, url, events } = await serve({ maxOutstanding: 500, closeGraceMs: 200, logger: capture });
    const base = bus.listenerCount;
    const fast = await sse(url, '/v2/events?event_type=burst');
    // The stalled client: a raw socket that sends the request and never reads a byte.
    const { port } = new URL(url);
    const stalled: Socket = connect(Number(port), '127.0.0.1');
    cleanups.push(() => void stalled.destroy());
    stalled.pause();
    stalled.write('GET /v2/events?event_type=burst HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n');
    await waitFor(() => events.stream.clientCount === 2);
    const watcher = await sse(url, '/v2/events?event_type=event_stream_detached');
    const payload = 'x'.repeat(4000);
    let published = 0;
    for (let batch = 0; batch < 100; batch++) {
      for (let i = 0; i < 100; i++) bus.publish('burst', { n: published++, payload });
      await waitFor(() => fast.frames.length === published, { intervalMs: 2, message: `fast client has ${published} events` });
    }
    expect(fast.frames.map((f) => (f.data as { n: number }).n)).toEqual(Array.from({ length: 10_000 }, (_, i) => i));
    // Stalled client: cut off long before the end of the burst, its listener gone.
    await waitFor(() => events.stream.clientCount === 2 && bus.listenerCount === base + 2, { message: 'stalled client disconnected' });
    await waitFor(() => watcher.frames.length === 1);
    expect(watcher.frames[0]!.data).toMatchObject({ eventType: 'event_stream_detached', remoteAddress: '127.0.0.1' });
    expect(fast.ended).toBe(false);
    // The server's log says whom it cut off and why.
    expect(lines).toEqual([
      expect.objectContaining({
        msg: expect.stringMatching(/^event stream: disconnected: this client read too slowly \(more than (500 events|\d+ bytes) outstanding\)/),
        remoteAddress: '127.0.0.1',
      }),
    ]);
  });

  it('serves many clients at once and cleans up after all of them', async () => {
    const { bus, url, events } = await serve();
    const base = bus.listenerCount;
    const clients = await Promise.all(Array.from({ length: 50 }, () => sse(url, '/v2/events?event_type=many')));
    await waitFor(() => events.stream.clientCount === 50);
    for (let i = 0; i < 200; i++) bus.publish('many', { i });
    await waitFor(() => clients.every((c) => c.frames.length === 200));
    for (const c of clients) expect(c.frames.map((f) => (f.data as { i: number }).i)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    for (const c of clients) c.close();
    await waitFor(() => events.stream.clientCount === 0 && bus.listenerCount === base);
  });

  it('serialises a deployment event once per plan format and writes the same bytes to 200 readers, none cut off', async () => {
    let serialised = 0;
    const serialise = (event: MarathonEvent) => (serialised++, eventJson(event));
    // Each event is larger than a client's whole allowance (as at 1,000 apps): a client that has
    // read everything before it keeps its stream.
    const { bus, url, events } = await serve({ serialise, maxBufferedBytes: 32 * 1024 });
    const types = 'event_type=deployment_info&event_type=status_update_event';
    const full = await Promise.all(Array.from({ length: 100 }, () => sse(url, `/v2/events?${types}`)));
    const light = await Promise.all(Array.from({ length: 100 }, () => sse(url, `/v2/events?${types}&plan-format=light`)));
    await waitFor(() => events.stream.clientCount === 200);
    const attachEvents = serialised;
    const group = (v: number) => ({
      id: '/',
      apps: Array.from({ length: 200 }, (_x, i) => ({ id: `/big/app-${i}`, cmd: 'sleep 1000', env: { PADDING: 'p'.repeat(100) }, version: `v${v}` })),
    });
    const plans = [0, 1, 2].map((v) => ({ id: `d${v}`, version: `v${v}`, steps: [], original: group(v), target: group(v + 1) }));
    for (const plan of plans) bus.publish('deployment_info', { plan, currentStep: { actions: [] } });
    bus.publish('status_update_event', { appId: '/big/app-1', taskStatus: 'TASK_RUNNING' });
    // Three deployment events in both formats, and one event that has no plan, shared by both.
    expect(serialised - attachEvents).toBe(3 * 2 + 1);
    await waitFor(() => [...full, ...light].every((c) => c.frames.length === 4), { timeoutMs: 60_000, message: 'every reader has the 4 events' });
    expect(events.stream.clientCount).toBe(200);
    expect(new Set(full.map((c) => c.raw())).size).toBe(1);
    expect(new Set(light.map((c) => c.raw())).size).toBe(1);
    expect(full[0]!.frames[0]!.raw.length).toBeGreaterThan(2 * 32 * 1024);
    expect((full[0]!.frames[0]!.data as { plan: { target: unknown } }).plan.target).toEqual(plans[0]!.target);
    expect(light[0]!.frames.map((f) => Object.keys((f.data as { plan?: object }).plan ?? {}))).toEqual([
      ['id', 'version', 'steps'],
      ['id', 'version', 'steps'],
      ['id', 'version', 'steps'],
      [],
    ]);
    expect(light[0]!.frames[3]!.raw).toBe(full[0]!.frames[3]!.raw);
  });

  it('keeps one frame per event and format, as bytes', () => {
    const frames = new FrameCache();
    const event = { eventType: 'deployment_info', timestamp: 't', plan: { id: 'd', original: {}, target: {} } };
    expect(frames.frame(event, 'full')).toBe(frames.frame(event, 'full'));
    expect(frames.frame(event, 'light')).toBe(frames.frame(event, 'light'));
    expect(frames.frame(event, 'light').toString()).toBe(
      'event: deployment_info\r\ndata: {"eventType":"deployment_info","timestamp":"t","plan":{"id":"d"}}\r\n\r\n',
    );
    const plain = { eventType: 'status_update_event', timestamp: 't' };
    expect(frames.frame(plain, 'light')).toBe(frames.frame(plain, 'full'));
  });

  it('ends open streams when the server closes', async () => {
    const { url, app } = await serve();
    const c = await sse(url);
    await waitFor(() => c.frames.length === 1);
    await app.close();
    await waitFor(() => c.ended);
  });
});
