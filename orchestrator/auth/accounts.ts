// Account store (SQLite table auth_accounts): local accounts (uid + scrypt hash) and service
// accounts (uid + RSA public key). Nothing here ever returns a hash or key material to callers
// that render answers: use toJson().
// Each account also has a random id, made when it is created and never reused: tokens carry it,
// so deleting an account and creating another with the same uid does not revive the old tokens.
import { createPublicKey, randomUUID, type KeyObject } from 'node:crypto';
import type { DatabaseSync } from 'node:sqlite';
import { fingerprint } from './keys.ts';

export type AccountType = 'local' | 'service';

export interface Account {
  uid: string;
  /** Random, per account: dies with it (tokens name it). */
  accountId: string;
  type: AccountType;
  description: string;
  created: string;
  passwordHash: string | null;
  publicKeyPem: string | null;
  fingerprint: string | null;
}

export interface AccountJson {
  uid: string;
  type: AccountType;
  description: string;
  created: string;
  is_service: boolean;
  public_key_fingerprint?: string;
}

/** DC/OS-like uid rule: letters, digits, - _ . @; starts with a letter or digit; at most 96. */
export const UID_RE = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,95}$/;

export function toJson(a: Account): AccountJson {
  const out: AccountJson = { uid: a.uid, type: a.type, description: a.description, created: a.created, is_service: a.type === 'service' };
  if (a.fingerprint) out.public_key_fingerprint = a.fingerprint;
  return out;
}

/** Parses a PEM public key; returns an error text (never echoing the input) or the key. */
export function parseServicePublicKey(pem: string): { key: KeyObject; pem: string; fingerprint: string } | { error: string } {
  if (/PRIVATE KEY/.test(pem)) return { error: 'public_key holds a private key; send only the public key (the private key stays with the client)' };
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: 'pem' });
  } catch {
    return { error: 'public_key is not a PEM public key' };
  }
  if (key.asymmetricKeyType !== 'rsa') return { error: `public_key must be an RSA key (got ${key.asymmetricKeyType ?? 'unknown'}): tokens are RS256` };
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < 2048) return { error: `public_key is an RSA key of ${bits} bits; at least 2048 bits are required` };
  if (bits > 16384) return { error: `public_key is an RSA key of ${bits} bits; at most 16384 bits are accepted` };
  const normalized = key.export({ type: 'spki', format: 'pem' }) as string;
  return { key, pem: normalized, fingerprint: fingerprint(key) };
}

interface Row {
  uid: string;
  type: string;
  description: string;
  created: string;
  password_hash: string | null;
  public_key: string | null;
  fingerprint: string | null;
  account_id: string;
}

function fromRow(r: Row): Account {
  return {
    uid: r.uid,
    accountId: r.account_id,
    type: r.type === 'service' ? 'service' : 'local',
    description: r.description,
    created: r.created,
    passwordHash: r.password_hash,
    publicKeyPem: r.public_key,
    fingerprint: r.fingerprint,
  };
}

export class AccountStore {
  readonly #db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.#db = db;
    db.exec(`CREATE TABLE IF NOT EXISTS auth_accounts (
      uid TEXT PRIMARY KEY,
      type TEXT NOT NULL CHECK (type IN ('local', 'service')),
      description TEXT NOT NULL DEFAULT '',
      created TEXT NOT NULL,
      password_hash TEXT,
      public_key TEXT,
      fingerprint TEXT,
      account_id TEXT
    )`);
    // Databases made before account ids: add the column and give every account one. Tokens issued
    // before carry no id and stop working (log in again), the safe side.
    const cols = db.prepare('PRAGMA table_info(auth_accounts)').all() as { name: string }[];
    if (!cols.some((c) => c.name === 'account_id')) db.exec('ALTER TABLE auth_accounts ADD COLUMN account_id TEXT');
    const missing = db.prepare('SELECT uid FROM auth_accounts WHERE account_id IS NULL').all() as { uid: string }[];
    for (const { uid } of missing) db.prepare('UPDATE auth_accounts SET account_id = ? WHERE uid = ?').run(randomUUID(), uid);
  }

  /** A fresh account id for a new account. */
  static newId(): string {
    return randomUUID();
  }

  count(): number {
    return Number((this.#db.prepare('SELECT count(*) AS n FROM auth_accounts').get() as { n: number }).n);
  }

  countLocal(): number {
    return Number((this.#db.prepare("SELECT count(*) AS n FROM auth_accounts WHERE type = 'local'").get() as { n: number }).n);
  }

  get(uid: string): Account | undefined {
    const r = this.#db.prepare('SELECT * FROM auth_accounts WHERE uid = ?').get(uid) as Row | undefined;
    return r ? fromRow(r) : undefined;
  }

  list(): Account[] {
    return (this.#db.prepare('SELECT * FROM auth_accounts ORDER BY uid').all() as unknown as Row[]).map(fromRow);
  }

  /** Inserts; returns false when the uid exists already. */
  insert(a: Account): boolean {
    const res = this.#db
      .prepare(
        'INSERT OR IGNORE INTO auth_accounts (uid, type, description, created, password_hash, public_key, fingerprint, account_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(a.uid, a.type, a.description, a.created, a.passwordHash, a.publicKeyPem, a.fingerprint, a.accountId);
    return Number(res.changes) === 1;
  }

  setPasswordHash(uid: string, hash: string): void {
    this.#db.prepare("UPDATE auth_accounts SET password_hash = ? WHERE uid = ? AND type = 'local'").run(hash, uid);
  }

  delete(uid: string): boolean {
    return Number(this.#db.prepare('DELETE FROM auth_accounts WHERE uid = ?').run(uid).changes) === 1;
  }
}
