// Operations endpoints: `/healthz` for liveness checks and `/metrics` for Prometheus.
import type { FastifyPluginAsync } from 'fastify';
import { VERSION } from '../shared/version.ts';
import type { CollectorHealth } from './collector.ts';
import type { CollectorMetrics } from './metrics.ts';
import type { ResourceStore } from './resources.ts';

export interface OpsRoutesOptions {
  store: ResourceStore;
  metrics: CollectorMetrics;
  intervalSeconds: number;
  health: () => CollectorHealth;
}

export const opsRoutes: FastifyPluginAsync<OpsRoutesOptions> = async (app, { store, metrics, intervalSeconds, health }) => {
  app.get('/healthz', async () => ({ status: 'ok', resources: store.size, intervalSeconds, version: VERSION, ...health() }));

  app.get('/metrics', async (_req, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
};
