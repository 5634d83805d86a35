// The probe's view of its targets: the latest check result per target, in the order of `--urls`,
// and when each target's reachability last flipped. `/status` is served from cached UTF-8 bytes
// (a Buffer: a cached string would be encoded again on every answer, ~200 KiB at 1,000 targets).
// Each target's entry is serialised when the document is next asked for after its result changed,
// never per check, and the document is the entries' bytes put together (one copy, not a
// JSON.stringify of the whole). While results stream in (1,000 targets every 5 s: 200 a second)
// the document is put together again at most every `coalesceMs`, not for nearly every answer.
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

// `{"status":{"targets":[…]}}`, exactly as JSON.stringify writes it.
const HEAD = Buffer.from('{"status":{"targets":[');
const COMMA = Buffer.from(',');
const TAIL = Buffer.from(']}}');

export class ProbeState {
  readonly targets: readonly Target[];
  readonly #statuses: TargetStatus[];
  readonly #index = new Map<Target, number>();
  /** Each target's entry as bytes, undefined until asked for after a change. */
  readonly #parts: (Buffer | undefined)[];
  #body: Buffer | undefined;
  /** Whether a result changed since #body was put together, and when that was. */
  #stale = true;
  #builtAt = 0;
  readonly #coalesceMs: number;

  /**
   * `coalesceMs`: a `/status` read up to this many milliseconds after the document was put
   * together gets that document even if results came in since (0: always the latest).
   */
  constructor(targets: readonly Target[], opts: { coalesceMs?: number } = {}) {
    this.targets = targets;
    this.#coalesceMs = opts.coalesceMs ?? 0;
    this.#statuses = targets.map((t, i) => {
      this.#index.set(t, i);
      return { reachable: false, url: t.url, reason: null, message: null, latencyMs: null, statusCode: null, checkedAt: null, changedAt: null };
    });
    this.#parts = new Array<Buffer | undefined>(targets.length);
  }

  /**
   * Records a result; returns the transition when reachability flipped (or on the first result).
   * A result whose check started before the recorded one's is dropped: after a poke two checks of
   * a target can be in flight, and the one started before a policy change must not overwrite the
   * one started after it (the runner counts a cell only when its check started after the change).
   */
  record(target: Target, result: CheckResult): Transition | undefined {
    const i = this.#index.get(target);
    if (i === undefined) return undefined;
    const previous = this.#statuses[i]!;
    if (previous.checkedAt !== null && Date.parse(result.checkedAt) < Date.parse(previous.checkedAt)) return undefined;
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
    this.#parts[i] = undefined;
    this.#stale = true;
    return flipped ? { target, previous, current } : undefined;
  }

  statuses(): readonly TargetStatus[] {
    return this.#statuses;
  }

  /** The `/status` document as UTF-8 JSON bytes, ready to send (do not modify them). */
  statusBody(now = Date.now()): Buffer {
    if (this.#body && (!this.#stale || now - this.#builtAt < this.#coalesceMs)) return this.#body;
    const parts: Buffer[] = [HEAD];
    for (let i = 0; i < this.#statuses.length; i++) {
      if (i > 0) parts.push(COMMA);
      parts.push((this.#parts[i] ??= Buffer.from(JSON.stringify(this.#statuses[i]))));
    }
    parts.push(TAIL);
    this.#body = Buffer.concat(parts);
    this.#stale = false;
    this.#builtAt = now;
    return this.#body;
  }
}
