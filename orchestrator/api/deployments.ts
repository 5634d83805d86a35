// /v2/deployments: the running deployments; DELETE cancels with rollback, or in place with force.
import type { FastifyInstance } from 'fastify';
import type { DeploymentManager } from '../deployment/manager.ts';
import type { Deployer } from '../deployer.ts';
import { bool, q, sendDeployment } from './common.ts';

export interface DeploymentsApiOptions {
  deployments: Pick<DeploymentManager, 'all' | 'json'>;
  deployer: Pick<Deployer, 'cancelDeployment'>;
}

export async function deploymentsApi(app: FastifyInstance, opts: DeploymentsApiOptions): Promise<void> {
  const { deployments, deployer } = opts;
  app.get('/v2/deployments', async () => deployments.all().map((d) => deployments.json(d)));
  app.delete('/v2/deployments/:id', async (req, reply) => {
    const { id } = req.params as { id: string };
    const r = deployer.cancelDeployment(id, bool(q(req).force));
    if (!r) return reply.code(202).send();
    return sendDeployment(reply, r);
  });
}
