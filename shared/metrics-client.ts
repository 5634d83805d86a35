// The parts of prom-client the agents use, loaded file by file. prom-client's index also loads its
// Pushgateway (http, https, zlib) and AggregatorRegistry (cluster, child_process), which the
// agents never use and which cost about half of prom-client's start-up time (bench/startup.bench.ts).
// The types are prom-client's own.
import type * as PromClient from 'prom-client';
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
export const collectDefaultMetrics = defaultMetrics as unknown as typeof PromClient.collectDefaultMetrics;
