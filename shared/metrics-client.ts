// The parts of prom-client the agents use, loaded file by file. prom-client's index also loads its
// Pushgateway (http, https, zlib) and AggregatorRegistry (cluster, child_process), which the
// agents never use and which cost about half of prom-client's start-up time (bench/startup.bench.ts).
// The types are prom-client's own.
import type * as PromClient from 'prom-client';
import { buildingSnapshot } from './multicall.ts';
import counter from 'prom-client/lib/counter.js';
import defaultMetrics from 'prom-client/lib/defaultMetrics.js';
import gauge from 'prom-client/lib/gauge.js';
import histogram from 'prom-client/lib/histogram.js';
import registry from 'prom-client/lib/registry.js';

export const Counter = counter as unknown as typeof PromClient.Counter;
export const Gauge = gauge as unknown as typeof PromClient.Gauge;
export const Histogram = histogram as unknown as typeof PromClient.Histogram;
export const Registry = registry as unknown as typeof PromClient.Registry;
export type Registry = PromClient.Registry;
const collectDefault = defaultMetrics as unknown as typeof PromClient.collectDefaultMetrics;

/**
 * prom-client's process metrics. While a start-up snapshot is built (shared/multicall.ts) there are
 * none: the event-loop lag metric holds a native histogram, which a snapshot cannot hold, and the
 * app that the warm-up builds is thrown away.
 */
export function collectDefaultMetrics(config: PromClient.DefaultMetricsCollectorConfiguration<PromClient.RegistryContentType>): void {
  if (!buildingSnapshot()) collectDefault(config);
}
