// Polling with a deadline: the only way tests wait for something to happen (never a bare sleep).

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  message?: string;
}

/** What waitFor keeps waiting on. */
type NotYet = undefined | null | false | 0 | '';

/**
 * Calls `fn` until it returns a truthy value (and does not throw), and returns that value. Fails
 * with the last error or `message` when the deadline passes. Every falsy value means "not yet":
 * a pid read from a file that is created empty and then written is 0 in between, and returning
 * that 0 once made a test signal pid 0, its own process group, which ended the whole test run.
 * To wait for a zero or an empty string, return a comparison.
 */
export async function waitFor<T>(fn: () => T | Promise<T>, opts: WaitOptions = {}): Promise<Exclude<T, NotYet>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value as Exclude<T, NotYet>;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`${opts.message ?? 'condition not met'} within ${opts.timeoutMs ?? 10_000} ms${why}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 50));
  }
}
