// Real ProcessExecutors for the executor's tests: each records its status updates and the process
// groups of its tasks; a file's afterEach(cleanUpExecutors) shuts them down and checks that no
// group is left behind.
import { join } from 'node:path';
import { afterAll, afterEach, expect } from 'vitest';
import { ProcessExecutor, type ProcessExecutorOptions } from '../../orchestrator/tasks/executor.ts';
import { liveMembers, procInfo, sameLiveProcess, signalPid } from '../../orchestrator/tasks/process-group.ts';
import type { LaunchSpec, TaskStatusUpdate } from '../../orchestrator/tasks/types.ts';
import { removeTaskCgroups } from './orchestrator.ts';
import { removeTempDirs, stopAll, tempDir } from './process.ts';
import { waitFor } from './wait.ts';

let executors: ProcessExecutor[] = [];
let groups: number[] = [];

export function makeExecutor(opts?: ProcessExecutorOptions): { ex: ProcessExecutor; updates: TaskStatusUpdate[] } {
  const ex = new ProcessExecutor(opts);
  executors.push(ex);
  const updates: TaskStatusUpdate[] = [];
  ex.onStatus((u) => {
    updates.push(u);
    if (u.pid) groups.push(u.pid);
  });
  return { ex, updates };
}

/** A process group started by the test itself, checked like the tasks' at clean-up. */
export function watchGroup(pgid: number): void {
  groups.push(pgid);
}

export async function cleanUpExecutors(): Promise<void> {
  await Promise.all(executors.map((e) => e.shutdown()));
  executors = [];
  for (const g of groups) expect(liveMembers(g), `process group ${g} left behind`).toEqual([]);
  groups = [];
  removeTempDirs();
}

let n = 0;
/** A command-less launch of app `/<name>/app` with a fresh sandbox; `over` sets what the test needs. */
export function taskSpec(name: string, over: Partial<LaunchSpec>): LaunchSpec {
  n++;
  return {
    taskId: `${name}_app.${process.pid}-${n}`,
    appId: `/${name}/app`,
    appVersion: '2026-01-01T00:00:00.000Z',
    cmd: null,
    args: null,
    env: {},
    ports: [],
    sandboxDir: join(tempDir(`starmap-${name}-`), 'sandbox'),
    killGracePeriodSeconds: null,
    ...over,
  };
}

export const TERMINAL = ['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED'];

export function terminal(updates: TaskStatusUpdate[], taskId: string): Promise<TaskStatusUpdate> {
  return waitFor(() => updates.find((u) => u.taskId === taskId && TERMINAL.includes(u.state)), {
    timeoutMs: 15_000,
    message: `no terminal update for ${taskId}`,
  });
}

/**
 * For a file whose tests start executors and orchestrators with real tasks: the executors are shut
 * down after each test; at the end, every task process `remember`ed is killed if it still lives
 * (by pid and start time, so a reused pid is never hit), the programs are stopped and the task
 * cgroups of `dataDirs` removed. Call it once at the top of the file.
 */
export function trackTasks(): { executors: ProcessExecutor[]; dataDirs: string[]; remember: (pid: number) => number } {
  const executors: ProcessExecutor[] = [];
  const dataDirs: string[] = [];
  const strays: { pid: number; start: number }[] = [];
  afterEach(async () => {
    await Promise.all(executors.splice(0).map((e) => e.shutdown()));
  });
  afterAll(async () => {
    for (const { pid, start } of strays) if (sameLiveProcess(pid, start)) signalPid(pid, 'SIGKILL');
    await stopAll();
    for (const d of dataDirs) await removeTaskCgroups(d);
  });
  const remember = (pid: number) => {
    const info = procInfo(pid);
    if (info) strays.push({ pid, start: info.start });
    return pid;
  };
  return { executors, dataDirs, remember };
}
