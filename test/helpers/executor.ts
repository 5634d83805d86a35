// Real ProcessExecutors for the executor's tests: each records its status updates and the process
// groups of its tasks; a file's afterEach(cleanUpExecutors) shuts them down and checks that no
// group is left behind.
import { join } from 'node:path';
import { expect } from 'vitest';
import { ProcessExecutor, type ProcessExecutorOptions } from '../../orchestrator/tasks/executor.ts';
import { liveMembers } from '../../orchestrator/tasks/process-group.ts';
import type { LaunchSpec, TaskStatusUpdate } from '../../orchestrator/tasks/types.ts';
import { removeTempDirs, tempDir } from './process.ts';
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
