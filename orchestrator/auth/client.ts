// Tiny client for the orchestrator's login: with a password (manual use; costly by design) or with
// a service account's private key (automation: a 30-second RS256 login token is exchanged for an
// authorization token). Used by the scenario runner, the demo and the tests.
import { createPrivateKey } from 'node:crypto';
import { SignJWT } from 'jose';

export class LoginError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

async function postLogin(baseUrl: string, body: Record<string, string>): Promise<string> {
  const res = await fetch(`${baseUrl.replace(/\/+$/, '')}/acs/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let json: { token?: unknown; message?: unknown } = {};
  try {
    json = JSON.parse(text) as typeof json;
  } catch {
    // not JSON: reported below
  }
  if (res.status !== 200 || typeof json.token !== 'string') {
    const why = typeof json.message === 'string' ? json.message : text.slice(0, 200);
    throw new LoginError(res.status, `login as ${body.uid} failed: HTTP ${res.status}: ${why}`);
  }
  return json.token;
}

export function loginWithPassword(baseUrl: string, uid: string, password: string): Promise<string> {
  return postLogin(baseUrl, { uid, password });
}

/** Builds a login token (RS256, uid, iat, exp = now + lifetimeSeconds) with the account's private key. */
export async function serviceLoginToken(uid: string, privateKeyPem: string, lifetimeSeconds = 30): Promise<string> {
  const key = createPrivateKey(privateKeyPem);
  return new SignJWT({ uid })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + lifetimeSeconds)
    .sign(key);
}

export async function loginWithServiceAccount(baseUrl: string, uid: string, privateKeyPem: string): Promise<string> {
  return postLogin(baseUrl, { uid, token: await serviceLoginToken(uid, privateKeyPem) });
}

export function authHeader(token: string): { authorization: string } {
  return { authorization: `token=${token}` };
}
