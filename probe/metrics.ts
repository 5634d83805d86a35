// Prometheus metrics for the probe. Per-target series are produced from the current state at
// scrape time, so a target that is no longer configured has no series left behind (no stale series).
import { Counter, Histogram, type Registry } from '../shared/metrics-client.ts';
import { agentRegistry, stateGauge } from '../shared/agent-metrics.ts';
import type { Reason } from '../shared/checks.ts';
import type { DatagramOutcome } from './serve.ts';
import type { ProbeState } from './state.ts';

export interface ProbeMetrics {
  registry: Registry;
  countCheck(reason: Reason): void;
  observeCycle(seconds: number): void;
  countServedDatagram(outcome: DatagramOutcome): void;
}

export function createProbeMetrics(state: ProbeState): ProbeMetrics {
  const registry = agentRegistry('starmap_probe_');
  stateGauge(registry, {
    name: 'starmap_probe_target_reachable',
    help: 'Whether the latest check of the target succeeded (1) or not (0); absent before the first check.',
    labelNames: ['target', 'kind'],
    values: () =>
      state.statuses().flatMap((s, i) => (s.checkedAt !== null ? [[{ target: s.url, kind: state.targets[i]!.kind }, s.reachable ? 1 : 0] as const] : [])),
  });
  stateGauge(registry, {
    name: 'starmap_probe_target_latency_seconds',
    help: 'Duration of the latest check of the target, until connect (tcp) or response headers (http) or failure.',
    labelNames: ['target'],
    values: () => state.statuses().flatMap((s) => (s.latencyMs !== null ? [[{ target: s.url }, s.latencyMs / 1000] as const] : [])),
  });
  stateGauge(registry, {
    name: 'starmap_probe_target_status_code',
    help: 'HTTP status code of the latest check of an http target that got a response.',
    labelNames: ['target'],
    values: () => state.statuses().flatMap((s) => (s.statusCode !== null ? [[{ target: s.url }, s.statusCode] as const] : [])),
  });
  stateGauge(registry, { name: 'starmap_probe_targets', help: 'Number of configured targets.', values: () => [[{}, state.targets.length]] });
  const checks = new Counter({
    name: 'starmap_probe_checks_total',
    help: 'Checks made, by outcome reason.',
    labelNames: ['reason'],
    registers: [registry],
  });
  const cycles = new Histogram({
    name: 'starmap_probe_cycle_duration_seconds',
    help: 'Time to check every target once.',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [registry],
  });
  const served = new Counter({
    name: 'starmap_probe_served_udp_datagrams_total',
    help: 'Datagrams received on the --serve UDP ports, by outcome: echoed, or dropped-loop (from a privileged or served port).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  return {
    registry,
    countServedDatagram: (outcome) => served.inc({ outcome }),
    countCheck: (reason) => checks.inc({ reason }),
    observeCycle: (seconds) => cycles.observe(seconds),
  };
}
