// One GET on a connection of its own, within one deadline over the name's lookup, connecting, TLS,
// the answer and whatever the caller reads of it: the probe's HTTP checks (the status code only),
// the collector's fetches and the orchestrator's readiness checks (the body too) and the
// scenarios' pings.
//
// Node's own HTTP client, whose llhttp is built into Node. undici's runs as WebAssembly, and once
// V8 had optimised that module a process held ~17 MiB more: a probe checking one HTTP target
// 74.6 MiB instead of 57.3 MiB after 40 checks (bench/startup.bench.ts).
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type https from 'node:https';
import type net from 'node:net';
import type { TrackedLookup } from './checks.ts';

/** Thrown by getOnce when the exchange did not finish within its deadline. */
export class DeadlineExceeded extends Error {}

/** Milliseconds since `start` (a process.hrtime.bigint()), rounded to 0.01 ms. */
export function elapsedMs(start: bigint): number {
  return Math.round(Number(process.hrtime.bigint() - start) / 1e4) / 100;
}

/** The answer as `read` gets it: its body is Node's IncomingMessage (an async iterable of Buffers). */
export interface Answer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: IncomingMessage;
}

// Shared, without keep-alive and without TLS sessions kept, so that each exchange has a connection
// of its own (Connection: close): a new Agent for each (agent: false) cost a 1,000-target cycle
// ~10 % (bench/checks.bench.ts). node:https (with TLS) loads at the first https URL.
const httpAgent = new http.Agent({ keepAlive: false });
let httpsAgent: https.Agent | undefined;

/** How a request starts: node:http's or node:https' request, with the Agent it goes through. */
interface Client {
  request: (options: https.RequestOptions) => http.ClientRequest;
  agent: http.Agent;
}

/** node:https and its Agent, loaded now: callers load it before their clock starts. */
export function loadHttps(): Client {
  const module = process.getBuiltinModule('node:https');
  httpsAgent ??= new module.Agent({ keepAlive: false, maxCachedSessions: 0 });
  return { request: module.request, agent: httpsAgent };
}

/**
 * One GET of `url` on a brand-new connection, with one deadline over connecting (and the name's
 * lookup), TLS, the answer and whatever `read` does with it (the body, usually). The connection is
 * destroyed right after (in the next turn of the event loop), whether `read` consumed the body or
 * not.
 *
 * The deadline is our own timer, raced against the exchange: it ends the call when it fires. It
 * is counted from `startedAt` when given (the caller's latency clock): when a thousand checks start
 * at once, setting them all up takes a while, and a deadline counted from each one's own set-up
 * would end late.
 */
export function getOnce<T>(
  url: URL,
  opts: {
    timeoutMs: number;
    verifyTls: boolean;
    headers?: Record<string, string>;
    lookup?: TrackedLookup['lookup'];
    /** When the deadline's clock started (process.hrtime.bigint()), if before this call. */
    startedAt?: bigint;
  },
  read: (res: Answer) => Promise<T>,
): Promise<T> {
  const secure = url.protocol === 'https:';
  const { request, agent }: Client = secure ? loadHttps() : { request: http.request, agent: httpAgent };
  const remainingMs = opts.startedAt === undefined ? opts.timeoutMs : Math.max(0, Math.ceil(opts.timeoutMs - elapsedMs(opts.startedAt)));
  return new Promise<T>((resolve, reject) => {
    const req = request({
      hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port || (secure ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: 'GET',
      ...(opts.headers ? { headers: opts.headers } : {}),
      agent,
      ...(opts.lookup ? { lookup: opts.lookup as net.LookupFunction } : {}),
      ...(secure ? { rejectUnauthorized: opts.verifyTls } : {}),
    });
    let settled = false;
    const end = (settle: () => void) => {
      if (settled) return; // what fails after the answer or the deadline (the destroy below) is nobody's concern
      settled = true;
      clearTimeout(timer);
      settle();
      // When hundreds of targets time out together their deadlines fire in one tick: the clean-up
      // comes after every caller has heard of its deadline, so that none is reported later for the
      // clean-up of the others.
      setImmediate(() => req.destroy());
    };
    const timer = setTimeout(() => end(() => reject(new DeadlineExceeded(`no complete answer within ${opts.timeoutMs} ms`))), remainingMs);
    req.on('response', (res) => {
      res.on('error', () => {}); // a body cut short rejects `read` if it reads; otherwise it is dropped
      read({ statusCode: res.statusCode ?? 0, headers: res.headers, body: res }).then(
        (value) => end(() => resolve(value)),
        (err: unknown) => end(() => reject(err)),
      );
    });
    req.on('error', (err) => end(() => reject(err)));
    req.end();
  });
}
