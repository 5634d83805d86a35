// Authorization tokens (RS256, signed with the orchestrator's key) and service-account login
// tokens (RS256, signed with the account's private key). Algorithms are pinned to RS256, so
// "alg: none" and HS256-signed-with-the-public-key tokens are refused by jose itself.
import type { KeyObject } from 'node:crypto';
import { SignJWT, errors, jwtVerify, type JWTPayload } from 'jose';
import type { SigningKey } from './keys.ts';

export const MAX_TOKEN_CHARS = 16 * 1024;

export class TokenError extends Error {}

function describe(err: unknown, what: string): TokenError {
  if (err instanceof errors.JWTExpired) return new TokenError(`${what} has expired`);
  if (err instanceof errors.JWTClaimValidationFailed && err.claim === 'nbf') return new TokenError(`${what} is not valid yet (nbf)`);
  if (err instanceof errors.JOSEAlgNotAllowed) return new TokenError(`${what} must be signed with RS256`);
  if (err instanceof errors.JWSSignatureVerificationFailed) return new TokenError(`${what} has an invalid signature`);
  return new TokenError(`${what} is invalid`);
}

export class TokenService {
  readonly #key: SigningKey;
  readonly #lifetime: number;
  readonly #now: () => number;

  constructor(key: SigningKey, lifetimeSeconds: number, now: () => number) {
    this.#key = key;
    this.#lifetime = lifetimeSeconds;
    this.#now = now;
  }

  nowSeconds(): number {
    return Math.floor(this.#now() / 1000);
  }

  /**
   * Signs a token for the account: `uid`, and `aid`, the account's own id (a later account with the
   * same uid has another). `requestedExp` (DC/OS's login `exp`) may shorten the lifetime, never
   * lengthen it.
   */
  async issue(uid: string, accountId: string, requestedExp?: number): Promise<{ token: string; exp: number }> {
    const iat = this.nowSeconds();
    const exp = requestedExp !== undefined ? Math.min(requestedExp, iat + this.#lifetime) : iat + this.#lifetime;
    const token = await new SignJWT({ uid, aid: accountId })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: this.#key.kid })
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(this.#key.privateKey);
    return { token, exp };
  }

  /** Verifies an authorization token; returns whom it names or throws TokenError. */
  async verify(token: string): Promise<{ uid: string; accountId: string | undefined }> {
    if (token.length > MAX_TOKEN_CHARS) throw new TokenError('Authorization token is too long');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.#key.publicKey, {
        algorithms: ['RS256'],
        requiredClaims: ['exp'],
        currentDate: new Date(this.#now()),
      }));
    } catch (err) {
      throw describe(err, 'Authorization token');
    }
    if (typeof payload.uid !== 'string' || payload.uid === '') throw new TokenError('Authorization token has no uid');
    return { uid: payload.uid, accountId: typeof payload.aid === 'string' ? payload.aid : undefined };
  }
}

/**
 * Verifies a service-account login token against the account's public key. Refuses tokens without
 * exp and tokens that stay valid longer than maxLifetimeSeconds from now. The remaining lifetime is
 * judged by this server's clock (exp - now): the client's iat is its own claim, and a token with
 * iat set just below an exp ten years away would otherwise pass as a short-lived one.
 */
export async function verifyLoginToken(token: string, uid: string, publicKey: KeyObject, maxLifetimeSeconds: number, nowMs: number): Promise<void> {
  if (token.length > MAX_TOKEN_CHARS) throw new TokenError('Login token is too long');
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, publicKey, { algorithms: ['RS256'], currentDate: new Date(nowMs) }));
  } catch (err) {
    throw describe(err, 'Login token');
  }
  if (payload.uid !== uid) throw new TokenError('Login token is invalid');
  if (typeof payload.exp !== 'number') {
    throw new TokenError(
      `Login token has no exp: a login token without expiry stays valid forever, which is insecure; set exp at most ${maxLifetimeSeconds} s ahead`,
    );
  }
  const remaining = payload.exp - Math.floor(nowMs / 1000);
  if (remaining > maxLifetimeSeconds) {
    throw new TokenError(
      `Login token is valid for another ${remaining} s, longer than the ${maxLifetimeSeconds} s allowed: long-lived login tokens are insecure; use a short exp (e.g. now + 30 s)`,
    );
  }
}
