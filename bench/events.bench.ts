// Orchestrator event stream: 100 SSE clients on a real server (fastify + the events plugin + the
// bus) against a bare node:http server writing the same bytes to 100 sockets; the delay from a
// publish to every client having the event; the same with one stalled client; RSS while a stalled
// client sits through a burst of 10,000 events, bounded (the plugin) versus unbounded limits.
// Run: node_modules/.bin/node --expose-gc bench/events.bench.ts (works without --expose-gc, noisier)
import { execFileSync } from 'node:child_process';
import { createServer as createHttpServer, request as httpRequest, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { createServer, listen } from '../shared/http-server.ts';
import { EventBus } from '../orchestrator/events/bus.ts';
import { registerEvents } from '../orchestrator/events/routes.ts';
import type { EventStreamOptions } from '../orchestrator/events/sse.ts';
import { openSse, type SseClient } from '../test/orchestrator-events-sse-client.ts';
import { median, percentile, ratio, table, writeResults, type ResultRow } from './lib/results.ts';

const CLIENTS = 100;
const EVENTS = 500;
const logger = pino({ level: 'silent' });

interface Target {
  url: string;
  publish(i: number): void;
  close(): Promise<void>;
}

/** A status_update_event-sized payload: the plugin and the bare server send the same fields. */
function statusUpdate(i: number) {
  return {
    i,
    slaveId: 'local',
    taskId: `app.${i}`,
    taskStatus: 'TASK_RUNNING',
    appId: '/bench/app',
    host: '127.0.0.1',
    ports: [31000],
    version: '2026-01-01T00:00:00.000Z',
  };
}

async function pluginTarget(stream: Omit<EventStreamOptions, 'bus'> = {}): Promise<Target & { bus: EventBus; clients: () => number }> {
  const bus = new EventBus(logger);
  const app = createServer({ logger });
  const events = registerEvents(app, { bus, stream });
  const url = await listen(app, '127.0.0.1', 0);
  return {
    url,
    bus,
    clients: () => events.stream.clientCount,
    publish: (i) => void bus.publish('bench', statusUpdate(i)),
    close: () => app.close(),
  };
}

async function bareTarget(): Promise<Target> {
  const conns = new Set<ServerResponse>();
  const server = createHttpServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=UTF-8' });
    res.flushHeaders();
    req.socket.setNoDelay(true);
    conns.add(res);
    res.on('close', () => conns.delete(res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    publish: (i) => {
      const data = JSON.stringify({
        ...statusUpdate(i),
        eventType: 'bench',
        timestamp: new Date().toISOString(),
      });
      const frame = `event: bench\r\ndata: ${data}\r\n\r\n`;
      for (const res of conns) res.write(frame);
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function stall(url: string): Socket {
  const { port } = new URL(url);
  const s = connect(Number(port), '127.0.0.1');
  s.pause();
  s.write('GET /v2/events?event_type=bench HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n');
  return s;
}

/** Delays (ms) from publish to the last of the clients having event i, one event at a time. */
async function delays(target: Target, stalled: boolean): Promise<number[]> {
  const clients: SseClient[] = await Promise.all(Array.from({ length: CLIENTS }, () => openSse(target.url, '/v2/events?event_type=bench')));
  const stalledSocket = stalled ? stall(target.url) : undefined;
  let waiting: { i: number; count: number; done: (t: number) => void } | undefined;
  for (const c of clients) {
    c.onFrame = (f) => {
      const w = waiting;
      if (w && (f.data as { i: number }).i === w.i && ++w.count === CLIENTS) w.done(performance.now());
    };
  }
  await new Promise((r) => setTimeout(r, 200));
  const out: number[] = [];
  for (let i = 0; i < EVENTS + 20; i++) {
    const arrived = new Promise<number>((done) => (waiting = { i, count: 0, done }));
    const t0 = performance.now();
    target.publish(i);
    const t1 = await arrived;
    if (i >= 20) out.push(t1 - t0); // the first events warm up
  }
  for (const c of clients) c.close();
  stalledSocket?.destroy();
  return out;
}

/** A reading client that only counts frames (keeps no data, so its memory does not blur the figure). */
function countingClient(url: string): Promise<{ count: () => number; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/v2/events?event_type=bench`, { headers: { accept: 'text/event-stream' }, agent: false }, (res) => {
      let n = 0;
      let tail = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const text = tail + chunk;
        n += text.split('event: bench\r\n').length - 1;
        tail = text.slice(-20);
        if (tail.includes('event: bench\r\n')) tail = tail.slice(tail.lastIndexOf('event: bench\r\n') + 14);
      });
      resolve({ count: () => n, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

async function burstRss(stream: Omit<EventStreamOptions, 'bus'>): Promise<{ growthMiB: number; stalledCut: boolean; fastGot: number }> {
  const t = await pluginTarget(stream);
  const fast = await countingClient(t.url);
  const s = stall(t.url);
  while (t.clients() < 2) await new Promise((r) => setTimeout(r, 10));
  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const payload = 'x'.repeat(4000);
  for (let batch = 0; batch < 100; batch++) {
    for (let i = 0; i < 100; i++) t.bus.publish('bench', { i: batch * 100 + i, payload });
    // Let the reading client (in this process) catch up between bursts.
    while (fast.count() < (batch + 1) * 100) await new Promise((r) => setImmediate(r));
    // Collected first: the figure is what the server holds on to, not garbage awaiting collection.
    global.gc?.();
    peak = Math.max(peak, process.memoryUsage().rss);
  }
  const deadline = Date.now() + 5_000;
  while (t.clients() > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const stalledCut = t.clients() === 1;
  const fastGot = fast.count();
  fast.close();
  s.destroy();
  await t.close();
  return { growthMiB: (peak - before) / 2 ** 20, stalledCut, fastGot };
}

async function main(): Promise<void> {
  const rows: (string | number)[][] = [];
  const fmt = (x: number) => x.toFixed(2);
  const results: Record<string, number[]> = {};
  for (const [name, make, stalled] of [
    ['bare node:http (baseline)', bareTarget, false],
    ['events plugin', () => pluginTarget(), false],
    ['bare node:http + 1 stalled client', bareTarget, true],
    ['events plugin + 1 stalled client', () => pluginTarget(), true],
  ] as const) {
    const target = await make();
    global.gc?.();
    const d = await delays(target, stalled);
    await target.close();
    results[name] = d;
    console.log(`${name}: median ${fmt(median(d))} ms, p99 ${fmt(percentile(d, 99))} ms`);
  }
  const base = results['bare node:http (baseline)']!;
  for (const [name, d] of Object.entries(results)) {
    rows.push([
      name,
      fmt(median(d)),
      fmt(percentile(d, 99)),
      `${(median(d) / median(base)).toFixed(2)}×`,
      `${(percentile(d, 99) / percentile(base, 99)).toFixed(2)}×`,
    ]);
  }
  // Each burst in a fresh process: RSS is not given back to the system after a run.
  const bounded = burstInChild('bounded');
  const unbounded = burstInChild('unbounded');
  console.log('burst bounded', bounded, 'unbounded', unbounded);
  const md = [
    `${CLIENTS} SSE clients on loopback (same process as the server), ${EVENTS} events published one at a time; delay = publish until the last client has parsed the event.`,
    '',
    table(['server', 'median ms', 'p99 ms', 'median vs baseline', 'p99 vs baseline'], rows),
    '',
    'A stalled client (a socket that never reads) during a burst of 10,000 events of ~4.1 KB (40 MB in all) published in bursts of 100, one reading client alongside, each run in a fresh process: peak RSS growth over the burst (sampled after a GC after each burst of 100).',
    '',
    table(
      ['limits', 'RSS growth MiB', 'stalled client disconnected', 'events the reading client got'],
      [
        ['defaults (1000 events / 4 MiB outstanding)', bounded.growthMiB.toFixed(1), bounded.stalledCut ? 'yes' : 'no', bounded.fastGot],
        ['unbounded (for comparison)', unbounded.growthMiB.toFixed(1), unbounded.stalledCut ? 'yes' : 'no', unbounded.fastGot],
      ],
    ),
  ].join('\n');
  const delay = (name: string, label: string): ResultRow[] => {
    const d = results[name]!;
    return [
      {
        measure: `${label}: median delay`,
        value: `${fmt(median(d))} ms`,
        baseline: `bare node:http: ${fmt(median(base))} ms`,
        ratio: ratio(median(d), median(base)),
        goal: '-',
        met: '-',
      },
      {
        measure: `${label}: p99 delay`,
        value: `${fmt(percentile(d, 99))} ms`,
        baseline: `${fmt(percentile(base, 99))} ms`,
        ratio: ratio(percentile(d, 99), percentile(base, 99)),
        goal: '-',
        met: '-',
      },
    ];
  };
  writeResults('Orchestrator events', [
    ...delay('events plugin', `events plugin, ${CLIENTS} SSE clients, ${EVENTS} events`),
    ...delay('events plugin + 1 stalled client', 'the same + 1 stalled client'),
    {
      measure: 'RSS growth, a stalled client over 10,000 events of 4.1 KB (defaults)',
      value: `${bounded.growthMiB.toFixed(1)} MiB (cut: ${bounded.stalledCut ? 'yes' : 'no'}; reader got ${bounded.fastGot})`,
      baseline: `unbounded: ${unbounded.growthMiB.toFixed(1)} MiB (cut: ${unbounded.stalledCut ? 'yes' : 'no'})`,
      ratio: ratio(bounded.growthMiB, unbounded.growthMiB),
      goal: '-',
      met: '-',
    },
  ]);
  console.log(md);
}

type Burst = Awaited<ReturnType<typeof burstRss>>;

function burstInChild(mode: 'bounded' | 'unbounded'): Burst {
  const out = execFileSync(process.execPath, ['--expose-gc', process.argv[1]!, `--burst=${mode}`], { encoding: 'utf8', timeout: 120_000 });
  return JSON.parse(out.trim().split('\n').pop()!) as Burst;
}

const burstMode = process.argv.find((a) => a.startsWith('--burst='))?.slice(8);
const run = burstMode
  ? async () => {
      const r = await burstRss(burstMode === 'bounded' ? {} : { maxOutstanding: Number.POSITIVE_INFINITY, maxBufferedBytes: Number.POSITIVE_INFINITY });
      console.log(JSON.stringify(r));
    }
  : main;

run().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
