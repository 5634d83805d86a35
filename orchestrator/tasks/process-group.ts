// Process groups of tasks: signalling a whole group and finding out whether any of its processes
// is still alive. Liveness comes from /proc (a process whose state is Z is a zombie: it has exited
// and only waits to be reaped by its parent, which for orphans is PID 1 — on machines where PID 1
// does not reap, zombies linger forever and must not count as "still running").
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  state: string;
  /** Start time in clock ticks since boot: with the pid, identifies a process across pid reuse. */
  start: number;
}

/** Parses /proc/<pid>/stat; undefined when the process is gone. */
export function procInfo(pid: number): ProcInfo | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid pgrp ..." — comm may contain spaces and parentheses: split after the last ')'.
  const close = stat.lastIndexOf(')');
  const rest = stat.slice(close + 2).split(' ');
  return { pid, state: rest[0] ?? '?', ppid: Number(rest[1]), pgid: Number(rest[2]), start: Number(rest[19]) };
}

const HAS_PROC = (() => {
  try {
    readdirSync('/proc/self');
    return true;
  } catch {
    return false;
  }
})();

/** The pids listed in /proc (none where there is no /proc). */
function pids(): number[] {
  try {
    return readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .map(Number);
  } catch {
    return [];
  }
}

/** Every process on the machine (from /proc). */
export function allProcesses(): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const pid of pids()) {
    const info = procInfo(pid);
    if (info) out.push(info);
  }
  return out;
}

/**
 * pids of processes whose environment has MESOS_TASK_ID set to one of `taskIds`: after a crash,
 * the processes of a previous run's tasks, found without trusting a recorded pid that may have
 * been reused.
 */
export function findTaskProcesses(taskIds: Set<string>): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const pid of pids()) {
    let env: string;
    try {
      env = readFileSync(`/proc/${pid}/environ`, 'latin1');
    } catch {
      continue;
    }
    const m = env.match(/(?:^|\0)MESOS_TASK_ID=([^\0]*)/);
    if (m && taskIds.has(m[1]!)) out.set(m[1]!, [...(out.get(m[1]!) ?? []), pid]);
  }
  return out;
}

let cached: { at: number; procs: ProcInfo[] } | undefined;

/**
 * A /proc snapshot taken no earlier than `notBefore` (a performance.now() time) and at most
 * `maxAgeMs` old, shared by everyone polling at the same moment (killing 100 tasks at once then
 * costs one scan per poll round, not 100). A snapshot taken after the group existed and after
 * the last signal that showed no live member is conclusive: with no live member left, nothing
 * can start new ones in the group.
 */
export function processSnapshot(notBefore = Infinity, maxAgeMs = 10): ProcInfo[] {
  const now = performance.now();
  if (!cached || cached.at < notBefore || now - cached.at > maxAgeMs) cached = { at: performance.now(), procs: allProcesses() };
  return cached.procs;
}

/**
 * Pids of the group's processes that are still alive (zombies excluded). By default from a fresh
 * /proc scan; `notBefore` allows a shared snapshot taken after that time.
 */
export function liveMembers(pgid: number, notBefore = Infinity): number[] {
  if (!Number.isInteger(pgid) || pgid <= 1) return []; // -0 would ask about our own group
  try {
    process.kill(-pgid, 0);
  } catch {
    return []; // no process at all in the group (not even a zombie)
  }
  if (!HAS_PROC) return [pgid];
  return processSnapshot(notBefore)
    .filter((p) => p.pgid === pgid && p.state !== 'Z' && p.state !== 'X')
    .map((p) => p.pid);
}

/** Live descendants of `pid` (children, grandchildren …), whatever their process group. */
export function liveDescendants(pid: number, snapshot?: ProcInfo[]): ProcInfo[] {
  if (!HAS_PROC) return [];
  const procs = snapshot ?? allProcesses();
  const children = new Map<number, ProcInfo[]>();
  for (const p of procs) {
    const list = children.get(p.ppid);
    if (list) list.push(p);
    else children.set(p.ppid, [p]);
  }
  const out: ProcInfo[] = [];
  const stack = [pid];
  const seen = new Set<number>();
  while (stack.length) {
    const cur = stack.pop()!;
    for (const c of children.get(cur) ?? []) {
      if (seen.has(c.pid)) continue;
      seen.add(c.pid);
      if (c.state !== 'Z' && c.state !== 'X') out.push(c);
      stack.push(c.pid);
    }
  }
  return out;
}

/**
 * The process group a task's main process led, for a signal once that process may have been
 * reaped: undefined when its pid now names another process (a later one got the pid; the group
 * it led is gone then, and the signal would reach the newcomer's group). `start` is the main
 * process's start time when it started (unknown: the pid is trusted).
 */
export function groupLedBy(pid: number, start: number | undefined): number | undefined {
  if (start === undefined) return pid;
  const now = procInfo(pid);
  return now === undefined || now.start === start ? pid : undefined;
}

/** True when `pid` is still the very process seen earlier (same start time) and not a zombie. */
export function sameLiveProcess(pid: number, start: number): boolean {
  const info = procInfo(pid);
  return info !== undefined && info.start === start && info.state !== 'Z' && info.state !== 'X';
}

/** Sends a signal to the whole group; false when the group no longer exists. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  if (!Number.isInteger(pgid) || pgid <= 1) return false;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Sends a signal to one process; never to pid 0, -1 or 1 (our own group, every process, init),
 * whatever a caller read from /proc or a file.
 */
export function signalPid(pid: number, signal: NodeJS.Signals): void {
  if (!Number.isInteger(pid) || pid <= 1) return;
  try {
    process.kill(pid, signal);
  } catch {
    /* gone */
  }
}

/** True when no live process of the group remains (see processSnapshot for `notBefore`). */
export function groupGone(pgid: number, notBefore = Infinity): boolean {
  return liveMembers(pgid, notBefore).length === 0;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls until the group has no live process or the deadline passes; true when gone. */
export async function waitGroupGone(pgid: number, timeoutMs: number, pollMs = 25): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const since = performance.now();
  for (;;) {
    if (groupGone(pgid, since)) return true;
    if (Date.now() >= deadline) return false;
    await sleep(pollMs);
  }
}

/**
 * Terminates a group: SIGTERM, then SIGKILL after `graceMs` for whatever is left (the group and
 * any extra pids given, e.g. descendants that moved to another group). Resolves once nothing live
 * remains (or after a last SIGKILL round when processes refuse to die, which only happens for
 * processes stuck in the kernel).
 */
export async function terminateGroup(pgid: number, graceMs: number, extraPids: () => number[] = () => []): Promise<void> {
  signalGroup(pgid, 'SIGTERM');
  for (const p of extraPids()) signalPid(p, 'SIGTERM');
  const gone = await waitGroupGone(pgid, graceMs);
  const extras = extraPids();
  if (gone && extras.length === 0) return;
  await killGroupNow(pgid, () => [...extras, ...extraPids()]);
}

/** SIGKILL to the group (and extra pids) until nothing live remains (bounded: 10 s). */
export async function killGroupNow(pgid: number, extraPids: () => number[] = () => []): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const sent = performance.now();
    signalGroup(pgid, 'SIGKILL');
    const extras = extraPids();
    for (const p of extras) signalPid(p, 'SIGKILL');
    // Yield once so that many groups killed together are all signalled before one shared scan.
    await sleep(2);
    if (groupGone(pgid, sent) && extras.every((p) => isLive(p) === false)) return;
    if (Date.now() >= deadline) return;
    await sleep(20);
  }
}

export function isLive(pid: number): boolean {
  if (!HAS_PROC) {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  const info = procInfo(pid);
  return info !== undefined && info.state !== 'Z' && info.state !== 'X';
}

/** The NUL-separated environment and command line a process started with ('' when unreadable). */
function startStrings(pid: number): string {
  let out = '';
  for (const f of ['environ', 'cmdline']) {
    try {
      out += `\0${readFileSync(`/proc/${pid}/${f}`, 'latin1')}\0`;
    } catch {
      /* gone or not readable */
    }
  }
  return out;
}

/**
 * Whether a process group looks like one of our tasks: some live member started with
 * MESOS_TASK_ID=<taskId> (any task id when none is given) in its environment or command line
 * (podman gets it as a --label argument). Guards against signalling a group whose id was reused.
 * True when /proc is not available (nothing can be checked).
 */
export function groupIsTask(pgid: number, taskId?: string): boolean {
  if (!HAS_PROC) return true;
  const marker = taskId === undefined ? 'MESOS_TASK_ID=' : `\0MESOS_TASK_ID=${taskId}\0`;
  return liveMembers(pgid).some((pid) => startStrings(pid).includes(marker));
}
