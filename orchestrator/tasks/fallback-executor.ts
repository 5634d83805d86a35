// A minimal stand-in for the ProcessExecutor (tasks/executor.ts, built separately): each task is a
// detached child (own process group) run through /bin/sh -c or directly, stdout/stderr into its
// sandbox; kill = SIGTERM to the group, SIGKILL after the grace period. Used only until the real
// executor is wired in main.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import type { Executor, LaunchSpec, TaskStatusUpdate, TaskState } from './types.ts';

interface Running {
  child: ChildProcess;
  spec: LaunchSpec;
  killed: boolean;
  done: Promise<void>;
}

export class FallbackExecutor implements Executor {
  readonly #tasks = new Map<string, Running>();
  readonly #listeners = new Set<(u: TaskStatusUpdate) => void>();

  #emit(taskId: string, state: TaskState, message: string, extra: Partial<TaskStatusUpdate> = {}): void {
    const u: TaskStatusUpdate = { taskId, state, message, timestamp: new Date().toISOString(), ...extra };
    for (const l of this.#listeners) l(u);
  }

  launch(spec: LaunchSpec): void {
    this.#emit(spec.taskId, 'TASK_STAGING', '');
    let child: ChildProcess;
    try {
      mkdirSync(spec.sandboxDir, { recursive: true });
      const out = openSync(join(spec.sandboxDir, 'stdout'), 'a');
      const err = openSync(join(spec.sandboxDir, 'stderr'), 'a');
      const [file, args] = spec.cmd !== null ? ['/bin/sh', ['-c', spec.cmd]] : [spec.args?.[0] ?? '', spec.args?.slice(1) ?? []];
      child = spawn(file, args, { cwd: spec.sandboxDir, env: spec.env, detached: true, stdio: ['ignore', out, err] });
      closeSync(out);
      closeSync(err);
    } catch (e) {
      this.#emit(spec.taskId, 'TASK_FAILED', `launch failed: ${(e as Error).message}`);
      return;
    }
    let resolveDone!: () => void;
    const r: Running = { child, spec, killed: false, done: new Promise((res) => (resolveDone = res)) };
    this.#tasks.set(spec.taskId, r);
    child.once('error', (e) => {
      this.#tasks.delete(spec.taskId);
      this.#emit(spec.taskId, 'TASK_FAILED', `launch failed: ${e.message}`);
      resolveDone();
    });
    child.once('spawn', () => {
      this.#emit(spec.taskId, 'TASK_STARTING', '', { pid: child.pid! });
      this.#emit(spec.taskId, 'TASK_RUNNING', '', { pid: child.pid! });
    });
    child.once('exit', (code, signal) => {
      if (!this.#tasks.has(spec.taskId)) return;
      this.#tasks.delete(spec.taskId);
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* group gone */
      }
      if (r.killed) this.#emit(spec.taskId, 'TASK_KILLED', 'Killed', { exitCode: code, signal });
      else if (code === 0) this.#emit(spec.taskId, 'TASK_FINISHED', 'Command exited with status 0', { exitCode: code, signal });
      else this.#emit(spec.taskId, 'TASK_FAILED', signal ? `Command terminated with signal ${signal}` : `Command exited with status ${code}`, { exitCode: code, signal });
      resolveDone();
    });
  }

  async kill(taskId: string): Promise<void> {
    const r = this.#tasks.get(taskId);
    if (!r) return;
    r.killed = true;
    const pid = r.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGTERM');
    } catch {
      /* gone */
    }
    const t = setTimeout(() => {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }, (r.spec.killGracePeriodSeconds ?? 3) * 1000);
    await r.done;
    clearTimeout(t);
  }

  onStatus(listener: (update: TaskStatusUpdate) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  active(): string[] {
    return [...this.#tasks.keys()];
  }

  async killOrphan(pgid: number): Promise<void> {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }

  async shutdown(): Promise<void> {
    await Promise.all([...this.#tasks.keys()].map((id) => this.kill(id)));
  }
}
