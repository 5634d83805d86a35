// The orchestrator's routes in two fastify contexts (fastify's encapsulation): an open one and an
// authenticated one, with the token hook (auth/authenticate.ts) registered in the second only.
// Whether a route needs a token is where it is registered, not a list of open paths next to a
// global hook: a route added to the authenticated context is guarded whatever its path, and one
// in the open context is open. Hooks on the app itself (the web guard, the recovery gate, the
// request metrics) are added before the contexts and so run in both, the Host check first.
import type { FastifyInstance, onRequestAsyncHookHandler } from 'fastify';

export interface RouteContexts {
  /** The hook that requires a token; undefined with --auth=off (then nothing needs one). */
  authenticate: onRequestAsyncHookHandler | undefined;
  /** Registers the routes anyone may call. */
  open: (app: FastifyInstance) => Promise<void>;
  /** Registers the routes that need a token. */
  authenticated: (app: FastifyInstance) => Promise<void>;
}

export async function registerRouteContexts(app: FastifyInstance, contexts: RouteContexts): Promise<void> {
  const { authenticate } = contexts;
  await app.register(contexts.open);
  await app.register(async (guarded) => {
    if (authenticate) guarded.addHook('onRequest', authenticate);
    await contexts.authenticated(guarded);
  });
  // A path no route serves (or a method its path does not take) is answered by the app's 404
  // handler, which is in neither context: it needs a token too, so that without one a caller
  // learns nothing of which paths exist. Added after the contexts, this hook is on the app's own
  // context alone, where the 404 handler is.
  if (authenticate) {
    app.addHook('onRequest', async function notFoundNeedsToken(req, reply) {
      if (req.is404) return authenticate.call(this, req, reply);
    });
  }
}
