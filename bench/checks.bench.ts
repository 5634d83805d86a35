// The probe's checks next to bare loops (issue #17), each side in a fresh process
// (bench/lib/check-worker.ts), sides alternated and repeated, medians reported:
//   1. HTTP: 1,000 targets, thirds open (an HTTP server), refused and never answered (SYN dropped),
//      timeout 1 s, concurrency 1,000: cycle time, and how late never-answered targets are reported
//      after their timeout; baseline a bare http.request loop with the same concurrency and timeout.
//   2. TCP, CPU-bound: 10,000 targets, half open and half refused: CPU per check and cycle time,
//      the probe under dist/bin/probe's flags and under others; baseline a bare net.connect loop.
// Everything is on loopback (127.x.y.z addresses, so no two targets share a 4-tuple).
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { blackhole } from '../test/helpers/blackhole.ts';
import { NODE, ROOT, freePort, stopAll, tempDir } from '../test/helpers/process.ts';
import type { WorkerResult } from './lib/check-worker.ts';
import { median, met, percentile, ratio, table, writeResults, type ResultRow } from './lib/results.ts';
import { runBench } from './lib/run-bench.ts';
import { EXEC_ARGV } from '../scripts/lib/exec-argv.ts';

/** dist/bin/probe's V8 flags (scripts/lib/exec-argv.ts): the probe's side runs under them. */
const PROBE_FLAGS = EXEC_ARGV['probe'] ?? [];
const WORKER = join(ROOT, 'bench', 'lib', 'check-worker.ts');
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);

function address(i: number): string {
  return `127.${1 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
}

function targetsFile(lines: string[]): string {
  const file = join(tempDir('starmap-bench-'), 'targets.txt');
  writeFileSync(file, lines.join('\n'));
  return file;
}

/** Runs one side in a fresh process; the worker's figures. */
function side(flags: string[], mode: 'probe' | 'bare', file: string, timeoutMs: number, concurrency: number, cycles: number): Promise<WorkerResult> {
  // Asynchronously: this process serves the open HTTP targets meanwhile.
  return new Promise((resolve, reject) => {
    execFile(
      NODE,
      [...flags, WORKER, mode, file, String(timeoutMs), String(concurrency), String(cycles)],
      { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`${mode} worker failed: ${stderr}`));
        else resolve(JSON.parse(stdout.trim().split('\n').pop()!) as WorkerResult);
      },
    );
  });
}

const ms = (x: number) => `${x.toFixed(0)} ms`;
const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(1)} ms`;

async function main(): Promise<void> {
  const load0 = loadavg()[0]!;
  const tcpOpen = net.createServer((c) => c.destroy());
  await new Promise<void>((r) => tcpOpen.listen({ port: 0, host: '0.0.0.0', backlog: 4096 }, r));
  const httpOpen = http.createServer((_req, res) => res.writeHead(200, { connection: 'close' }).end('ok'));
  await new Promise<void>((r) => httpOpen.listen({ port: 0, host: '0.0.0.0', backlog: 4096 }, r));
  const tcpPort = (tcpOpen.address() as net.AddressInfo).port;
  const httpPort = (httpOpen.address() as net.AddressInfo).port;
  const refusedPort = await freePort('0.0.0.0');
  const hole = await blackhole('0.0.0.0');

  // 1. HTTP: lateness and cycle.
  const HTTP_N = 1000;
  const HTTP_TIMEOUT = 1000;
  const httpFile = targetsFile(Array.from({ length: HTTP_N }, (_, i) => `http://${address(i)}:${[httpPort, refusedPort, hole.port][i % 3]}/`));
  const httpRuns: Record<'probe' | 'bare', WorkerResult[]> = { probe: [], bare: [] };
  for (let r = 0; r < REPEATS; r++) {
    for (const mode of r % 2 === 0 ? (['probe', 'bare'] as const) : (['bare', 'probe'] as const)) {
      const flags = mode === 'probe' ? PROBE_FLAGS : [];
      httpRuns[mode].push(await side(flags, mode, httpFile, HTTP_TIMEOUT, HTTP_N, 2));
    }
  }
  const httpRow = (name: string, runs: WorkerResult[]) => {
    const late = runs.flatMap((x) => x.lateMs);
    const cycle = median(runs.map((x) => x.cycleMs.at(-1)!));
    return {
      name,
      cycle,
      late50: percentile(late, 50),
      late99: percentile(late, 99),
      lateMax: Math.max(...late),
      timedOut: median(runs.map((x) => x.lateMs.length)),
    };
  };
  const hp = httpRow('probe engine (probe/probe.ts)', httpRuns.probe);
  const hb = httpRow('bare http.request loop (baseline)', httpRuns.bare);
  console.log(`HTTP cycle: probe ${ms(hp.cycle)} (late p99 ${signed(hp.late99)}), bare ${ms(hb.cycle)} (late p99 ${signed(hb.late99)})`);

  // 2. TCP, CPU-bound: CPU per check with and without --optimize-for-size.
  const TCP_N = 10_000;
  const tcpFile = targetsFile(Array.from({ length: TCP_N }, (_, i) => `${address(i)}:${i % 2 === 0 ? tcpPort : refusedPort}`));
  const variants = [
    { name: 'probe engine, --optimize-for-size (as dist/bin/probe before)', mode: 'probe' as const, flags: ['--optimize-for-size'] },
    { name: `probe engine, ${PROBE_FLAGS.join(' ') || "V8's default flags"} (as dist/bin/probe now)`, mode: 'probe' as const, flags: PROBE_FLAGS },
    { name: 'probe engine, --max-semi-space-size=2', mode: 'probe' as const, flags: ['--max-semi-space-size=2'] },
    { name: 'bare net.connect loop (baseline)', mode: 'bare' as const, flags: [] },
  ];
  const tcpRuns = variants.map(() => [] as WorkerResult[]);
  for (let r = 0; r < REPEATS; r++) {
    const order = r % 2 === 0 ? [0, 1, 2, 3] : [3, 2, 1, 0];
    for (const v of order) tcpRuns[v]!.push(await side(variants[v]!.flags, variants[v]!.mode, tcpFile, 1000, 1000, 4));
  }
  // The first cycle warms up (compiles, grows the heap): cycles 2-4 count.
  const tcpFigures = tcpRuns.map((runs) => ({
    cpuPerCheckUs: (median(runs.flatMap((x) => x.cpuMs.slice(1))) * 1000) / TCP_N,
    cycle: median(runs.flatMap((x) => x.cycleMs.slice(1))),
    rss: median(runs.map((x) => x.maxRssMiB)),
  }));
  const base = tcpFigures[3]!;
  tcpFigures.forEach((f, i) => console.log(`TCP ${variants[i]!.name}: ${f.cpuPerCheckUs.toFixed(1)} µs CPU per check, cycle ${ms(f.cycle)}`));

  httpOpen.close();
  tcpOpen.close();
  hole.close();
  await stopAll();

  const md = [
    `Each side runs in a fresh process (bench/lib/check-worker.ts), sides alternated, ${REPEATS} runs each; medians. Load average ${load0.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end (2 cores shared with other work: wall times are inflated alike, CPU per check less so).`,
    '',
    `HTTP: ${HTTP_N} targets, a third open (an HTTP server answering 200), a third refused, a third never answered (SYN dropped); timeout ${HTTP_TIMEOUT} ms, concurrency ${HTTP_N}; the second cycle of each run.`,
    '',
    table(
      ['HTTP', 'cycle', 'vs baseline', 'never-answered reported after timeout: p50 / p99 / max'],
      [
        [hp.name, ms(hp.cycle), `${(hp.cycle / hb.cycle).toFixed(2)}×`, `${signed(hp.late50)} / ${signed(hp.late99)} / ${signed(hp.lateMax)}`],
        [hb.name, ms(hb.cycle), '1.00×', `${signed(hb.late50)} / ${signed(hb.late99)} / ${signed(hb.lateMax)}`],
      ],
    ),
    '',
    `TCP, CPU-bound: ${TCP_N} targets, half open, half refused (nothing waits for a timeout), concurrency 1000; cycles 2-4 of each run (the first warms up).`,
    '',
    table(
      ['TCP', 'CPU per check', 'vs baseline', 'cycle', 'vs baseline', 'peak RSS'],
      tcpFigures.map((f, i) => [
        variants[i]!.name,
        `${f.cpuPerCheckUs.toFixed(1)} µs`,
        `${(f.cpuPerCheckUs / base.cpuPerCheckUs).toFixed(2)}×`,
        ms(f.cycle),
        `${(f.cycle / base.cycle).toFixed(2)}×`,
        `${f.rss.toFixed(0)} MiB`,
      ]),
    ),
  ].join('\n');
  const now = tcpFigures[1]!;
  const rows: ResultRow[] = [
    {
      measure: `HTTP cycle, ${HTTP_N} targets (a third each open, refused, never answered), timeout ${HTTP_TIMEOUT} ms`,
      value: ms(hp.cycle),
      baseline: `bare http.request loop: ${ms(hb.cycle)}`,
      ratio: ratio(hp.cycle, hb.cycle),
      goal: '≤ 1.1×',
      met: met(hp.cycle / hb.cycle <= 1.1),
    },
    {
      measure: 'never-answered HTTP target reported after its timeout, p99 (max)',
      value: `${signed(hp.late99)} (${signed(hp.lateMax)})`,
      baseline: `${signed(hb.late99)} (${signed(hb.lateMax)})`,
      ratio: '-',
      goal: '≤ +30 ms',
      met: met(hp.late99 <= 30),
    },
    ...tcpFigures.slice(0, 3).flatMap((f, i): ResultRow[] => [
      {
        measure: `CPU per TCP check, ${TCP_N} open + refused: ${variants[i]!.name}`,
        value: `${f.cpuPerCheckUs.toFixed(1)} µs`,
        baseline: `bare net.connect loop: ${base.cpuPerCheckUs.toFixed(1)} µs`,
        ratio: ratio(f.cpuPerCheckUs, base.cpuPerCheckUs),
        goal: f === now ? '≤ 1.5×' : '-',
        met: f === now ? met(f.cpuPerCheckUs / base.cpuPerCheckUs <= 1.5) : '-',
      },
    ]),
    {
      measure: `CPU-bound TCP cycle, ${TCP_N} open + refused: ${variants[1]!.name}`,
      value: ms(now.cycle),
      baseline: ms(base.cycle),
      ratio: ratio(now.cycle, base.cycle),
      goal: '≤ 1.3×',
      met: met(now.cycle / base.cycle <= 1.3),
    },
    {
      measure: `peak RSS over that cycle: ${variants[1]!.name}`,
      value: `${now.rss.toFixed(0)} MiB`,
      baseline: `${base.rss.toFixed(0)} MiB`,
      ratio: ratio(now.rss, base.rss),
      goal: '-',
      met: '-',
    },
  ];
  writeResults('Checks', rows);
  console.log(md);
  process.exit(0);
}

runBench(main);
