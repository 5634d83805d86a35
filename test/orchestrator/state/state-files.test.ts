// The orchestrator's files on disk (issue 16): the database, its WAL and SHM and the key files are
// 0600 whatever the umask and whatever an existing data dir or existing files allowed; and a lock
// file whose pid now belongs to an unrelated process does not block a restart, while a lock of a
// live orchestrator still does.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createAuth } from '../../../orchestrator/auth/routes.ts';
import { openDatabase } from '../../../orchestrator/storage/db.ts';
import { DataDirLockedError, LOCK_FILE, lockDataDir } from '../../../orchestrator/storage/lock.ts';
import { procInfo } from '../../../orchestrator/tasks/process-group.ts';
import { startOrchestrator } from '../../helpers/orchestrator.ts';
import { stopAll, tempDir } from '../../helpers/process.ts';
import { waitFor } from '../../helpers/wait.ts';
import { FAST_SCRYPT } from '../../orchestrator-auth-setup.ts';

afterAll(stopAll);

const modeOf = (path: string) => statSync(path).mode & 0o777;
const SECRET_FILES = ['state.db', 'state.db-wal', 'state.db-shm', 'auth-signing-key.pem', 'admin-password'];

async function openAll(dataDir: string): Promise<() => void> {
  const db = openDatabase(dataDir);
  await createAuth({ db, dataDir, logger: pino({ level: 'silent' }), env: {}, scrypt: FAST_SCRYPT });
  db.exec('CREATE TABLE IF NOT EXISTS t (x); INSERT INTO t VALUES (1)');
  return () => db.close();
}

describe('file modes', () => {
  it('creates the database, WAL, SHM and key files 0600 in an open data dir with umask 000', async () => {
    const dataDir = tempDir('orch-modes-');
    chmodSync(dataDir, 0o777);
    const old = process.umask(0);
    let close: () => void;
    try {
      close = await openAll(dataDir);
    } finally {
      process.umask(old);
    }
    for (const f of SECRET_FILES) expect(modeOf(join(dataDir, f)), f).toBe(0o600);
    close();
  });

  it('tightens existing files that are world-readable', async () => {
    const dataDir = tempDir('orch-modes-');
    (await openAll(dataDir))();
    // As left by an earlier version or by hand: everything 0644, and a WAL and SHM from a crash.
    for (const f of ['state.db-wal', 'state.db-shm']) if (!existsSync(join(dataDir, f))) writeFileSync(join(dataDir, f), '');
    for (const f of SECRET_FILES) chmodSync(join(dataDir, f), 0o644);
    const close = await openAll(dataDir);
    for (const f of SECRET_FILES) expect(modeOf(join(dataDir, f)), f).toBe(0o600);
    close();
  });
});

describe('the data-dir lock', () => {
  function unrelatedProcess(): number {
    const child = spawn('sleep', ['1000'], { stdio: 'ignore', detached: true });
    child.unref();
    pids.push(child.pid!);
    return child.pid!;
  }
  const pids: number[] = [];
  afterAll(() => {
    for (const p of pids) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  });

  it('takes over a lock whose pid now belongs to an unrelated process (old and new lock formats)', async () => {
    const pid = unrelatedProcess();
    await waitFor(() => procInfo(pid));
    const start = procInfo(pid)!.start;
    for (const stale of [`${pid}\n`, `${JSON.stringify({ pid, start: start - 1 })}\n`]) {
      const dataDir = tempDir('orch-lock-');
      writeFileSync(join(dataDir, LOCK_FILE), stale);
      const release = lockDataDir(dataDir);
      expect(JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8'))).toEqual({ pid: process.pid, start: procInfo(process.pid)!.start });
      expect(modeOf(join(dataDir, LOCK_FILE))).toBe(0o600);
      release();
      expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
    }
  });

  it('refuses while the process that wrote the lock runs (same pid and start time)', () => {
    const pid = unrelatedProcess();
    const dataDir = tempDir('orch-lock-');
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(join(dataDir, LOCK_FILE), JSON.stringify({ pid, start: procInfo(pid)!.start }));
    expect(() => lockDataDir(dataDir)).toThrow(DataDirLockedError);
    expect(() => lockDataDir(dataDir)).toThrow(new RegExp(`pid ${pid}`));
  });

  it('restarts the program on a data dir whose lock names a reused pid', async () => {
    const dataDir = tempDir('orch-lock-');
    const first = await startOrchestrator([], { dataDir });
    await first.proc.stop('SIGKILL');
    // The dead orchestrator's pid now belongs to something else that runs: with the start time it
    // recorded, and as a lock of an older version (the bare pid).
    const lock = JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')) as { pid: number; start: number };
    writeFileSync(join(dataDir, LOCK_FILE), JSON.stringify({ ...lock, pid: unrelatedProcess() }));
    const second = await startOrchestrator([], { dataDir });
    await second.proc.stop('SIGKILL');
    writeFileSync(join(dataDir, LOCK_FILE), `${unrelatedProcess()}\n`);
    const again = await startOrchestrator([], { dataDir });
    expect((await again.call('GET', '/v2/apps')).status).toBe(200);
    await again.proc.stop('SIGTERM');
  }, 60_000);
});
