// HTTP callback subscriptions (--event_subscriber http_callback): the persisted list of callback
// URLs and the dispatcher that POSTs every bus event to each of them.
//
// Delivery, per URL and independent of the other URLs: events are POSTed in order, one request at
// a time, as the same JSON as the SSE data line, with `Accept: application/json` and a timeout.
// A non-2xx answer, a connection error or a timeout backs that URL off for 2^n seconds (n =
// consecutive failures, capped); events published during the back-off are skipped, not queued
// (Marathon 1.4 does the same). A URL whose queue overflows (it answers, but slower than events
// arrive) counts as failing too, so a slow receiver never makes memory grow.
import type { DatabaseSync } from 'node:sqlite';
import type { Agent, Dispatcher } from 'undici';
import type { Logger } from '../../shared/logger.ts';
import type { EventBus, MarathonEvent } from './bus.ts';
import { eventJson } from './json.ts';

/** undici's Agent and its request method, loaded by the first POST (see #client). */
interface CallbackClient {
  agent: Agent;
  request: (options: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;
}

/** Why a callback URL is refused, or undefined when it is a usable http(s) URL. */
export function callbackUrlProblem(url: string | undefined): string | undefined {
  if (url === undefined || url.trim() === '') return 'callbackUrl is required: pass ?callbackUrl=<http or https URL>';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `not a valid URL: ${url}`;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    return `only http and https callback URLs are supported, not ${parsed.protocol.replace(/:$/, '')}`;
  if (parsed.hostname === '') return `URL has no host: ${url}`;
  return undefined;
}

/** The callback URLs, in SQLite so they survive a restart. */
export class SubscriptionStore {
  readonly #db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.#db = db;
    db.exec('CREATE TABLE IF NOT EXISTS event_subscriptions (callback_url TEXT PRIMARY KEY, created_at TEXT NOT NULL)');
  }

  /** Adds the URL; false when it was already there. */
  add(url: string): boolean {
    const r = this.#db.prepare('INSERT OR IGNORE INTO event_subscriptions (callback_url, created_at) VALUES (?, ?)').run(url, new Date().toISOString());
    return Number(r.changes) > 0;
  }

  /** Removes the URL; false when it was not there. */
  remove(url: string): boolean {
    const r = this.#db.prepare('DELETE FROM event_subscriptions WHERE callback_url = ?').run(url);
    return Number(r.changes) > 0;
  }

  list(): string[] {
    const rows = this.#db.prepare('SELECT callback_url FROM event_subscriptions ORDER BY created_at, callback_url').all() as { callback_url: string }[];
    return rows.map((r) => r.callback_url);
  }
}

export interface DispatcherOptions {
  bus: EventBus;
  store: SubscriptionStore;
  logger?: Logger | undefined;
  /** Request timeout per POST (default 10 s, Marathon's --http_event_request_timeout). */
  timeoutMs?: number;
  /** Back-off after n consecutive failures is 2^n × this (default 1 s). */
  backoffUnitMs?: number;
  /** Longest back-off (default 60 s). */
  maxBackoffMs?: number;
  /** Events waiting per URL before it counts as failing (default 1000). */
  maxQueue?: number;
}

/** What the dispatcher knows about one URL (for tests, metrics and logs). */
export interface CallbackState {
  url: string;
  delivered: number;
  failed: number;
  skipped: number;
  consecutiveFailures: number;
  /** Epoch ms until which events are skipped (0 = not backed off). */
  backedOffUntil: number;
  queued: number;
  lastError?: string | undefined;
}

interface Target {
  state: CallbackState;
  queue: string[];
  sending: boolean;
}

export class CallbackDispatcher {
  readonly #store: SubscriptionStore;
  readonly #logger: Logger | undefined;
  readonly #timeoutMs: number;
  readonly #unitMs: number;
  readonly #maxBackoffMs: number;
  readonly #maxQueue: number;
  readonly #targets = new Map<string, Target>();
  #client: Promise<CallbackClient> | undefined;
  /** Set while there are URLs: without any, the bus has no listener for them (EventCatalogue.listened). */
  #unsubscribe: (() => void) | undefined;
  readonly #bus: EventBus;
  readonly #inFlight = new Set<Promise<void>>();
  #closed = false;

  constructor(opts: DispatcherOptions) {
    this.#store = opts.store;
    this.#logger = opts.logger;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#unitMs = opts.backoffUnitMs ?? 1_000;
    this.#maxBackoffMs = opts.maxBackoffMs ?? 60_000;
    this.#maxQueue = opts.maxQueue ?? 1_000;
    this.#bus = opts.bus;
    for (const url of this.#store.list()) this.#target(url);
  }

  /** Starts delivering to `url` (idempotent). The store is the caller's business. */
  add(url: string): void {
    this.#target(url);
  }

  /** Stops delivering to `url`; queued events for it are dropped. */
  remove(url: string): void {
    const t = this.#targets.get(url);
    if (t) t.queue.length = 0;
    this.#targets.delete(url);
    if (this.#targets.size === 0) {
      this.#unsubscribe?.();
      this.#unsubscribe = undefined;
    }
  }

  states(): CallbackState[] {
    return [...this.#targets.values()].map((t) => ({ ...t.state, queued: t.queue.length }));
  }

  state(url: string): CallbackState | undefined {
    const t = this.#targets.get(url);
    return t ? { ...t.state, queued: t.queue.length } : undefined;
  }

  /** Unsubscribes from the bus, abandons queued events and waits for requests in flight. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe?.();
    for (const t of this.#targets.values()) t.queue.length = 0;
    await Promise.allSettled([...this.#inFlight]);
    if (this.#client) await (await this.#client).agent.close();
  }

  /**
   * The HTTP client, made on the first POST: an orchestrator without callback subscribers never
   * loads undici, and one with them answers its first request before paying for it. Only the
   * files of the Agent and of its request method are loaded: undici's index also loads fetch,
   * WebSocket, the cache and the mocks, and touches the global Headers, which makes Node load its
   * own undici too (~90 ms of a restart's start-up before this: bench/startup.bench.ts).
   */
  #http(): Promise<CallbackClient> {
    this.#client ??= Promise.all([import('undici/lib/dispatcher/agent.js'), import('undici/lib/api/api-request.js')]).then(([agentModule, api]) => {
      const agent = new agentModule.default({
        connect: { timeout: this.#timeoutMs },
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
        keepAliveTimeout: 4_000,
        // No per-origin limit: each URL has at most one request in flight, so two URLs on one
        // host never wait for each other's connection.
      });
      return { agent, request: (options) => api.default.call(agent, options) };
    });
    return this.#client;
  }

  #target(url: string): Target {
    let t = this.#targets.get(url);
    if (!t) {
      t = { state: { url, delivered: 0, failed: 0, skipped: 0, consecutiveFailures: 0, backedOffUntil: 0, queued: 0 }, queue: [], sending: false };
      this.#targets.set(url, t);
      if (!this.#closed) this.#unsubscribe ??= this.#bus.subscribe((event) => this.#publish(event));
    }
    return t;
  }

  #publish(event: MarathonEvent): void {
    if (this.#closed || this.#targets.size === 0) return;
    const body = eventJson(event);
    const now = Date.now();
    for (const t of this.#targets.values()) {
      if (t.state.backedOffUntil > now) {
        t.state.skipped++;
        continue;
      }
      if (t.queue.length >= this.#maxQueue) {
        this.#fail(t, `more than ${this.#maxQueue} events waiting: the receiver is slower than the event rate`);
        t.state.skipped++;
        continue;
      }
      t.queue.push(body);
      if (!t.sending) this.#pump(t);
    }
  }

  #pump(t: Target): void {
    t.sending = true;
    const run = (async () => {
      while (!this.#closed && t.queue.length > 0 && this.#targets.get(t.state.url) === t) {
        const body = t.queue.shift()!;
        const ok = await this.#post(t, body);
        if (!ok) break;
      }
      t.sending = false;
    })();
    this.#inFlight.add(run);
    void run.finally(() => this.#inFlight.delete(run));
  }

  async #post(t: Target, body: string): Promise<boolean> {
    const started = Date.now();
    try {
      const http = await this.#http();
      const url = new URL(t.state.url);
      const res = await http.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body,
        signal: AbortSignal.timeout(this.#timeoutMs),
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
      });
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      if (res.statusCode < 200 || res.statusCode > 299) {
        this.#fail(t, `HTTP ${res.statusCode}`);
        return false;
      }
      t.state.delivered++;
      t.state.consecutiveFailures = 0;
      t.state.backedOffUntil = 0;
      t.state.lastError = undefined;
      return true;
    } catch (err) {
      const e = err as Error & { code?: string };
      const timedOut =
        e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT' || e.code === 'UND_ERR_CONNECT_TIMEOUT';
      this.#fail(t, timedOut ? `no answer within ${this.#timeoutMs} ms (after ${Date.now() - started} ms)` : (e.code ?? e.message));
      return false;
    }
  }

  #fail(t: Target, why: string): void {
    t.state.failed++;
    t.state.consecutiveFailures++;
    const n = t.state.consecutiveFailures;
    const backoff = Math.min(this.#unitMs * 2 ** Math.min(n, 30), this.#maxBackoffMs);
    t.state.backedOffUntil = Date.now() + backoff;
    t.state.lastError = why;
    // Events queued behind the failure would arrive during the back-off: skip them.
    t.state.skipped += t.queue.length;
    t.queue.length = 0;
    this.#logger?.warn({ callbackUrl: t.state.url, reason: why, consecutiveFailures: n, backoffMs: backoff }, 'event callback failed; backing off');
  }
}
