// The probe's HTTP API as a fastify plugin: star's `GET /status`, plus `/healthz` and `/metrics`.
import type { FastifyPluginAsync } from 'fastify';
import type { ProbeMetrics } from './metrics.ts';
import type { ProbeState } from './state.ts';

export interface ProbeRoutesOptions {
  state: ProbeState;
  metrics: ProbeMetrics;
  health: () => { cycles: number; lastCycleAt: string | null };
}

export const probeRoutes: FastifyPluginAsync<ProbeRoutesOptions> = async (app, { state, metrics, health }) => {
  app.get('/status', async (_req, reply) => reply.type('application/json; charset=utf-8').send(state.statusBody()));

  app.get('/healthz', async () => ({ status: 'ok', targets: state.targets.length, ...health() }));

  app.get('/metrics', async (_req, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
};
