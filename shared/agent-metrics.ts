// The Prometheus setup the probe and the collector share: a registry with the process metrics
// under the agent's prefix, and gauges drawn from the agent's current state at each scrape, so a
// target or resource that is gone leaves no stale series behind.
import { Gauge, Registry, collectDefaultMetrics } from './metrics-client.ts';

/** A registry with the default process metrics, each name prefixed (starmap_probe_…). */
export function agentRegistry(prefix: string): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix });
  return registry;
}

export interface StateGaugeSpec<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
  /** The series at this scrape: their labels and values; only these are exported. */
  values: () => Iterable<readonly [Partial<Record<L, string>>, number]>;
}

/** A gauge whose series are exactly what `values` gives at each scrape. */
export function stateGauge<L extends string>(registry: Registry, spec: StateGaugeSpec<L>): void {
  const { values } = spec;
  new Gauge<L>({
    name: spec.name,
    help: spec.help,
    labelNames: spec.labelNames ?? [],
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, value] of values()) this.set(labels, value);
    },
  });
}
