// Reachability checks. Every check opens a fresh connection (no keep-alive, no pooling) because
// an established flow can survive a policy change through conntrack and hide it. Every check has
// its own deadline, so one blackholed target costs exactly its timeout and nothing more.
import { randomUUID } from 'node:crypto';
import dgram from 'node:dgram';
import { lookup as systemLookup } from 'node:dns/promises';
import net from 'node:net';
import { DeadlineExceeded, elapsedMs, getOnce, loadHttps } from './get-once.ts';
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
    // Whichever of the deadlines (the lookup's or the check's) fired first,
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

/** Maps a Node error to one of the fixed reasons. */
export function classifyError(err: unknown): { reason: Reason; message: string } {
  let e = err as (Error & { code?: string; cause?: unknown }) | undefined;
  // An error that wraps the socket error in `cause`: the innermost coded error is the informative one.
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

/**
 * HTTP(S) GET check: reachable when any HTTP response arrives (as star), unless `acceptStatus`
 * narrows it, in which case other codes are `http-status`. The body is not read.
 */
export async function checkHttp(target: Target, opts: CheckOptions): Promise<CheckResult> {
  // node:https (with TLS) loads before the clock starts: the first check would count the loading.
  if (target.tls) loadHttps();
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
    // The status code is all a check needs: the body is never read.
    const statusCode = await getOnce(new URL(target.href ?? target.url), get, async (res) => res.statusCode);
    const latencyMs = elapsedMs(start);
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
