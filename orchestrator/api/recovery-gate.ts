// After a restart the scheduler first stops what the previous run left (each leftover task may
// take its grace period). Reads are served from the stored state at once; writes to /v2 wait until
// that recovery is done, so no change is planned or launched against a half-recovered state (a
// write in that window once left new tasks TASK_STAGING forever and their app locked). A write
// that would wait longer than `maxWaitMs` gets 503 with Retry-After instead of an open-ended wait.
import type { FastifyInstance } from 'fastify';
import { Unavailable } from '../errors.ts';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function holdWritesUntil(app: FastifyInstance, recovered: Promise<void>, maxWaitMs = 30_000): void {
  let done = false;
  void recovered.then(() => (done = true));
  app.addHook('preHandler', async (req) => {
    if (done || READS.has(req.method) || !req.url.startsWith('/v2/')) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), maxWaitMs)));
    const outcome = await Promise.race([recovered, late]);
    clearTimeout(timer);
    if (outcome === 'late') {
      throw new Unavailable('The orchestrator is still stopping the tasks of its previous run (restart after a crash): retry shortly', 5);
    }
  });
}
