// Periodic work over a set of items, two ways. PeriodicRunner (the probe): every interval (with a
// little jitter) each item is run once, with at most `concurrency` runs in flight; a cycle never
// overlaps the next: if a cycle takes longer than the interval, the next one starts as soon as it
// ends. Each run is expected to bound its own duration (checks carry a timeout), so one slow item
// holds one worker, not the cycle. ItemClocks (the collector): every item on its own clock, so
// that slow items cannot stretch the interval of the others (see below).

export interface CycleStats {
  startedAt: number;
  durationMs: number;
  count: number;
  /** Milliseconds the cycle started after it was due (timer lag plus overrun of the previous cycle). */
  lagMs: number;
}

export interface PeriodicRunnerOptions<T> {
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
export async function runBounded<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
  shouldStop: () => boolean = () => false,
): Promise<void> {
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

export class PeriodicRunner<T> {
  readonly #opts: Required<Omit<PeriodicRunnerOptions<T>, 'onCycle'>> & Pick<PeriodicRunnerOptions<T>, 'onCycle'>;
  #timer: NodeJS.Timeout | undefined;
  /** Cycles in flight: one, or two just after a poke (the older one finishes unscheduled). */
  readonly #inFlight = new Set<Promise<void>>();
  /** Counts cycles started: only the newest one schedules the next. */
  #generation = 0;
  /** A poke came while two cycles were in flight: the newest starts another as it ends. */
  #pokedAgain = false;
  #stopped = true;
  /** Set by stop(): workers pick up no further items, so stopping waits one timeout at most. */
  #aborting = false;
  #dueAt = 0;

  constructor(opts: PeriodicRunnerOptions<T>) {
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
    await Promise.all(this.#inFlight);
  }

  /**
   * Starts a cycle now, whether one is in flight or not, so that every item gets a run that starts
   * after this call; the regular schedule resumes one interval after it. At most two cycles are
   * ever in flight: a poke while two are is folded into one more cycle as soon as the newest ends.
   * Returns 'started', 'queued' (that fold) or 'stopped' (not running: nothing happens).
   */
  poke(): 'started' | 'queued' | 'stopped' {
    if (this.#stopped) return 'stopped';
    if (this.#inFlight.size >= 2) {
      this.#pokedAgain = true;
      return 'queued';
    }
    clearTimeout(this.#timer);
    this.#dueAt = Date.now();
    this.#tick();
    return 'started';
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
    const generation = ++this.#generation;
    const running: Promise<void> = this.#cycle(due).finally(() => {
      this.#inFlight.delete(running);
      if (this.#stopped || generation !== this.#generation) return;
      if (this.#pokedAgain) {
        this.#pokedAgain = false;
        this.#dueAt = Date.now();
        this.#tick();
        return;
      }
      const { intervalMs, jitter, random } = this.#opts;
      const spread = intervalMs * jitter * (random() - 0.5);
      this.#dueAt = due + intervalMs + spread;
      const wait = Math.max(0, this.#dueAt - Date.now());
      if (wait === 0) this.#dueAt = Date.now();
      this.#timer = setTimeout(() => this.#tick(), wait);
    });
    this.#inFlight.add(running);
  }

  async #cycle(due: number): Promise<void> {
    const startedAt = Date.now();
    const items = this.#opts.items();
    await runBounded(items, this.#opts.concurrency, this.#opts.run, () => this.#aborting);
    this.#opts.onCycle?.({ startedAt, durationMs: Date.now() - startedAt, count: items.length, lagMs: Math.max(0, startedAt - due) });
  }
}

export interface ClockOptions<T> {
  intervalMs: number;
  /** Most runs in flight that are not slow; as many again may be slow (see ItemClocks). */
  concurrency: number;
  /** A run in flight for longer than this is slow: it makes way for the others. */
  slowAfterMs: number;
  /** Fraction of the interval used as jitter, spread evenly around it (default 0.1 = ±5 %). */
  jitter?: number;
  /** Runs an item once; resolves true when the run was slow to fail (it waited out its deadline). */
  run: (item: T) => Promise<boolean>;
  /** After each run: how late it started after it was due, and how long it took. */
  onRun?: (stats: { lagMs: number; durationMs: number }) => void;
  random?: () => number;
}

interface Clock<T> {
  item: T;
  /** When the next run is due (epoch ms). */
  dueAt: number;
  timer: NodeJS.Timeout | undefined;
  /** Not run yet: served after items known to answer, so one that may never answer cannot make them wait. */
  fresh: boolean;
  /** Its last run was slow to fail: it waits for a slow slot, never holding up the others. */
  slow: boolean;
  /** A run is in flight: start() must not queue it again (the run reschedules itself). */
  running: boolean;
  removed: boolean;
}

type Pool = 'fast' | 'slow';

/** One run in flight: the pool whose slot it holds, and whether it is an item's first run there. */
interface Run {
  pool: Pool;
  fresh: boolean;
}

/**
 * Runs every item on its own clock: once when added, then (after a random part of the interval the
 * first time, to spread items added together) every interval (± jitter) from the start of its
 * previous run, never two runs of one item at once. Where cycles over all items make every
 * item wait for the slowest (1,000 blackholed resources stretched a healthy resource's 5 s refresh
 * to 16-27 s), here each item is due on its own and waits only for a free slot.
 *
 * Two pools of `concurrency` slots each keep slow items from taking every slot: a run starts in
 * the fast pool and moves to the slow pool once it has taken `slowAfterMs` (as soon as the slow
 * pool has room; until then it keeps its fast slot); an item whose last run was slow to fail starts
 * in the slow pool only; first runs may hold at most half of the fast slots. Items that answer
 * then always find fast slots, whatever the blackholed ones do, and at most 2 × `concurrency` runs
 * are ever in flight. Due items are served first come,
 * first served, those that answered last time before those never run yet (only a first run can
 * wait for an item not yet known to be slow).
 */
export class ItemClocks<T> {
  readonly #opts: Required<Omit<ClockOptions<T>, 'onRun'>> & Pick<ClockOptions<T>, 'onRun'>;
  readonly #clocks = new Map<T, Clock<T>>();
  /** Due items by what their last run was: answered (fast), none yet (fresh), slow to fail. */
  readonly #ready: Record<'fast' | 'fresh' | 'slow', Clock<T>[]> = { fast: [], fresh: [], slow: [] };
  readonly #active: Record<Pool, number> = { fast: 0, slow: 0 };
  /** Runs in the fast pool past slowAfterMs, waiting for a slow slot to move to. */
  readonly #overdue = new Set<Run>();
  /** First runs holding fast slots: at most half of them, so items known to answer always find one. */
  #freshActive = 0;
  readonly #inFlight = new Set<Promise<void>>();
  #started = false;

  constructor(opts: ClockOptions<T>) {
    if (!(opts.intervalMs > 0)) throw new RangeError('intervalMs must be positive');
    if (!(opts.concurrency >= 1)) throw new RangeError('concurrency must be at least 1');
    this.#opts = { jitter: 0.1, random: Math.random, ...opts };
  }

  /** Adds an item, due at once. */
  add(item: T): void {
    if (this.#clocks.has(item)) return;
    const clock: Clock<T> = { item, dueAt: Date.now(), timer: undefined, fresh: true, slow: false, running: false, removed: false };
    this.#clocks.set(item, clock);
    if (this.#started) this.#makeReady(clock);
  }

  /** Removes an item: it is not run again (a run in flight ends on its own). */
  remove(item: T): void {
    const clock = this.#clocks.get(item);
    if (!clock) return;
    clock.removed = true;
    clearTimeout(clock.timer);
    this.#clocks.delete(item);
  }

  /** Starts the clocks: every item is due at once. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    const now = Date.now();
    for (const clock of this.#clocks.values()) {
      if (clock.running) continue;
      clock.dueAt = now;
      this.#makeReady(clock);
    }
  }

  /** Stops running items; resolves once the runs in flight have ended. Items stay for start(). */
  async stop(): Promise<void> {
    this.#started = false;
    for (const clock of this.#clocks.values()) clearTimeout(clock.timer);
    for (const queue of Object.values(this.#ready)) queue.length = 0;
    // Runs in flight keep their slots until they end; none is moved or started meanwhile.
    await Promise.all(this.#inFlight);
  }

  get running(): boolean {
    return this.#started;
  }

  #makeReady(clock: Clock<T>): void {
    clock.timer = undefined;
    this.#ready[clock.slow ? 'slow' : clock.fresh ? 'fresh' : 'fast'].push(clock);
    this.#pump();
  }

  #pump(): void {
    const { concurrency } = this.#opts;
    // Runs past slowAfterMs move to free slow slots first: that frees fast slots for the items
    // that answer, which matters more than retrying an item known to fail slowly.
    for (const run of this.#overdue) {
      if (this.#active.slow >= concurrency) break;
      this.#overdue.delete(run);
      this.#leave(run);
      this.#active.slow++;
      run.pool = 'slow';
    }
    const freshCap = Math.ceil(concurrency / 2);
    for (const [queue, pool] of [
      ['fast', 'fast'],
      ['fresh', 'fast'],
      ['slow', 'slow'],
    ] as const) {
      const ready = this.#ready[queue];
      while (this.#started && ready.length > 0 && this.#active[pool] < concurrency && (queue !== 'fresh' || this.#freshActive < freshCap)) {
        const clock = ready.shift()!;
        if (!clock.removed) this.#run(clock, pool);
      }
    }
  }

  #run(clock: Clock<T>, pool: Pool): void {
    const { run, slowAfterMs, intervalMs, jitter, random, onRun } = this.#opts;
    const startedAt = Date.now();
    const state: Run = { pool, fresh: pool === 'fast' && clock.fresh };
    this.#active[pool]++;
    if (state.fresh) this.#freshActive++;
    clock.running = true;
    const overdueTimer =
      pool === 'fast'
        ? setTimeout(() => {
            this.#overdue.add(state);
            this.#pump();
          }, slowAfterMs)
        : undefined;
    const done = run(clock.item)
      .catch(() => false) // a failing run reports its own error; the clock goes on
      .then((slow) => {
        clearTimeout(overdueTimer);
        this.#overdue.delete(state);
        this.#leave(state);
        clock.running = false;
        const wasFresh = clock.fresh;
        clock.fresh = false;
        clock.slow = slow;
        onRun?.({ lagMs: Math.max(0, startedAt - clock.dueAt), durationMs: Date.now() - startedAt });
        if (this.#started && !clock.removed) {
          // After a first run the next comes after a random part of the interval: items added
          // together (a resources file) spread over the interval instead of staying in one burst.
          clock.dueAt = startedAt + (wasFresh ? intervalMs * random() : intervalMs + intervalMs * jitter * (random() - 0.5));
          clock.timer = setTimeout(() => this.#makeReady(clock), Math.max(0, clock.dueAt - Date.now()));
        }
        this.#pump();
      })
      .finally(() => this.#inFlight.delete(done));
    this.#inFlight.add(done);
  }

  /** Frees the slot a run holds. */
  #leave(run: Run): void {
    this.#active[run.pool]--;
    if (run.fresh) this.#freshActive--;
    run.fresh = false;
  }
}
