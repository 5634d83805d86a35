// Measurements the benchmarks share: a process' resident memory, and the request rate an HTTP
// endpoint sustains under a fixed number of keep-alive connections.
import { readFileSync } from 'node:fs';
import { Pool } from 'undici';

/** Resident set size of a running process in MiB (NaN when /proc does not say). */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
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
