// The open auth routes (registered in the public context, http/contexts.ts):
//   POST /acs/api/v1/auth/login   {uid, password} | {uid, token: <login JWT>}, optional exp
//                                 -> {token}, and the same token in the cookie dcos-acs-auth-cookie
//   GET  /acs/api/v1/auth/jwks    the public key that signs authorization tokens
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { UID_RE, type Account } from './accounts.ts';
import { BadRequest, Unauthenticated } from '../errors.ts';
import { LoginBody } from './bodies.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import { answer, CHALLENGE, prepareAuthContext, tooMany, withBody, type AuthParts } from './parts.ts';
import { serviceLoginProblem } from './service-login.ts';

export const AUTH_COOKIE = 'dcos-acs-auth-cookie';
const INVALID_PASSWORD = 'Invalid username or password.';

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

export interface LoginOptions {
  /** Longest accepted service-account login token lifetime. */
  maxLoginTokenLifetimeSeconds: number;
  jwks: { keys: Array<Record<string, unknown>> };
}

export function loginRoutes(parts: AuthParts, opts: LoginOptions): (app: FastifyInstance) => Promise<void> {
  const { log, accounts, tokens, gate, throttle, cost, now } = parts;
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
      const problem = await serviceLoginProblem(account, uid, loginToken ?? '', opts.maxLoginTokenLifetimeSeconds, now());
      if (problem !== undefined) throw loginFailed(uid, ip, problem);
    }
    if (!account) throw loginFailed(uid, ip, INVALID_PASSWORD); // unreachable: both branches checked it
    throttle.succeeded(uid, ip);
    const { token, exp } = await tokens.issue(uid, account.accountId, requestedExp);
    void reply.header('set-cookie', authCookie(token, exp - tokens.nowSeconds(), req.protocol === 'https'));
    log.info({ uid, ip, exp }, 'login');
    return { token };
  }

  return async (app) => {
    prepareAuthContext(app);
    app.post('/acs/api/v1/auth/login', withBody(LoginBody), answer(login));
    app.get('/acs/api/v1/auth/jwks', async () => opts.jwks);
  };
}
