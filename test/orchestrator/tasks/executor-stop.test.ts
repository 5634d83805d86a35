// Stopping many tasks (issue "Hardening and fidelity, round 2"): a stop used to signal the tasks one
// after the other with a /proc scan each (quadratic: 5,000 tasks took over 200 s), gave each its
// whole grace period, and the program's 10 s limit then exited 1 and left tasks and cgroups. Now
// every task gets SIGTERM at once, SIGKILL after its grace period capped by --stop-grace-period,
// and the stop ends with every process gone, every cgroup removed and exit code 0.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessExecutor } from '../../../orchestrator/tasks/executor.ts';
import { TaskCgroups, cgroupMounts, scopeName } from '../../../orchestrator/tasks/cgroups.ts';
import { findTaskProcesses, isLive } from '../../../orchestrator/tasks/process-group.ts';
import type { LaunchSpec, TaskStatusUpdate } from '../../../orchestrator/tasks/types.ts';
import { startOrchestrator } from '../../helpers/orchestrator.ts';
import { tempDir } from '../../helpers/process.ts';
import { trackTasks } from '../../helpers/executor.ts';
import { waitFor } from '../../helpers/wait.ts';

const { executors, dataDirs, remember } = trackTasks();

/** A task that ignores SIGTERM (the ignored disposition survives exec): only SIGKILL ends it. */
const STUBBORN = 'trap "" TERM; exec /bin/sleep 1000';

const scopeDirs = (scope: string) => cgroupMounts().map((m) => join(m.path, 'starmap', scopeName(scope)));

const cgroupsUsable = (() => {
  const probe = TaskCgroups.open(`probe-stop-${process.pid}`);
  if (probe instanceof TaskCgroups) probe.close();
  return probe instanceof TaskCgroups;
})();

describe('executor shutdown', () => {
  it('stops a few hundred tasks in parallel, within the stop grace period, and removes their cgroups', async () => {
    const TASKS = 200;
    const scope = tempDir('starmap-stop-scope-');
    // Each task asks for 60 s between SIGTERM and SIGKILL; the stop gives at most 1 s.
    const ex = new ProcessExecutor({ cgroups: { scope }, stopGracePeriodSeconds: 1 });
    executors.push(ex);
    const updates: TaskStatusUpdate[] = [];
    ex.onStatus((u) => updates.push(u));
    const sandboxes = tempDir('starmap-stop-');
    const specs: LaunchSpec[] = [];
    for (let i = 0; i < TASKS; i++) {
      const taskId = `stop_app.${process.pid}-${i}`;
      specs.push({
        taskId,
        appId: '/stop/app',
        appVersion: '2026-01-01T00:00:00.000Z',
        cmd: STUBBORN,
        args: null,
        env: { MESOS_TASK_ID: taskId },
        ports: [],
        sandboxDir: join(sandboxes, String(i)),
        killGracePeriodSeconds: 60,
      });
    }
    for (const s of specs) ex.launch(s);
    const pids = await waitFor(
      () => {
        const running = updates.filter((u) => u.state === 'TASK_RUNNING');
        return running.length === TASKS && running.map((u) => u.pid!);
      },
      { timeoutMs: 120_000, intervalMs: 200, message: `${TASKS} tasks running` },
    );
    for (const pid of pids) remember(pid);
    const started = Date.now();
    await ex.shutdown();
    const took = Date.now() - started;
    // 1 s of grace, then the SIGKILL round; far from the 60 s each task asked for (the margin is for a loaded machine).
    expect(took).toBeGreaterThanOrEqual(1000);
    expect(took).toBeLessThan(20_000);
    const killed = updates.filter((u) => u.state === 'TASK_KILLED');
    expect(killed).toHaveLength(TASKS);
    expect(killed[0]!.message).toBe('Killed: orchestrator shutdown');
    expect(pids.filter((pid) => isLive(pid))).toEqual([]);
    if (cgroupsUsable) for (const dir of scopeDirs(scope)) expect(existsSync(dir), dir).toBe(false);
  }, 180_000);
});

describe('the orchestrator program', () => {
  it('stops on SIGTERM within --stop-grace-period, exits 0, and leaves no task and no cgroup', async () => {
    const TASKS = 40;
    const dataDir = tempDir('orch-stop-');
    dataDirs.push(dataDir);
    const o = await startOrchestrator(['--task-port-min=40600', '--task-port-max=40699', '--stop-grace-period=1'], { dataDir });
    const app = { id: '/stubborn', cmd: STUBBORN, instances: TASKS, portDefinitions: [], taskKillGracePeriodSeconds: 60 };
    expect((await o.call('POST', '/v2/apps', app)).status).toBe(201);
    const tasks = await waitFor(
      async () => {
        const body = (await o.call('GET', '/v2/apps/stubborn/tasks')).body as { tasks: { state: string; id: string }[] };
        return body.tasks.filter((t) => t.state === 'TASK_RUNNING').length === TASKS && body.tasks;
      },
      { timeoutMs: 60_000, intervalMs: 200, message: `${TASKS} tasks running` },
    );
    expect(tasks).toHaveLength(TASKS);
    // The tasks' processes, by their MESOS_TASK_ID (the API shows no pid).
    const pids = await waitFor(() => {
      const found = [...findTaskProcesses(new Set(tasks.map((t) => t.id))).values()];
      return found.length === TASKS && found.flat();
    });
    for (const pid of pids) remember(pid);
    const started = Date.now();
    // Before: the 10 s limit cut the stop short (exit 1), tasks left running in their cgroups.
    expect(await o.proc.stop('SIGTERM')).toBe(0);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(pids.filter((pid) => isLive(pid))).toEqual([]);
    if (cgroupsUsable) for (const dir of scopeDirs(dataDir)) expect(existsSync(dir), dir).toBe(false);
  }, 120_000);
});
