// /v2/queue: apps with instances waiting to launch, their back-off delay; DELETE .../delay resets it.
import type { FastifyInstance } from 'fastify';
import { ApiError, canonicalPath } from '../state/app-definition.ts';
import type { Scheduler } from '../scheduler.ts';
import { configVersionOf } from '../launch-queue/backoff.ts';

export function queueEntries(s: Scheduler): Record<string, unknown>[] {
  const now = Date.now();
  const out: Record<string, unknown>[] = [];
  for (const app of [...s.apps.values()].sort((a, b) => a.id.localeCompare(b.id))) {
    const cfg = configVersionOf(app);
    const inRestart = s.deploymentsOf(app.id).some((d) => d.steps[d.currentStep]?.actions.some((a) => a.app === app.id && a.action === 'RestartApplication'));
    const live = s.appTasks(app.id).filter((t) => !t.killing && (!inRestart || t.configVersion === cfg)).length;
    const count = app.instances - live;
    if (count <= 0) continue;
    const d = s.delays.get(app.id);
    const deadline = d && d.configVersion === cfg ? d.deadline : now;
    out.push({
      count,
      delay: { timeLeftSeconds: Math.max(0, Math.ceil((deadline - now) / 1000)), overdue: deadline <= now },
      since: s.queueSince.get(app.id) ?? new Date(now).toISOString(),
      processedOffersSummary: { processedOffersCount: 0, unusedOffersCount: 0, rejectSummaryLastOffers: [], rejectSummaryLaunchAttempt: [] },
      app,
    });
  }
  return out;
}

export async function queueApi(app: FastifyInstance, opts: { scheduler: Scheduler }): Promise<void> {
  const s = opts.scheduler;
  app.get('/v2/queue', async () => ({ queue: queueEntries(s) }));
  app.delete('/v2/queue/*', async (req, reply) => {
    const rest = (req.params as { '*': string })['*'];
    const m = rest.match(/^(.*)\/delay\/?$/);
    if (!m) return reply.code(404).send({ message: `URI not found: ${req.url.split('?')[0]}` });
    const id = canonicalPath(m[1]!) ?? `/${m[1]}`;
    if (!queueEntries(s).some((e) => (e.app as { id: string }).id === id)) throw new ApiError(404, { message: `Application ${id} not found in tasks queue.` });
    s.resetDelay(id);
    return reply.code(204).send();
  });
}
