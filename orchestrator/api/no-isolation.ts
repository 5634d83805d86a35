// Without --isolation=netns there is nothing to enforce policies on: the extension paths answer
// 501 with a JSON message instead of a bare 404, so clients (the scenario runner, curl) learn why.
import type { FastifyInstance } from 'fastify';
import { NotSupported } from '../errors.ts';
import { STARMAP_PATHS } from '../isolation/policy-routes.ts';

export const NO_ISOLATION_MESSAGE = 'network policies need --isolation=netns (this orchestrator runs tasks on the host network)';

/**
 * The methods the policy and cluster routes answer (orchestrator/isolation/policy-routes.ts,
 * cluster-routes.ts; HEAD comes with GET). Not app.all: that is a route per method fastify knows
 * (35), 315 routes whose registration took ~6 ms of every start (bench/startup.bench.ts).
 */
const POLICY_METHODS = ['GET', 'POST', 'PUT', 'DELETE'];

export async function noPolicyPlugin(app: FastifyInstance): Promise<void> {
  const answer = async () => {
    throw new NotSupported(NO_ISOLATION_MESSAGE);
  };
  for (const url of STARMAP_PATHS) app.route({ method: POLICY_METHODS, url, handler: answer });
}
