// The collector engine: fetches every resource each cycle (shared Scheduler: interval with jitter,
// bounded concurrency, cycles never overlap) and records the results. A resource added or
// replaced through the API is fetched at once, not at the next cycle, so the UI shows it quickly.
import type { Logger } from '../shared/logger.ts';
import { Scheduler, type CycleStats } from '../shared/scheduler.ts';
import { fetchResource, type FetchOptions } from './fetcher.ts';
import { createCollectorMetrics, type CollectorMetrics } from './metrics.ts';
import { ResponseCache } from './responses.ts';
import { ResourceStore, type Resource } from './resources.ts';

/** How stale `GET /responses` may be while results stream in: far below any UI's polling period. */
export const RESPONSES_COALESCE_MS = 200;

export interface CollectorOptions {
  resources: readonly Resource[];
  intervalMs: number;
  concurrency: number;
  fetch: FetchOptions;
  logger: Logger;
  onCycle?: (stats: CycleStats) => void;
}

export interface CollectorHealth {
  cycles: number;
  lastCycleAt: string | null;
  lastCycleMs: number | null;
}

export class Collector {
  readonly store: ResourceStore;
  readonly responses: ResponseCache;
  readonly metrics: CollectorMetrics;
  readonly intervalMs: number;
  readonly #scheduler: Scheduler<Resource>;
  readonly #opts: CollectorOptions;
  readonly #logger: Logger;
  /** Prompt fetches of new resources wait here when `concurrency` of them are already in flight. */
  readonly #queue: Resource[] = [];
  #promptInFlight = 0;
  #health: CollectorHealth = { cycles: 0, lastCycleAt: null, lastCycleMs: null };

  constructor(opts: CollectorOptions) {
    this.#opts = opts;
    this.#logger = opts.logger;
    this.intervalMs = opts.intervalMs;
    this.store = new ResourceStore(opts.resources);
    this.responses = new ResponseCache(this.store, { coalesceMs: RESPONSES_COALESCE_MS });
    this.metrics = createCollectorMetrics(this.responses);
    this.#scheduler = new Scheduler<Resource>({
      intervalMs: opts.intervalMs,
      concurrency: opts.concurrency,
      items: () => this.store.list(),
      run: (resource) => this.#fetch(resource),
      onCycle: (stats) => {
        this.#health = { cycles: this.#health.cycles + 1, lastCycleAt: new Date(stats.startedAt).toISOString(), lastCycleMs: stats.durationMs };
        this.metrics.observeCycle(stats.durationMs / 1000);
        opts.onCycle?.(stats);
        if (stats.durationMs > opts.intervalMs) {
          this.#logger.warn({ durationMs: stats.durationMs, resources: stats.count }, 'cycle took longer than the interval; raise --concurrency or lower --timeout-seconds');
        }
      },
    });
    this.store.onChange((change) => {
      if (change.kind === 'removed') this.#logger.info({ id: change.resource.id, url: change.resource.url }, 'resource removed');
      else {
        this.#logger.info({ id: change.resource.id, url: change.resource.url }, change.kind === 'added' ? 'resource added' : 'resource replaced');
        // Not before start() nor after stop(): stop() clears `running` before its first await.
        if (this.#scheduler.running) this.#fetchSoon(change.resource);
      }
    });
  }

  start(): void {
    this.#scheduler.start();
  }

  async stop(): Promise<void> {
    this.#queue.length = 0;
    await this.#scheduler.stop();
  }

  /** One full cycle now (tests and benchmarks). */
  runCycle(): Promise<void> {
    return this.#scheduler.runCycle();
  }

  health(): CollectorHealth {
    return this.#health;
  }

  #fetchSoon(resource: Resource): void {
    this.#queue.push(resource);
    this.#drain();
  }

  #drain(): void {
    while (this.#promptInFlight < this.#opts.concurrency && this.#queue.length > 0) {
      const resource = this.#queue.shift()!;
      if (!this.store.isCurrent(resource)) continue;
      this.#promptInFlight++;
      void this.#fetch(resource).finally(() => {
        this.#promptInFlight--;
        this.#drain();
      });
    }
  }

  async #fetch(resource: Resource): Promise<void> {
    const result = await fetchResource(resource.url, this.#opts.fetch);
    this.metrics.countFetch(result.error?.reason ?? 'ok');
    const outcome = this.responses.record(resource, result);
    if (!outcome) return;
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
}
