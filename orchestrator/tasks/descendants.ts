// The descendants of a task that left its process group (setsid, setpgid): a signal to the group
// does not reach them. Tasks in a cgroup need none of this (every descendant is a member of it);
// for the others the executor remembers them, from one /proc snapshot a second while such tasks
// run, and signals them with the group.
import { allProcesses, liveDescendants, processSnapshot, sameLiveProcess, type ProcInfo } from './process-group.ts';

/** What the scan reads and keeps of a task: its main pid, and its descendants outside its group (pid → start time). */
export interface ScannedTask {
  pid: number | undefined;
  descendants: Map<number, number>;
}

/** Adds the live descendants of `task` outside its process group; forgets those that are gone. */
export function rememberDescendants(task: ScannedTask, snapshot?: ProcInfo[]): void {
  if (task.pid === undefined) return;
  for (const [pid, start] of task.descendants) if (!sameLiveProcess(pid, start)) task.descendants.delete(pid);
  for (const d of liveDescendants(task.pid, snapshot ?? processSnapshot(performance.now() - 20))) if (d.pgid !== task.pid) task.descendants.set(d.pid, d.start);
}

/** Remembered descendants outside the group that are still the same live processes. */
export function extraPids(task: ScannedTask): number[] {
  return [...task.descendants].filter(([pid, start]) => sameLiveProcess(pid, start)).map(([pid]) => pid);
}

/** Every second, rememberDescendants for each of `tasks()`, while it returns any. */
export class DescendantScan {
  readonly #tasks: () => ScannedTask[];
  #timer: NodeJS.Timeout | undefined;

  constructor(tasks: () => ScannedTask[]) {
    this.#tasks = tasks;
  }

  /** Starts the scan unless it runs. */
  ensure(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      const tasks = this.#tasks();
      if (tasks.length === 0) return this.stop();
      const snapshot = allProcesses();
      for (const t of tasks) rememberDescendants(t, snapshot);
    }, 1000);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
