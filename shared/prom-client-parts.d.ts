// Declarations for prom-client's files imported one by one (shared/metrics-client.ts); each is a
// CommonJS module whose export is typed there from prom-client's own types.
declare module 'prom-client/lib/counter.js';
declare module 'prom-client/lib/defaultMetrics.js';
declare module 'prom-client/lib/gauge.js';
declare module 'prom-client/lib/histogram.js';
declare module 'prom-client/lib/registry.js';
