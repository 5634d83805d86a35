// The first account, "admin", at start with --auth=on: with the given password (--admin-password,
// else $STARMAP_ADMIN_PASSWORD), which also resets a changed one; else, when there is no account
// yet, with a random password written to an owner-only file in the data directory.
import { randomBytes } from 'node:crypto';
import { unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AccountStore } from './accounts.ts';
import { makePrivate } from '../state/db.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import { MIN_PASSWORD_LENGTH, type AuthParts } from './parts.ts';

export const ADMIN_UID = 'admin';
export const ADMIN_PASSWORD_FILE = 'admin-password';

/** Returns the password file when a random password was written to it at this start. */
export async function ensureAdminAccount(
  { log, accounts, cost, now }: Pick<AuthParts, 'log' | 'accounts' | 'cost' | 'now'>,
  dataDir: string,
  given: string | undefined,
): Promise<string | undefined> {
  const insertAdmin = async (password: string) =>
    accounts.insert({
      uid: ADMIN_UID,
      accountId: AccountStore.newId(),
      type: 'local',
      description: 'administrator',
      created: new Date(now()).toISOString(),
      passwordHash: await hashPassword(password, cost),
      publicKeyPem: null,
      fingerprint: null,
    });
  if (given !== undefined && given !== '') {
    if (given.length < MIN_PASSWORD_LENGTH) throw new Error(`the admin password must be at least ${MIN_PASSWORD_LENGTH} characters long`);
    const admin = accounts.get(ADMIN_UID);
    if (!admin) {
      await insertAdmin(given);
      log.info({ uid: ADMIN_UID }, 'created the admin account with the given password');
    } else if (admin.type === 'local' && !(admin.passwordHash && (await verifyPassword(given, admin.passwordHash)))) {
      accounts.setPasswordHash(ADMIN_UID, await hashPassword(given, cost));
      log.info({ uid: ADMIN_UID }, 'set the admin password to the given one');
    }
    return undefined;
  }
  if (accounts.count() !== 0) return undefined;
  const pw = randomBytes(18).toString('base64url');
  const file = join(dataDir, ADMIN_PASSWORD_FILE);
  try {
    unlinkSync(file);
  } catch {
    // absent
  }
  writeFileSync(file, `${pw}\n`, { mode: 0o600, flag: 'wx' });
  await insertAdmin(pw);
  log.warn({ uid: ADMIN_UID, file }, 'created the admin account with a random password; it is in this file (owner-only)');
  return file;
}

/** A password file left from an earlier start is tightened too if someone loosened it. */
export function tightenAdminPasswordFile(dataDir: string): void {
  makePrivate(join(dataDir, ADMIN_PASSWORD_FILE));
}
