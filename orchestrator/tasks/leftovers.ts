// Stopping what a previous run of the orchestrator left (after a crash): the processes of the
// tasks it had recorded, all at once (each may take its grace period), then whatever detached
// from them (the executor's cgroups). The scheduler forgets those tasks afterwards (replace, not adopt).
import type { Logger } from '../../shared/logger.ts';
import type { TaskRecord } from '../storage/store.ts';
import { findTaskProcesses, signalPid } from './process-group.ts';
import type { Executor } from './types.ts';

export async function killLeftoverTasks(
  leftovers: TaskRecord[],
  executor: Executor,
  logger: Logger,
  gracePeriodOf: (appId: string) => number | null,
): Promise<void> {
  if (leftovers.length > 0) {
    // Only processes that carry the task's MESOS_TASK_ID are killed (a recorded pid may have been
    // reused by an unrelated process); processes whose pid was never recorded are found the same way.
    const found = findTaskProcesses(new Set(leftovers.map((t) => t.id)));
    await Promise.all(
      leftovers.map(async (t) => {
        const pids = found.get(t.id) ?? [];
        try {
          if (t.pid && pids.includes(t.pid)) await executor.killOrphan(t.pid, { taskId: t.id, gracePeriodSeconds: gracePeriodOf(t.appId) });
        } catch (err) {
          logger.warn({ err, taskId: t.id }, 'stopping a task left by the previous run failed; killing it');
        }
        for (const pid of pids) signalPid(pid, 'SIGKILL');
      }),
    );
  }
  try {
    await executor.killLeftovers?.(); // what detached from those tasks (cgroups)
  } catch (err) {
    logger.error({ err }, 'killing what the previous run left in its task cgroups failed');
  }
}
