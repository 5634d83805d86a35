// Without --isolation=netns there is nothing to enforce policies on: the extension paths answer
// 501 with a JSON message instead of a bare 404, so clients (the scenario runner, curl) learn why.
import type { FastifyInstance } from 'fastify';
import { NotSupported } from '../errors.ts';
import { STARMAP_PATHS } from '../isolation/policy-routes.ts';

export const NO_ISOLATION_MESSAGE = 'network policies need --isolation=netns (this orchestrator runs tasks on the host network)';

export async function noPolicyPlugin(app: FastifyInstance): Promise<void> {
  const answer = async () => {
    throw new NotSupported(NO_ISOLATION_MESSAGE);
  };
  for (const path of STARMAP_PATHS) app.all(path, answer);
}
