// Probe benchmarks. Everything runs on loopback: open targets (a listener on 0.0.0.0 reached via
// many 127.x.y.z addresses), refused targets (a port nobody listens on) and never-answered ones
// (a listener whose accept queue is full, so SYNs are dropped). Each figure is printed next to a
// baseline measured in the same run.
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { runBounded } from '../shared/periodic.ts';
import { parseTarget, type Target } from '../shared/targets.ts';
import { Probe } from '../probe/probe.ts';
import { blackhole } from '../test/helpers/blackhole.ts';
import { ROOT, freePort, start, stopAll, tempDir, waitForHttp } from '../test/helpers/process.ts';
import { rssOf } from './lib/measure.ts';
import { median, percentile, ratio, table, writeResults, type ResultRow } from './lib/results.ts';
import { runBench } from './lib/run-bench.ts';

const TIMEOUT_MS = 1000;
const CONCURRENCY = 1000;
const BIN = join(ROOT, 'dist', 'bin', 'probe');

function address(i: number): string {
  // 127.1.0.0 upwards: distinct target strings that all reach the loopback interface.
  return `127.${1 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
}

async function makeTargets(n: number, openPort: number, refusedPort: number, holePort: number): Promise<Target[]> {
  const targets: Target[] = [];
  for (let i = 0; i < n; i++) {
    const port = i % 3 === 0 ? openPort : i % 3 === 1 ? refusedPort : holePort;
    targets.push(parseTarget(`${address(i)}:${port}`));
  }
  return targets;
}

/** The baseline: a bare net.connect loop with the same concurrency and timeout. */
async function bareCycle(targets: Target[]): Promise<number> {
  const t0 = performance.now();
  await runBounded(
    targets,
    CONCURRENCY,
    (t) =>
      new Promise<void>((resolve) => {
        const s = net.connect({ host: t.host, port: t.port });
        const done = () => {
          clearTimeout(timer);
          s.destroy();
          resolve();
        };
        const timer = setTimeout(done, TIMEOUT_MS);
        s.once('connect', done);
        s.once('error', done);
      }),
  );
  return performance.now() - t0;
}

async function probeCycles(targets: Target[], cycles: number): Promise<{ durations: number[]; timeoutLatencies: number[] }> {
  const durations: number[] = [];
  const logger = pino({ level: 'silent' });
  let resolveDone: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  const probe = new Probe({
    targets,
    intervalMs: 1,
    concurrency: CONCURRENCY,
    check: { timeoutMs: TIMEOUT_MS },
    logger,
    onCycle: (s) => {
      durations.push(s.durationMs);
      if (durations.length >= cycles) resolveDone();
    },
  });
  probe.start();
  await done;
  await probe.stop();
  const timeoutLatencies = probe.state
    .statuses()
    .filter((s) => s.reason === 'timeout')
    .map((s) => s.latencyMs!);
  return { durations, timeoutLatencies };
}

async function main(): Promise<void> {
  const open = net.createServer((c) => c.destroy());
  // A deep accept queue, or the "open" listener itself drops SYNs under a burst of 1,000 connects.
  await new Promise<void>((r) => open.listen({ port: 0, host: '0.0.0.0', backlog: 4096 }, r));
  const openPort = (open.address() as net.AddressInfo).port;
  const refusedPort = await freePort('0.0.0.0');
  const hole = await blackhole('0.0.0.0');

  // 1. Cycle time.
  const cycleRows: (string | number)[][] = [];
  const results: ResultRow[] = [];
  for (const n of [1000, 10_000]) {
    const targets = await makeTargets(n, openPort, refusedPort, hole.port);
    const bare: number[] = [];
    for (let i = 0; i < 2; i++) bare.push(await bareCycle(targets));
    const { durations, timeoutLatencies } = await probeCycles(targets, 3);
    const probeMs = median(durations);
    const bareMs = median(bare);
    const lateP99 = percentile(timeoutLatencies, 99) - TIMEOUT_MS;
    const lateMax = Math.max(...timeoutLatencies) - TIMEOUT_MS;
    cycleRows.push([
      n,
      `${probeMs.toFixed(0)} ms`,
      `${bareMs.toFixed(0)} ms`,
      `${((bareMs / probeMs) * 100).toFixed(0)} %`,
      `${(n / (probeMs / 1000)).toFixed(0)}/s`,
      `+${lateP99.toFixed(0)} ms / +${lateMax.toFixed(0)} ms`,
    ]);
    console.log(`cycle ${n}: probe ${probeMs.toFixed(0)} ms, bare ${bareMs.toFixed(0)} ms`);
    results.push(
      {
        measure: `probe cycle, ${n} targets (a third each open, refused, never answered), median of 3`,
        value: `${probeMs.toFixed(0)} ms (${(n / (probeMs / 1000)).toFixed(0)} checks/s)`,
        baseline: `bare net.connect loop: ${bareMs.toFixed(0)} ms`,
        ratio: ratio(probeMs, bareMs),
        goal: '-',
        met: '-',
      },
      {
        measure: `never-answered reported after timeout, ${n} targets, p99 (max)`,
        value: `+${lateP99.toFixed(0)} ms (+${lateMax.toFixed(0)} ms)`,
        baseline: '-',
        ratio: '-',
        goal: '-',
        met: '-',
      },
    );
  }

  // 2. RSS of the built probe at 1,000 and 10,000 targets, after a few cycles.
  const rssRows: (string | number)[][] = [];
  const rss: ResultRow[] = [];
  const procs: ReturnType<typeof start>[] = [];
  for (const n of [1000, 10_000]) {
    // 10,000 targets do not fit in one command-line argument (128 KiB): use --urls-file.
    const file = join(tempDir('starmap-bench-'), 'urls.txt');
    writeFileSync(file, (await makeTargets(n, openPort, refusedPort, hole.port)).map((t) => t.url).join('\n'));
    const port = await freePort();
    const p = start(BIN, [`--urls-file=${file}`, '--http-address=127.0.0.1', `--http-port=${port}`, '--http-probe-seconds=1', '--log-level=warn']);
    procs.push(p);
    const url = `http://127.0.0.1:${port}`;
    await waitForHttp(`${url}/healthz`);
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const h = (await (await fetch(`${url}/healthz`)).json()) as { cycles: number };
      if (h.cycles >= 3) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const mib = rssOf(p.child.pid!);
    rssRows.push([n, `${mib.toFixed(0)} MiB`]);
    rss.push({
      measure: `RSS of dist/bin/probe, ${n} targets, after 3 cycles`,
      value: `${mib.toFixed(0)} MiB`,
      baseline: '-',
      ratio: '-',
      goal: '-',
      met: '-',
    });
  }

  for (const p of procs) await p.stop();

  open.close();
  hole.close();

  const md = [
    `Targets are a third open, a third refused and a third never answered (SYN dropped), timeout ${TIMEOUT_MS} ms, concurrency ${CONCURRENCY}. The baseline is a bare \`net.connect\` loop with the same concurrency and timeout, in the same run.`,
    '',
    table(
      [
        'targets',
        'probe cycle (median of 3)',
        'bare net.connect cycle',
        'probe rate vs baseline',
        'checks per second',
        'never-answered reported after timeout (p99 / max)',
      ],
      cycleRows,
    ),
    '',
    table(['targets', 'RSS of dist/bin/probe after 3 cycles'], rssRows),
    '',
    "dist/bin/probe runs with V8's default flags (scripts/lib/exec-argv.ts). With --optimize-for-size, as until issue #17, RSS stayed near 95-99 MiB at 10,000 targets (2026-11-21), at twice the CPU per check (bench/checks.bench.ts); a bare net.connect loop over 10,000 targets peaks at ~173 MiB itself. GET /status and start-up are measured by bench/serving.bench.ts and bench/startup.bench.ts.",
  ].join('\n');
  writeResults('Probe', [...results, ...rss]);
  console.log(md);
  await stopAll(); // removes the urls files' folders
  process.exit(0);
}

runBench(main);
