// The task spawner, the child side: a small helper process that starts the tasks' processes for the
// executor (issue 17). Why: child_process.spawn forks the calling process (libuv forks on Linux; it
// has no vfork or posix_spawn path), and a fork costs in proportion to the caller's anonymous
// memory (its page tables are copied, then dropped by the child at exec): ~1.6 ms per MiB per 100
// spawns. The orchestrator holds 45-75 MiB of anonymous memory; this process holds what a bare
// Node holds (~8 MiB), so its forks are cheaper. spawner-client.ts is the orchestrator's side.
//
// Protocol, over Node's IPC channel (JSON): the orchestrator sends { t: 'spawn', tasks: [...] };
// this process answers { t: 'ready' } once, then { t: 'started', tasks: [{ id, pid, start }] } for the
// tasks of the commands read in one go, per task that did not start { t: 'failed', id, ... }, and
// later { t: 'exit', id, code, signal }. Output files are opened
// here by path (descriptors cannot cross Node's IPC). Tasks are detached (a process group of their
// own, no pipe to this process): when the orchestrator goes away (even kill -9) this process exits
// at the end of its IPC channel, and the tasks keep running as they would have without it.
//
// The whole child side is one function with no free variables but `process` and its parameters:
// from source, the client runs it as `node -e` code made from runSpawner.toString() (the text
// Node's type stripper left, plain JavaScript), so that the spawner does not load the TypeScript
// stripper (~12 MiB); the executable calls it from its entry (orchestrator/executable.ts).
import type * as ChildProcessModule from 'node:child_process';
import type * as FsModule from 'node:fs';

/** One task to start: what spawn() gets in the executor, with output files as paths. */
export interface SpawnRequest {
  id: number;
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  stdout: string;
  stderr: string;
}

export interface SpawnCommand {
  t: 'spawn';
  tasks: SpawnRequest[];
}

/** A short command whose output is wanted (isolation's `ip` and `nft`): run to its end here. */
export interface RunCommand {
  t: 'run';
  id: number;
  file: string;
  args: string[];
  input?: string;
  timeoutMs: number;
}

export type SpawnerMessage =
  | { t: 'ready'; pid: number }
  /** The tasks that started, in one message: the executor reports them in one pass. */
  | { t: 'started'; tasks: StartedTask[] }
  /** `files`: opening an output file failed (nothing was spawned); `thrown`: spawn() threw. */
  | { t: 'failed'; id: number; code: string | undefined; message: string; files: boolean; thrown: boolean }
  | { t: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null }
  /** A run's end: `error` when it could not be started (then code and signal are null). */
  | { t: 'ran'; id: number; code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; error?: string };

/**
 * A task that started: its pid and the start time /proc gives it (read before this process can
 * reap it: with the pid, it tells the task from a later process that gets the same pid).
 */
export interface StartedTask {
  id: number;
  pid: number;
  start: number | undefined;
}

/**
 * The spawner as a JavaScript statement that needs only Node: what `node -e` runs from source
 * (spawner-client.ts) and what the executable's loader runs before it reads anything of the bundle
 * (scripts/build.ts). From source, toString() gives the text Node's type stripper left.
 */
export function spawnerScript(): string {
  return `(${runSpawner.toString()})(require('node:child_process'), require('node:fs'));`;
}

/** The argument that makes the orchestrator's executable run as the spawner (orchestrator/executable.ts). */
export const SPAWNER_ARG = '--starmap-task-spawner';

export function runSpawner(childProcess: typeof ChildProcessModule, fs: typeof FsModule): void {
  const send = process.send?.bind(process);
  if (!send) {
    process.stderr.write('starmap task spawner: started without an IPC channel; the orchestrator starts it itself\n');
    process.exit(2);
  }
  // After the orchestrator went away (the channel is closed, 'disconnect' is about to end this
  // process) there is no one to tell: an error from send (EPIPE) is dropped, not thrown.
  const reply = (m: SpawnerMessage) => void (process.connected && send(m, () => {}));
  // Field 22 of /proc/<pid>/stat (as process-group.ts procInfo reads it; no import: see above).
  const startTime = (pid: number): number | undefined => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
      const start = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
      return Number.isInteger(start) ? start : undefined;
    } catch {
      return undefined;
    }
  };
  const start = (r: SpawnRequest, started: StartedTask[]) => {
    let out: number | undefined;
    let err: number | undefined;
    const closeFiles = () => {
      if (out !== undefined) fs.closeSync(out);
      if (err !== undefined) fs.closeSync(err);
    };
    try {
      out = fs.openSync(r.stdout, 'a');
      err = fs.openSync(r.stderr, 'a');
    } catch (e) {
      closeFiles();
      const x = e as NodeJS.ErrnoException;
      return reply({ t: 'failed', id: r.id, code: x.code, message: x.message, files: true, thrown: false });
    }
    let child: ChildProcessModule.ChildProcess;
    try {
      child = childProcess.spawn(r.file, r.args, { cwd: r.cwd, env: r.env, detached: true, stdio: ['ignore', out, err] });
    } catch (e) {
      const x = e as NodeJS.ErrnoException;
      return reply({ t: 'failed', id: r.id, code: x.code, message: x.message, files: false, thrown: true });
    } finally {
      closeFiles();
    }
    child.once('error', (e: NodeJS.ErrnoException) => {
      // Errors after the start (a failed kill) are not launch errors; nothing here kills tasks.
      if (child.pid === undefined) reply({ t: 'failed', id: r.id, code: e.code, message: e.message, files: false, thrown: false });
    });
    if (child.pid === undefined) return; // 'error' follows
    started.push({ id: r.id, pid: child.pid, start: startTime(child.pid) });
    child.once('exit', (code, signal) => {
      answer(); // a start not answered yet goes first
      reply({ t: 'exit', id: r.id, code, signal });
    });
  };
  // The end of the channel is the orchestrator's end (or its request to stop): tasks stay.
  process.on('disconnect', () => process.exit(0));
  // Starts are answered together once the commands read so far are done: while this process
  // forks, the next commands queue up in the channel and are read in one go.
  let started: StartedTask[] = [];
  const answer = () => {
    const tasks = started;
    started = [];
    if (tasks.length > 0) reply({ t: 'started', tasks });
  };
  // A run: pipes for its input and output, answered once at its end (no other state).
  const run = (m: RunCommand) => {
    let stdout = '';
    let stderr = '';
    let done = false;
    const finish = (code: number | null, signal: NodeJS.Signals | null, error?: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      reply({ t: 'ran', id: m.id, code, signal, stdout, stderr, ...(error !== undefined ? { error } : {}) });
    };
    let child: ChildProcessModule.ChildProcess;
    try {
      child = childProcess.spawn(m.file, m.args, { stdio: [m.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    } catch (e) {
      return reply({ t: 'ran', id: m.id, code: null, signal: null, stdout, stderr, error: (e as Error).message });
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), m.timeoutMs);
    const limit = 32 * 1024 * 1024; // output kept per stream (a literal: no free variables, see above)
    child.stdout!.on('data', (d: Buffer) => {
      if (stdout.length < limit) stdout += d.toString();
    });
    child.stderr!.on('data', (d: Buffer) => {
      if (stderr.length < limit) stderr += d.toString();
    });
    child.once('error', (e) => finish(null, null, e.message));
    child.once('close', (code, signal) => finish(code, signal));
    if (m.input !== undefined && child.stdin) {
      child.stdin.on('error', () => {
        /* the exit code reports the failure */
      });
      child.stdin.end(m.input);
    }
  };
  process.on('message', (m: SpawnCommand | RunCommand) => {
    if (m?.t === 'run') return run(m);
    if (m?.t !== 'spawn') return;
    if (started.length === 0) setImmediate(answer);
    for (const r of m.tasks) start(r, started);
  });
  reply({ t: 'ready', pid: process.pid });
}
