// Failed-login throttling (login-throttle.ts decides the keys). Each key may fail `freeFailures`
// times; every failure after that locks the key for base * 2^(n - free) ms, capped at maxLockoutMs.
// While locked, login attempts are answered 429 with Retry-After without even checking the
// password (so a guesser cannot learn anything and costs no hashing). A success clears the key.

export interface LockoutOptions {
  freeFailures: number;
  baseLockoutMs: number;
  maxLockoutMs: number;
  /** Entries forgotten after this long without failures. */
  forgetAfterMs: number;
  /** Upper bound on remembered keys (oldest dropped first). */
  maxEntries: number;
}

interface Entry {
  failures: number;
  lockedUntil: number;
  lastFailure: number;
}

export class LockoutLimiter {
  readonly #opts: LockoutOptions;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();

  constructor(opts: LockoutOptions, now: () => number) {
    this.#opts = opts;
    this.#now = now;
  }

  /** Milliseconds the key is still locked for (0 when free). */
  lockedFor(key: string): number {
    const e = this.#entries.get(key);
    if (!e) return 0;
    const now = this.#now();
    if (now - e.lastFailure > this.#opts.forgetAfterMs && e.lockedUntil <= now) {
      this.#entries.delete(key);
      return 0;
    }
    return Math.max(0, e.lockedUntil - now);
  }

  fail(key: string): void {
    const now = this.#now();
    let e = this.#entries.get(key);
    if (e && now - e.lastFailure > this.#opts.forgetAfterMs && e.lockedUntil <= now) e = undefined;
    if (!e) e = { failures: 0, lockedUntil: 0, lastFailure: now };
    e.failures += 1;
    e.lastFailure = now;
    const over = e.failures - this.#opts.freeFailures;
    if (over > 0) {
      const ms = Math.min(this.#opts.maxLockoutMs, this.#opts.baseLockoutMs * 2 ** Math.min(over - 1, 40));
      e.lockedUntil = Math.max(e.lockedUntil, now + ms);
    }
    this.#entries.delete(key);
    this.#entries.set(key, e);
    while (this.#entries.size > this.#opts.maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.#entries.delete(oldest);
    }
  }

  succeed(key: string): void {
    this.#entries.delete(key);
  }
}

/** Bounds concurrent slow work (password hashing): `max` at once, `maxQueue` waiting, the rest refused. */
export class Gate {
  readonly #max: number;
  readonly #maxQueue: number;
  #active = 0;
  readonly #queue: Array<() => void> = [];

  constructor(max: number, maxQueue: number) {
    this.#max = max;
    this.#maxQueue = maxQueue;
  }

  /** Runs fn when a slot is free; returns undefined (without running fn) when the queue is full. */
  async run<T>(fn: () => Promise<T>): Promise<{ value: T } | undefined> {
    if (this.#active >= this.#max) {
      if (this.#queue.length >= this.#maxQueue) return undefined;
      await new Promise<void>((resolve) => this.#queue.push(resolve));
    } else {
      this.#active += 1;
    }
    try {
      return { value: await fn() };
    } finally {
      const next = this.#queue.shift();
      if (next) next();
      else this.#active -= 1;
    }
  }
}
