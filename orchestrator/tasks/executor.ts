// The executor: every task is a real child process on this machine, in its own process group
// (spawned detached), so that the task and everything it starts can be signalled at once.
//
// States: TASK_STAGING (launch accepted) → TASK_STARTING (right before spawn) → TASK_RUNNING (pid
// known) → TASK_FINISHED (exit 0) | TASK_FAILED (non-zero exit, signal, launch error) |
// TASK_KILLED (after kill()). Whatever way a task ends, its whole process group is gone before the
// terminal update is sent: leftovers of a task that exited by itself get SIGKILL at once (as Mesos'
// containerizer destroys the container), a killed task gets SIGTERM, then SIGKILL after its grace
// period. Each task also runs in a cgroup of its own (cgroups.ts) where the machine allows, so
// that every descendant is killed with it, however it detached (setsid, env -i, re-parenting), at
// a kill, at the orchestrator's stop and after a kill -9 and restart (killLeftovers). Without a
// usable cgroup hierarchy, descendants that moved to a process group of their own (setsid) are
// found through /proc while the task's main process is alive and are killed with it (descendants.ts).
// Tasks are forked by the spawner, a small process of its own (spawner.ts), or from here when it
// is off or cannot start; a task whose spawner died keeps running and is watched through /proc.
// A task with a user (the app's, or the default) drops to it after joining its cgroup (users.ts).
// One piece on purpose (about 630 lines): the state machine above, from preparing to the terminal
// update, with every way a task can end, whichever process forked it; the mechanisms it uses
// (process groups, descendants, cgroups, podman, environment, the spawner, the updates' messages)
// are modules of their own.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, open, openSync } from 'node:fs';
import { chown, mkdir } from 'node:fs/promises';
import { promisify } from 'node:util';
import { join } from 'node:path';
import type { Logger } from '../../shared/logger.ts';
import type { Executor, LaunchSpec, TaskState, TaskStatusUpdate } from './types.ts';
import {
  groupIsTask,
  groupLedBy,
  procInfo,
  allProcesses,
  killGroupNow,
  sameLiveProcess,
  signalGroup,
  signalPid,
  findTaskProcesses,
  terminateGroup,
  waitGroupGone,
  type ProcInfo,
} from './process-group.ts';
import { podmanRunArgs, findPodman, removeContainer, containerName } from './podman.ts';
import { TaskCgroups, type CgroupMode, type TaskCgroup } from './cgroups.ts';
import { resolveProgram, taskProcessEnv } from './env.ts';
import { failedCommandMessage, launchErrorMessage } from './messages.ts';
import { DescendantScan, extraPids, rememberDescendants } from './descendants.ts';
import { TaskSpawner, type RunOutcome, type SpawnHandlers } from './spawner-client.ts';
import { asUser, resolveUser, type TaskUser } from './users.ts';

export interface ProcessExecutorOptions {
  logger?: Logger | undefined;
  /** Path of podman for docker apps; default: looked up on PATH. `null` disables docker apps. */
  podmanPath?: string | null | undefined;
  /** Extra arguments for every `podman` call (e.g. `--runtime runc`). */
  podmanArgs?: string[] | undefined;
  /** Extra environment for podman itself (e.g. CONTAINERS_CONF); podman otherwise gets the orchestrator's env. */
  podmanEnv?: Record<string, string> | undefined;
  /** Address that BRIDGE port mappings are published on (default: all addresses, like Docker). */
  podmanPublishAddress?: string | undefined;
  /** Environment the inherited variables come from (default process.env). */
  baseEnv?: NodeJS.ProcessEnv | undefined;
  /** Grace period used when a spec has none (Mesos: 3 s). */
  defaultKillGracePeriodSeconds?: number | undefined;
  /**
   * At shutdown(), the longest any task is given between SIGTERM and SIGKILL (its own grace period
   * when shorter), so that a stop takes a bounded time however many tasks run (default 5 s).
   */
  stopGracePeriodSeconds?: number | undefined;
  /** User that tasks whose spec names none run as (Marathon's --mesos_user); default: the orchestrator's own. */
  defaultUser?: string | undefined;
  /**
   * Task cgroups: `scope` names this orchestrator's cgroups (its data dir: a restart finds what the
   * previous run left); default a fresh scope per executor. `mode` picks a backend (default auto).
   */
  cgroups?: { scope?: string; mode?: CgroupMode } | undefined;
  /**
   * Start tasks from a small helper process (spawner.ts: a fork of it is cheaper than a fork of
   * the orchestrator); default true. False: the orchestrator spawns them itself. A command: what
   * to start instead of the spawner (tests of the fallback).
   */
  spawner?: boolean | { file: string; args: string[] } | undefined;
}

interface TaskRun {
  spec: LaunchSpec;
  pid: number | undefined;
  /** The main process's start time (/proc), read before it could be reaped: tells it from a later process with its pid. */
  pidStart: number | undefined;
  killing: boolean;
  killReason: string | undefined;
  /** Descendants seen in another process group while the main process was alive: pid → start time. */
  descendants: Map<number, number>;
  done: Promise<void>;
  resolveDone: () => void;
  sigkillTimer: NodeJS.Timeout | undefined;
  terminal: boolean;
  /** The main process has exited (its pid may be reused soon: no more signals to it). */
  exited: boolean;
  /** When kill() sent SIGTERM (start of the grace period). */
  killStartedAt: number;
  /** The grace period of the kill under way (the task's own, or shorter at shutdown). */
  killGraceMs: number;
  /** The task's cgroup (undefined where cgroups cannot be used). */
  cgroup: TaskCgroup | undefined;
}

/** fs.open as a promise of the plain descriptor (spawn's stdio takes descriptors, not FileHandles). */
const openFd = promisify(open);

/** A task ready to spawn: its command (wrapped to join its cgroup) and open output files. */
interface Prepared {
  run: TaskRun;
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  out: number;
  err: number;
}

/** Closes a prepared task's output files (the spawned process has its own copies, the spawner reopens them). */
function closeOutputs(p: { out: number; err: number }): void {
  closeSync(p.out);
  closeSync(p.err);
}

/** Launches prepared and sent to the spawner first; then twice as many each time (#startBatch). */
const FIRST_CHUNK = 4;

/** At shutdown, the longest grace period a task gets (ProcessExecutorOptions.stopGracePeriodSeconds). */
export const DEFAULT_STOP_GRACE_SECONDS = 5;

/** How often a task whose spawner went away is checked for its end (it is no child of anyone here). */
const ORPHAN_POLL_MS = 500;

export class ProcessExecutor implements Executor {
  readonly #tasks = new Map<string, TaskRun>();
  /** Launches of this tick, started together (#startBatch). */
  readonly #batch: TaskRun[] = [];
  readonly #listeners = new Set<(u: TaskStatusUpdate) => void>();
  readonly #logger: Logger | undefined;
  readonly #opts: ProcessExecutorOptions;
  // Tasks in a cgroup need no scan: every descendant is a member.
  readonly #scan = new DescendantScan(() => [...this.#tasks.values()].filter((t) => t.pid !== undefined && !t.terminal && !t.exited && !t.cgroup));
  readonly #cgroups: TaskCgroups | undefined;
  readonly #spawner: TaskSpawner | undefined;
  /** Prepared tasks for the spawner, sent at the end of this tick (#sendToSpawner). */
  readonly #outbox: Prepared[] = [];
  /** How tasks are contained, for the start log and the README's promise. */
  readonly containment: string;

  constructor(opts: ProcessExecutorOptions = {}) {
    this.#opts = opts;
    this.#logger = opts.logger;
    this.#spawner = opts.spawner === false ? undefined : new TaskSpawner(opts.logger, typeof opts.spawner === 'object' ? opts.spawner : undefined);
    const cg = TaskCgroups.open(opts.cgroups?.scope ?? `executor-${process.pid}-${crypto.randomUUID()}`, opts.cgroups?.mode);
    if (cg instanceof TaskCgroups) {
      this.#cgroups = cg;
      this.containment = `each task runs in its own cgroup (${cg.label}, ${cg.root}): every process it starts is killed with it`;
      this.#logger?.info({ cgroups: cg.label, root: cg.root }, 'task cgroups: every process a task starts is found and killed with it');
    } else {
      this.containment = `task cgroups are not available: ${cg.unavailable}`;
      this.#logger?.warn(
        { reason: cg.unavailable },
        'task cgroups are not available: tasks are killed by process group, and descendants that leave it are found through /proc while the task runs; a descendant that detaches and clears its environment (setsid env -i) can outlive a kill -9 of the orchestrator',
      );
    }
  }

  onStatus(listener: (update: TaskStatusUpdate) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  active(): string[] {
    return [...this.#tasks.values()].filter((t) => !t.terminal).map((t) => t.spec.taskId);
  }

  #emit(run: TaskRun, state: TaskState, message: string, extra: Partial<TaskStatusUpdate> = {}): void {
    const u: TaskStatusUpdate = {
      taskId: run.spec.taskId,
      state,
      message,
      timestamp: new Date().toISOString(),
      ...(run.pid !== undefined ? { pid: run.pid } : {}),
      ...extra,
    };
    for (const l of this.#listeners) {
      try {
        l(u);
      } catch (err) {
        this.#logger?.error({ err, taskId: u.taskId }, 'status listener failed');
      }
    }
  }

  /** Podman itself runs with the orchestrator's environment (plus podmanEnv); the task's env goes in with -e. */
  #podmanEnv(): Record<string, string> {
    return { ...(process.env as Record<string, string>), ...(this.#opts.podmanEnv ?? {}) };
  }

  launch(spec: LaunchSpec): void {
    if (this.#tasks.has(spec.taskId) && !this.#tasks.get(spec.taskId)!.terminal) throw new Error(`task ${spec.taskId} is already running`);
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    const run: TaskRun = {
      spec,
      pid: undefined,
      pidStart: undefined,
      killing: false,
      killReason: undefined,
      descendants: new Map(),
      done,
      resolveDone,
      sigkillTimer: undefined,
      terminal: false,
      exited: false,
      killStartedAt: 0,
      killGraceMs: 0,
      cgroup: undefined,
    };
    this.#tasks.set(spec.taskId, run);
    this.#emit(run, 'TASK_STAGING', '');
    // The rest happens on the next tick, so that listeners see STAGING before anything else and a
    // caller may still kill() the task before it starts; the launches of one tick start together.
    if (this.#batch.push(run) === 1) setImmediate(() => void this.#startBatch());
  }

  /**
   * Starts a batch of launches: every task's cgroup and sandbox (with its stdout and stderr files)
   * are made on libuv's thread pool. With the spawner, they are prepared in chunks of growing size,
   * each sent to it in one message when ready, so that it forks while the rest are prepared (a
   * sandbox costs ~1 ms of file system calls, a fork ~1.5 ms); it answers the starts it made in one
   * message per read. Without it, all are prepared at once and spawned here in one go, so that
   * their status updates reach the scheduler in one pass (one state transaction). A spawn forks
   * the process that spawns, at a cost that grows with its memory: what made launching slow when
   * the orchestrator forked itself (issue 17).
   */
  async #startBatch(): Promise<void> {
    const runs = this.#batch.splice(0);
    const fail = (run: TaskRun) => (e: unknown) => void this.#fail(run, `launch failed: ${(e as Error).message}`);
    if (this.#spawner?.usable) {
      // In chunks of growing size, each sent when it is prepared: the spawner forks the first few
      // while the next are prepared, and there are few messages (each answer is a pass of the
      // scheduler, with a state transaction).
      for (let at = 0, size = FIRST_CHUNK; at < runs.length; at += size, size *= 2) {
        const chunk = runs.slice(at, at + size);
        const prepared = await Promise.all(chunk.map((run) => this.#prepare(run).catch(fail(run))));
        for (const p of prepared) if (p) this.#toSpawner(p);
      }
      return;
    }
    const prepared = await Promise.all(runs.map((run) => this.#prepare(run).catch(fail(run))));
    for (const p of prepared) if (p && this.#starting(p)) this.#spawn(p);
  }

  #toSpawner(p: Prepared): void {
    if (this.#outbox.push(p) === 1) setImmediate(() => this.#sendToSpawner());
  }

  #sendToSpawner(): void {
    const ready = this.#outbox.splice(0).filter((p) => this.#starting(p));
    if (ready.length === 0) return;
    // Output files are reopened there by path.
    for (const p of ready) closeOutputs(p);
    const batch = ready.map((p) => ({
      request: { file: p.file, args: p.args, cwd: p.run.spec.sandboxDir, env: p.env as Record<string, string>, ...this.#outputs(p.run) },
      handlers: this.#spawnerHandlers(p),
    }));
    if (this.#spawner?.spawn(batch)) return;
    for (const p of ready) this.#spawnReopened(p);
  }

  #outputs(run: TaskRun): { stdout: string; stderr: string } {
    return { stdout: join(run.spec.sandboxDir, 'stdout'), stderr: join(run.spec.sandboxDir, 'stderr') };
  }

  /** TASK_STARTING, unless a kill() came while the batch was prepared: then the task ends before it starts (false). */
  #starting(p: Prepared): boolean {
    if (p.run.killing) {
      closeOutputs(p);
      this.#killedBeforeStart(p.run);
      return false;
    }
    this.#emit(p.run, 'TASK_STARTING', '');
    return true;
  }

  /** Spawns directly a task whose output files were closed for the spawner. */
  #spawnReopened(p: Prepared): void {
    if (p.run.killing) return this.#killedBeforeStart(p.run);
    const { stdout, stderr } = this.#outputs(p.run);
    let out: number | undefined;
    try {
      out = openSync(stdout, 'a');
      this.#spawn({ ...p, out, err: openSync(stderr, 'a') });
    } catch (e) {
      if (out !== undefined) closeSync(out);
      this.#fail(p.run, `cannot create the sandbox ${p.run.spec.sandboxDir}: ${(e as Error).message}`);
    }
  }

  /** What the spawner reports about a task, mapped to the same updates as a direct spawn. */
  #spawnerHandlers(p: Prepared): SpawnHandlers {
    const { run } = p;
    return {
      started: (pid, start) => this.#started(run, pid, start),
      failed: (code, message, how) =>
        this.#fail(
          run,
          how.files
            ? `cannot create the sandbox ${run.spec.sandboxDir}: ${message}`
            : how.thrown
              ? `launch failed: ${message}`
              : this.#launchError(run, p.file, code, message),
        ),
      exited: (code, signal) => void this.#onExit(run, code, signal),
      lost: (phase, reason) => {
        if (run.terminal) return;
        if (phase === 'unsent') {
          this.#logger?.warn({ taskId: run.spec.taskId }, `${reason}: spawning the task directly`);
          return this.#spawnReopened(p);
        }
        if (phase === 'unconfirmed') return void this.#failUnconfirmed(run, reason);
        if (!run.exited) this.#watchOrphan(run, reason);
      },
    };
  }

  /** The spawner went away between the request and its answer: whatever it may have started is killed, the task fails. */
  async #failUnconfirmed(run: TaskRun, reason: string): Promise<void> {
    const { spec } = run;
    await run.cgroup?.kill();
    for (const pid of findTaskProcesses(new Set([spec.taskId])).get(spec.taskId) ?? []) signalPid(pid, 'SIGKILL');
    if (spec.docker) await removeContainer(this.#podman(), this.#opts.podmanArgs ?? [], containerName(spec.taskId), this.#podmanEnv());
    this.#fail(run, `launch failed: ${reason} before it confirmed the start`);
  }

  /**
   * The spawner that started a running task went away: the task keeps running, but its exit is
   * reported by no one. Its pid (with its start time, against reuse) is polled until it is gone;
   * the exit code is then unknown.
   */
  #watchOrphan(run: TaskRun, reason: string): void {
    const pid = run.pid!;
    const start = run.pidStart ?? procInfo(pid)?.start;
    this.#logger?.warn({ taskId: run.spec.taskId, pid }, `${reason}: the task keeps running, watched through /proc`);
    const alive = () => start !== undefined && sameLiveProcess(pid, start);
    if (!alive()) return void this.#onExit(run, null, null, reason);
    const timer = setInterval(() => {
      if (alive()) return;
      clearInterval(timer);
      void this.#onExit(run, null, null, reason);
    }, ORPHAN_POLL_MS);
    timer.unref();
  }

  #launchError(run: TaskRun, file: string, code: string | undefined, message: string): string {
    return launchErrorMessage(run.spec.args?.[0] ?? file, code, message);
  }

  #started(run: TaskRun, pid: number, start: number | undefined): void {
    run.pid = pid;
    run.pidStart = start;
    this.#logger?.info({ taskId: run.spec.taskId, pid }, 'task started');
    this.#emit(run, 'TASK_RUNNING', '', { pid });
    this.#scan.ensure();
    // A kill() while the spawner was starting it (the pid was not known then): signal it now.
    if (run.killing) this.#signalKill(run);
  }

  #fail(run: TaskRun, message: string): undefined {
    if (run.terminal) return;
    run.terminal = true;
    this.#tasks.delete(run.spec.taskId);
    run.cgroup?.remove();
    this.#logger?.warn({ taskId: run.spec.taskId, message }, 'task failed to launch');
    this.#emit(run, 'TASK_FAILED', message);
    run.resolveDone();
  }

  #killedBeforeStart(run: TaskRun): undefined {
    run.terminal = true;
    this.#tasks.delete(run.spec.taskId);
    run.cgroup?.remove();
    this.#emit(run, 'TASK_KILLED', run.killReason ? `Killed before start: ${run.killReason}` : 'Killed before start');
    run.resolveDone();
  }

  /** What to run and where its output goes; undefined when the task failed or was killed first. */
  async #prepare(run: TaskRun): Promise<Prepared | undefined> {
    const { spec } = run;
    if (run.killing) return this.#killedBeforeStart(run);
    let env = taskProcessEnv(spec.env, this.#opts.baseEnv);
    let file: string;
    let args: string[];
    if (spec.docker) {
      const podman = this.#podman();
      if (!podman) return this.#fail(run, 'docker containers need podman, which is not installed');
      file = podman;
      args = [...(this.#opts.podmanArgs ?? []), ...podmanRunArgs(spec, { publishAddress: this.#opts.podmanPublishAddress })];
      env = this.#podmanEnv();
    } else if (spec.cmd !== null && spec.cmd !== undefined) {
      file = '/bin/sh';
      args = ['-c', spec.cmd];
    } else if (spec.args && spec.args.length > 0) {
      file = spec.args[0]!;
      args = spec.args.slice(1);
      if (!resolveProgram(file, env.PATH)) return this.#fail(run, `command not found: ${file}`);
    } else {
      return this.#fail(run, 'neither cmd nor args given');
    }
    // Innermost: the task joins its cgroup and network namespace as root, then drops to its user.
    const userName = spec.docker ? undefined : (spec.user ?? this.#opts.defaultUser);
    let owner: TaskUser | undefined;
    if (userName) {
      const user = await resolveUser(userName);
      if ('problem' in user) return this.#fail(run, user.problem);
      const as = asUser(user, file, args, env.PATH);
      if ('problem' in as) return this.#fail(run, as.problem);
      if (as.command) {
        ({ file, args } = as.command);
        owner = user;
        const own = { HOME: user.home, USER: user.name, LOGNAME: user.name };
        for (const [k, v] of Object.entries(own)) if (spec.env[k] === undefined) env[k] = v;
      }
    }
    if (spec.netns) {
      args = ['netns', 'exec', spec.netns, file, ...args];
      file = resolveProgram('ip', env.PATH) ?? '/usr/sbin/ip';
    }
    const cgroup = this.#cgroups?.create(spec.taskId).catch((e: unknown) => {
      this.#logger?.warn({ taskId: spec.taskId, err: e }, 'cannot create the task cgroup: running it without one');
      return undefined;
    });
    let out: number | undefined;
    let err: number | undefined;
    let sandboxError: Error | undefined;
    try {
      await mkdir(spec.sandboxDir, { recursive: true });
      out = await openFd(join(spec.sandboxDir, 'stdout'), 'a');
      err = await openFd(join(spec.sandboxDir, 'stderr'), 'a');
      // The sandbox is the task's own (as Mesos gives it to the task's user): it may write files there.
      if (owner) for (const f of ['', 'stdout', 'stderr']) await chown(join(spec.sandboxDir, f), owner.uid, owner.gid);
    } catch (e) {
      sandboxError = e as Error;
    }
    run.cgroup = await cgroup;
    const closeFiles = () => {
      if (out !== undefined) closeSync(out);
      if (err !== undefined) closeSync(err);
    };
    if (sandboxError || out === undefined || err === undefined) {
      closeFiles();
      return this.#fail(run, `cannot create the sandbox ${spec.sandboxDir}: ${sandboxError?.message ?? 'unknown error'}`);
    }
    if (run.cgroup) ({ file, args } = run.cgroup.wrap(file, args));
    return { run, file, args, env, out, err };
  }

  /** Spawns a task from this process (without the spawner), after TASK_STARTING. */
  #spawn(p: Prepared): void {
    const { run, file, args, env, out, err } = p;
    const { spec } = run;
    let child: ChildProcess;
    try {
      child = spawn(file, args, { cwd: spec.sandboxDir, env, detached: true, stdio: ['ignore', out, err] });
    } catch (e) {
      closeOutputs(p);
      return this.#fail(run, `launch failed: ${(e as Error).message}`);
    }
    closeOutputs(p);
    child.once('error', (e: NodeJS.ErrnoException) => {
      if (run.pid !== undefined) return; // errors after spawn (e.g. kill failures) are not launch errors
      this.#fail(run, this.#launchError(run, file, e.code, e.message));
    });
    if (child.pid === undefined) return; // 'error' follows
    this.#started(run, child.pid, procInfo(child.pid)?.start); // not reaped before its 'exit' event
    child.once('exit', (code, signal) => void this.#onExit(run, code, signal));
  }

  /** `unknown`: why the exit status is not known (the task's spawner went away). */
  async #onExit(run: TaskRun, code: number | null, signal: NodeJS.Signals | null, unknown?: string): Promise<void> {
    const { spec } = run;
    if (run.exited || run.terminal) return;
    run.exited = true;
    // The main process is reaped: its group's other members are signalled only while its pid is not another process's.
    const group = groupLedBy(run.pid!, run.pidStart);
    if (run.killing) {
      // SIGTERM was sent; leftovers get the rest of the grace period (the SIGKILL timer is running).
      const rest = Math.max(0, run.killGraceMs - (Date.now() - run.killStartedAt)) + 50;
      if (run.cgroup) await run.cgroup.waitEmpty(rest);
      else if (group !== undefined) await waitGroupGone(group, rest);
    }
    if (group !== undefined) await killGroupNow(group, () => extraPids(run));
    else for (const p of extraPids(run)) signalPid(p, 'SIGKILL');
    if (run.cgroup) {
      await run.cgroup.kill();
      await run.cgroup.removeWhenEmpty();
    }
    if (run.sigkillTimer) clearTimeout(run.sigkillTimer);
    if (spec.docker) await removeContainer(this.#podman(), this.#opts.podmanArgs ?? [], containerName(spec.taskId), this.#podmanEnv());
    run.terminal = true;
    this.#tasks.delete(spec.taskId);
    const extra = { exitCode: code, signal };
    if (run.killing) {
      this.#emit(run, 'TASK_KILLED', run.killReason ? `Killed: ${run.killReason}` : 'Killed', extra);
    } else if (unknown !== undefined) {
      this.#emit(run, 'TASK_FAILED', `Command ended; its exit status is unknown: ${unknown}`, extra);
    } else if (code === 0) {
      this.#emit(run, 'TASK_FINISHED', 'Command exited with code 0', extra);
    } else {
      this.#emit(run, 'TASK_FAILED', failedCommandMessage(code, signal, join(spec.sandboxDir, 'stderr')), extra);
    }
    this.#logger?.info({ taskId: spec.taskId, code, signal, killed: run.killing }, 'task ended');
    run.resolveDone();
  }

  #podman(): string | undefined {
    if (this.#opts.podmanPath === null) return undefined;
    return this.#opts.podmanPath ?? findPodman(process.env.PATH);
  }

  #graceMs(spec: LaunchSpec): number {
    const s = spec.killGracePeriodSeconds ?? this.#opts.defaultKillGracePeriodSeconds ?? 3;
    return Math.max(0, s * 1000);
  }

  async kill(taskId: string, reason?: string): Promise<void> {
    const run = this.#tasks.get(taskId);
    if (!run || run.terminal) return;
    this.#startKill(run, reason, this.#graceMs(run.spec));
    await run.done;
  }

  /**
   * Marks a task killed and signals it once its pid is known. After the main process exited,
   * #onExit is already reaping the group and the outcome (FINISHED/FAILED) is decided: nothing to
   * signal. `snapshot`: one /proc scan shared by the tasks killed together (tasks without a cgroup).
   */
  #startKill(run: TaskRun, reason: string | undefined, graceMs: number, snapshot?: ProcInfo[]): void {
    if (run.killing || run.exited) return;
    run.killing = true;
    run.killReason = reason;
    run.killGraceMs = graceMs;
    if (run.pid !== undefined) this.#signalKill(run, snapshot);
  }

  /** SIGTERM to the task (group, cgroup, descendants that left), SIGKILL after its grace period. */
  #signalKill(run: TaskRun, snapshot?: ProcInfo[]): void {
    // A spawner's task may be reaped before its exit is reported here: the group only while its pid is still the task's.
    const signalTaskGroup = (sig: NodeJS.Signals) => {
      const group = groupLedBy(run.pid!, run.pidStart);
      if (group !== undefined) signalGroup(group, sig);
    };
    run.killStartedAt = Date.now(); // start of the grace period
    // Every descendant of a task in a cgroup is a member of it; for the others, a /proc scan (one
    // per kill: shared by tasks killed together, a scan per task made a stop of 5,000 quadratic).
    if (!run.cgroup) rememberDescendants(run, snapshot);
    this.#logger?.info({ taskId: run.spec.taskId, reason: run.killReason }, 'killing task');
    signalTaskGroup('SIGTERM');
    run.cgroup?.signal('SIGTERM');
    for (const p of extraPids(run)) signalPid(p, 'SIGTERM');
    run.sigkillTimer = setTimeout(() => {
      signalTaskGroup('SIGKILL');
      void run.cgroup?.kill();
      for (const p of extraPids(run)) signalPid(p, 'SIGKILL');
    }, run.killGraceMs);
  }

  /**
   * Kills a process group left by a previous run: SIGTERM, then SIGKILL after the grace period
   * (default 3 s); resolves when no live process of it remains. Only groups that carry a
   * MESOS_TASK_ID (the given task's when `taskId` is passed) are touched, so a recorded pid that
   * was reused by an unrelated process is left alone (logged).
   */
  async killOrphan(pgid: number, opts: { taskId?: string | undefined; gracePeriodSeconds?: number | null | undefined } = {}): Promise<void> {
    const graceMs = (opts.gracePeriodSeconds ?? this.#opts.defaultKillGracePeriodSeconds ?? 3) * 1000;
    // The task's cgroup from the previous run holds the group and whatever left it: all get the grace period.
    const cgroup = opts.taskId !== undefined && !this.#tasks.has(opts.taskId) ? this.#cgroups?.find(opts.taskId) : undefined;
    if (cgroup) {
      this.#logger?.info({ taskId: opts.taskId }, 'killing the processes a previous run left in a task cgroup');
      await cgroup.terminate(graceMs);
    }
    if (!Number.isInteger(pgid) || pgid <= 1 || pgid === process.pid || pgid === procInfo(process.pid)?.pgid) return;
    if (!signalGroup(pgid, 0)) return;
    if (!groupIsTask(pgid, opts.taskId)) {
      this.#logger?.warn({ pgid, taskId: opts.taskId }, 'not killing process group: it does not belong to a task (pid reused?)');
      return;
    }
    this.#logger?.info({ pgid, taskId: opts.taskId }, 'killing a process group left by a previous run');
    await terminateGroup(pgid, graceMs);
  }

  /**
   * After a crash of the orchestrator: kills whatever a previous run left in task cgroups of this
   * scope (the data dir), including descendants that detached from their task (setsid env -i), and
   * removes those cgroups. SIGTERM to all at once, SIGKILL after the default grace period. Returns
   * the cgroup names that held processes. Tasks of this executor are not touched.
   */
  async killLeftovers(): Promise<string[]> {
    if (!this.#cgroups) return [];
    const mine = new Set([...this.#tasks.keys()].map((id) => TaskCgroups.nameOf(id)));
    const left = [...this.#cgroups.all()].filter(([name]) => !mine.has(name));
    const busy = left.filter(([, cg]) => cg.members().length > 0).map(([name]) => name);
    if (busy.length > 0) this.#logger?.warn({ cgroups: busy }, 'killing processes a previous run left in task cgroups');
    const graceMs = (this.#opts.defaultKillGracePeriodSeconds ?? 3) * 1000;
    await Promise.all(left.map(([, cg]) => cg.terminate(graceMs)));
    return busy;
  }

  /**
   * Kills every task in parallel: SIGTERM to all at once, SIGKILL to what is left after the grace
   * period (each task's own, at most stopGracePeriodSeconds), so the stop takes a bounded time
   * whatever the number of tasks; resolves once every task is gone and its cgroup removed.
   */
  async shutdown(): Promise<void> {
    const runs = [...this.#tasks.values()].filter((t) => !t.terminal);
    const capMs = Math.max(0, (this.#opts.stopGracePeriodSeconds ?? DEFAULT_STOP_GRACE_SECONDS) * 1000);
    const snapshot = runs.some((r) => r.pid !== undefined && !r.cgroup) ? allProcesses() : undefined;
    for (const run of runs) this.#startKill(run, 'orchestrator shutdown', Math.min(this.#graceMs(run.spec), capMs), snapshot);
    await Promise.all(runs.map((r) => r.done));
    this.#scan.stop();
    // Cgroups of tasks that ended are removed as they end; an empty one left by a failed removal goes here.
    if (this.#cgroups) await Promise.all([...this.#cgroups.all().values()].filter((cg) => cg.members().length === 0).map((cg) => cg.removeWhenEmpty()));
    this.#cgroups?.close();
    this.#spawner?.close();
  }

  /**
   * Runs short commands in the task spawner, whose forks are cheap (the isolation's `ip` and `nft`:
   * orchestrator/isolation/exec.ts says why); undefined without a spawner. The function answers
   * undefined while the spawner is not ready or not usable: the caller then runs the command itself.
   */
  get commandRunner(): ((file: string, args: string[], input: string | undefined, timeoutMs: number) => Promise<RunOutcome> | undefined) | undefined {
    const s = this.#spawner;
    return s ? (file, args, input, timeoutMs) => s.run(file, args, input, timeoutMs) : undefined;
  }

  /** The task spawner's pid while one runs (tests). */
  get spawnerPid(): number | undefined {
    return this.#spawner?.pid;
  }
}
