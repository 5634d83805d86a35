// Serving cached documents (issue #17): GET /status of dist/bin/probe at 1,000 targets and
// GET /responses of dist/bin/collector at 200 resources, each next to its baseline in the same run:
// bare fastify in a process of its own sending the very same bytes (one Buffer). Slices alternate
// (program, baseline, baseline, program, …) so that other work on the shared machine hits both
// alike; figures are medians over the slices. Usage: node bench/serving.bench.ts [--program=BIN_DIR]
// (a directory holding other probe/collector executables, e.g. an older build, to compare).
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { blackhole } from '../test/helpers/blackhole.ts';
import { NODE, ROOT, freePort, start, stopAll, tempDir, waitForHttp } from '../test/helpers/process.ts';
import { statusDoc } from './lib/documents.ts';
import { cpuMsOf, loadFigures, type LoadFigures } from './lib/measure.ts';
import { median, met, ratio, table, writeResults, type ResultRow } from './lib/results.ts';
import { runBench } from './lib/run-bench.ts';

const binDir = process.argv.find((a) => a.startsWith('--program='))?.slice('--program='.length) ?? join(ROOT, 'dist', 'bin');
const CONNECTIONS = 16;
const ROUNDS = 8;
const SLICE_S = 1;
const TARGETS = 1000;
const RESOURCES = 200;

interface Compared {
  program: LoadFigures;
  bare: LoadFigures;
  bytes: number;
  /** The program's CPU per second when not asked anything. */
  idleCpuMsPerS: number;
}

/** Starts the bare fastify baseline serving `body`; returns its URL. */
async function bareServer(body: string | Buffer): Promise<{ url: string; pid: number }> {
  const file = join(tempDir('starmap-bench-'), 'body.json');
  writeFileSync(file, body);
  const port = await freePort();
  const p = start(NODE, [join(ROOT, 'bench', 'lib', 'bare-server.ts'), file, String(port)]);
  const url = `http://127.0.0.1:${port}/same-bytes`;
  await waitForHttp(url);
  return { url, pid: p.child.pid! };
}

interface Server {
  url: string;
  pid: number;
}

/** CPU a process uses per second while nothing is asked of it (its own background work), ms. */
async function idleCpuRate(pid: number, seconds: number): Promise<number> {
  const c0 = cpuMsOf(pid);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  return (cpuMsOf(pid) - c0) / ((performance.now() - t0) / 1000);
}

async function compare(programServer: Server, bareServer: Server): Promise<Compared> {
  const idle = new Map<Server, number>();
  // CPU per request counts the server's CPU above its idle rate (the probe checks its targets and
  // the collector fetches meanwhile; that is reported apart).
  const slice = async (s: Server) => {
    const f = await loadFigures(s.url, SLICE_S, CONNECTIONS, s.pid);
    return { ...f, cpuUs: f.cpuUs - ((idle.get(s) ?? 0) * f.seconds * 1000) / f.requests };
  };
  idle.set(programServer, await idleCpuRate(programServer.pid, 3));
  idle.set(bareServer, await idleCpuRate(bareServer.pid, 1));
  await slice(programServer);
  await slice(bareServer);
  const program: LoadFigures[] = [];
  const bare: LoadFigures[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // ABBA order: neither side always goes first.
    if (round % 2 === 0) {
      program.push(await slice(programServer));
      bare.push(await slice(bareServer));
    } else {
      bare.push(await slice(bareServer));
      program.push(await slice(programServer));
    }
  }
  const med = (xs: LoadFigures[]): LoadFigures => ({
    rps: median(xs.map((x) => x.rps)),
    p50: median(xs.map((x) => x.p50)),
    p99: median(xs.map((x) => x.p99)),
    bytes: xs[0]!.bytes,
    cpuUs: median(xs.map((x) => x.cpuUs)),
    requests: median(xs.map((x) => x.requests)),
    seconds: median(xs.map((x) => x.seconds)),
  });
  return { program: med(program), bare: med(bare), bytes: program[0]!.bytes, idleCpuMsPerS: idle.get(programServer)! };
}

/** Issue 17's goals: throughput at least 0.8× the baseline's, p99 at most 2×. */
function resultRows(name: string, c: Compared): ResultRow[] {
  const bare = 'bare fastify, same bytes';
  return [
    {
      measure: `${name}: requests/s`,
      value: c.program.rps.toFixed(0),
      baseline: `${bare}: ${c.bare.rps.toFixed(0)}`,
      ratio: ratio(c.program.rps, c.bare.rps),
      goal: '≥ 0.8×',
      met: met(c.program.rps / c.bare.rps >= 0.8),
    },
    {
      measure: `${name}: p99`,
      value: `${c.program.p99.toFixed(1)} ms`,
      baseline: `${c.bare.p99.toFixed(1)} ms`,
      ratio: ratio(c.program.p99, c.bare.p99),
      goal: '≤ 2×',
      met: met(c.program.p99 / c.bare.p99 <= 2),
    },
    {
      measure: `${name}: server CPU per request`,
      value: `${c.program.cpuUs.toFixed(0)} µs`,
      baseline: `${c.bare.cpuUs.toFixed(0)} µs`,
      ratio: ratio(c.program.cpuUs, c.bare.cpuUs),
      goal: '-',
      met: '-',
    },
  ];
}

function rows(name: string, c: Compared): (string | number)[][] {
  return [
    [
      name,
      c.program.rps.toFixed(0),
      `${(c.program.rps / c.bare.rps).toFixed(2)}×`,
      `${c.program.p50.toFixed(1)} ms`,
      `${c.program.p99.toFixed(1)} ms`,
      `${(c.program.p99 / c.bare.p99).toFixed(2)}×`,
      `${c.program.cpuUs.toFixed(0)} µs (${(c.program.cpuUs / c.bare.cpuUs).toFixed(2)}×)`,
    ],
    [
      'bare fastify, the same bytes as a Buffer (baseline)',
      c.bare.rps.toFixed(0),
      '1.00×',
      `${c.bare.p50.toFixed(1)} ms`,
      `${c.bare.p99.toFixed(1)} ms`,
      '1.00×',
      `${c.bare.cpuUs.toFixed(0)} µs`,
    ],
  ];
}

async function probeStatus(): Promise<Compared> {
  const open = net.createServer((c) => c.destroy());
  await new Promise<void>((r) => open.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, r));
  const openPort = (open.address() as net.AddressInfo).port;
  const refusedPort = await freePort();
  const hole = await blackhole('127.0.0.1');
  const urls = Array.from({ length: TARGETS }, (_, i) => `127.0.0.1:${[openPort, refusedPort, hole.port][i % 3]}`);
  const file = join(tempDir('starmap-bench-'), 'urls.txt');
  writeFileSync(file, urls.join('\n'));
  const port = await freePort();
  // Every target checked every 5 s (the default): results stream in while /status is read, as in real use.
  const probe = start(join(binDir, 'probe'), [`--urls-file=${file}`, '--http-address=127.0.0.1', `--http-port=${port}`, '--log-level=warn']);
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(`${base}/healthz`);
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline && ((await (await fetch(`${base}/healthz`)).json()) as { cycles: number }).cycles < 1)
    await new Promise((r) => setTimeout(r, 200));
  const bare = await bareServer(Buffer.from(await (await fetch(`${base}/status`)).arrayBuffer()));
  const c = await compare({ url: `${base}/status`, pid: probe.child.pid! }, bare);
  await probe.stop();
  open.close();
  hole.close();
  return c;
}

async function collectorResponses(): Promise<Compared> {
  const docs = Array.from({ length: RESOURCES }, (_, i) => statusDoc(i, RESOURCES));
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(docs[Number(req.url!.split('/')[2])] ?? '{}');
  });
  await new Promise<void>((r) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, r));
  const sport = (server.address() as net.AddressInfo).port;
  const resources = Array.from({ length: RESOURCES }, (_, i) => ({ id: `probe-${i}`, url: `http://127.0.0.1:${sport}/status/${i}` }));
  const file = join(tempDir('starmap-bench-'), 'resources.json');
  writeFileSync(file, JSON.stringify(resources));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const collector = start(join(binDir, 'collector'), [`--resources-file=${file}`, '--http-address=127.0.0.1', `--http-port=${port}`, '--log-level=warn']);
  await waitForHttp(`${base}/healthz`);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && ((await (await fetch(`${base}/healthz`)).json()) as { fetches: number }).fetches < 2 * RESOURCES)
    await new Promise((r) => setTimeout(r, 250));
  const bare = await bareServer(Buffer.from(await (await fetch(`${base}/responses`)).arrayBuffer()));
  const c = await compare({ url: `${base}/responses`, pid: collector.child.pid! }, bare);
  await collector.stop();
  server.close();
  return c;
}

async function main(): Promise<void> {
  const load0 = loadavg()[0]!;
  const status = await probeStatus();
  console.log(
    `/status: probe ${status.program.rps.toFixed(0)}/s p99 ${status.program.p99.toFixed(1)} ms; bare ${status.bare.rps.toFixed(0)}/s p99 ${status.bare.p99.toFixed(1)} ms`,
  );
  const responses = await collectorResponses();
  console.log(
    `/responses: collector ${responses.program.rps.toFixed(0)}/s p99 ${responses.program.p99.toFixed(1)} ms; bare ${responses.bare.rps.toFixed(0)}/s p99 ${responses.bare.p99.toFixed(1)} ms`,
  );
  await stopAll();
  const md = [
    `${CONNECTIONS} keep-alive connections, one request in flight on each, from the benchmark process; ${ROUNDS} alternating ${SLICE_S} s slices per server after a 1 s warm-up each, medians of the slices. Each baseline is bare fastify in its own process sending the very same bytes as one Buffer. Server CPU per request is the server process' CPU time during a slice above its idle rate, per request; idle, the probe used ${status.idleCpuMsPerS.toFixed(0)} ms of CPU per second (checking its targets, a third of them timing out) and the collector ${responses.idleCpuMsPerS.toFixed(0)} ms (fetching). Load average ${load0.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end (2 cores shared with other work).`,
    '',
    table(
      ['server', 'requests/s', 'vs baseline', 'p50', 'p99', 'p99 vs baseline', 'server CPU per request'],
      [
        ...rows(`dist/bin/probe GET /status, ${TARGETS} targets checked every 5 s (${(status.bytes / 1024).toFixed(0)} KiB)`, status),
        ...rows(`dist/bin/collector GET /responses, ${RESOURCES} resources fetched every 5 s (${(responses.bytes / 1024).toFixed(0)} KiB)`, responses),
      ],
    ),
  ].join('\n');
  writeResults('Serving cached documents', [
    ...resultRows(`probe GET /status, ${TARGETS} targets (${(status.bytes / 1024).toFixed(0)} KiB), ${CONNECTIONS} connections`, status),
    ...resultRows(`collector GET /responses, ${RESOURCES} resources (${(responses.bytes / 1024).toFixed(0)} KiB)`, responses),
  ]);
  console.log(md);
  process.exit(0);
}

runBench(main);
