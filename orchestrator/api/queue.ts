// /v2/queue: apps with instances waiting to launch, their back-off delay and offer statistics
// (launch-queue/offers.ts; embed=lastUnusedOffers adds the last declined offer); DELETE .../delay resets it.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { canonicalPath, type AppDefinition } from '../state/app-definition.ts';
import { many, q, uriNotFound } from './common.ts';
import type { GroupManager } from '../group/manager.ts';
import type { TaskTracker } from '../tasks/tracker.ts';
import type { DeploymentManager } from '../deployment/manager.ts';
import type { Deployer } from '../deployer.ts';
import type { Launcher } from '../launch-queue/launcher.ts';
import { configVersionOf } from '../state/app-update.ts';
import { lastUnusedOffers, processedOffersSummary } from '../launch-queue/offers.ts';
import { NotFound } from '../errors.ts';

/** What the queue shows: apps, their tasks and deployments, and the launcher's delays. */
export interface QueueApiOptions {
  groups: Pick<GroupManager, 'apps'>;
  tasks: Pick<TaskTracker, 'appTasks'>;
  deployments: Pick<DeploymentManager, 'deploymentsOf'>;
  launcher: Pick<Launcher, 'delayOf' | 'queuedSince' | 'offersOf' | 'offeredHost'>;
  deployer: Pick<Deployer, 'resetDelay'>;
}

type QueueParts = Omit<QueueApiOptions, 'deployer'>;

/** The queue entry of an app with instances waiting to launch, or undefined when none wait. */
function queueEntry(s: QueueParts, app: AppDefinition, now: number, withLastUnusedOffers = false): Record<string, unknown> | undefined {
  const cfg = configVersionOf(app);
  const inRestart = s.deployments
    .deploymentsOf(app.id)
    .some((d) => d.steps[d.currentStep]?.actions.some((a) => a.app === app.id && a.action === 'RestartApplication'));
  const live = s.tasks.appTasks(app.id).filter((t) => !t.killing && (!inRestart || t.configVersion === cfg)).length;
  const count = app.instances - live;
  if (count <= 0) return undefined;
  const d = s.launcher.delayOf(app.id);
  const deadline = d && d.configVersion === cfg ? d.deadline : now;
  const offers = s.launcher.offersOf(app.id);
  return {
    count,
    delay: { timeLeftSeconds: Math.max(0, Math.ceil((deadline - now) / 1000)), overdue: deadline <= now },
    since: s.launcher.queuedSince(app.id) ?? new Date(now).toISOString(),
    processedOffersSummary: processedOffersSummary(offers),
    ...(withLastUnusedOffers ? { lastUnusedOffers: lastUnusedOffers(offers, s.launcher.offeredHost) } : {}),
    app,
  };
}

export function queueEntries(s: QueueParts, withLastUnusedOffers = false): Record<string, unknown>[] {
  const now = Date.now();
  return [...s.groups.apps.values()]
    .sort((a, b) => a.id.localeCompare(b.id))
    .flatMap((app) => {
      const e = queueEntry(s, app, now, withLastUnusedOffers);
      return e ? [e] : [];
    });
}

/** Marathon's QueueResource embeds the offers for `embed=lastUnusedOffers` (also accepted in a comma-separated list). */
function embedsLastUnusedOffers(req: FastifyRequest): boolean {
  return many(q(req).embed).some((v) => v.split(',').some((e) => e.trim() === 'lastUnusedOffers'));
}

export async function queueApi(app: FastifyInstance, opts: QueueApiOptions): Promise<void> {
  const s = opts;
  app.get('/v2/queue', async (req) => ({ queue: queueEntries(s, embedsLastUnusedOffers(req)) }));
  app.delete('/v2/queue/*', async (req, reply) => {
    const rest = (req.params as { '*': string })['*'];
    const m = rest.match(/^(.*)\/delay\/?$/);
    if (!m) throw uriNotFound(req);
    const id = canonicalPath(m[1]!);
    const queued = s.groups.apps.get(id);
    if (!queued || !queueEntry(s, queued, Date.now())) throw new NotFound(`Application ${id} not found in tasks queue.`);
    s.deployer.resetDelay(id);
    return reply.code(204).send();
  });
}
