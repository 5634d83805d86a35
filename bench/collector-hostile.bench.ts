// What a hostile resource costs the built collector (dist/bin/collector), each figure next to a
// baseline measured in the same run: memory (RSS per resource) and time (CPU per fetch, GET
// /responses latency and size) for 10,000-deep JSON and 1 MiB JSON bombs, against resources of
// the same size that are honest probe documents; and the refresh of healthy resources while 1,000
// blackholed ones are collected too, against the same healthy resources alone. All on loopback.
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { blackhole } from '../test/helpers/blackhole.ts';
import { NODE, ROOT, freePort, start, stopAll, tempDir, waitForHttp } from '../test/helpers/process.ts';
import { request } from 'undici';
import { rssOf } from './lib/measure.ts';
import { median, percentile, ratio, table, writeResults, type ResultRow } from './lib/results.ts';
import { runBench } from './lib/run-bench.ts';

const BIN = join(ROOT, 'dist', 'bin', 'collector');
const MiB = 1024 * 1024;

function probeStatus(targets: number): string {
  return JSON.stringify({
    status: {
      targets: Array.from({ length: targets }, (_v, i) => ({
        reachable: i % 3 !== 0,
        url: `http://svc-${i}.bench:9000/status`,
        reason: 'ok',
        message: null,
        latencyMs: 1.23,
        statusCode: 200,
        checkedAt: '2026-11-21T18:00:00.000Z',
        changedAt: '2026-11-21T17:00:00.000Z',
      })),
    },
  });
}

const BODIES: Record<string, string> = {
  small: probeStatus(10),
  deep: '['.repeat(10_000) + ']'.repeat(10_000),
  big: probeStatus(5000),
  bomb: `[${Array(Math.floor(MiB / 3) - 1)
    .fill('{}')
    .join(',')}]`,
};

/** CPU seconds (user + system) the process has used. */
function cpuOf(pid: number): number {
  // Fields after the command name: state is the first, utime and stime the 12th and 13th (ticks of 10 ms).
  const fields = (/\) (.*)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1] ?? '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Health {
  fetches: number;
}

async function health(base: string): Promise<Health> {
  return (await (await fetch(`${base}/healthz`)).json()) as Health;
}

async function until(what: string, deadlineMs: number, test: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts the built collector (or, `fromSource`, collector/main.ts on plain Node; both with V8's
 * default flags since issue #17, see scripts/lib/exec-argv.ts) on a resources file; returns its base URL
 * and process.
 */
async function collector(resources: { id: string; url: string }[], args: string[] = [], fromSource = false) {
  const file = join(tempDir('starmap-bench-'), 'resources.json');
  writeFileSync(file, JSON.stringify(resources));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const flags = [`--resources-file=${file}`, '--http-address=127.0.0.1', `--http-port=${port}`, '--log-level=error', ...args];
  const proc = fromSource ? start(NODE, ['collector/main.ts', ...flags]) : start(BIN, flags);
  await waitForHttp(`${base}/healthz`);
  return { base, proc, pid: proc.child.pid! };
}

interface Cost {
  kind: string;
  fromSource: boolean;
  count: number;
  rssPerResource: number;
  cpuPerFetchMs: number;
  responsesP50: number;
  responsesP99: number;
  responsesBytes: number;
  status: string;
}

/** `count` resources all serving BODIES[kind], fetched every 5 s: memory and time. */
async function cost(web: string, kind: string, count: number, emptyRss: number, fromSource = false): Promise<Cost> {
  const resources = Array.from({ length: count }, (_v, i) => ({ id: `${kind}-${i}`, url: `${web}/${kind}/${i}` }));
  const c = await collector(resources, ['--timeout-seconds=5'], fromSource);
  await until(`${kind}: 2 fetches each`, 60_000, async () => (await health(c.base)).fetches >= 2 * count);
  // CPU per fetch over a quiet 10 s (two intervals), then GET /responses, one at a time, for 5 s.
  const cpu0 = cpuOf(c.pid);
  const f0 = (await health(c.base)).fetches;
  await new Promise((r) => setTimeout(r, 10_000));
  const f1 = (await health(c.base)).fetches;
  const cpuPerFetchMs = ((cpuOf(c.pid) - cpu0) * 1000) / Math.max(1, f1 - f0);
  const times: number[] = [];
  let bytes = 0;
  let status = '';
  const until5s = Date.now() + 5000;
  while (Date.now() < until5s) {
    // undici's request rather than fetch: web streams would add seconds to a 100 MB answer.
    const t0 = performance.now();
    const res = await request(`${c.base}/responses`);
    const body = await res.body.arrayBuffer();
    times.push(performance.now() - t0);
    bytes = body.byteLength;
    status = String(res.statusCode);
  }
  const rss = rssOf(c.pid);
  await c.proc.stop();
  return {
    kind,
    fromSource,
    count,
    rssPerResource: (rss - emptyRss) / count,
    cpuPerFetchMs,
    responsesP50: median(times),
    responsesP99: percentile(times, 99),
    responsesBytes: bytes,
    status,
  };
}

/** Gaps between successive fetches of the healthy resources over `seconds`, in ms. */
async function refreshGaps(base: string, ids: string[], seconds: number): Promise<number[]> {
  const last = new Map<string, number>();
  const gaps: number[] = [];
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    const doc = (await (await fetch(`${base}/responses`)).json()) as { details: Record<string, { fetchedAt: string | null }> };
    for (const id of ids) {
      const at = Date.parse(doc.details[id]?.fetchedAt ?? '');
      if (Number.isNaN(at)) continue;
      const prev = last.get(id);
      if (prev !== undefined && at !== prev) gaps.push(at - prev);
      last.set(id, at);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return gaps;
}

async function main(): Promise<void> {
  const server = http.createServer((req, res) => {
    const kind = req.url!.split('/')[1]!;
    res.writeHead(200, { 'content-type': 'application/json' }).end(BODIES[kind] ?? '{}');
  });
  await new Promise<void>((r) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, r));
  const web = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;

  const empty = await collector([]);
  const emptyRss = rssOf(empty.pid);
  await empty.proc.stop();

  const costs: Cost[] = [];
  for (const [kind, count] of [
    ['small', 25],
    ['deep', 25],
    ['big', 25],
    ['bomb', 25],
    ['big', 100],
    ['bomb', 100],
  ] as const) {
    const c = await cost(web, kind, count, emptyRss);
    costs.push(c);
    console.log(
      `${kind} ×${count}: ${c.rssPerResource.toFixed(2)} MiB/resource, ${c.cpuPerFetchMs.toFixed(2)} ms CPU/fetch, GET /responses p50 ${c.responsesP50.toFixed(1)} ms p99 ${c.responsesP99.toFixed(1)} ms, ${c.responsesBytes} bytes`,
    );
  }
  // The honest 1 MiB documents once more from source (the executable's bundle vs the source modules).
  const plainNode = await cost(web, 'big', 100, emptyRss, true);
  console.log(
    `big ×100 from source: ${plainNode.cpuPerFetchMs.toFixed(2)} ms CPU/fetch, GET /responses p50 ${plainNode.responsesP50.toFixed(1)} ms p99 ${plainNode.responsesP99.toFixed(1)} ms`,
  );

  // Healthy resources' refresh with 1,000 blackholed ones beside them (defaults: 5 s, 2 s, 100).
  const hole = await blackhole();
  const healthy = Array.from({ length: 10 }, (_v, i) => ({ id: `ok-${i}`, url: `${web}/small/${i}` }));
  const holes = Array.from({ length: 1000 }, (_v, i) => ({ id: `hole-${i}`, url: `http://${hole.host}:${hole.port}/${i}` }));
  const ids = healthy.map((h) => h.id);
  const alone = await collector(healthy);
  const gapsAlone = await refreshGaps(alone.base, ids, 30);
  await alone.proc.stop();
  const crowded = await collector([...healthy, ...holes]);
  const gapsCrowded = await refreshGaps(crowded.base, ids, 30);
  const rssCrowded = rssOf(crowded.pid);
  await crowded.proc.stop();
  hole.close();
  console.log(
    `healthy refresh: alone median ${median(gapsAlone)} ms max ${Math.max(...gapsAlone)} ms; with 1,000 blackholed median ${median(gapsCrowded)} ms max ${Math.max(...gapsCrowded)} ms`,
  );

  await stopAll();
  server.close();

  const byKey = (kind: string, count: number) => costs.find((c) => c.kind === kind && c.count === count && !c.fromSource)!;
  const row = (c: Cost, base: Cost) => [
    `${c.kind === 'deep' ? '10,000-deep JSON' : c.kind === 'bomb' ? 'JSON bomb, 1 MiB of `[{},{},…]`' : c.kind === 'big' ? 'probe status, 1 MiB (baseline)' : 'probe status, 1.6 KiB (baseline)'} × ${c.count}${c.fromSource ? ', from source' : ''}`,
    `${c.rssPerResource.toFixed(2)} MiB${c === base ? '' : ` (${(c.rssPerResource - base.rssPerResource).toFixed(2)} vs baseline)`}`,
    `${c.cpuPerFetchMs.toFixed(2)} ms${c === base ? '' : ` (${(c.cpuPerFetchMs / base.cpuPerFetchMs).toFixed(2)}×)`}`,
    `${c.responsesP50.toFixed(1)} / ${c.responsesP99.toFixed(1)} ms`,
    `${(c.responsesBytes / 1024).toFixed(1)} KiB`,
    c.status,
  ];
  const head = ['resources (each fetched every 5 s)', 'RSS per resource', 'CPU per fetch', 'GET /responses p50 / p99', 'document', 'status'];
  const md = [
    `dist/bin/collector on loopback, resources served by a local HTTP server, fetched every 5 s (deadline 5 s); each group in a fresh collector, measured after every resource was fetched twice: CPU per fetch over the next quiet 10 s, then 5 s of back-to-back GET /responses (one at a time), then RSS. RSS per resource is above an empty collector's (${emptyRss.toFixed(0)} MiB). Baselines in the same run: honest probe documents of the same order of size. Load average at the end: ${loadavg()[0]!.toFixed(1)} (other work shares the machine).`,
    '',
    table(head, [
      row(byKey('small', 25), byKey('small', 25)),
      row(byKey('deep', 25), byKey('small', 25)),
      row(byKey('big', 25), byKey('big', 25)),
      row(byKey('bomb', 25), byKey('big', 25)),
      row(byKey('big', 100), byKey('big', 100)),
      row(byKey('bomb', 100), byKey('big', 100)),
      row(plainNode, byKey('big', 100)),
    ]),
    '',
    'A hostile body is refused by a scan of its bytes before it is parsed (too-deep, or too-large for more than one value per 10 bytes of the cap), so it costs its fetch and a one-line entry: less than an honest document of its size, which is kept (as text) and served. Before this, issue #16 measured 25 bombs at 0.9 GB with a 4 s stall of the API and 100 at 2.2 GB with every call over 10 s, and one 10,000-deep resource made GET /responses answer 500.',
    '',
    `What strains the collector here is the honest baseline at 100 × 1 MiB: a 100 MB document, reassembled (one copy) after each change and sent whole on every GET, and 1 MiB of JSON parsed and serialised again per fetch. The executable against the same code from source (both with V8's default flags; until issue #17 the executables carried --optimize-for-size, which made this 1.9× the CPU per fetch and 11× the GET /responses median): ${(byKey('big', 100).cpuPerFetchMs / plainNode.cpuPerFetchMs).toFixed(1)}× the CPU per fetch and ${(byKey('big', 100).responsesP50 / plainNode.responsesP50).toFixed(1)}× the GET /responses median.`,
    '',
    table(
      ['10 healthy resources (defaults: every 5 s, deadline 2 s, concurrency 100), over 30 s', 'refresh gap median', 'refresh gap max', 'RSS'],
      [
        ['alone (baseline)', `${median(gapsAlone)} ms`, `${Math.max(...gapsAlone)} ms`, ''],
        [
          'with 1,000 blackholed resources',
          `${median(gapsCrowded)} ms`,
          `${Math.max(...gapsCrowded)} ms`,
          `${rssCrowded.toFixed(0)} MiB (${(((rssCrowded - emptyRss) / 1000) * 1024).toFixed(0)} KiB per blackholed resource)`,
        ],
      ],
    ),
    '',
    "Each resource runs on its own clock, and blackholed ones (their last fetch timed out) get their own pool of slots, so healthy resources keep their 5 s (±5 %); before, cycles over every resource stretched it to 16-27 s. The first 30 s include the blackholed resources' first fetches, the only ones that can hold healthy fetches up.",
  ].join('\n');
  const name = (c: Cost) =>
    `${c.kind === 'deep' ? '10,000-deep JSON' : c.kind === 'bomb' ? 'JSON bomb, 1 MiB of [{},…]' : c.kind === 'big' ? 'probe status, 1 MiB' : 'probe status, 1.6 KiB'} × ${c.count}${c.fromSource ? ', from source' : ''}`;
  const costRows = (c: Cost, base: Cost): ResultRow[] => [
    {
      measure: `RSS per resource: ${name(c)}`,
      value: `${c.rssPerResource.toFixed(2)} MiB`,
      baseline: c === base ? '-' : `${name(base)}: ${base.rssPerResource.toFixed(2)} MiB`,
      ratio: c === base ? '-' : ratio(c.rssPerResource, base.rssPerResource),
      goal: '-',
      met: '-',
    },
    {
      measure: `CPU per fetch: ${name(c)}`,
      value: `${c.cpuPerFetchMs.toFixed(2)} ms`,
      baseline: c === base ? '-' : `${base.cpuPerFetchMs.toFixed(2)} ms`,
      ratio: c === base ? '-' : ratio(c.cpuPerFetchMs, base.cpuPerFetchMs),
      goal: '-',
      met: '-',
    },
    {
      measure: `GET /responses p50 / p99: ${name(c)} (${(c.responsesBytes / 1024).toFixed(1)} KiB, ${c.status})`,
      value: `${c.responsesP50.toFixed(1)} / ${c.responsesP99.toFixed(1)} ms`,
      baseline: c === base ? '-' : `${base.responsesP50.toFixed(1)} / ${base.responsesP99.toFixed(1)} ms`,
      ratio: c === base ? '-' : ratio(c.responsesP50, base.responsesP50),
      goal: '-',
      met: '-',
    },
  ];
  writeResults('Collector: hostile resources', [
    ...costRows(byKey('small', 25), byKey('small', 25)),
    ...costRows(byKey('deep', 25), byKey('small', 25)),
    ...costRows(byKey('big', 25), byKey('big', 25)),
    ...costRows(byKey('bomb', 25), byKey('big', 25)),
    ...costRows(byKey('big', 100), byKey('big', 100)),
    ...costRows(byKey('bomb', 100), byKey('big', 100)),
    ...costRows(plainNode, byKey('big', 100)),
    {
      measure: '10 healthy resources (every 5 s), refresh gap median (max) over 30 s, with 1,000 blackholed',
      value: `${median(gapsCrowded)} ms (${Math.max(...gapsCrowded)} ms)`,
      baseline: `alone: ${median(gapsAlone)} ms (${Math.max(...gapsAlone)} ms)`,
      ratio: ratio(median(gapsCrowded), median(gapsAlone)),
      goal: '-',
      met: '-',
    },
    {
      measure: 'RSS with 1,000 blackholed resources',
      value: `${rssCrowded.toFixed(0)} MiB (${(((rssCrowded - emptyRss) / 1000) * 1024).toFixed(0)} KiB each)`,
      baseline: `empty collector: ${emptyRss.toFixed(0)} MiB`,
      ratio: ratio(rssCrowded, emptyRss),
      goal: '-',
      met: '-',
    },
  ]);
  console.log(md);
}

runBench(main);
