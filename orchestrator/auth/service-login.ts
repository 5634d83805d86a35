// A service account's login: the login token it signed with its private key, checked against the
// public key it was created with. Says why it failed, in words that never tell a bad signature
// from an unknown account.
import type { Account } from './accounts.ts';
import { parseServicePublicKey } from './accounts.ts';
import { TokenError, verifyLoginToken } from './tokens.ts';

export const DEFAULT_MAX_LOGIN_TOKEN_LIFETIME_SECONDS = 600;
export const INVALID_LOGIN_TOKEN = 'Invalid uid or login token.';

/** undefined when `loginToken` logs `uid` in; else the message of the 401. */
export async function serviceLoginProblem(
  account: Account | undefined,
  uid: string,
  loginToken: string,
  maxLifetimeSeconds: number,
  nowMs: number,
): Promise<string | undefined> {
  if (account?.type !== 'service' || !account.publicKeyPem) return INVALID_LOGIN_TOKEN;
  const parsed = parseServicePublicKey(account.publicKeyPem);
  if ('error' in parsed) return INVALID_LOGIN_TOKEN;
  try {
    await verifyLoginToken(loginToken, uid, parsed.key, maxLifetimeSeconds, nowMs);
    return undefined;
  } catch (err) {
    return err instanceof TokenError && !/invalid signature|is invalid|RS256/.test(err.message) ? err.message : INVALID_LOGIN_TOKEN;
  }
}
