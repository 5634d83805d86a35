// One GET with undici whose answer is read (the body too), on a connection of its own and within
// one deadline: the collector's fetches, the orchestrator's readiness checks and the scenarios'
// reads. The probe's HTTP checks read only a status code and use Node's own client (checks.ts
// statusOnce).
import type net from 'node:net';
import type * as Undici from 'undici';
import type { Client, Dispatcher } from 'undici';
import { DeadlineExceeded, elapsedMs, type TrackedLookup } from './checks.ts';

/** undici's Client and its request method (what undici's index puts on Dispatcher.prototype). */
interface HttpClient {
  Client: typeof Undici.Client;
  request: (client: Undici.Client, options: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;
}

let undici: Promise<HttpClient> | undefined;

/**
 * undici's Client is loaded when the first exchange starts, not at start-up: the collector and the
 * orchestrator answer their first request before paying for it, and the probe never loads it. Only the files of the Client and of its request method are loaded: undici's index also loads
 * fetch, WebSocket, the cache and proxies, and touches the global Headers, which makes Node load
 * its own copy of undici with TLS and HTTP/2: ~65 ms of CPU and ~15 MiB of RSS more
 * (bench/startup.bench.ts).
 */
export function loadUndici(): Promise<HttpClient> {
  undici ??= Promise.all([import('undici/lib/dispatcher/client.js'), import('undici/lib/api/api-request.js')]).then(([client, api]) => ({
    Client: client.default,
    request: (c, options) => api.default.call(c, options),
  }));
  return undici;
}

/**
 * An HTTP client for exactly one request on a brand-new connection (destroy it afterwards), with
 * the deadline applied to connect, headers and body.
 */
function freshClient(Client: typeof Undici.Client, origin: string, timeoutMs: number, verifyTls: boolean, lookup: TrackedLookup['lookup']): Client {
  return new Client(origin, {
    connect: { timeout: timeoutMs, rejectUnauthorized: verifyTls, ...(lookup ? { lookup: lookup as net.LookupFunction } : {}) },
    pipelining: 0,
    keepAliveTimeout: 1,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
}

/**
 * One GET of `url` on a brand-new connection, with one deadline over connecting (and the name's
 * lookup), TLS, the answer and whatever `read` does with it (the body, usually); the connection is
 * closed right after this returns (in the next turn of the event loop).
 *
 * The deadline is our own timer, raced against the exchange: it ends the call when it fires, not
 * when undici gets round to it. undici keeps an abort that arrives before the socket has connected
 * and reports it only when the connect ends, and its connect timeout runs on a coarse timer that
 * fires up to ~500 ms late, so relying on either made a never-answering target look ~520 ms slower
 * than its timeout (bench/checks.bench.ts).
 */
export async function getOnce<T>(
  url: URL,
  opts: {
    timeoutMs: number;
    verifyTls: boolean;
    headers?: Record<string, string>;
    lookup?: TrackedLookup['lookup'];
    /** When the deadline's clock started (process.hrtime.bigint()), if before this call: the caller's latency clock. */
    startedAt?: bigint;
  },
  read: (res: Dispatcher.ResponseData) => Promise<T>,
): Promise<T> {
  // Loaded before the clock starts (callers load it first too): loading is this process' one-time cost, not the target's.
  const { Client, request } = await loadUndici();
  // Counted from the caller's start: when a thousand checks start at once, setting them all up
  // takes a while, and a deadline counted from each one's own set-up would end late.
  const remainingMs = opts.startedAt === undefined ? opts.timeoutMs : Math.max(0, Math.ceil(opts.timeoutMs - elapsedMs(opts.startedAt)));
  const client = freshClient(Client, url.origin, opts.timeoutMs, opts.verifyTls, opts.lookup);
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceeded(`no complete answer within ${opts.timeoutMs} ms`)), remainingMs);
  });
  const exchange = request(client, {
    method: 'GET',
    path: `${url.pathname}${url.search}`,
    ...(opts.headers ? { headers: opts.headers } : {}),
    reset: true,
    signal: abort.signal,
  }).then(read);
  try {
    return await Promise.race([exchange, deadline]);
  } finally {
    clearTimeout(timer);
    // After the deadline the exchange still ends (in an abort error, once the client is destroyed).
    exchange.catch(() => {});
    // Aborting and destroying cost more than the rest of a check, and when hundreds of targets time
    // out together their deadlines fire in one tick: clean up after every caller has heard of its
    // deadline, so that none is reported later for the clean-up of the others.
    setImmediate(() => {
      abort.abort();
      client.destroy().catch(() => {});
    });
  }
}
