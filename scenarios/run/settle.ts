// Waits until every observable cell has been checked since the step's policies applied and every
// judged cell shows its expected verdict, or a deadline passes. A value counts only when its check
// started after the policies were in place (the probes report when each check started), so a
// step settles one probe cycle after the change at the latest, without waiting for "stability".
// Records per cell how long after the change its flip showed (relative to the previous step) and
// when it converged: its last flip to the value it ended the step with.
import type { Observation } from './observe.ts';

export interface SettleOptions {
  /** Keys of the cells to observe. */
  cells: readonly string[];
  /** Judged cells: key → expected allowed. */
  expected: ReadonlyMap<string, boolean>;
  observe: () => Promise<Map<string, Observation>>;
  /** When the step's policies were in place (epoch ms): the zero of the timings and the freshness bar. */
  appliedAt: number;
  deadlineMs: number;
  pollMs?: number;
  /** Observations at the end of the previous step, to tell which cells flipped. */
  previous?: ReadonlyMap<string, Observation>;
  onProgress?: (state: { fresh: number; matching: number; judged: number }, elapsedMs: number) => void;
  /** Stops waiting (the result is then not settled). */
  signal?: AbortSignal;
}

export interface Settled {
  settled: boolean;
  durationMs: number;
  /** The last observation of each cell, and whether it was checked since the policies applied. */
  observed: Map<string, Observation>;
  fresh: Set<string>;
  /** Cell key → ms after appliedAt at which it flipped to its final value (only cells that flipped). */
  changedAfterMs: Map<string, number>;
  /**
   * Cell key → ms after appliedAt of its last flip to its final value (0: it had that value when
   * the policies applied); only cells with a value checked since the policies applied.
   */
  convergedAfterMs: Map<string, number>;
}

const at = (iso: string | null) => (iso === null ? NaN : Date.parse(iso));

export async function settle(opts: SettleOptions): Promise<Settled> {
  const poll = opts.pollMs ?? 250;
  const firstSeen = new Map<string, { allowed: boolean | null; at: number }>();
  let firstPollAt: number | undefined;
  for (;;) {
    const observed = await opts.observe();
    const now = Date.now();
    firstPollAt ??= now;
    const fresh = new Set<string>();
    let matching = 0;
    for (const k of opts.cells) {
      const o = observed.get(k);
      const v = o?.allowed ?? null;
      const seen = firstSeen.get(k);
      if (!seen || seen.allowed !== v) firstSeen.set(k, { allowed: v, at: now });
      if (o && v !== null && at(o.checkedAt) >= opts.appliedAt) fresh.add(k);
      if (fresh.has(k) && opts.expected.get(k) === v) matching++;
    }
    const judged = opts.cells.filter((k) => opts.expected.has(k)).length;
    const elapsed = now - opts.appliedAt;
    opts.onProgress?.({ fresh: fresh.size, matching, judged }, elapsed);
    const settledNow = fresh.size === opts.cells.length && matching === judged;
    if (settledNow || elapsed >= opts.deadlineMs || opts.signal?.aborted) {
      const changedAfterMs = new Map<string, number>();
      for (const k of opts.previous ? opts.cells : []) {
        const before = opts.previous!.get(k)?.allowed ?? null;
        const final = observed.get(k);
        if (!final || final.allowed === null || final.allowed === before || !fresh.has(k)) continue;
        // The probe knows when it saw the flip; otherwise use when the runner first saw the value.
        const probeAt = at(final.changedAt);
        const when = Number.isFinite(probeAt) && probeAt >= opts.appliedAt ? probeAt : firstSeen.get(k)!.at;
        changedAfterMs.set(k, Math.max(0, when - opts.appliedAt));
      }
      const convergedAfterMs = new Map<string, number>();
      for (const k of fresh) {
        const final = observed.get(k)!;
        // The probe knows when it last saw a flip; otherwise: when the runner first saw the final
        // value, 0 when that was already in the first look after the change.
        const probeAt = at(final.changedAt);
        const seenAt = firstSeen.get(k)!.at;
        const when = Number.isFinite(probeAt) ? probeAt : seenAt === firstPollAt ? opts.appliedAt : seenAt;
        convergedAfterMs.set(k, Math.max(0, when - opts.appliedAt));
      }
      return { settled: settledNow, durationMs: elapsed, observed, fresh, changedAfterMs, convergedAfterMs };
    }
    await new Promise((r) => setTimeout(r, poll));
  }
}
