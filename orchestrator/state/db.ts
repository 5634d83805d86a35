// The orchestrator's embedded store: one SQLite database (node:sqlite) in --data-dir, in WAL mode
// with synchronous=FULL so that a write is on disk before the API answers. Every module that keeps
// state (apps, deployments, tasks, event subscriptions, accounts) gets this same handle and owns
// its own tables (created with CREATE TABLE IF NOT EXISTS).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

export function openDatabase(dataDir: string): DatabaseSync {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const db = new DatabaseSync(join(dataDir, 'state.db'));
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;');
  return db;
}
