import { describe, expect, it } from 'vitest';
import { Scheduler, runBounded } from '../shared/scheduler.ts';
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

describe('Scheduler', () => {
  it('runs a cycle at once and then every interval', async () => {
    const starts: number[] = [];
    const s = new Scheduler({ intervalMs: 40, concurrency: 1, items: () => [1], run: async () => void starts.push(Date.now()), jitter: 0 });
    s.start();
    await waitFor(() => starts.length >= 4, { timeoutMs: 2000 });
    await s.stop();
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    // Roughly one interval apart (timers are never early).
    for (const g of gaps) expect(g).toBeGreaterThanOrEqual(35);
  });

  it('never overlaps cycles when a cycle outlasts the interval', async () => {
    let active = 0;
    let overlap = false;
    let cycles = 0;
    const s = new Scheduler({
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
    const starts: number[] = [];
    const s = new Scheduler({ intervalMs: 50, jitter: 0.8, random: () => 0, concurrency: 1, items: () => [1], run: async () => void starts.push(Date.now()) });
    s.start();
    await waitFor(() => starts.length >= 3, { timeoutMs: 2000 });
    await s.stop();
    // random() = 0 → the earliest possible start: interval × (1 − jitter/2) = 30 ms.
    const gap = starts[2]! - starts[1]!;
    expect(gap).toBeLessThan(50);
  });

  it('stop waits for the cycle in flight and schedules nothing more', async () => {
    let runs = 0;
    const s = new Scheduler({ intervalMs: 5, concurrency: 1, items: () => [1, 2, 3], run: async () => {
      runs++;
      await delay(20);
    } });
    s.start();
    await waitFor(() => runs >= 1);
    await s.stop();
    const after = runs;
    await delay(60);
    expect(runs).toBe(after);
    expect(s.running).toBe(false);
  });

  it('rejects nonsense options', () => {
    expect(() => new Scheduler({ intervalMs: 0, concurrency: 1, items: () => [], run: async () => {} })).toThrow(/intervalMs/);
    expect(() => new Scheduler({ intervalMs: 1, concurrency: 0, items: () => [], run: async () => {} })).toThrow(/concurrency/);
  });
});
