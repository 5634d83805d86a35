import { spawn, type ChildProcess } from 'node:child_process';
// Measurements the benchmarks share: a process' resident memory, and the request rate an HTTP
// endpoint sustains under a fixed number of keep-alive connections.
import { readFileSync, readdirSync } from 'node:fs';
import { Pool } from 'undici';

/** Resident set size of a running process in MiB (NaN when /proc does not say). */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

export interface LoadFigures {
  /** Requests per second. */
  rps: number;
  /** Request latency percentiles, milliseconds. */
  p50: number;
  p99: number;
  /** Bytes of the last body. */
  bytes: number;
  /** CPU the server process used per request, in µs (when its pid was given). */
  cpuUs: number;
  /** Requests made, and over how many seconds. */
  requests: number;
  seconds: number;
}

/**
 * Like load(), with each request's latency (send to the whole body read): requests per second,
 * the median and the 99th percentile.
 */
export async function loadFigures(url: string, seconds: number, connections = 16, serverPid?: number): Promise<LoadFigures> {
  const cpu0 = serverPid === undefined ? NaN : cpuMsOf(serverPid);
  const { origin, pathname } = new URL(url);
  const pool = new Pool(origin, { connections, pipelining: 1 });
  const latencies: number[] = [];
  let bytes = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const start = performance.now();
        const res = await pool.request({ path: pathname, method: 'GET' });
        bytes = (await res.body.arrayBuffer()).byteLength;
        latencies.push(performance.now() - start);
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const cpuUs = serverPid === undefined ? NaN : ((cpuMsOf(serverPid) - cpu0) * 1000) / latencies.length;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)] ?? NaN;
  return { rps: latencies.length / elapsed, p50: at(50), p99: at(99), bytes, cpuUs, requests: latencies.length, seconds: elapsed };
}

/**
 * CPU time a running process has used so far, in ms: the scheduler's nanosecond count of each of
 * its threads (/proc/PID/task/TID/schedstat), summed; where the kernel keeps no such count, user +
 * system time in clock ticks (10 ms resolution), which cannot tell a 25 ms start from a 30 ms one.
 */
export function cpuMsOf(pid: number): number {
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    // no /proc/PID/task: clock ticks below
  }
  let ns = 0;
  for (const tid of tids) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended meanwhile (its time is no longer counted) or there is no schedstat
    }
  }
  if (ns > 0) return ns / 1e6;
  // Fields after the command name, which is in parentheses and may hold spaces: utime is the 12th.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** Requests per second of GET `url` over `seconds`, `connections` requests in flight (one per connection). */
export async function load(url: string, seconds: number, connections = 16): Promise<number> {
  const { origin, pathname } = new URL(url);
  const pool = new Pool(origin, { connections, pipelining: 1 });
  const end = performance.now() + seconds * 1000;
  let count = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const res = await pool.request({ path: pathname, method: 'GET' });
        await res.body.text();
        count++;
      }
    }),
  );
  await pool.close();
  return count / seconds;
}

/** The launch baseline: ms to spawn n `sh -c 'exec sleep 1000'` directly, detached, as the executor does (then killed). */
export async function spawnDirect(n: number): Promise<number> {
  const t0 = performance.now();
  const kids: ChildProcess[] = [];
  await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<void>((res, rej) => {
          const c = spawn('/bin/sh', ['-c', 'exec sleep 1000'], { detached: true, stdio: 'ignore' });
          kids.push(c);
          c.once('spawn', () => res());
          c.once('error', rej);
        }),
    ),
  );
  const ms = performance.now() - t0;
  for (const c of kids) {
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  return ms;
}
