// The collector engine: fetches every resource on its own clock (shared ItemClocks: once when
// added, then every interval with jitter; resources whose fetches time out cannot take the slots
// of those that answer) and records the results. A resource added or replaced through the API is
// therefore fetched at once, not at the next interval, so the UI shows it quickly.
import { runBounded, ItemClocks } from '../shared/periodic.ts';
import type { Logger } from '../shared/logger.ts';
import { fetchResource, type FetchOptions } from './fetcher.ts';
import { createCollectorMetrics, type CollectorMetrics } from './metrics.ts';
import { ResponseCache } from './responses.ts';
import { ResourceStore, type Resource } from './resources.ts';

/** How stale `GET /responses` may be while results stream in: far below any UI's polling period. */
export const RESPONSES_COALESCE_MS = 200;

/** A fetch in flight longer than this (or its deadline, if shorter) makes way for the others. */
export const SLOW_AFTER_MS = 250;

/** How many recent fetches /healthz summarises. */
const RECENT = 1000;

export interface CollectorOptions {
  resources: readonly Resource[];
  intervalMs: number;
  concurrency: number;
  fetch: FetchOptions;
  logger: Logger;
}

export interface CollectorHealth {
  /** Fetches ended since start. */
  fetches: number;
  lastFetchAt: string | null;
  /** How late fetches started after they were due, over the last 1,000: the median and the worst. */
  lagMs: { p50: number; max: number } | null;
}

export class Collector {
  readonly store: ResourceStore;
  readonly responses: ResponseCache;
  readonly metrics: CollectorMetrics;
  readonly intervalMs: number;
  readonly #clocks: ItemClocks<Resource>;
  readonly #opts: CollectorOptions;
  readonly #logger: Logger;
  #fetches = 0;
  #lastFetchAt: string | null = null;
  readonly #lags: number[] = [];

  constructor(opts: CollectorOptions) {
    this.#opts = opts;
    this.#logger = opts.logger;
    this.intervalMs = opts.intervalMs;
    this.store = new ResourceStore(opts.resources);
    this.responses = new ResponseCache(this.store, { coalesceMs: RESPONSES_COALESCE_MS });
    this.metrics = createCollectorMetrics(this.responses);
    this.#clocks = new ItemClocks<Resource>({
      intervalMs: opts.intervalMs,
      concurrency: opts.concurrency,
      slowAfterMs: Math.min(SLOW_AFTER_MS, opts.fetch.timeoutMs / 2),
      run: async (resource) => (await this.#fetch(resource)) === 'timeout',
      onRun: ({ lagMs }) => {
        this.#fetches++;
        this.#lastFetchAt = new Date().toISOString();
        this.#lags.push(lagMs);
        if (this.#lags.length > RECENT) this.#lags.shift();
        this.metrics.observeLag(lagMs / 1000);
      },
    });
    for (const r of this.store.list()) this.#clocks.add(r);
    this.store.onChange((change) => {
      if (change.kind === 'removed') {
        this.#logger.info({ id: change.resource.id, url: change.resource.url }, 'resource removed');
        this.#clocks.remove(change.resource);
        return;
      }
      this.#logger.info({ id: change.resource.id, url: change.resource.url }, change.kind === 'added' ? 'resource added' : 'resource replaced');
      if (change.kind === 'replaced') this.#clocks.remove(change.previous);
      this.#clocks.add(change.resource);
    });
  }

  start(): void {
    this.#clocks.start();
  }

  stop(): Promise<void> {
    return this.#clocks.stop();
  }

  /** Fetches every resource once now, `concurrency` at a time (benchmarks and one-shot reads). */
  fetchAll(): Promise<void> {
    return runBounded(this.store.list(), this.#opts.concurrency, async (r) => void (await this.#fetch(r)));
  }

  health(): CollectorHealth {
    const sorted = [...this.#lags].sort((a, b) => a - b);
    return {
      fetches: this.#fetches,
      lastFetchAt: this.#lastFetchAt,
      lagMs: sorted.length === 0 ? null : { p50: sorted[Math.floor(sorted.length / 2)]!, max: sorted[sorted.length - 1]! },
    };
  }

  /** Fetches and records one resource; returns the error reason, or undefined on success. */
  async #fetch(resource: Resource): Promise<string | undefined> {
    const result = await fetchResource(resource.url, this.#opts.fetch);
    this.metrics.countFetch(result.error?.reason ?? 'ok');
    const outcome = this.responses.record(resource, result);
    if (outcome) {
      const { previous, current } = outcome;
      const wasOk = previous.pending ? null : previous.error === null;
      const isOk = current.error === null;
      if (wasOk !== isOk) {
        const fields = { id: resource.id, url: resource.url, statusCode: current.statusCode, reason: current.error?.reason, message: current.error?.message };
        // A first success is routine (1,000 of them at start-up with a big file): debug level only.
        if (isOk) this.#logger[wasOk === null ? 'debug' : 'info'](fields, wasOk === null ? 'resource fetched' : 'resource recovered');
        else this.#logger.warn(fields, 'resource fetch failed');
      }
    }
    return result.error?.reason;
  }
}
