// One podman user at a time across test files: podman 4 with runc now and then loses a container's
// exit code ("no such exit code (container in state running)") when two podman processes work at
// the same moment, even with separate stores. The test files that run containers take this lock
// for their whole run. A lock left by a dead process is taken over.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LOCK = join(tmpdir(), 'starmap-podman-tests.lock');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits (polling) until this process holds the lock; returns the function that releases it. */
export async function lockPodman(timeoutMs = 600_000): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(join(LOCK, 'pid'), String(process.pid));
      return () => rmSync(LOCK, { recursive: true, force: true });
    } catch {
      // Held by a live test process: wait. Left by a dead one: take it over. (A lock whose pid file
      // is not written yet counts as held.)
      let owner: number | undefined;
      try {
        owner = Number(readFileSync(join(LOCK, 'pid'), 'utf8')) || undefined;
      } catch {
        owner = undefined;
      }
      if (owner !== undefined && !alive(owner)) {
        rmSync(LOCK, { recursive: true, force: true });
        continue;
      }
    }
    if (Date.now() > deadline) throw new Error(`podman test lock ${LOCK} still held after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
