// Fetches one resource: an HTTP GET on a brand-new connection (shared/get-once.ts: Node's client,
// the connection destroyed afterwards; no pooling, as star's `Connection: close`), under one
// deadline that covers connect, headers and the whole body, with a cap on the body size. Whatever
// the server sends (garbage, invalid UTF-8, an endless or enormous body, nothing at all) ends as a
// FetchResult, never a throw.
// A JSON body is kept as compact text within bounds of depth, values and bytes (body.ts).
import { classifyError, trackLookup } from '../shared/checks.ts';
import { DeadlineExceeded, elapsedMs, getOnce, loadHttps } from '../shared/get-once.ts';
import type { NameResolver } from '../shared/resolver.ts';
import { jsonText, limitsFor } from './body.ts';

export type FetchReason = 'timeout' | 'refused' | 'reset' | 'unreachable' | 'dns' | 'tls' | 'http-status' | 'not-json' | 'too-large' | 'too-deep' | 'error';

export interface FetchError {
  reason: FetchReason;
  message: string;
}

export interface FetchResult {
  statusCode: number | null;
  /** The body as compact JSON text when it is JSON within the limits (whatever the status, as star), else null. */
  json: string | null;
  error: FetchError | null;
  latencyMs: number;
  /** ISO time at which the fetch started. */
  fetchedAt: string;
}

export interface FetchOptions {
  timeoutMs: number;
  maxBodyBytes: number;
  /** Verify https certificates (default true). */
  verifyTls?: boolean;
  /** Resolves names without libuv's thread pool; default: the system's dns.lookup. */
  resolver?: NameResolver;
}

class TooLarge extends Error {}

export async function fetchResource(rawUrl: string, opts: FetchOptions): Promise<FetchResult> {
  // node:https (with TLS) loads before the clock starts: the first fetch would count the loading.
  // A scheme is case-insensitive (HTTPS://… is https).
  if (/^https:/i.test(rawUrl)) loadHttps();
  const fetchedAt = new Date().toISOString();
  const start = process.hrtime.bigint();
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return { statusCode: null, json: null, error: { reason: 'error', message: 'invalid URL' }, latencyMs: 0, fetchedAt };
  }
  // Set once the answer's head is in: a timeout after it is a body that did not complete.
  let statusCode: number | null = null;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const tracked = trackLookup(opts.resolver, host);
  try {
    const get = {
      timeoutMs: opts.timeoutMs,
      verifyTls: opts.verifyTls ?? true,
      headers: { 'user-agent': 'starmap-collector', accept: 'application/json' },
      lookup: tracked.lookup,
      startedAt: start,
    };
    const { status, body } = await getOnce(url, get, async (res) => {
      statusCode = res.statusCode;
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > opts.maxBodyBytes)
        throw new TooLarge(`body of ${declared} bytes is larger than the ${opts.maxBodyBytes}-byte limit`);
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > opts.maxBodyBytes) throw new TooLarge(`body is larger than the ${opts.maxBodyBytes}-byte limit`);
        chunks.push(chunk);
      }
      return { status: res.statusCode, body: Buffer.concat(chunks, size) };
    });
    const latencyMs = elapsedMs(start);
    const { text: json, error } = jsonText(body, limitsFor(opts.maxBodyBytes));
    const httpError: FetchError | null = status >= 200 && status < 300 ? null : { reason: 'http-status', message: `HTTP ${status}` };
    return { statusCode: status, json, error: httpError ?? error, latencyMs, fetchedAt };
  } catch (err) {
    const dns = tracked.dnsFailure(opts.timeoutMs);
    const error: FetchError = dns
      ? { reason: 'dns', message: dns.message }
      : err instanceof TooLarge
        ? { reason: 'too-large', message: err.message }
        : err instanceof DeadlineExceeded
          ? { reason: 'timeout', message: statusCode === null ? `no answer within ${opts.timeoutMs} ms` : `body not complete within ${opts.timeoutMs} ms` }
          : (classifyError(err) as FetchError);
    return { statusCode, json: null, error, latencyMs: elapsedMs(start), fetchedAt };
  }
}
