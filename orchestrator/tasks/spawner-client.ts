// The task spawner, the orchestrator's side: starts the spawner process (spawner.ts says why it
// exists) on first use and hands it the tasks to start, with callbacks for their start, launch
// error and exit. When the spawner goes away (killed, crashed) the client says so to each task it
// held: those it had not confirmed yet, and those running (which keep running: their exit code is
// then unknown); the next batch starts a new spawner. When a spawner cannot be started (or dies
// before it is ready) three times in a row, the client gives up and the executor spawns directly.
import { spawn, type ChildProcess } from 'node:child_process';
import { isSea } from 'node:sea';
import type { Logger } from '../../shared/logger.ts';
import { SPAWNER_ARG, spawnerScript, type RunCommand, type SpawnCommand, type SpawnerMessage, type SpawnRequest } from './spawner.ts';

export interface SpawnHandlers {
  /** `start`: the process's start time in /proc (undefined where there is none). */
  started(pid: number, start: number | undefined): void;
  /** Not started: `files` when an output file could not be opened; `thrown` when spawn() threw. */
  failed(code: string | undefined, message: string, how: { files: boolean; thrown: boolean }): void;
  exited(code: number | null, signal: NodeJS.Signals | null): void;
  /**
   * The spawner went away. `unsent`: it never read the request (it was not ready): nothing was
   * started, the caller may start the task itself. `unconfirmed`: it may or may not have started the
   * task. `running`: the task was started and keeps running; its exit will not be reported here.
   */
  lost(phase: 'unsent' | 'unconfirmed' | 'running', reason: string): void;
}

type Pending = { handlers: SpawnHandlers; pid: number | undefined };

/** How a run ended; `lost`: the spawner went away meanwhile (the command may or may not have run). */
export type RunOutcome = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; error?: string } | { lost: string };

/** How to start the spawner: the executable runs itself with SPAWNER_ARG; from source, `node -e`. */
function spawnerCommand(): { file: string; args: string[] } {
  if (isSea()) return { file: process.execPath, args: [SPAWNER_ARG] };
  // The bundle run by node (dist/bundle/orchestrator.cjs): its path is argv[1].
  if (process.env.STARMAP_BUNDLED === '1') return { file: process.execPath, args: [process.argv[1]!, SPAWNER_ARG] };
  return { file: process.execPath, args: ['-e', spawnerScript()] };
}

const MAX_FAILED_STARTS = 3;

export class TaskSpawner {
  readonly #logger: Logger | undefined;
  #child: ChildProcess | undefined;
  #ready = false;
  #nextId = 1;
  readonly #tasks = new Map<number, Pending>();
  readonly #runs = new Map<number, { resolve: (r: RunOutcome) => void }>();
  /** Spawners in a row that went away before they were ready. */
  #failedStarts = 0;
  #closed = false;

  readonly #command: { file: string; args: string[] } | undefined;

  /** `command`: what to start instead of the spawner (tests of the fallback). */
  constructor(logger?: Logger, command?: { file: string; args: string[] }) {
    this.#logger = logger;
    this.#command = command;
  }

  /** False once the spawner could not be started (MAX_FAILED_STARTS times in a row) or after close(). */
  get usable(): boolean {
    return !this.#closed && this.#failedStarts < MAX_FAILED_STARTS;
  }

  /** The spawner's pid, while one runs (for tests and logs). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Hands tasks to the spawner (started first if needed). False when it is not usable: spawn them yourself. */
  spawn(batch: { request: Omit<SpawnRequest, 'id'>; handlers: SpawnHandlers }[]): boolean {
    if (!this.usable) return false;
    const child = this.#child ?? this.#start();
    if (!child) return false;
    const tasks: SpawnRequest[] = batch.map(({ request, handlers }) => {
      const id = this.#nextId++;
      this.#tasks.set(id, { handlers, pid: undefined });
      return { id, ...request };
    });
    const command: SpawnCommand = { t: 'spawn', tasks };
    child.send(command, (err) => {
      // The channel closed under us: the 'disconnect' handler reports these tasks.
      if (err) this.#logger?.debug({ err }, 'task spawner: sending failed');
    });
    return true;
  }

  /**
   * Runs a short command in the spawner and gives its exit and output; undefined when the spawner
   * is not usable (run it yourself). Only once it is ready: before, a fork here costs what it saves.
   */
  run(file: string, args: string[], input: string | undefined, timeoutMs: number): Promise<RunOutcome> | undefined {
    if (!this.usable) return undefined;
    const child = this.#child ?? this.#start();
    if (!child || !this.#ready) return undefined;
    const id = this.#nextId++;
    const command: RunCommand = { t: 'run', id, file, args, timeoutMs, ...(input !== undefined ? { input } : {}) };
    return new Promise((resolve) => {
      this.#runs.set(id, { resolve });
      child.send(command, (err) => {
        if (err) this.#logger?.debug({ err }, 'task spawner: sending a run failed');
      });
    });
  }

  #start(): ChildProcess | undefined {
    const { file, args } = this.#command ?? spawnerCommand();
    let child: ChildProcess;
    try {
      // Detached: a Ctrl-C meant for the orchestrator's group must not end it before the
      // orchestrator has stopped its tasks (their exits come through it).
      child = spawn(file, args, { detached: true, stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'json' });
    } catch (err) {
      this.#failedStarts++;
      this.#logger?.warn({ err }, 'cannot start the task spawner: spawning tasks directly');
      return undefined;
    }
    this.#child = child;
    this.#ready = false;
    child.unref();
    child.channel?.unref();
    child.on('message', (m: SpawnerMessage) => this.#onMessage(m));
    let ended = 'its IPC channel closed';
    child.on('error', (err) => {
      this.#logger?.warn({ err }, 'task spawner error');
      // It could not be started: nothing was sent to it (no 'disconnect' may follow).
      if (child.pid === undefined) this.#gone(child, err.message);
    });
    // Only the end of the channel counts: 'exit' may come before the last messages are read, and
    // whether it was ready (so whether it may have started a task) is known only after those.
    child.on('exit', (code, signal) => (ended = signal ? `killed by ${signal}` : `exited with code ${code}`));
    child.on('disconnect', () => this.#gone(child, ended));
    return child;
  }

  #onMessage(m: SpawnerMessage): void {
    if (m.t === 'ready') {
      this.#ready = true;
      this.#failedStarts = 0;
      this.#logger?.info({ spawnerPid: m.pid }, 'task spawner ready');
      return;
    }
    if (m.t === 'started') {
      for (const { id, pid, start } of m.tasks) {
        const task = this.#tasks.get(id);
        if (!task) continue;
        task.pid = pid;
        task.handlers.started(pid, start);
      }
      return;
    }
    if (m.t === 'ran') {
      const r = this.#runs.get(m.id);
      this.#runs.delete(m.id);
      const { t: _t, id: _id, ...outcome } = m;
      r?.resolve(outcome);
      return;
    }
    const task = this.#tasks.get(m.id);
    if (!task) return;
    if (m.t === 'failed') {
      this.#tasks.delete(m.id);
      task.handlers.failed(m.code, m.message, { files: m.files, thrown: m.thrown });
    } else if (m.t === 'exit') {
      this.#tasks.delete(m.id);
      task.handlers.exited(m.code, m.signal);
    }
  }

  /** The spawner went away (each of 'error', 'disconnect' and 'exit' may say so; the first one counts). */
  #gone(child: ChildProcess, why: string): void {
    if (this.#child !== child) return;
    this.#child = undefined;
    if (child.connected) child.disconnect();
    const wasReady = this.#ready;
    if (!wasReady) this.#failedStarts++;
    const tasks = [...this.#tasks.values()];
    this.#tasks.clear();
    const reason = `the task spawner (pid ${child.pid ?? 'none'}) went away: ${why}`;
    const runs = [...this.#runs.values()];
    this.#runs.clear();
    for (const r of runs) r.resolve({ lost: reason });
    if (this.#closed) return;
    this.#logger?.warn(
      { tasks: tasks.length, ready: wasReady, failedStarts: this.#failedStarts },
      `${reason}; ${this.usable ? 'the next launches start a new one' : 'tasks are spawned directly from now on'}`,
    );
    for (const t of tasks) {
      const phase = !wasReady ? 'unsent' : t.pid === undefined ? 'unconfirmed' : 'running';
      try {
        t.handlers.lost(phase, reason);
      } catch (err) {
        this.#logger?.error({ err }, 'task spawner: a lost-task handler failed');
      }
    }
  }

  /** Ends the spawner (the orchestrator stops): tasks it started keep running. */
  close(): void {
    this.#closed = true;
    const child = this.#child;
    this.#child = undefined;
    this.#tasks.clear();
    const runs = [...this.#runs.values()];
    this.#runs.clear();
    for (const r of runs) r.resolve({ lost: 'the orchestrator is stopping' });
    if (child?.connected) child.disconnect();
  }
}
