// Polling with a deadline: the only way tests wait for something to happen (never a bare sleep).

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  message?: string;
}

/**
 * Calls `fn` until it returns a value other than undefined/false (or stops throwing), and returns
 * that value. Fails with the last error or `message` when the deadline passes.
 */
export async function waitFor<T>(fn: () => T | Promise<T>, opts: WaitOptions = {}): Promise<Exclude<T, false | undefined>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined && value !== false) return value as Exclude<T, false | undefined>;
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
