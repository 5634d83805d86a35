// The orchestrator's route plan (`GET:28,POST:18,…`, HEAD twins left to fastify), counted from its
// own build with fastify's onRoute hook, for the route-count floor in bench/startup.bench.ts.
import dc from 'node:diagnostics_channel';
import type { FastifyInstance, RouteOptions } from 'fastify';
import pino from 'pino';
import { parseOrchestratorFlags } from '../../orchestrator/flags.ts';
import { buildOrchestrator } from '../../orchestrator/orchestrator.ts';

/**
 * Builds the orchestrator on `dataDir` (not started, not listening) and counts its routes per
 * method: the plan fastify-floor takes, and how many routes that is.
 */
export async function orchestratorRoutePlan(dataDir: string): Promise<{ plan: string; routes: number }> {
  const counts = new Map<string, number>();
  const count = (route: RouteOptions) => {
    for (const method of [route.method].flat()) if (method !== 'HEAD') counts.set(method, (counts.get(method) ?? 0) + 1);
  };
  // fastify announces each instance it makes on this channel, before any route is added.
  const onInit = (message: unknown) => void (message as { fastify: FastifyInstance }).fastify.addHook('onRoute', count);
  dc.subscribe('fastify.initialization', onInit);
  try {
    const orch = await buildOrchestrator(parseOrchestratorFlags([`--data-dir=${dataDir}`]), { logger: pino({ level: 'silent' }) });
    await orch.close();
  } finally {
    dc.unsubscribe('fastify.initialization', onInit);
  }
  return {
    plan: [...counts].map(([method, n]) => `${method}:${n}`).join(','),
    routes: [...counts.values()].reduce((a, b) => a + b, 0),
  };
}
