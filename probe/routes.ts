// The probe's HTTP API as a fastify plugin: star's `GET /status`, plus `/healthz`, `/metrics` and
// `POST /cycle` (check every target now: the scenario runner asks right after a policy change).
import type { FastifyPluginAsync } from 'fastify';
import { crossSiteWrite } from '../shared/web-guard.ts';
import type { ProbeMetrics } from './metrics.ts';
import type { ProbeState } from './state.ts';

export interface ProbeRoutesOptions {
  state: ProbeState;
  metrics: ProbeMetrics;
  health: () => { cycles: number; lastCycleAt: string | null };
  /** Starts a cycle now; absent: the route answers 404 as any unknown path. */
  poke?: () => 'started' | 'queued' | 'stopped';
}

export const probeRoutes: FastifyPluginAsync<ProbeRoutesOptions> = async (app, { state, metrics, health, poke }) => {
  app.get('/status', async (_req, reply) => reply.type('application/json; charset=utf-8').send(state.statusBody()));

  if (poke) {
    // 202: the cycle runs after the answer; its results show in GET /status as each check ends.
    app.post('/cycle', async (req, reply) => {
      // The probe's one write: a page elsewhere must not be able to drive its checks
      // (shared/web-guard.ts says how a browser is told apart; curl and the runner send no Origin).
      const why = crossSiteWrite(req.headers, 'probe');
      if (why !== undefined) return reply.code(403).send({ error: `cross-site write refused: ${why}` });
      const cycle = poke();
      return cycle === 'stopped' ? reply.code(409).send({ error: 'the probe is not running its cycle' }) : reply.code(202).send({ cycle });
    });
  }

  app.get('/healthz', async () => ({ status: 'ok', targets: state.targets.length, ...health() }));

  app.get('/metrics', async (_req, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
};
