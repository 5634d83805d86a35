// One side of a checks benchmark, run in a fresh process (so that V8 flags such as
// --optimize-for-size can differ, and no side inherits the other's heap): `probe` runs the probe's
// engine (probe/probe.ts, as dist/bin/probe does) over the targets, `bare` the baseline loop with the
// same concurrency and timeout (net.connect for TCP targets, http.request for HTTP ones). It runs
// CYCLES cycles back to back and prints one JSON line: per cycle its wall time and the process'
// CPU time, and how late each never-answered target was reported after its timeout (last cycle).
// Usage: node [flags] bench/lib/check-worker.ts probe|bare TARGETS_FILE TIMEOUT_MS CONCURRENCY CYCLES
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import pino from 'pino';
import { Probe } from '../../probe/probe.ts';
import { parseTarget, type Target } from '../../shared/targets.ts';

export interface WorkerResult {
  cycleMs: number[];
  cpuMs: number[];
  /** Reported latency minus the timeout, for every target that timed out in the last cycle. */
  lateMs: number[];
  checks: number;
  /** Peak resident memory of the process, MiB. */
  maxRssMiB: number;
}

const [mode, file, timeoutArg, concurrencyArg, cyclesArg] = process.argv.slice(2);
const timeoutMs = Number(timeoutArg);
const concurrency = Number(concurrencyArg);
const cycles = Number(cyclesArg);
const targets: Target[] = readFileSync(file!, 'utf8')
  .trim()
  .split('\n')
  .map((t) => parseTarget(t));

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

async function bounded<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** The baseline check: connect (TCP) or GET until the response head (HTTP), bounded by a timer. */
function bareCheck(t: Target, late: number[]): Promise<void> {
  const t0 = performance.now();
  return new Promise<void>((resolve) => {
    let timer: NodeJS.Timeout;
    if (t.kind === 'http') {
      const req = http.request({ host: t.host, port: t.port, path: '/', agent: false, headers: { connection: 'close' } });
      const done = (timedOut: boolean) => {
        clearTimeout(timer);
        req.destroy();
        if (timedOut) late.push(performance.now() - t0 - timeoutMs);
        resolve();
      };
      timer = setTimeout(() => done(true), timeoutMs);
      req.once('response', (res) => {
        res.destroy();
        done(false);
      });
      req.once('error', () => done(false));
      req.end();
    } else {
      const s = net.connect({ host: t.host, port: t.port, noDelay: true });
      const done = (timedOut: boolean) => {
        clearTimeout(timer);
        s.destroy();
        if (timedOut) late.push(performance.now() - t0 - timeoutMs);
        resolve();
      };
      timer = setTimeout(() => done(true), timeoutMs);
      s.once('connect', () => done(false));
      s.once('error', () => done(false));
    }
  });
}

async function bare(): Promise<WorkerResult> {
  const result: WorkerResult = { cycleMs: [], cpuMs: [], lateMs: [], checks: targets.length, maxRssMiB: 0 };
  for (let c = 0; c < cycles; c++) {
    const late: number[] = [];
    const w0 = performance.now();
    const c0 = cpuMs();
    await bounded(targets, concurrency, (t) => bareCheck(t, late));
    result.cycleMs.push(performance.now() - w0);
    result.cpuMs.push(cpuMs() - c0);
    result.lateMs = late;
  }
  return result;
}

async function probe(): Promise<WorkerResult> {
  const result: WorkerResult = { cycleMs: [], cpuMs: [], lateMs: [], checks: targets.length, maxRssMiB: 0 };
  let c0 = cpuMs();
  let resolveDone: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  const engine = new Probe({
    targets,
    intervalMs: 1,
    concurrency,
    check: { timeoutMs },
    logger: pino({ level: 'silent' }),
    onCycle: (s) => {
      const c = cpuMs();
      result.cycleMs.push(s.durationMs);
      result.cpuMs.push(c - c0);
      c0 = c;
      if (result.cycleMs.length >= cycles) resolveDone();
    },
  });
  engine.start();
  await done;
  await engine.stop();
  result.lateMs = engine.state
    .statuses()
    .filter((s) => s.reason === 'timeout')
    .map((s) => s.latencyMs! - timeoutMs);
  return result;
}

const out = mode === 'probe' ? await probe() : await bare();
out.maxRssMiB = process.resourceUsage().maxRSS / 1024;
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
