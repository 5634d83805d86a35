// The probe engine: checks every target each cycle and records the results.
import { check, type CheckOptions } from '../shared/checks.ts';
import type { Logger } from '../shared/logger.ts';
import { PeriodicRunner, type CycleStats } from '../shared/periodic.ts';
import type { Target } from '../shared/targets.ts';
import { createProbeMetrics, type ProbeMetrics } from './metrics.ts';
import { ProbeState } from './state.ts';

export interface ProbeOptions {
  targets: readonly Target[];
  intervalMs: number;
  concurrency: number;
  check: CheckOptions;
  logger: Logger;
  /** Called after every cycle (benchmarks and one-shot runs use it). */
  onCycle?: (stats: CycleStats) => void;
}

/** How stale `GET /status` may be while results stream in: far below any poller's period. */
export const STATUS_COALESCE_MS = 200;

export class Probe {
  readonly state: ProbeState;
  readonly metrics: ProbeMetrics;
  readonly #runner: PeriodicRunner<Target>;
  readonly #logger: Logger;
  #cycles = 0;
  #lastCycleAt: string | null = null;

  constructor(opts: ProbeOptions) {
    this.state = new ProbeState(opts.targets, { coalesceMs: STATUS_COALESCE_MS });
    this.metrics = createProbeMetrics(this.state);
    this.#logger = opts.logger;
    this.#runner = new PeriodicRunner<Target>({
      intervalMs: opts.intervalMs,
      concurrency: opts.concurrency,
      items: () => this.state.targets,
      run: async (target) => {
        const result = await check(target, opts.check);
        this.metrics.countCheck(result.reason);
        const flip = this.state.record(target, result);
        if (flip && flip.previous.checkedAt !== null) {
          this.#logger.info(
            { target: target.url, reachable: result.reachable, reason: result.reason, message: result.message, after: flip.previous.changedAt },
            result.reachable ? 'target became reachable' : 'target became unreachable',
          );
        }
      },
      onCycle: (stats) => {
        this.#cycles++;
        this.#lastCycleAt = new Date(stats.startedAt).toISOString();
        this.metrics.observeCycle(stats.durationMs / 1000);
        opts.onCycle?.(stats);
        if (stats.durationMs > opts.intervalMs) {
          this.#logger.warn(
            { durationMs: stats.durationMs, targets: stats.count },
            'cycle took longer than the interval; raise --concurrency or lower --timeout-seconds',
          );
        }
      },
    });
  }

  start(): void {
    this.#runner.start();
  }

  /** Starts a cycle over every target now (POST /cycle), see PeriodicRunner.poke. */
  poke(): 'started' | 'queued' | 'stopped' {
    return this.#runner.poke();
  }

  stop(): Promise<void> {
    return this.#runner.stop();
  }

  health(): { cycles: number; lastCycleAt: string | null } {
    return { cycles: this.#cycles, lastCycleAt: this.#lastCycleAt };
  }
}
