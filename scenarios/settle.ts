// Waits until the observed reachability matches the expected one (and holds), or a deadline
// passes, reporting progress meanwhile; records per edge how long the change took to show.
import { compare, edgeKey, type Comparison, type Edge, type Observation, type Verdict } from './matrix.ts';

export interface SettleOptions {
  edges: Edge[];
  expected: Map<string, Verdict>;
  observe: () => Promise<Map<string, Observation>>;
  /** When the step's policies were applied (epoch ms): the zero of per-edge timings. */
  appliedAt: number;
  deadlineMs: number;
  /** The match must hold this long before the step counts as settled (one probe cycle is enough). */
  holdMs: number;
  pollMs?: number;
  /** Observations at the end of the previous step, to tell which edges changed. */
  previous?: Map<string, Observation>;
  onProgress?: (cmp: Comparison, elapsedMs: number) => void;
  /** Stops waiting (the result is then not settled). */
  signal?: AbortSignal;
}

export interface Settled {
  settled: boolean;
  durationMs: number;
  comparison: Comparison;
  observed: Map<string, Observation>;
  /** edge key → ms after appliedAt at which the edge took its final value (only edges that changed). */
  changedAfterMs: Map<string, number>;
}

export async function settle(opts: SettleOptions): Promise<Settled> {
  const poll = opts.pollMs ?? 250;
  const firstSeen = new Map<string, { verdict: string; at: number }>();
  let matchedSince: number | undefined;
  for (;;) {
    const observed = await opts.observe();
    const now = Date.now();
    for (const e of opts.edges) {
      const k = edgeKey(e.from, e.to);
      const v = observed.get(k)?.verdict ?? 'unknown';
      const seen = firstSeen.get(k);
      if (!seen || seen.verdict !== v) firstSeen.set(k, { verdict: v, at: now });
    }
    const cmp = compare(opts.edges, opts.expected, observed);
    const ok = cmp.wrong === 0 && cmp.noValue === 0;
    matchedSince = ok ? (matchedSince ?? now) : undefined;
    const elapsed = now - opts.appliedAt;
    opts.onProgress?.(cmp, elapsed);
    const settledNow = ok && now - matchedSince! >= opts.holdMs;
    if (settledNow || elapsed >= opts.deadlineMs || opts.signal?.aborted) {
      const changedAfterMs = new Map<string, number>();
      // The first step has nothing to change from: everything simply appears.
      for (const e of opts.previous ? opts.edges : []) {
        const k = edgeKey(e.from, e.to);
        const before = opts.previous?.get(k)?.verdict;
        const final = observed.get(k);
        if (!final || final.verdict === 'unknown' || final.verdict === before) continue;
        // The probe knows when it saw the flip; otherwise use when the runner first saw the value.
        const probeAt = final.changedAt ? Date.parse(final.changedAt) : NaN;
        const at = Number.isFinite(probeAt) && probeAt >= opts.appliedAt ? probeAt : firstSeen.get(k)!.at;
        changedAfterMs.set(k, Math.max(0, at - opts.appliedAt));
      }
      return { settled: settledNow, durationMs: elapsed, comparison: cmp, observed, changedAfterMs };
    }
    await new Promise((r) => setTimeout(r, poll));
  }
}
