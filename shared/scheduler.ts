// Periodic work over a set of items: every interval (with a little jitter) each item is run once,
// with at most `concurrency` runs in flight. A cycle never overlaps the next: if a cycle takes
// longer than the interval, the next one starts as soon as it ends. Each run is expected to bound
// its own duration (checks carry a timeout), so one slow item holds one worker, not the cycle.

export interface CycleStats {
  startedAt: number;
  durationMs: number;
  count: number;
  /** Milliseconds the cycle started after it was due (timer lag plus overrun of the previous cycle). */
  lagMs: number;
}

export interface SchedulerOptions<T> {
  intervalMs: number;
  concurrency: number;
  /** Fraction of the interval used as jitter, spread evenly around it (default 0.1 = ±5 %). */
  jitter?: number;
  /** Called at the start of each cycle: the items to run in this cycle. */
  items: () => readonly T[];
  run: (item: T) => Promise<void>;
  onCycle?: (stats: CycleStats) => void;
  /** Random source, replaceable for deterministic tests. */
  random?: () => number;
}

/** Runs `fn` over `items` with at most `limit` in flight; resolves when all have settled. */
export async function runBounded<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>, shouldStop: () => boolean = () => false): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length && !shouldStop()) {
      const item = items[next++] as T;
      try {
        await fn(item);
      } catch {
        // A failing run must not take a worker down with it; runs report their own errors.
      }
    }
  };
  const workers = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker);
  await Promise.all(workers);
}

export class Scheduler<T> {
  readonly #opts: Required<Omit<SchedulerOptions<T>, 'onCycle'>> & Pick<SchedulerOptions<T>, 'onCycle'>;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = true;
  /** Set by stop(): workers pick up no further items, so stopping waits one timeout at most. */
  #aborting = false;
  #dueAt = 0;

  constructor(opts: SchedulerOptions<T>) {
    if (!(opts.intervalMs > 0)) throw new RangeError('intervalMs must be positive');
    if (!(opts.concurrency >= 1)) throw new RangeError('concurrency must be at least 1');
    this.#opts = { jitter: 0.1, random: Math.random, ...opts };
  }

  /** Starts the first cycle immediately, then keeps cycling until stop(). */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#aborting = false;
    this.#dueAt = Date.now();
    this.#tick();
  }

  /** Stops scheduling; resolves once the cycle in flight (if any) has finished. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#aborting = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  /** Runs one cycle now (outside the timer), e.g. for tests and one-shot reports. */
  runCycle(): Promise<void> {
    return this.#cycle(Date.now());
  }

  get running(): boolean {
    return !this.#stopped;
  }

  #tick(): void {
    const due = this.#dueAt;
    this.#running = this.#cycle(due).finally(() => {
      this.#running = undefined;
      if (this.#stopped) return;
      const { intervalMs, jitter, random } = this.#opts;
      const spread = intervalMs * jitter * (random() - 0.5);
      this.#dueAt = due + intervalMs + spread;
      const wait = Math.max(0, this.#dueAt - Date.now());
      if (wait === 0) this.#dueAt = Date.now();
      this.#timer = setTimeout(() => this.#tick(), wait);
    });
  }

  async #cycle(due: number): Promise<void> {
    const startedAt = Date.now();
    const items = this.#opts.items();
    await runBounded(items, this.#opts.concurrency, this.#opts.run, () => this.#aborting);
    this.#opts.onCycle?.({ startedAt, durationMs: Date.now() - startedAt, count: items.length, lagMs: Math.max(0, startedAt - due) });
  }
}
