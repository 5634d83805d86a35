// /v2/deployments: the running deployments; DELETE cancels with rollback, or in place with force.
import type { FastifyInstance } from 'fastify';
import type { Scheduler } from '../scheduler.ts';
import { bool, q, sendDeployment } from './common.ts';

export async function deploymentsApi(app: FastifyInstance, opts: { scheduler: Scheduler }): Promise<void> {
  const s = opts.scheduler;
  app.get('/v2/deployments', async () => [...s.deployments.values()].map((d) => s.deploymentJson(d)));
  app.delete('/v2/deployments/:id', async (req, reply) => {
    const { id } = req.params as { id: string };
    const r = s.cancelDeployment(id, bool(q(req).force));
    if (!r) return reply.code(202).send();
    return sendDeployment(reply, r);
  });
}
