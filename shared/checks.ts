// Reachability checks. Every check opens a fresh connection (no keep-alive, no pooling) because
// an established flow can survive a policy change through conntrack and hide it. Every check has
// its own deadline, so one blackholed target costs exactly its timeout and nothing more.
import { randomUUID } from 'node:crypto';
import dgram from 'node:dgram';
import { lookup as systemLookup } from 'node:dns/promises';
import net from 'node:net';
import type * as Undici from 'undici';
import type { Client, Dispatcher } from 'undici';
import type { NameResolver } from './resolver.ts';
import type { Target } from './targets.ts';

export const REASONS = ['ok', 'timeout', 'refused', 'reset', 'unreachable', 'dns', 'tls', 'http-status', 'error'] as const;
export type Reason = (typeof REASONS)[number];

export interface CheckResult {
  reachable: boolean;
  reason: Reason;
  /** Human-readable detail for failures (the error code or status line). */
  message?: string;
  latencyMs: number;
  statusCode?: number;
  /** ISO time at which the check started. */
  checkedAt: string;
}

export interface CheckOptions {
  timeoutMs: number;
  /** For http targets: status codes that count as reachable. Default: any response (as star). */
  acceptStatus?: (code: number) => boolean;
  /** For https targets: verify the server certificate (default true). */
  verifyTls?: boolean;
  /** Resolves names without libuv's thread pool (the probe's); default: the system's dns.lookup. */
  resolver?: NameResolver;
}

/** A check's own lookup, which remembers how it ended (so a failure can be blamed on DNS). */
export interface TrackedLookup {
  lookup: NameResolver['lookup'] | undefined;
  /** The check's failure when it was the name's fault (not resolved in time, or not at all). */
  dnsFailure: (timeoutMs: number) => { reachable: false; reason: Reason; message: string } | undefined;
}

/** For addresses (most checks): nothing to allocate per check. */
const NO_LOOKUP: TrackedLookup = { lookup: undefined, dnsFailure: () => undefined };

/**
 * Wraps the resolver's lookup for one check of `host`. Without a resolver, or for an address,
 * there is no lookup to wait for, and a failure is never blamed on DNS.
 */
export function trackLookup(resolver: NameResolver | undefined, host: string): TrackedLookup {
  if (!resolver || net.isIP(host) !== 0) return NO_LOOKUP;
  let outcome: 'pending' | 'ok' | Error = 'pending';
  return {
    lookup: (hostname, options, callback) =>
      resolver.lookup(hostname, options, (err, address, family) => {
        outcome = err ?? 'ok';
        callback(err, address, family);
      }),
    // Whichever of the deadlines (the lookup's, the check's, undici's connect timer) fired first,
    // a check whose name never resolved failed because of DNS.
    dnsFailure: (timeoutMs) =>
      outcome === 'pending' ? dnsTimeout(host, timeoutMs) : outcome === 'ok' ? undefined : { reachable: false, ...classifyError(outcome) },
  };
}

/** The failure of a check whose deadline passed before its name was resolved. */
function dnsTimeout(host: string, timeoutMs: number): { reachable: false; reason: 'dns'; message: string } {
  return { reachable: false, reason: 'dns', message: `EAI_AGAIN: no DNS answer for ${host} within ${timeoutMs} ms` };
}

const TLS_CODES = /^(ERR_TLS|ERR_SSL|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_|HOSTNAME_MISMATCH|ERR_OSSL)/;

/** Maps a Node/undici error to one of the fixed reasons. */
export function classifyError(err: unknown): { reason: Reason; message: string } {
  let e = err as (Error & { code?: string; cause?: unknown }) | undefined;
  // undici wraps the socket error in `cause`; the innermost coded error is the informative one.
  while (e && !e.code && e.cause) e = e.cause as typeof e;
  const code = e?.code ?? '';
  const message = code ? `${code}${e?.message && !e.message.includes(code) ? `: ${e.message}` : ''}` : String(e?.message ?? err);
  switch (code) {
    case 'ECONNREFUSED':
      return { reason: 'refused', message };
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
    case 'ECONNABORTED':
      return { reason: 'reset', message };
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EHOSTDOWN':
    case 'ENETDOWN':
    case 'EADDRNOTAVAIL':
      return { reason: 'unreachable', message };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'EAI_NONAME':
    case 'ENODATA':
      return { reason: 'dns', message };
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
    case 'ABORT_ERR':
      return { reason: 'timeout', message };
    default:
      if (TLS_CODES.test(code)) return { reason: 'tls', message };
      return { reason: 'error', message };
  }
}

/** Milliseconds since `start` (a process.hrtime.bigint()), rounded to 0.01 ms. */
export function elapsedMs(start: bigint): number {
  return Math.round(Number(process.hrtime.bigint() - start) / 1e4) / 100;
}

/** TCP connect check: reachable when the three-way handshake completes. */
export function checkTcp(target: Pick<Target, 'host' | 'port'>, opts: CheckOptions): Promise<CheckResult> {
  const checkedAt = new Date().toISOString();
  const start = process.hrtime.bigint();
  return new Promise((resolve) => {
    let done = false;
    const tracked = trackLookup(opts.resolver, target.host);
    const socket = net.connect({
      host: target.host,
      port: target.port,
      noDelay: true,
      ...(tracked.lookup ? { lookup: tracked.lookup as net.LookupFunction } : {}),
    });
    const finish = (result: Omit<CheckResult, 'checkedAt' | 'latencyMs'>) => {
      if (done) return;
      done = true;
      const latencyMs = elapsedMs(start); // before the clean-up: hundreds of deadlines can fire in one tick
      clearTimeout(timer);
      socket.removeAllListeners();
      socket.on('error', () => {});
      socket.destroy();
      resolve({ ...result, latencyMs, checkedAt });
    };
    const timer = setTimeout(
      () => finish(tracked.dnsFailure(opts.timeoutMs) ?? { reachable: false, reason: 'timeout', message: `no answer within ${opts.timeoutMs} ms` }),
      opts.timeoutMs,
    );
    socket.once('connect', () => finish({ reachable: true, reason: 'ok' }));
    socket.once('error', (err) => finish({ reachable: false, ...classifyError(err) }));
  });
}

/**
 * UDP echo check: one datagram carrying a fresh nonce goes to the target, from a connected socket
 * (so the kernel hands us the ICMP port-unreachable that a closed port answers, as ECONNREFUSED);
 * reachable when a datagram holding that nonce comes back within the deadline. Datagrams without
 * it (a service that answers but does not echo) do not count: if only those came, the reason is
 * `error` and says so, while plain silence is `timeout`, as a drop by a policy looks.
 */
export function checkUdp(target: Pick<Target, 'host' | 'port'>, opts: CheckOptions): Promise<CheckResult> {
  const checkedAt = new Date().toISOString();
  const start = process.hrtime.bigint();
  return new Promise((resolve) => {
    let done = false;
    let socket: dgram.Socket | undefined;
    let strays = 0;
    const finish = (result: Omit<CheckResult, 'checkedAt' | 'latencyMs'>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (socket) {
        socket.removeAllListeners();
        socket.on('error', () => {});
        socket.close();
      }
      resolve({ ...result, latencyMs: elapsedMs(start), checkedAt });
    };
    let resolved = false;
    const timer = setTimeout(() => {
      if (!resolved) finish(dnsTimeout(target.host, opts.timeoutMs));
      else if (strays > 0)
        finish({
          reachable: false,
          reason: 'error',
          message: `${strays} datagram(s) came back without this check's nonce within ${opts.timeoutMs} ms: not an echo service`,
        });
      else finish({ reachable: false, reason: 'timeout', message: `no echo within ${opts.timeoutMs} ms` });
    }, opts.timeoutMs);
    const nonce = Buffer.from(randomUUID(), 'latin1');
    addressOf(target.host, opts.resolver).then(
      ({ address, family }) => {
        resolved = true;
        if (done) return;
        const s = dgram.createSocket(family === 6 ? 'udp6' : 'udp4');
        socket = s;
        s.on('error', (err) => finish({ reachable: false, ...classifyError(err) }));
        s.on('message', (msg) => {
          if (msg.includes(nonce)) finish({ reachable: true, reason: 'ok' });
          else strays++;
        });
        s.connect(target.port, address, () => {
          s.send(Buffer.concat([Buffer.from('starmap-probe '), nonce]), (err) => {
            if (err) finish({ reachable: false, ...classifyError(err) });
          });
        });
      },
      (err: unknown) => finish({ reachable: false, ...classifyError(err) }),
    );
  });
}

/** The address to send to: an IP literal as it is, a name through the resolver (IPv4 first). */
async function addressOf(host: string, resolver: NameResolver | undefined): Promise<{ address: string; family: number }> {
  const family = net.isIP(host);
  if (family !== 0) return { address: host, family };
  if (resolver) return (await resolver.resolve(host))[0]!;
  return systemLookup(host);
}

/** undici's Client and its request method (what undici's index puts on Dispatcher.prototype). */
interface HttpClient {
  Client: typeof Undici.Client;
  request: (client: Undici.Client, options: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;
}

let undici: Promise<HttpClient> | undefined;

/**
 * undici's Client is loaded when the first HTTP exchange starts, not at start-up: a probe with only
 * TCP and UDP targets never loads it, and the others answer their first request before paying for
 * it. Only the files of the Client and of its request method are loaded: undici's index also loads
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

/** Thrown by getOnce when the whole exchange did not finish within its deadline. */
export class DeadlineExceeded extends Error {}

/**
 * One GET of `url` on a brand-new connection, with one deadline over connecting (and the name's
 * lookup), TLS, the answer and whatever `read` does with it (the body, usually); the connection is
 * closed right after this returns (in the next turn of the event loop). Shared by the probe's checks, the collector's fetches and the
 * orchestrator's readiness checks.
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

/**
 * HTTP(S) GET check: reachable when any HTTP response arrives (as star), unless `acceptStatus`
 * narrows it, in which case other codes are `http-status`. The body is not read.
 */
export async function checkHttp(target: Target, opts: CheckOptions): Promise<CheckResult> {
  await loadUndici(); // before the clock starts (the first check would count the loading)
  const checkedAt = new Date().toISOString();
  const start = process.hrtime.bigint();
  const tracked = trackLookup(opts.resolver, target.host);
  try {
    const get = {
      timeoutMs: opts.timeoutMs,
      verifyTls: opts.verifyTls ?? true,
      headers: { 'user-agent': 'starmap-probe', accept: '*/*' },
      lookup: tracked.lookup,
      startedAt: start,
    };
    const res = await getOnce(new URL(target.href ?? target.url), get, async (r) => {
      r.body.on('error', () => {});
      r.body.destroy();
      return r;
    });
    const latencyMs = elapsedMs(start);
    const statusCode = res.statusCode;
    const accepted = opts.acceptStatus ? opts.acceptStatus(statusCode) : true;
    return accepted
      ? { reachable: true, reason: 'ok', statusCode, latencyMs, checkedAt }
      : { reachable: false, reason: 'http-status', message: `HTTP ${statusCode}`, statusCode, latencyMs, checkedAt };
  } catch (err) {
    const classified =
      tracked.dnsFailure(opts.timeoutMs) ??
      (err instanceof DeadlineExceeded ? { reason: 'timeout' as const, message: `no answer within ${opts.timeoutMs} ms` } : classifyError(err));
    return { reachable: false, ...classified, latencyMs: elapsedMs(start), checkedAt };
  }
}

export function check(target: Target, opts: CheckOptions): Promise<CheckResult> {
  if (target.kind === 'tcp') return checkTcp(target, opts);
  if (target.kind === 'udp') return checkUdp(target, opts);
  return checkHttp(target, opts);
}

/** Parses a status rule such as `200-399` or `200,204,300-399` into a predicate. */
export function parseStatusRule(rule: string): (code: number) => boolean {
  const ranges = rule.split(',').map((part) => {
    const m = /^\s*(\d{3})(?:\s*-\s*(\d{3}))?\s*$/.exec(part);
    if (!m) throw new Error(`"${part}" is not a status code or range such as 200-399`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) throw new Error(`range "${part}" is reversed`);
    return [lo, hi] as const;
  });
  return (code) => ranges.some(([lo, hi]) => code >= lo && code <= hi);
}
