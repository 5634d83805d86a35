// Collector benchmarks, all on loopback: 1,000 resources (each a probe-like /status document of a
// local HTTP server) fetched every 5 s; GET /responses requests per second at 1,000 resources next
// to bare fastify routes serving the same bytes (and the same JSON as a string, and as an object);
// RSS of the built collector at 1,000 resources.
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import pino from 'pino';
import { Collector } from '../collector/collector.ts';
import { ROOT, freePort, start, stopAll, tempDir, waitForHttp } from '../test/helpers/process.ts';
import { statusDoc } from './lib/documents.ts';
import { load, rssOf } from './lib/measure.ts';
import { median, ratio, table, writeResults, type ResultRow } from './lib/results.ts';
import { runBench } from './lib/run-bench.ts';

const N = 1000;
const BIN = join(ROOT, 'dist', 'bin', 'collector');
const CONNECTIONS = 16;

async function healthz(base: string): Promise<{ fetches: number; lagMs: { p50: number; max: number } | null }> {
  return (await (await fetch(`${base}/healthz`)).json()) as { fetches: number; lagMs: { p50: number; max: number } | null };
}

async function main(): Promise<void> {
  const docs = Array.from({ length: N }, (_, i) => statusDoc(i, N));
  const server = http.createServer((req, res) => {
    const i = Number(req.url!.split('/')[2]);
    res.writeHead(200, { 'content-type': 'application/json' }).end(docs[i] ?? '{}');
  });
  await new Promise<void>((r) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, r));
  const port = (server.address() as net.AddressInfo).port;
  const resources = Array.from({ length: N }, (_, i) => ({ id: `probe-${i}`, url: `http://127.0.0.1:${port}/status/${i}` }));

  // 1. Time to fetch all in process: three passes over 1,000 resources (fresh connection each).
  const collector = new Collector({
    resources,
    intervalMs: 5000,
    concurrency: 100,
    fetch: { timeoutMs: 2000, maxBodyBytes: 1024 * 1024 },
    logger: pino({ level: 'silent' }),
  });
  const cycles: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await collector.fetchAll();
    cycles.push(performance.now() - t0);
  }
  const ok = collector.responses.entries().filter(([, e]) => e.error === null).length;
  const cycleMs = median(cycles);
  console.log(`cycle of ${N}: ${cycleMs.toFixed(0)} ms (${ok} ok)`);

  // 2. The built collector at 1,000 resources, each fetched every 5 s: RSS and GET /responses.
  const file = join(tempDir('starmap-bench-'), 'resources.json');
  writeFileSync(file, JSON.stringify(resources));
  const cport = await freePort();
  const base = `http://127.0.0.1:${cport}`;
  const proc = start(BIN, [`--resources-file=${file}`, '--http-address=127.0.0.1', `--http-port=${cport}`, '--log-level=warn']);
  await waitForHttp(`${base}/healthz`);
  const deadline = Date.now() + 30_000;
  while ((await healthz(base)).fetches < 3 * N && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  const lag = (await healthz(base)).lagMs;
  const rssIdle = rssOf(proc.child.pid!);
  const body = await (await fetch(`${base}/responses`)).text();
  const parsed = JSON.parse(body) as unknown;

  const bare = Fastify();
  bare.get('/object', async () => parsed); // serialised on every request, as a naive route would
  bare.get('/text', async (_q, reply) => reply.type('application/json; charset=utf-8').send(body));
  const bytes = Buffer.from(body);
  bare.get('/bytes', async (_q, reply) => reply.type('application/json; charset=utf-8').send(bytes));
  await bare.listen({ port: 0, host: '127.0.0.1' });
  const bareBase = `http://127.0.0.1:${(bare.server.address() as net.AddressInfo).port}`;
  await load(`${base}/responses`, 1, CONNECTIONS);
  await load(`${bareBase}/bytes`, 1, CONNECTIONS);
  // Interleaved one-second slices, so that noise from other work on the machine hits all alike.
  const rates: Record<'collector' | 'bytes' | 'text' | 'object', number[]> = { collector: [], bytes: [], text: [], object: [] };
  for (let round = 0; round < 5; round++) {
    rates.collector.push(await load(`${base}/responses`, 1, CONNECTIONS));
    rates.bytes.push(await load(`${bareBase}/bytes`, 1, CONNECTIONS));
    rates.text.push(await load(`${bareBase}/text`, 1, CONNECTIONS));
    rates.object.push(await load(`${bareBase}/object`, 1, CONNECTIONS));
  }
  const collectorRps = median(rates.collector);
  const bareBytesRps = median(rates.bytes);
  const bareTextRps = median(rates.text);
  const bareObjectRps = median(rates.object);
  const rssLoaded = rssOf(proc.child.pid!);
  await bare.close();
  await proc.stop();
  await stopAll();
  server.close();
  console.log(
    `GET /responses: collector ${collectorRps.toFixed(0)}/s, bare bytes ${bareBytesRps.toFixed(0)}/s, bare text ${bareTextRps.toFixed(0)}/s, bare object ${bareObjectRps.toFixed(0)}/s`,
  );

  const pct = (x: number) => `${((x / bareBytesRps) * 100).toFixed(0)} %`;
  const md = [
    `${N} resources, each a probe-like \`/status\` document (10 targets, ${(docs[0]!.length / 1024).toFixed(1)} KiB) served by a local HTTP server on loopback; every fetch opens a fresh connection; concurrency 100, timeout 2 s. The \`/responses\` document at ${N} resources is ${(body.length / 1024).toFixed(0)} KiB. Load average at the end of the run: ${loadavg()[0]!.toFixed(1)} (other work shares the machine).`,
    '',
    table(
      ['figure', 'value'],
      [
        [`one fetch of each of the ${N} in process (median of 3)`, `${cycleMs.toFixed(0)} ms (${(N / (cycleMs / 1000)).toFixed(0)} fetches/s; ${ok} ok)`],
        [
          `how late fetches started, dist/bin/collector at the default 5 s interval (last 1,000)`,
          lag ? `median ${lag.p50.toFixed(0)} ms, worst ${lag.max.toFixed(0)} ms` : 'n/a',
        ],
        [
          `RSS of dist/bin/collector at ${N} resources after 3 fetches each`,
          `${rssIdle.toFixed(0)} MiB (${rssLoaded.toFixed(0)} MiB after the request load below)`,
        ],
      ],
    ),
    '',
    table(
      [`GET /responses at ${N} resources (${CONNECTIONS} connections, median of 5 interleaved 1 s slices)`, 'requests/s', 'vs bare fastify (the same bytes)'],
      [
        ['collector (dist/bin/collector, fetching every 5 s meanwhile)', collectorRps.toFixed(0), pct(collectorRps)],
        ['bare fastify route sending the same bytes (a Buffer): the baseline', bareBytesRps.toFixed(0), pct(bareBytesRps)],
        ['bare fastify route sending the same JSON as a string (encoded per request)', bareTextRps.toFixed(0), pct(bareTextRps)],
        ['bare fastify route returning the parsed object (serialised per request)', bareObjectRps.toFixed(0), pct(bareObjectRps)],
      ],
    ),
    '',
    "The collector keeps each entry's two parts as bytes, serialised once per fetch, and the assembled document as ready-to-send bytes, reassembled only after a change and at most every 200 ms while fetch results stream in; an answer writes those bytes and then its own generatedAt, without copying the document. The bare routes run in the benchmark process itself, which also generates the load, so they are somewhat disadvantaged. On this shared 2-core machine the figures, ratios included, vary a lot between runs.",
  ].join('\n');
  const row = (measure: string, value: string): ResultRow => ({ measure, value, baseline: '-', ratio: '-', goal: '-', met: '-' });
  const rps = (measure: string, value: number): ResultRow => ({
    measure,
    value: `${value.toFixed(0)}/s`,
    baseline: `bare fastify, same bytes: ${bareBytesRps.toFixed(0)}/s`,
    ratio: ratio(value, bareBytesRps),
    goal: '-',
    met: '-',
  });
  writeResults('Collector', [
    row(`one fetch of each of ${N} resources in process, median of 3`, `${cycleMs.toFixed(0)} ms (${(N / (cycleMs / 1000)).toFixed(0)} fetches/s; ${ok} ok)`),
    row('how late fetches started at the default 5 s interval (last 1,000)', lag ? `median ${lag.p50.toFixed(0)} ms, worst ${lag.max.toFixed(0)} ms` : 'n/a'),
    row(`RSS of dist/bin/collector, ${N} resources, after 3 fetches each (after the load)`, `${rssIdle.toFixed(0)} MiB (${rssLoaded.toFixed(0)} MiB)`),
    rps(`GET /responses, ${N} resources (${(body.length / 1024).toFixed(0)} KiB), ${CONNECTIONS} connections: collector`, collectorRps),
    rps('the same: bare fastify sending the JSON as a string', bareTextRps),
    rps('the same: bare fastify serialising the parsed object', bareObjectRps),
  ]);
  console.log(md);
}

runBench(main);
