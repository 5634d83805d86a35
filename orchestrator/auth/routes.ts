// Login, service accounts and tokens for the orchestrator (DC/OS ACS-compatible subset):
//   POST   /acs/api/v1/auth/login     {uid, password} | {uid, token: <login JWT>}, optional exp
//                                     -> {token}, and the same token in the cookie dcos-acs-auth-cookie
//   GET    /acs/api/v1/auth/jwks      the public key that signs authorization tokens (open)
//   GET    /acs/api/v1/users          {array: [account...]}
//   GET    /acs/api/v1/users/{uid}    account
//   PUT    /acs/api/v1/users/{uid}    {public_key} (service account) | {password} (local) -> 201 account
//   PATCH  /acs/api/v1/users/{uid}    {password?, description?} -> 204
//   DELETE /acs/api/v1/users/{uid}    -> 204
// and an onRequest hook that requires `Authorization: token=<token>` (or `Bearer <token>`) on
// every endpoint that is not open.
import { randomBytes } from 'node:crypto';
import { unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Logger } from '../../shared/logger.ts';
import { AccountStore, UID_RE, parseServicePublicKey, toJson, type Account } from './accounts.ts';
import { makePrivate } from '../storage/db.ts';
import { loadOrCreateSigningKey } from './keys.ts';
import { BadRequest, Conflict, NotFound, RateLimited, Unauthenticated } from '../errors.ts';
import { mapOrchestratorErrors, sendError } from '../http/errors.ts';
import { acceptsHtml } from '../http/home-page.ts';
import type { TSchema } from '@sinclair/typebox';
import { authSchemaCompiler, CreateUserBody, LoginBody, UidParams, UpdateUserBody } from './bodies.ts';
import { DEFAULTS } from '../config.ts';
import { DEFAULT_SCRYPT, hashPassword, verifyPassword, type ScryptCost } from './passwords.ts';
import { LoginThrottle } from './login-throttle.ts';
import { Gate, type LockoutOptions } from './rate-limit.ts';
import { MAX_TOKEN_CHARS, TokenError, TokenService, verifyLoginToken } from './tokens.ts';

export const ADMIN_UID = 'admin';
export const ADMIN_PASSWORD_FILE = 'admin-password';
export const DEFAULT_TOKEN_LIFETIME_SECONDS = DEFAULTS.tokenLifetimeSeconds;
export const DEFAULT_MAX_LOGIN_TOKEN_LIFETIME_SECONDS = 600;
export const MIN_PASSWORD_LENGTH = 8;
const BODY_LIMIT = 64 * 1024;
const INVALID_PASSWORD = 'Invalid username or password.';
const INVALID_LOGIN_TOKEN = 'Invalid uid or login token.';
export const AUTH_COOKIE = 'dcos-acs-auth-cookie';
/** The WWW-Authenticate challenge of a 401 (DC/OS's scheme name). */
const CHALLENGE = 'acsjwt';

export type IsOpen = (method: string, path: string, accept: string | undefined) => boolean;

/**
 * Open without a token: the login, the public key set, the liveness ping, and / for a browser
 * (a page that says how to log in: http/home-page.ts; any other client still gets 401 there).
 */
export const defaultIsOpen: IsOpen = (method, path, accept) =>
  (method === 'POST' && path === '/acs/api/v1/auth/login') ||
  ((method === 'GET' || method === 'HEAD') && (path === '/ping' || path === '/acs/api/v1/auth/jwks' || (path === '/' && acceptsHtml(accept))));

export interface AuthOptions {
  db: DatabaseSync;
  dataDir: string;
  logger: Logger;
  /** false = --auth=off: the hook lets everything through (a warning is logged). Default true. */
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
  /** Fastify plugin with the /acs routes: `await app.register(auth.plugin)`. */
  plugin: (app: FastifyInstance) => Promise<void>;
  /** onRequest hook with the default open endpoints: `app.addHook('onRequest', auth.hook)`. */
  hook: onRequestAsyncHookHandler;
  /** uid behind the request's token (undefined for open endpoints or with auth off). */
  uidOf(req: FastifyRequest): string | undefined;
  accounts: AccountStore;
  /** Public JWK set. */
  jwks: { keys: Array<Record<string, unknown>> };
  /** Set when a random admin password was written to a file at this start. */
  adminPasswordFile?: string;
}

function tooMany(ms: number, why: string): RateLimited {
  const secs = Math.max(1, Math.ceil(ms / 1000));
  return new RateLimited(`${why}; retry in ${secs} s`, secs, 'ERR_RATE_LIMITED');
}

/**
 * DC/OS's optional `exp` in the login body (marathon-lb sends it): when the authorization token
 * should expire, in Unix seconds. It may shorten the token's life, never lengthen it; 0 means the
 * default lifetime.
 */
function loginExp(body: LoginBody, nowSeconds: number): number | undefined {
  const v = body.exp;
  if (v === undefined || v === null || v === 0) return undefined;
  // Its type is checked by the route schema (bodies.ts).
  if (v <= nowSeconds) throw new BadRequest("'exp' is not in the future", { code: 'ERR_INVALID_DATA' });
  return v;
}

/**
 * The login's cookie, as DC/OS sets it: the same token as the body, for clients that read it from
 * there (marathon-lb does). HttpOnly (no script reads it), SameSite=Strict (no other site's page
 * sends it along), Secure when the login came over TLS. Requests are authenticated by the
 * Authorization header only, never by this cookie, so it opens no cross-site request path.
 */
export function authCookie(token: string, maxAgeSeconds: number, secure: boolean): string {
  const age = Math.max(0, Math.floor(maxAgeSeconds));
  const expires = new Date(Date.now() + age * 1000).toUTCString();
  return `${AUTH_COOKIE}=${token}; Path=/; Max-Age=${age}; Expires=${expires}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

function checkNewPassword(pw: string): void {
  if (pw.length < MIN_PASSWORD_LENGTH) throw new BadRequest(`Password must be at least ${MIN_PASSWORD_LENGTH} characters long`, { code: 'ERR_INVALID_DATA' });
}

/** Extracts the token from `token=<t>` (DC/OS) or `Bearer <t>`; undefined when absent/malformed. */
export function tokenFromHeader(value: string | string[] | undefined): string | undefined {
  if (typeof value !== 'string' || value.length > MAX_TOKEN_CHARS + 16) return undefined;
  const m = /^\s*(?:token=|bearer\s+)([A-Za-z0-9_\-.]+)\s*$/i.exec(value);
  return m?.[1];
}

export async function createAuth(opts: AuthOptions): Promise<Auth> {
  const log = opts.logger.child({ module: 'auth' });
  const enabled = opts.enabled ?? true;
  const now = opts.now ?? Date.now;
  const cost = opts.scrypt ?? DEFAULT_SCRYPT;
  const maxLoginLifetime = opts.maxLoginTokenLifetimeSeconds ?? DEFAULT_MAX_LOGIN_TOKEN_LIFETIME_SECONDS;
  const lifetime = opts.tokenLifetimeSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS;
  if (!Number.isInteger(lifetime) || lifetime <= 0) throw new Error(`token lifetime must be a positive number of seconds (got ${lifetime})`);
  const accounts = new AccountStore(opts.db);
  const key = loadOrCreateSigningKey(opts.dataDir);
  if (key.created) log.info({ file: join(opts.dataDir, 'auth-signing-key.pem') }, 'created the token signing key');
  const tokens = new TokenService(key, lifetime, now);
  const gate = new Gate(opts.maxConcurrentHashes ?? 2, opts.maxQueuedHashes ?? 16);
  const throttle = new LoginThrottle({ pair: opts.pairLockout, account: opts.accountLockout, client: opts.clientLockout }, now);
  // A hash of a random password with the same cost: checked for unknown uids so they take as long.
  // Made by the first login with a password, whatever its uid (so that the first login of a known
  // uid takes as long as the first of an unknown one), not at start: a scrypt hash and the random
  // generator's set-up took ~110 ms of every restart before its first answer
  // (bench/startup.bench.ts). With auth off nobody logs in: never made.
  let dummyHash: Promise<string> | undefined;
  const dummy = (): Promise<string> =>
    (dummyHash ??= hashPassword(randomBytes(16).toString('hex'), cost).catch((err: unknown) => {
      dummyHash = undefined; // the next login tries again
      throw err;
    }));
  const uids = new WeakMap<FastifyRequest, string>();

  // ---- the first account
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
  let adminPasswordFile: string | undefined;
  // A password file left from an earlier start is tightened too if someone loosened it.
  makePrivate(join(opts.dataDir, ADMIN_PASSWORD_FILE));
  if (enabled) {
    const given = opts.adminPassword ?? (opts.env ?? process.env).STARMAP_ADMIN_PASSWORD;
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
    } else if (accounts.count() === 0) {
      const pw = randomBytes(18).toString('base64url');
      const file = join(opts.dataDir, ADMIN_PASSWORD_FILE);
      try {
        unlinkSync(file);
      } catch {
        // absent
      }
      writeFileSync(file, `${pw}\n`, { mode: 0o600, flag: 'wx' });
      await insertAdmin(pw);
      adminPasswordFile = file;
      log.warn({ uid: ADMIN_UID, file }, 'created the admin account with a random password; it is in this file (owner-only)');
    }
  } else {
    log.warn('authentication is OFF (--auth=off): every endpoint is open to anyone who can reach it; use only for local experiments');
  }

  const verifyToken = async (token: string): Promise<string> => {
    const { uid, accountId } = await tokens.verify(token);
    // The account must be the very one the token was issued to, not a later one with the same uid.
    const account = accounts.get(uid);
    if (!account || accountId === undefined || account.accountId !== accountId)
      throw new TokenError('Authorization token belongs to an account that no longer exists');
    return uid;
  };

  const makeHook = (isOpen: IsOpen): onRequestAsyncHookHandler => {
    return async function authHook(req, reply) {
      if (!enabled) return;
      const path = req.url.split('?')[0] ?? '';
      if (isOpen(req.method, path, req.headers.accept)) return;
      const raw = req.headers.authorization;
      const token = tokenFromHeader(raw);
      if (token === undefined) {
        const msg =
          raw === undefined
            ? 'Authentication required: send the header "Authorization: token=<token>" (get a token from POST /acs/api/v1/auth/login)'
            : 'Malformed Authorization header: expected "token=<token>" or "Bearer <token>"';
        return sendError(reply, new Unauthenticated(msg, raw === undefined ? 'ERR_MISSING_AUTH_HEADER' : 'ERR_INVALID_AUTH_HEADER', CHALLENGE));
      }
      try {
        uids.set(req, await verifyToken(token));
      } catch (err) {
        const msg = err instanceof TokenError ? err.message : 'Authorization token is invalid';
        return sendError(reply, new Unauthenticated(msg, 'ERR_INVALID_TOKEN', CHALLENGE));
      }
    };
  };

  // ---- login
  const loginLocked = (uid: string, ip: string): void => {
    const ms = throttle.lockedFor(uid, ip);
    if (ms > 0) throw tooMany(ms, 'Too many failed login attempts');
  };
  const loginFailed = (uid: string, ip: string, message: string): Unauthenticated => {
    throttle.failed(uid, ip);
    log.warn({ uid, ip }, 'login failed');
    return new Unauthenticated(message, 'ERR_INVALID_CREDENTIALS', CHALLENGE);
  };

  async function login(req: FastifyRequest, reply: FastifyReply): Promise<{ token: string }> {
    const body = req.body as LoginBody;
    const requestedExp = loginExp(body, tokens.nowSeconds());
    const { uid, password, token: loginToken } = body;
    if (uid === undefined || uid === '') throw new BadRequest("'uid' is required", { code: 'ERR_INVALID_DATA' });
    if ((password === undefined) === (loginToken === undefined))
      throw new BadRequest("Send either 'password' (local account) or 'token' (service account login token)", { code: 'ERR_INVALID_DATA' });
    const ip = req.ip;
    loginLocked(uid, ip);
    const account: Account | undefined = UID_RE.test(uid) ? accounts.get(uid) : undefined;
    if (password !== undefined) {
      const known = account?.type === 'local' && account.passwordHash ? account.passwordHash : undefined;
      const decoy = await dummy();
      const hash = known ?? decoy;
      const ran = await gate.run(() => verifyPassword(password, hash));
      if (!ran) throw tooMany(1000, 'Too many logins in progress');
      if (!ran.value || known === undefined) throw loginFailed(uid, ip, INVALID_PASSWORD);
    } else {
      if (account?.type !== 'service' || !account.publicKeyPem) throw loginFailed(uid, ip, INVALID_LOGIN_TOKEN);
      const parsed = parseServicePublicKey(account.publicKeyPem);
      if ('error' in parsed) throw loginFailed(uid, ip, INVALID_LOGIN_TOKEN);
      try {
        await verifyLoginToken(loginToken ?? '', uid, parsed.key, maxLoginLifetime, now());
      } catch (err) {
        const msg = err instanceof TokenError && !/invalid signature|is invalid|RS256/.test(err.message) ? err.message : INVALID_LOGIN_TOKEN;
        throw loginFailed(uid, ip, msg);
      }
    }
    if (!account) throw loginFailed(uid, ip, INVALID_PASSWORD); // unreachable: both branches checked it
    throttle.succeeded(uid, ip);
    const { token, exp } = await tokens.issue(uid, account.accountId, requestedExp);
    void reply.header('set-cookie', authCookie(token, exp - tokens.nowSeconds(), req.protocol === 'https'));
    log.info({ uid, ip, exp }, 'login');
    return { token };
  }

  // ---- users
  /** The {uid} of the path (checked by the route schema, UidParams). */
  function uidParam(req: FastifyRequest): string {
    return (req.params as { uid: string }).uid;
  }
  function notFound(uid: string): NotFound {
    return new NotFound(`User with uid \`${uid}\` not found.`, 'ERR_UNKNOWN_USER_ID');
  }

  async function createUser(req: FastifyRequest): Promise<Record<string, unknown>> {
    const uid = uidParam(req);
    const { public_key: publicKey, password, description = '' } = req.body as CreateUserBody;
    if ((publicKey === undefined) === (password === undefined)) {
      throw new BadRequest("Send either 'public_key' (PEM, creates a service account) or 'password' (creates a local account)", { code: 'ERR_INVALID_DATA' });
    }
    if (accounts.get(uid)) throw new Conflict(`User with uid \`${uid}\` already exists.`, { code: 'ERR_USER_EXISTS' });
    const created = new Date(now()).toISOString();
    const accountId = AccountStore.newId();
    let account: Account;
    if (publicKey !== undefined) {
      const parsed = parseServicePublicKey(publicKey);
      if ('error' in parsed) throw new BadRequest(parsed.error, { code: 'ERR_INVALID_PUBLIC_KEY' });
      account = { uid, accountId, type: 'service', description, created, passwordHash: null, publicKeyPem: parsed.pem, fingerprint: parsed.fingerprint };
    } else {
      checkNewPassword(password ?? '');
      const ran = await gate.run(() => hashPassword(password ?? '', cost));
      if (!ran) throw tooMany(1000, 'Too many password operations in progress');
      account = { uid, accountId, type: 'local', description, created, passwordHash: ran.value, publicKeyPem: null, fingerprint: null };
    }
    if (!accounts.insert(account)) throw new Conflict(`User with uid \`${uid}\` already exists.`, { code: 'ERR_USER_EXISTS' });
    log.info({ uid, type: account.type, by: uids.get(req) }, 'account created');
    return toJson(account) as unknown as Record<string, unknown>;
  }

  async function updateUser(req: FastifyRequest): Promise<void> {
    const uid = uidParam(req);
    const { password, description } = req.body as UpdateUserBody;
    const account = accounts.get(uid);
    if (!account) throw notFound(uid);
    if (password !== undefined) {
      if (account.type !== 'local') throw new BadRequest('A service account has no password; it logs in with its key', { code: 'ERR_INVALID_DATA' });
      checkNewPassword(password);
      const ran = await gate.run(() => hashPassword(password, cost));
      if (!ran) throw tooMany(1000, 'Too many password operations in progress');
      accounts.setPasswordHash(uid, ran.value);
    }
    if (description !== undefined) opts.db.prepare('UPDATE auth_accounts SET description = ? WHERE uid = ?').run(description, uid);
    log.info({ uid, by: uids.get(req), password: password !== undefined ? 'changed' : undefined }, 'account updated');
  }

  function deleteUser(req: FastifyRequest): void {
    const uid = uidParam(req);
    const account = accounts.get(uid);
    if (!account) throw notFound(uid);
    if (account.type === 'local' && accounts.countLocal() <= 1) {
      throw new Conflict(`Cannot delete \`${uid}\`: it is the last local account, and without one nobody could log in with a password`, {
        code: 'ERR_LAST_LOCAL_ACCOUNT',
      });
    }
    accounts.delete(uid);
    throttle.forget(uid);
    log.info({ uid, by: uids.get(req) }, 'account deleted');
  }

  const wrap =
    <T>(fn: (req: FastifyRequest, reply: FastifyReply) => Promise<T> | T, status = 200) =>
    async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
      const out = await fn(req, reply);
      if (out === undefined) return reply.code(204).send();
      return reply.code(status).send(out);
    };

  const jwks = { keys: [key.jwk] };
  const plugin = async (app: FastifyInstance): Promise<void> => {
    // Bodies and the {uid} are checked against bodies.ts's schemas before a handler runs; errors,
    // thrown or found there, are answered by http/errors.ts whatever app this plugin is on.
    app.setValidatorCompiler(authSchemaCompiler);
    app.setErrorHandler(mapOrchestratorErrors);
    const withBody = (body: TSchema, params?: TSchema) => ({ bodyLimit: BODY_LIMIT, schema: { body, ...(params ? { params } : {}) } });
    const withUid = { schema: { params: UidParams } };
    app.post('/acs/api/v1/auth/login', withBody(LoginBody), wrap(login));
    app.get('/acs/api/v1/auth/jwks', async () => jwks);
    app.get(
      '/acs/api/v1/users',
      wrap(() => ({ array: accounts.list().map(toJson) })),
    );
    app.get(
      '/acs/api/v1/users/:uid',
      withUid,
      wrap((req) => {
        const uid = uidParam(req);
        const a = accounts.get(uid);
        if (!a) throw notFound(uid);
        return toJson(a);
      }),
    );
    app.put('/acs/api/v1/users/:uid', withBody(CreateUserBody, UidParams), wrap(createUser, 201));
    app.patch('/acs/api/v1/users/:uid', withBody(UpdateUserBody, UidParams), wrap(updateUser));
    app.delete('/acs/api/v1/users/:uid', withUid, wrap(deleteUser));
  };

  const result: Auth = {
    enabled,
    plugin,
    hook: makeHook(defaultIsOpen),
    uidOf: (req) => uids.get(req),
    accounts,
    jwks,
  };
  if (adminPasswordFile) result.adminPasswordFile = adminPasswordFile;
  return result;
}
