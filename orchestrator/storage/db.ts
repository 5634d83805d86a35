// The orchestrator's embedded store: one SQLite database (node:sqlite) in --data-dir, in WAL mode
// with synchronous=FULL so that a write is on disk before the API answers. Every module that keeps
// state (apps, deployments, tasks, event subscriptions, accounts) gets this same handle and owns
// its own tables (created with CREATE TABLE IF NOT EXISTS).
//
// The database holds password hashes and service-account keys, so it and its WAL and shared-memory
// files are the owner's alone (0600), whatever the umask and whatever mode an existing data dir or
// existing files had: SQLite creates them with 0644 & ~umask, and copies the database's mode to the
// WAL and SHM files it makes, so the database file is made 0600 before SQLite first opens it, and
// all three are set to 0600 (also when they already existed with looser modes).
import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

export const DB_FILE = 'state.db';
export const PRIVATE_MODE = 0o600;

/** Sets an existing file to 0600; false when it does not exist. */
export function makePrivate(path: string): boolean {
  try {
    if ((statSync(path).mode & 0o777) !== PRIVATE_MODE) chmodSync(path, PRIVATE_MODE);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** Creates the file 0600 when it is missing (exactly, whatever the umask), or sets it to 0600. */
export function ensurePrivateFile(path: string): void {
  if (makePrivate(path)) return;
  let fd: number;
  try {
    fd = openSync(path, 'wx', PRIVATE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      makePrivate(path);
      return;
    }
    throw err;
  }
  try {
    fchmodSync(fd, PRIVATE_MODE); // the umask may have taken bits off; 0600 is what we mean
  } finally {
    closeSync(fd);
  }
}

export function openDatabase(dataDir: string): DatabaseSync {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, DB_FILE);
  ensurePrivateFile(file);
  for (const suffix of ['-wal', '-shm', '-journal']) makePrivate(file + suffix);
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;');
  // WAL mode made the -wal and -shm files now (with the database's mode); make sure of it.
  for (const suffix of ['-wal', '-shm']) makePrivate(file + suffix);
  return db;
}
