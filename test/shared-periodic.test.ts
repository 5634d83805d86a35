import { describe, expect, it, vi } from 'vitest';
import { ItemClocks, PeriodicRunner, runBounded } from '../shared/periodic.ts';
import { waitFor } from './helpers/wait.ts';

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('bounded runs', () => {
  it('never has more than the limit in flight and runs every item once', async () => {
    let inFlight = 0;
    let peak = 0;
    const seen: number[] = [];
    await runBounded([...Array(50).keys()], 7, async (i) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await delay(2);
      seen.push(i);
      inFlight--;
    });
    expect(peak).toBe(7);
    expect(seen.sort((a, b) => a - b)).toEqual([...Array(50).keys()]);
  });

  it('a failing item does not stop the others', async () => {
    const done: number[] = [];
    await runBounded([1, 2, 3], 1, async (i) => {
      if (i === 2) throw new Error('bad');
      done.push(i);
    });
    expect(done).toEqual([1, 3]);
  });

  it('a slow item holds one worker, not the rest', async () => {
    const finished: string[] = [];
    await runBounded(['slow', 'a', 'b', 'c'], 2, async (x) => {
      await delay(x === 'slow' ? 150 : 5);
      finished.push(x);
    });
    expect(finished.indexOf('slow')).toBe(3);
  });
});

describe('PeriodicRunner', () => {
  it('runs a cycle at once and then every interval', async () => {
    // On a fake clock: the test states when cycles start, whatever the load on the machine.
    vi.useFakeTimers();
    try {
      const starts: number[] = [];
      const s = new PeriodicRunner({ intervalMs: 40, concurrency: 1, items: () => [1], run: async () => void starts.push(Date.now()), jitter: 0 });
      const t0 = Date.now();
      s.start();
      expect(starts).toEqual([t0]);
      await vi.advanceTimersByTimeAsync(39);
      expect(starts).toEqual([t0]);
      await vi.advanceTimersByTimeAsync(1);
      expect(starts).toEqual([t0, t0 + 40]);
      await vi.advanceTimersByTimeAsync(80);
      expect(starts).toEqual([t0, t0 + 40, t0 + 80, t0 + 120]);
      await s.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('never overlaps cycles when a cycle outlasts the interval', async () => {
    let active = 0;
    let overlap = false;
    let cycles = 0;
    const s = new PeriodicRunner({
      intervalMs: 10,
      concurrency: 4,
      items: () => [1, 2, 3, 4],
      run: async () => {
        active++;
        if (active > 4) overlap = true;
        await delay(30);
        active--;
      },
      onCycle: () => cycles++,
    });
    s.start();
    await waitFor(() => cycles >= 3, { timeoutMs: 3000 });
    await s.stop();
    expect(overlap).toBe(false);
  });

  it('applies jitter around the interval', async () => {
    vi.useFakeTimers();
    try {
      const starts: number[] = [];
      const s = new PeriodicRunner({
        intervalMs: 50,
        jitter: 0.8,
        random: () => 0,
        concurrency: 1,
        items: () => [1],
        run: async () => void starts.push(Date.now()),
      });
      const t0 = Date.now();
      s.start();
      // random() = 0 → the earliest possible start: interval × (1 − jitter/2) = 30 ms after the last.
      await vi.advanceTimersByTimeAsync(29);
      expect(starts).toEqual([t0]);
      await vi.advanceTimersByTimeAsync(1);
      expect(starts).toEqual([t0, t0 + 30]);
      await vi.advanceTimersByTimeAsync(30);
      expect(starts).toEqual([t0, t0 + 30, t0 + 60]);
      await s.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('stop waits for the cycle in flight and schedules nothing more', async () => {
    let runs = 0;
    const s = new PeriodicRunner({
      intervalMs: 5,
      concurrency: 1,
      items: () => [1, 2, 3],
      run: async () => {
        runs++;
        await delay(20);
      },
    });
    s.start();
    await waitFor(() => runs >= 1);
    await s.stop();
    const after = runs;
    await delay(60);
    expect(runs).toBe(after);
    expect(s.running).toBe(false);
  });

  /** A runner (fake timers) whose every run takes 30 ms, every 1 s, recording when each run started. */
  function timedRunner(): { s: PeriodicRunner<number>; starts: number[] } {
    const starts: number[] = [];
    const s = new PeriodicRunner({
      intervalMs: 1000,
      concurrency: 1,
      items: () => [1],
      run: async () => {
        starts.push(Date.now());
        await delay(30);
      },
      jitter: 0,
    });
    return { s, starts };
  }

  it('poke starts a cycle at once, even with one in flight, and the schedule resumes an interval after it', async () => {
    vi.useFakeTimers();
    try {
      const { s, starts } = timedRunner();
      const t0 = Date.now();
      s.start();
      await vi.advanceTimersByTimeAsync(10); // the first cycle is in flight
      expect(s.poke()).toBe('started');
      expect(starts).toEqual([t0, t0 + 10]);
      await vi.advanceTimersByTimeAsync(490);
      expect(s.poke()).toBe('started'); // idle between cycles: starts now, not at t0 + 1000
      expect(starts).toEqual([t0, t0 + 10, t0 + 500]);
      // The older cycles schedule nothing; the next regular cycle is one interval after the last poke.
      await vi.advanceTimersByTimeAsync(999);
      expect(starts).toEqual([t0, t0 + 10, t0 + 500]);
      await vi.advanceTimersByTimeAsync(1);
      expect(starts).toEqual([t0, t0 + 10, t0 + 500, t0 + 1500]);
      const stopping = s.stop();
      await vi.advanceTimersByTimeAsync(30);
      await stopping;
      expect(s.poke()).toBe('stopped');
    } finally {
      vi.useRealTimers();
    }
  });

  it('pokes while two cycles are in flight fold into one more cycle as the newest ends', async () => {
    vi.useFakeTimers();
    try {
      const { s, starts } = timedRunner();
      const t0 = Date.now();
      s.start();
      expect(s.poke()).toBe('started');
      expect(s.poke()).toBe('queued');
      expect(s.poke()).toBe('queued');
      expect(starts).toEqual([t0, t0]);
      await vi.advanceTimersByTimeAsync(30);
      expect(starts).toEqual([t0, t0, t0 + 30]);
      await vi.advanceTimersByTimeAsync(999);
      expect(starts).toEqual([t0, t0, t0 + 30]);
      await vi.advanceTimersByTimeAsync(1);
      expect(starts).toEqual([t0, t0, t0 + 30, t0 + 1030]);
      const stopping = s.stop();
      await vi.advanceTimersByTimeAsync(30);
      await stopping;
    } finally {
      vi.useRealTimers();
    }
  });

  it('rejects nonsense options', () => {
    expect(() => new PeriodicRunner({ intervalMs: 0, concurrency: 1, items: () => [], run: async () => {} })).toThrow(/intervalMs/);
    expect(() => new PeriodicRunner({ intervalMs: 1, concurrency: 0, items: () => [], run: async () => {} })).toThrow(/concurrency/);
  });
});

describe('ItemClocks', () => {
  it('runs an item when added, then on its own interval; a removed item runs no more', async () => {
    const runs: Record<string, number> = { a: 0, b: 0 };
    const clocks = new ItemClocks<string>({
      intervalMs: 30,
      concurrency: 2,
      slowAfterMs: 1000,
      jitter: 0,
      run: async (x) => ((runs[x] = (runs[x] ?? 0) + 1), false),
    });
    clocks.add('a');
    expect(runs.a).toBe(0); // nothing before start()
    clocks.start();
    await waitFor(() => runs.a! >= 3);
    clocks.add('b');
    await waitFor(() => runs.b! >= 1, { timeoutMs: 1000 });
    clocks.remove('a');
    const after = runs.a!;
    await waitFor(() => runs.b! >= 4);
    expect(runs.a).toBe(after);
    await clocks.stop();
    expect(clocks.running).toBe(false);
  });

  it('items slow to fail never take the slots of those that answer', async () => {
    // On a fake clock, so that the count below does not depend on the machine's load.
    vi.useFakeTimers();
    // Six items that wait out a 300 ms "deadline" and fail, one that answers at once; two slots.
    let inFlight = 0;
    let peak = 0;
    let fast = 0;
    const slowRuns: number[] = [];
    const busy = new Set<string>();
    let twice = false;
    const clocks = new ItemClocks<string>({
      intervalMs: 100,
      concurrency: 2,
      slowAfterMs: 50,
      run: async (x) => {
        if (busy.has(x)) twice = true;
        busy.add(x);
        inFlight++;
        peak = Math.max(peak, inFlight);
        try {
          if (x === 'fast') {
            fast++;
            return false;
          }
          await delay(300);
          slowRuns.push(fast);
          return true;
        } finally {
          inFlight--;
          busy.delete(x);
        }
      },
    });
    for (const x of ['s1', 's2', 's3', 's4', 's5', 's6', 'fast']) clocks.add(x);
    clocks.start();
    // Once every slow item has failed once, they run two at a time, 300 ms each: a round of the
    // six takes 900 ms, in which the fast item keeps its 100 ms clock (with cycles over all items
    // it would run once per round).
    try {
      for (let step = 0; step < 200 && slowRuns.length < 12; step++) await vi.advanceTimersByTimeAsync(50);
      const stopped = clocks.stop();
      await vi.advanceTimersByTimeAsync(300);
      await stopped;
    } finally {
      vi.useRealTimers();
    }
    expect(slowRuns.length).toBeGreaterThanOrEqual(12);
    const fastDuringSecondRound = slowRuns[11]! - slowRuns[5]!;
    expect(fastDuringSecondRound).toBeGreaterThanOrEqual(4);
    expect(peak).toBeLessThanOrEqual(4);
    expect(twice).toBe(false);
  });

  it('rejects nonsense options', () => {
    expect(() => new ItemClocks({ intervalMs: 0, concurrency: 1, slowAfterMs: 1, run: async () => false })).toThrow(/intervalMs/);
    expect(() => new ItemClocks({ intervalMs: 1, concurrency: 0, slowAfterMs: 1, run: async () => false })).toThrow(/concurrency/);
  });
});
