// Login, service accounts and tokens for the orchestrator (DC/OS ACS-compatible subset), put
// together: createAuth makes the parts the auth modules share (parts.ts) and the first account
// (admin-account.ts), and returns, for the app's two fastify contexts (http/contexts.ts):
//   publicRoutes    the login and the JWKS (login.ts, with service-login.ts), open;
//   accountRoutes   /acs/api/v1/users… (account-routes.ts), behind the token;
//   authenticate    the onRequest hook that requires a token (authenticate.ts), registered only
//                   in the authenticated context.
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Logger } from '../../shared/logger.ts';
import { AccountStore } from './accounts.ts';
import { loadOrCreateSigningKey } from './keys.ts';
import { DEFAULTS } from '../config.ts';
import { DEFAULT_SCRYPT, type ScryptCost } from './passwords.ts';
import { LoginThrottle } from './login-throttle.ts';
import { Gate, type LockoutOptions } from './rate-limit.ts';
import { TokenService } from './tokens.ts';
import { ensureAdminAccount, tightenAdminPasswordFile } from './admin-account.ts';
import { accountRoutes } from './account-routes.ts';
import { makeAuthenticate } from './authenticate.ts';
import { loginRoutes } from './login.ts';
import type { AuthParts } from './parts.ts';
import { DEFAULT_MAX_LOGIN_TOKEN_LIFETIME_SECONDS } from './service-login.ts';

export { ADMIN_PASSWORD_FILE, ADMIN_UID } from './admin-account.ts';
export { tokenFromHeader } from './authenticate.ts';
export { AUTH_COOKIE, authCookie } from './login.ts';
export { MIN_PASSWORD_LENGTH } from './parts.ts';
export { DEFAULT_MAX_LOGIN_TOKEN_LIFETIME_SECONDS } from './service-login.ts';
export const DEFAULT_TOKEN_LIFETIME_SECONDS = DEFAULTS.tokenLifetime;

export interface AuthOptions {
  db: DatabaseSync;
  dataDir: string;
  logger: Logger;
  /** false = --auth=off: no account is made and a warning is logged; the app then has no authenticated context. Default true. */
  enabled?: boolean;
  /** --admin-password; falls back to env.STARMAP_ADMIN_PASSWORD. */
  adminPassword?: string | undefined;
  env?: Record<string, string | undefined>;
  /** Lifetime of issued authorization tokens (--token-lifetime). Default 5 days. */
  tokenLifetimeSeconds?: number;
  /** Longest accepted service-account login token lifetime. Default 600 s. */
  maxLoginTokenLifetimeSeconds?: number;
  scrypt?: ScryptCost;
  /** Concurrent password hashes (default 2) and waiting ones (default 16); beyond that 429. */
  maxConcurrentHashes?: number;
  maxQueuedHashes?: number;
  /** Failed logins per (account, client address): see login-throttle.ts. */
  pairLockout?: Partial<LockoutOptions>;
  /** Failed logins per account from addresses that never logged into it. */
  accountLockout?: Partial<LockoutOptions>;
  /** Failed logins per client address, across accounts. */
  clientLockout?: Partial<LockoutOptions>;
  /** Clock in ms (tests). */
  now?: () => number;
}

export interface Auth {
  enabled: boolean;
  /** The login and the JWKS, for the public context: `await open.register(auth.publicRoutes)`. */
  publicRoutes: (app: FastifyInstance) => Promise<void>;
  /** The account routes, for the authenticated context. */
  accountRoutes: (app: FastifyInstance) => Promise<void>;
  /** onRequest hook that requires a token, for the authenticated context only (http/contexts.ts). */
  authenticate: onRequestAsyncHookHandler;
  /** uid behind the request's token (undefined for open endpoints or with auth off). */
  uidOf(req: FastifyRequest): string | undefined;
  accounts: AccountStore;
  /** Public JWK set. */
  jwks: { keys: Array<Record<string, unknown>> };
  /** Set when a random admin password was written to a file at this start. */
  adminPasswordFile?: string;
}

export async function createAuth(opts: AuthOptions): Promise<Auth> {
  const log = opts.logger.child({ module: 'auth' });
  const enabled = opts.enabled ?? true;
  const now = opts.now ?? Date.now;
  const lifetime = opts.tokenLifetimeSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS;
  if (!Number.isInteger(lifetime) || lifetime <= 0) throw new Error(`token lifetime must be a positive number of seconds (got ${lifetime})`);
  const accounts = new AccountStore(opts.db);
  const key = loadOrCreateSigningKey(opts.dataDir);
  if (key.created) log.info({ file: join(opts.dataDir, 'auth-signing-key.pem') }, 'created the token signing key');
  const parts: AuthParts = {
    db: opts.db,
    log,
    accounts,
    tokens: new TokenService(key, lifetime, now),
    gate: new Gate(opts.maxConcurrentHashes ?? 2, opts.maxQueuedHashes ?? 16),
    throttle: new LoginThrottle({ pair: opts.pairLockout, account: opts.accountLockout, client: opts.clientLockout }, now),
    cost: opts.scrypt ?? DEFAULT_SCRYPT,
    now,
    uids: new WeakMap(),
  };

  let adminPasswordFile: string | undefined;
  tightenAdminPasswordFile(opts.dataDir);
  if (enabled) {
    adminPasswordFile = await ensureAdminAccount(parts, opts.dataDir, opts.adminPassword ?? (opts.env ?? process.env).STARMAP_ADMIN_PASSWORD);
  } else {
    log.warn('authentication is OFF (--auth=off): every endpoint is open to anyone who can reach it; use only for local experiments');
  }

  const jwks = { keys: [key.jwk] };
  const result: Auth = {
    enabled,
    publicRoutes: loginRoutes(parts, { jwks, maxLoginTokenLifetimeSeconds: opts.maxLoginTokenLifetimeSeconds ?? DEFAULT_MAX_LOGIN_TOKEN_LIFETIME_SECONDS }),
    accountRoutes: accountRoutes(parts),
    authenticate: makeAuthenticate(parts),
    uidOf: (req) => parts.uids.get(req),
    accounts,
    jwks,
  };
  if (adminPasswordFile) result.adminPasswordFile = adminPasswordFile;
  return result;
}
