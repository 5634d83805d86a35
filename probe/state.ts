// The probe's view of its targets: the latest check result per target, in the order of `--urls`,
// and when each target's reachability last flipped. `/status` is served from a cached JSON text
// that is rebuilt only after a result changed, so reading is cheap however often it is polled.
import type { CheckResult, Reason } from '../shared/checks.ts';
import type { Target } from '../shared/targets.ts';

export interface TargetStatus {
  /** star's two fields come first, as star wrote them. */
  reachable: boolean;
  url: string;
  reason: Reason | null;
  message: string | null;
  latencyMs: number | null;
  statusCode: number | null;
  checkedAt: string | null;
  changedAt: string | null;
}

export interface Transition {
  target: Target;
  previous: TargetStatus;
  current: TargetStatus;
}

export class ProbeState {
  readonly targets: readonly Target[];
  readonly #statuses: TargetStatus[];
  readonly #index = new Map<Target, number>();
  #json: string | undefined;

  constructor(targets: readonly Target[]) {
    this.targets = targets;
    this.#statuses = targets.map((t, i) => {
      this.#index.set(t, i);
      return { reachable: false, url: t.url, reason: null, message: null, latencyMs: null, statusCode: null, checkedAt: null, changedAt: null };
    });
  }

  /** Records a result; returns the transition when reachability flipped (or on the first result). */
  record(target: Target, result: CheckResult): Transition | undefined {
    const i = this.#index.get(target);
    if (i === undefined) return undefined;
    const previous = this.#statuses[i]!;
    const first = previous.checkedAt === null;
    const flipped = first || previous.reachable !== result.reachable;
    const current: TargetStatus = {
      reachable: result.reachable,
      url: target.url,
      reason: result.reason,
      message: result.message ?? null,
      latencyMs: result.latencyMs,
      statusCode: result.statusCode ?? null,
      checkedAt: result.checkedAt,
      changedAt: flipped ? result.checkedAt : previous.changedAt,
    };
    this.#statuses[i] = current;
    this.#json = undefined;
    return flipped ? { target, previous, current } : undefined;
  }

  statuses(): readonly TargetStatus[] {
    return this.#statuses;
  }

  /** The `/status` document as JSON text. */
  statusJson(): string {
    this.#json ??= JSON.stringify({ status: { targets: this.#statuses } });
    return this.#json;
  }
}
