// The collector's HTTP server: every route plugin on the shared fastify factory.
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { Logger } from '../shared/logger.ts';
import { createServer } from '../shared/http-server.ts';
import type { Collector } from './collector.ts';
import { ExpectationStore } from './expectations.ts';
import { expectationRoutes } from './routes-expectations.ts';
import { opsRoutes } from './routes-ops.ts';
import { resourceRoutes } from './routes-resources.ts';
import { responseRoutes } from './routes-responses.ts';
import { uiRoutes } from './routes-ui.ts';
import { guardCollector } from './web-guard.ts';
import { HostAllowList } from '../shared/web-guard.ts';

/** Largest accepted request body: a resource is two short strings (expectations have their own limit). */
export const REQUEST_BODY_LIMIT = 64 * 1024;

export async function createCollectorApp(
  collector: Collector,
  logger: Logger,
  opts: { uiDir?: string; fastify?: Partial<FastifyServerOptions>; hosts?: HostAllowList } = {},
): Promise<FastifyInstance> {
  const app = createServer({ logger, bodyLimit: REQUEST_BODY_LIMIT, ...(opts.fastify ? { fastify: opts.fastify } : {}) });
  // Before every route: Host allow-list and cross-site writes (web-guard.ts); default: loopback names, IP addresses, this machine's name.
  guardCollector(app, opts.hosts ?? new HostAllowList());
  await app.register(resourceRoutes, { store: collector.store });
  await app.register(responseRoutes, { responses: collector.responses });
  await app.register(opsRoutes, {
    store: collector.store,
    metrics: collector.metrics,
    intervalSeconds: collector.intervalMs / 1000,
    health: () => collector.health(),
  });
  await app.register(expectationRoutes, { expectations: new ExpectationStore() });
  await app.register(uiRoutes, opts.uiDir === undefined ? {} : { dir: opts.uiDir });
  return app;
}
