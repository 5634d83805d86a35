// Prometheus metrics for the collector. Per-resource series are produced from the current state at
// scrape time, so a deleted resource leaves no stale series behind.
import { Counter, Histogram, type Registry } from '../shared/metrics-client.ts';
import { agentRegistry, stateGauge } from '../shared/agent-metrics.ts';
import type { ResponseCache } from './responses.ts';

export interface CollectorMetrics {
  registry: Registry;
  countFetch(reason: string): void;
  observeLag(seconds: number): void;
}

export function createCollectorMetrics(responses: ResponseCache): CollectorMetrics {
  const registry = agentRegistry('starmap_collector_');
  stateGauge(registry, {
    name: 'starmap_collector_resource_up',
    help: 'Whether the latest fetch of the resource succeeded (2xx with a JSON body: 1) or not (0); absent before the first fetch.',
    labelNames: ['id', 'url'],
    values: () => responses.entries().flatMap(([id, e]) => (!e.pending ? [[{ id, url: e.url }, e.error === null ? 1 : 0] as const] : [])),
  });
  stateGauge(registry, {
    name: 'starmap_collector_resource_latency_seconds',
    help: 'Duration of the latest fetch of the resource (connect to end of body, or failure).',
    labelNames: ['id'],
    values: () => responses.entries().flatMap(([id, e]) => (e.latencyMs !== null ? [[{ id }, e.latencyMs / 1000] as const] : [])),
  });
  stateGauge(registry, {
    name: 'starmap_collector_resource_status_code',
    help: 'HTTP status code of the latest fetch of the resource that got a response.',
    labelNames: ['id'],
    values: () => responses.entries().flatMap(([id, e]) => (e.statusCode !== null ? [[{ id }, e.statusCode] as const] : [])),
  });
  stateGauge(registry, { name: 'starmap_collector_resources', help: 'Number of resources.', values: () => [[{}, responses.entries().length]] });
  const fetches = new Counter({
    name: 'starmap_collector_fetches_total',
    help: 'Fetches made, by outcome (ok or the error reason).',
    labelNames: ['reason'],
    registers: [registry],
  });
  const lag = new Histogram({
    name: 'starmap_collector_fetch_lag_seconds',
    help: 'How late each fetch started after it was due (waiting for a free slot, timer delay): each resource is fetched on its own clock.',
    buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [registry],
  });
  return {
    registry,
    countFetch: (reason) => fetches.inc({ reason }),
    observeLag: (seconds) => lag.observe(seconds),
  };
}
