// One cgroup per task, so that every process a task starts is found and killed, however it
// detaches: a child that calls setsid, clears its environment (env -i) and is re-parented to PID 1
// leaves the task's process group and every trace in /proc that points back to the task, but it
// cannot leave its cgroup. Layout: <hierarchy>/starmap/<scope>/<task id>, where the scope is one
// per data dir (a hash of its path), so a restart after kill -9 finds what its previous run left.
//
// Backends, the first one that works is used:
// - cgroup v2 (the unified hierarchy, /sys/fs/cgroup or /sys/fs/cgroup/unified in hybrid setups):
//   cgroup.kill kills every member at once (Linux 5.14+); before that, cgroup.freeze, SIGKILL to
//   each member, thaw;
// - cgroup v1 freezer: freeze, SIGKILL to each member, thaw (no member can fork in between);
// - cgroup v1 pids: pids.max = 0 (no member can fork any more), then SIGKILL to each member.
// A process joins its task's cgroup before it runs anything (tasks start through a tiny shell that
// writes its own pid to cgroup.procs and then execs the task), so nothing escapes by forking early.
// Without any usable backend (no cgroup file system, not root and no delegated subtree) the
// executor falls back to process groups and /proc scans; `describe()` says what that loses.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmdirSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { signalPid } from './process-group.ts';

export type CgroupMode = 'auto' | 'v2' | 'v1-freezer' | 'v1-pids' | 'off';
type Kind = Exclude<CgroupMode, 'auto' | 'off'>;

const LABEL: Record<Kind, string> = { v2: 'cgroup v2', 'v1-freezer': 'cgroup v1 freezer', 'v1-pids': 'cgroup v1 pids' };
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Mount {
  kind: Kind;
  path: string;
}

/** cgroup mounts from /proc/self/mountinfo, in order of preference. */
export function cgroupMounts(mountinfo = readText('/proc/self/mountinfo') ?? ''): Mount[] {
  const found: Mount[] = [];
  for (const line of mountinfo.split('\n')) {
    // "id parent major:minor root mountpoint options [optional...] - fstype source superoptions"
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const mountPoint = (left.split(' ')[4] ?? '').replace(/\\040/g, ' ');
    const [fstype, , superOptions = ''] = right.split(' ');
    if (fstype === 'cgroup2') found.push({ kind: 'v2', path: mountPoint });
    else if (fstype === 'cgroup') {
      const opts = superOptions.split(',');
      if (opts.includes('freezer')) found.push({ kind: 'v1-freezer', path: mountPoint });
      if (opts.includes('pids')) found.push({ kind: 'v1-pids', path: mountPoint });
    }
  }
  const order: Kind[] = ['v2', 'v1-freezer', 'v1-pids'];
  return found.sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind));
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The directory name of a scope: stable for a data dir, whatever relative path names it. */
export function scopeName(scope: string): string {
  let real = scope;
  try {
    real = realpathSync(scope);
  } catch {
    /* not a path: the string itself */
  }
  return `s-${createHash('sha256').update(real).digest('hex').slice(0, 16)}`;
}

const SAFE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/;
function dirName(taskId: string): string {
  return SAFE.test(taskId) ? taskId : `t-${createHash('sha256').update(taskId).digest('hex').slice(0, 32)}`;
}

const JOIN_SCRIPT = 'echo $$ > "$1" || { echo "starmap: cannot join the task cgroup $1" >&2; exit 125; }; shift; exec "$@"';

/** One task's cgroup. */
export class TaskCgroup {
  readonly kind: Kind;
  readonly path: string;

  constructor(kind: Kind, path: string) {
    this.kind = kind;
    this.path = path;
  }

  /** The file a process writes its pid to in order to join. */
  get procsFile(): string {
    return join(this.path, 'cgroup.procs');
  }

  /**
   * Pids of the live members (exited processes leave at once, zombies included). Only positive
   * pids: cgroup v2 lists a member this process cannot see (another pid namespace) as 0, and a
   * signal to pid 0 would go to our own process group.
   */
  members(): number[] {
    const text = readText(this.procsFile);
    if (text === undefined) return [];
    return text
      .split('\n')
      .map(Number)
      .filter((pid) => Number.isInteger(pid) && pid > 0);
  }

  signal(sig: NodeJS.Signals): void {
    for (const pid of this.members()) signalPid(pid, sig);
  }

  /** Polls until the cgroup has no member or the time is up; true when empty. */
  async waitEmpty(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.members().length === 0) return true;
      if (Date.now() >= deadline) return false;
      await sleep(20);
    }
  }

  #write(file: string, value: string): boolean {
    try {
      writeFileSync(join(this.path, file), value);
      return true;
    } catch {
      return false;
    }
  }

  /** Kills every member, also those forking meanwhile; resolves once empty (bounded: 10 s). */
  async kill(): Promise<boolean> {
    const deadline = Date.now() + 10_000;
    while (this.members().length > 0) {
      if (Date.now() >= deadline) return false;
      if (this.kind === 'v2') {
        if (!this.#write('cgroup.kill', '1')) {
          const frozen = this.#write('cgroup.freeze', '1');
          this.signal('SIGKILL');
          if (frozen) this.#write('cgroup.freeze', '0');
        }
      } else if (this.kind === 'v1-freezer') {
        this.#write('freezer.state', 'FROZEN');
        const until = Date.now() + 1000;
        while (readText(join(this.path, 'freezer.state'))?.trim() === 'FREEZING' && Date.now() < until) await sleep(5);
        this.signal('SIGKILL');
        this.#write('freezer.state', 'THAWED');
      } else {
        this.#write('pids.max', '0');
        this.signal('SIGKILL');
      }
      await this.waitEmpty(500);
    }
    return true;
  }

  /** SIGTERM to every member, SIGKILL to what is left after `graceMs`, then removes the cgroup. */
  async terminate(graceMs: number): Promise<void> {
    this.signal('SIGTERM');
    await this.waitEmpty(graceMs);
    await this.kill();
    this.remove();
  }

  /**
   * The command that runs `file args` inside this cgroup: a shell writes its own pid to
   * cgroup.procs, then execs the program (same pid, same process group), so nothing the task starts
   * can run outside the cgroup.
   */
  wrap(file: string, args: string[]): { file: string; args: string[] } {
    return { file: '/bin/sh', args: ['-c', JOIN_SCRIPT, 'starmap-task', this.procsFile, file, ...args] };
  }

  /**
   * Removes the (empty) cgroup, and its scope and the shared starmap folder when they are empty
   * too, so an orchestrator that dies while idle leaves nothing behind. False when it still has
   * members or is gone already.
   */
  remove(): boolean {
    try {
      rmdirSync(this.path);
    } catch {
      return false;
    }
    this.#removeParents();
    return true;
  }

  /**
   * remove(), retried while the kernel still counts the cgroup as busy: right after its last member
   * exits, rmdir can fail with EBUSY for a moment (CI saw a scope left behind that way). Bounded.
   */
  async removeWhenEmpty(timeoutMs = 2000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        rmdirSync(this.path);
        break;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return false;
        if (code !== 'EBUSY' || this.members().length > 0 || Date.now() >= deadline) return false;
        await sleep(20);
      }
    }
    this.#removeParents();
    return true;
  }

  #removeParents(): void {
    for (const dir of [join(this.path, '..'), join(this.path, '..', '..')]) {
      try {
        rmdirSync(dir);
      } catch {
        break; // other tasks (or scopes) still there
      }
    }
  }
}

export class TaskCgroups {
  readonly kind: Kind;
  /** <hierarchy>/starmap/<scope> */
  readonly root: string;

  private constructor(kind: Kind, root: string) {
    this.kind = kind;
    this.root = root;
  }

  /**
   * Finds a usable backend for `scope` (the data dir). Returns the reasons why none works instead
   * when there is none (or mode is 'off').
   */
  static open(scope: string, mode: CgroupMode = 'auto', mountinfo?: string): TaskCgroups | { unavailable: string } {
    if (mode === 'off') return { unavailable: 'task cgroups are switched off' };
    const mounts = cgroupMounts(mountinfo).filter((m) => mode === 'auto' || m.kind === mode);
    if (mounts.length === 0)
      return { unavailable: mode === 'auto' ? 'no cgroup v2 or cgroup v1 freezer/pids hierarchy is mounted' : `no ${LABEL[mode]} hierarchy is mounted` };
    const why: string[] = [];
    for (const m of mounts) {
      const root = join(m.path, 'starmap', scopeName(scope));
      try {
        // A task must be able to join: try with a throwaway cgroup where tasks' would go (no
        // process moved). Nothing stays behind: cgroups are made when tasks start.
        const probe = join(root, `probe-${process.pid}-${Math.random().toString(36).slice(2)}`);
        mkdirSync(probe, { recursive: true });
        const ok = existsSync(join(probe, 'cgroup.procs'));
        rmdirSync(probe);
        const cgroups = new TaskCgroups(m.kind, root);
        cgroups.close();
        if (!ok) throw new Error('no cgroup.procs in a new cgroup');
        return cgroups;
      } catch (err) {
        why.push(`${LABEL[m.kind]} at ${m.path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
    }
    return { unavailable: `cannot create cgroups (${why.join('; ')}); run as root or give the orchestrator a delegated cgroup subtree` };
  }

  get label(): string {
    return LABEL[this.kind];
  }

  /**
   * Creates the task's cgroup (a leftover of the same name is reused), off the main thread
   * (libuv's thread pool): the executor prepares a batch of launches while it spawns.
   */
  async create(taskId: string): Promise<TaskCgroup> {
    const path = join(this.root, dirName(taskId));
    for (let attempt = 1; ; attempt++) {
      try {
        await mkdir(path, { recursive: true });
        return new TaskCgroup(this.kind, path);
      } catch (err) {
        // Another orchestrator's close() may remove the shared parent between two mkdirs: again.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 3) throw err;
      }
    }
  }

  /** The cgroup of a task, if it exists (e.g. left by a previous run). */
  find(taskId: string): TaskCgroup | undefined {
    const path = join(this.root, dirName(taskId));
    return existsSync(path) ? new TaskCgroup(this.kind, path) : undefined;
  }

  /** Every task cgroup under the scope (this run's and any earlier run's). */
  all(): Map<string, TaskCgroup> {
    const out = new Map<string, TaskCgroup>();
    let names: string[] = [];
    try {
      names = readdirSync(this.root, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name);
    } catch {
      /* scope gone */
    }
    for (const name of names) out.set(name, new TaskCgroup(this.kind, join(this.root, name)));
    return out;
  }

  /** The name under which a task's cgroup is kept. */
  static nameOf(taskId: string): string {
    return dirName(taskId);
  }

  /** Removes the scope when no task cgroup is left in it, and the shared starmap folder when empty. */
  close(): void {
    for (const dir of [this.root, join(this.root, '..')]) {
      try {
        rmdirSync(dir);
      } catch {
        return; // not empty (another orchestrator, or members left): keep it
      }
    }
  }
}
