// A lock file in --data-dir, so that two orchestrators cannot share one data dir by accident.
// It names its owner by pid *and* the process's start time (from /proc/<pid>/stat): after a kill -9
// the pid may soon belong to an unrelated process (very likely in a container, where pids start
// again from 1), and a live pid alone would then block every restart. The lock is held only while
// the very process that wrote it runs; a lock left by a dead process, or whose pid now names
// another process, is taken over. Locks written before the start time was recorded (a bare pid)
// count as held only while that pid runs an orchestrator program (its command line says so).
import { closeSync, fchmodSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { procInfo } from '../tasks/process-group.ts';

export const LOCK_FILE = 'orchestrator.lock';

export class DataDirLockedError extends Error {}

interface LockOwner {
  pid: number;
  /** Start time of the process in clock ticks since boot; undefined in old locks or without /proc. */
  start: number | undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function parseLock(text: string): LockOwner | undefined {
  const bare = text.trim();
  if (/^\d+$/.test(bare)) return { pid: Number(bare), start: undefined };
  try {
    const o = JSON.parse(bare) as { pid?: unknown; start?: unknown };
    if (!Number.isSafeInteger(o.pid) || (o.pid as number) <= 0) return undefined;
    return { pid: o.pid as number, start: Number.isSafeInteger(o.start) ? (o.start as number) : undefined };
  } catch {
    return undefined;
  }
}

function cmdline(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ');
  } catch {
    return undefined;
  }
}

/** True while the process that wrote the lock still runs (as far as this machine lets us see). */
export function lockHeld(owner: LockOwner): boolean {
  if (owner.pid === process.pid && owner.start === procInfo(process.pid)?.start) return false; // our own stale copy
  if (!alive(owner.pid)) return false;
  const info = procInfo(owner.pid);
  if (info === undefined) return true; // no /proc: a live pid is all we can see
  if (info.state === 'Z' || info.state === 'X') return false;
  if (owner.start !== undefined) return info.start === owner.start;
  return /orchestrator/.test(cmdline(owner.pid) ?? '');
}

/** Takes the lock; returns the function that releases it. */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, LOCK_FILE);
  const me: LockOwner = { pid: process.pid, start: procInfo(process.pid)?.start };
  const text = `${JSON.stringify(me)}\n`;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      try {
        fchmodSync(fd, 0o600);
        writeSync(fd, text);
      } finally {
        closeSync(fd);
      }
      return () => {
        try {
          if (readFileSync(path, 'utf8') === text) rmSync(path, { force: true });
        } catch {
          /* already gone */
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let owner: LockOwner | undefined;
      try {
        owner = parseLock(readFileSync(path, 'utf8'));
      } catch {
        continue; // vanished: retry
      }
      if (owner && lockHeld(owner)) {
        throw new DataDirLockedError(`data dir ${dataDir} is in use by another orchestrator (pid ${owner.pid}); stop it or choose another --data-dir`);
      }
      rmSync(path, { force: true });
    }
  }
  throw new DataDirLockedError(`cannot take the lock ${path}`);
}
