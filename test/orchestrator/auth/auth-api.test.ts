// Orchestrator login, service accounts and tokens over real HTTP on loopback: open and secured
// endpoints, password and service-account login, account management, and every forged, expired,
// tampered or malformed token or body being refused without crashing the server. Finally the
// captured log and every API answer are searched for secrets.
import { createPrivateKey, createSecretKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authHeader, loginWithPassword, loginWithServiceAccount, serviceLoginToken } from '../../../orchestrator/auth/client.ts';
import { removeTempDirs } from '../../helpers/process.ts';
import { startAuthServer, type AuthServer } from '../../orchestrator-auth-setup.ts';

const ADMIN_PW = 'admin-secret-pw-1';
const BOB_PW = 'bob-secret-pw-22';
const BOB_PW2 = 'bob-secret-pw-333';
let s: AuthServer;
let adminToken: string;
const secrets: string[] = [ADMIN_PW, BOB_PW, BOB_PW2];
const answers: string[] = [];

function rsa(bits = 2048) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  return { privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, publicPem: publicKey.export({ type: 'spki', format: 'pem' }) as string };
}
const svcKey = rsa();
const otherKey = rsa();
secrets.push(svcKey.privatePem, otherKey.privatePem);

async function call(method: string, path: string, body?: unknown, headers?: Record<string, string>) {
  const r = await s.call(method, path, body, headers);
  // A login answer carries its token by design; every other answer must hold no secret.
  if (!(path === '/acs/api/v1/auth/login' && r.status === 200)) answers.push(r.text);
  return r;
}
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
const nowS = () => Math.floor(s.clock.now / 1000);
function orchestratorKey() {
  return createPrivateKey(readFileSync(join(s.dataDir, 'auth-signing-key.pem'), 'utf8'));
}
async function expect401(token: string, why?: RegExp) {
  const r = await call('GET', '/v2/apps', undefined, authHeader(token));
  expect(r.status).toBe(401);
  expect(r.headers.get('www-authenticate')).toBe('acsjwt');
  expect(typeof r.body.message).toBe('string');
  if (why) expect(r.body.message).toMatch(why);
}

beforeAll(async () => {
  // Lockouts are tested in orchestrator-auth-limits; here many deliberate failures must not trip them.
  s = await startAuthServer({ pairLockout: { freeFailures: 1000 }, accountLockout: { freeFailures: 1000 }, clientLockout: { freeFailures: 1000 } });
  adminToken = await loginWithPassword(s.base, 'admin', ADMIN_PW);
  secrets.push(adminToken);
});

afterAll(async () => {
  await s?.close();
  removeTempDirs();
});

describe('open and secured endpoints', () => {
  it('leaves /ping, the login and the key set open', async () => {
    expect((await call('GET', '/ping')).text).toBe('pong');
    const jwks = await call('GET', '/acs/api/v1/auth/jwks');
    expect(jwks.status).toBe(200);
    expect(jwks.body.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(jwks.body.keys[0].d).toBeUndefined();
  });

  it('answers 401 with a JSON message and WWW-Authenticate without a token', async () => {
    for (const [m, p] of [
      ['GET', '/v2/apps'],
      ['GET', '/acs/api/v1/users'],
      ['PUT', '/acs/api/v1/users/x'],
      ['GET', '/no/such/route'],
      ['POST', '/ping'],
    ]) {
      const r = await call(m!, p!, m === 'PUT' ? { password: 'whatever-123' } : undefined);
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe('acsjwt');
      expect(r.body.message).toMatch(/Authorization: token=/);
    }
  });

  it('accepts "token=<t>" and "Bearer <t>"', async () => {
    expect((await call('GET', '/v2/apps', undefined, { authorization: `token=${adminToken}` })).body).toEqual({ apps: [], who: 'admin' });
    expect((await call('GET', '/v2/apps', undefined, { authorization: `Bearer ${adminToken}` })).body.who).toBe('admin');
  });
});

describe('password login', () => {
  it('issues an RS256 token with uid and exp 5 days ahead', () => {
    expect(decodeProtectedHeader(adminToken)).toMatchObject({ alg: 'RS256', typ: 'JWT' });
    const p = decodeJwt(adminToken);
    expect(p.uid).toBe('admin');
    expect(p.exp! - p.iat!).toBe(5 * 24 * 3600);
  });

  it('answers unknown uid and wrong password the same way', async () => {
    const a = await call('POST', '/acs/api/v1/auth/login', { uid: 'admin', password: 'wrong-password' });
    const b = await call('POST', '/acs/api/v1/auth/login', { uid: 'nobody', password: 'wrong-password' });
    expect(a.status).toBe(401);
    expect(b.status).toBe(401);
    expect(a.body).toEqual(b.body);
    expect(a.body.message).toBe('Invalid username or password.');
  });
});

describe('accounts', () => {
  it('creates a service account that logs in with its key', async () => {
    expect((await call('PUT', '/acs/api/v1/users/svc1', { public_key: svcKey.publicPem })).status).toBe(401);
    const r = await call('PUT', '/acs/api/v1/users/svc1', { public_key: svcKey.publicPem, description: 'ci' }, authHeader(adminToken));
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ uid: 'svc1', type: 'service', is_service: true, description: 'ci' });
    expect(r.body.public_key_fingerprint).toMatch(/^SHA256:/);
    expect(r.body.created).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(r.text).not.toContain('BEGIN');
    const again = await call('PUT', '/acs/api/v1/users/svc1', { public_key: svcKey.publicPem }, authHeader(adminToken));
    expect(again.status).toBe(409);
    expect(again.body.message).toMatch(/already exists/);
    const token = await loginWithServiceAccount(s.base, 'svc1', svcKey.privatePem);
    secrets.push(token);
    expect((await call('GET', '/v2/apps', undefined, authHeader(token))).body.who).toBe('svc1');
  });

  it('lists and reads accounts without any secret material', async () => {
    const list = await call('GET', '/acs/api/v1/users', undefined, authHeader(adminToken));
    expect(list.body.array.map((a: { uid: string }) => a.uid)).toEqual(['admin', 'svc1']);
    expect(list.text).not.toMatch(/scrypt|BEGIN|hash/);
    const one = await call('GET', '/acs/api/v1/users/admin', undefined, authHeader(adminToken));
    expect(one.body).toMatchObject({ uid: 'admin', type: 'local', is_service: false });
    const none = await call('GET', '/acs/api/v1/users/ghost', undefined, authHeader(adminToken));
    expect(none.status).toBe(404);
    expect(none.body.message).toMatch(/ghost/);
  });

  it('refuses bad public keys and bad bodies with 400', async () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' });
    const small = rsa(1024).publicPem;
    const cases: Array<[string, unknown, RegExp]> = [
      ['k1', { public_key: 'not a key' }, /not a PEM public key/],
      ['k2', { public_key: small }, /1024 bits.*2048/],
      ['k3', { public_key: ec }, /RSA/],
      ['k4', { public_key: otherKey.privatePem }, /private key/],
      ['k5', { public_key: svcKey.publicPem, password: 'abcdefgh1' }, /either/],
      ['k6', {}, /either/],
      ['k7', { password: 'short' }, /at least 8/],
      ['k8', { public_key: 42 }, /must be a string/],
      ['k9', [1, 2], /JSON object/],
      ['bad uid!', { password: 'abcdefgh1' }, /Invalid uid/],
    ];
    for (const [uid, body, why] of cases) {
      const r = await call('PUT', `/acs/api/v1/users/${encodeURIComponent(uid)}`, body, authHeader(adminToken));
      expect(r.status, uid).toBe(400);
      expect(r.body.message).toMatch(why);
      expect(r.text).not.toContain('PRIVATE');
    }
    const notJson = await call('PUT', '/acs/api/v1/users/k10', '{"password":', authHeader(adminToken));
    expect(notJson.status).toBe(400);
  });

  it('creates local accounts, changes passwords, deletes accounts', async () => {
    const r = await call('PUT', '/acs/api/v1/users/bob', { password: BOB_PW }, authHeader(adminToken));
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ uid: 'bob', type: 'local' });
    const bobToken = await loginWithPassword(s.base, 'bob', BOB_PW);
    secrets.push(bobToken);
    expect((await call('PATCH', '/acs/api/v1/users/bob', { password: BOB_PW2 }, authHeader(bobToken))).status).toBe(204);
    await expect(loginWithPassword(s.base, 'bob', BOB_PW)).rejects.toThrow(/401/);
    secrets.push(await loginWithPassword(s.base, 'bob', BOB_PW2));
    // Deleting revokes the account's tokens at once.
    const svcToken = await loginWithServiceAccount(s.base, 'svc1', svcKey.privatePem);
    secrets.push(svcToken);
    expect((await call('DELETE', '/acs/api/v1/users/svc1', undefined, authHeader(adminToken))).status).toBe(204);
    await expect401(svcToken, /no longer exists/);
    expect((await call('DELETE', '/acs/api/v1/users/svc1', undefined, authHeader(adminToken))).status).toBe(404);
    expect((await call('DELETE', '/acs/api/v1/users/bob', undefined, authHeader(adminToken))).status).toBe(204);
    const last = await call('DELETE', '/acs/api/v1/users/admin', undefined, authHeader(adminToken));
    expect(last.status).toBe(409);
    expect(last.body.message).toMatch(/last local account/);
  });
});

describe('forged, expired and malformed authorization tokens', () => {
  it('refuses alg none, HS256 with the public key, unknown keys, tampering, expiry, nbf, missing claims', async () => {
    const p = { uid: 'admin', iat: nowS(), exp: nowS() + 3600 };
    await expect401(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(p)}.`);
    await expect401(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(p)}`);
    const pubPem = Buffer.from((await call('GET', '/acs/api/v1/auth/jwks')).text);
    const jwkPem = createPrivateKey(readFileSync(join(s.dataDir, 'auth-signing-key.pem'), 'utf8'));
    const publicPem = Buffer.from((await import('node:crypto')).createPublicKey(jwkPem).export({ type: 'spki', format: 'pem' }) as string);
    for (const secret of [publicPem, pubPem]) {
      await expect401(await new SignJWT(p).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(createSecretKey(secret)), /RS256/);
    }
    await expect401(await new SignJWT(p).setProtectedHeader({ alg: 'RS256' }).sign(createPrivateKey(otherKey.privatePem)), /signature/);
    const [h, , sig] = adminToken.split('.');
    await expect401(`${h}.${b64({ ...decodeJwt(adminToken), uid: 'root' })}.${sig}`, /signature/);
    await expect401(`${h}.${b64({ ...decodeJwt(adminToken), exp: nowS() + 99999999 })}.${sig}`, /signature/);
    await expect401(`${adminToken.slice(0, -3)}AAA`);
    const key = orchestratorKey();
    await expect401(await new SignJWT({ uid: 'admin' }).setProtectedHeader({ alg: 'RS256' }).setIssuedAt(nowS()).sign(key), /invalid/);
    await expect401(
      await new SignJWT({ sub: 'admin' })
        .setProtectedHeader({ alg: 'RS256' })
        .setExpirationTime(nowS() + 60)
        .sign(key),
      /uid/,
    );
    await expect401(
      await new SignJWT({ uid: 'admin' })
        .setProtectedHeader({ alg: 'RS256' })
        .setNotBefore(nowS() + 600)
        .setExpirationTime(nowS() + 3600)
        .sign(key),
      /not valid yet/,
    );
    await expect401(
      await new SignJWT({ uid: 'admin' })
        .setProtectedHeader({ alg: 'RS256' })
        .setExpirationTime(nowS() - 10)
        .sign(key),
      /expired/,
    );
    await expect401(
      await new SignJWT({ uid: 'ghost' })
        .setProtectedHeader({ alg: 'RS256' })
        .setExpirationTime(nowS() + 60)
        .sign(key),
      /no longer exists/,
    );
    // The real token expires after its lifetime (clock injection, no waiting).
    const saved = s.clock.now;
    s.clock.now += 5 * 24 * 3600 * 1000 + 1000;
    await expect401(adminToken, /expired/);
    s.clock.now = saved;
    expect((await call('GET', '/v2/apps', undefined, authHeader(adminToken))).status).toBe(200);
  });

  it('refuses malformed Authorization headers', async () => {
    for (const value of [
      'token=',
      'token',
      'Basic YWRtaW46eA==',
      'token=a b',
      'token=abc',
      'token=a.b.c',
      'Bearer',
      `token=${'a'.repeat(12000)}`,
      'token=%00',
      `token=${adminToken}x`,
    ]) {
      const r = await call('GET', '/v2/apps', undefined, { authorization: value });
      expect(r.status, value.slice(0, 20)).toBe(401);
      expect(r.body.message).toBeTypeOf('string');
    }
    const huge = await call('GET', '/v2/apps', undefined, { authorization: `token=${'a'.repeat(64 * 1024)}` });
    expect(huge.status).toBeGreaterThanOrEqual(400);
    expect(huge.status).toBeLessThan(500);
    expect((await call('GET', '/ping')).status).toBe(200);
  });
});

describe('service-account login tokens', () => {
  beforeAll(async () => {
    expect((await call('PUT', '/acs/api/v1/users/svc2', { public_key: svcKey.publicPem }, authHeader(adminToken))).status).toBe(201);
  });
  const login = (uid: string, token: string) => call('POST', '/acs/api/v1/auth/login', { uid, token });
  const svcPriv = () => createPrivateKey(svcKey.privatePem);

  it('accepts a 30-second login token', async () => {
    const r = await login('svc2', await serviceLoginToken('svc2', svcKey.privatePem));
    expect(r.status).toBe(200);
    secrets.push(r.body.token);
    expect(decodeJwt(r.body.token).uid).toBe('svc2');
  });

  it('refuses unknown accounts, wrong keys, forgeries, and insecure lifetimes', async () => {
    const uniform = 'Invalid uid or login token.';
    expect((await login('ghost', await serviceLoginToken('ghost', svcKey.privatePem))).body.message).toBe(uniform);
    expect((await login('admin', await serviceLoginToken('admin', svcKey.privatePem))).body.message).toBe(uniform);
    const wrongKey = await login('svc2', await serviceLoginToken('svc2', otherKey.privatePem));
    expect(wrongKey.status).toBe(401);
    expect(wrongKey.body.message).toBe(uniform);
    expect((await login('svc2', await serviceLoginToken('svc1', svcKey.privatePem))).body.message).toBe(uniform);
    expect((await login('svc2', `${b64({ alg: 'none' })}.${b64({ uid: 'svc2', exp: nowS() + 30 })}.`)).status).toBe(401);
    const hs = await new SignJWT({ uid: 'svc2' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime(nowS() + 30)
      .sign(createSecretKey(Buffer.from(svcKey.publicPem)));
    expect((await login('svc2', hs)).status).toBe(401);
    const noExp = await login('svc2', await new SignJWT({ uid: 'svc2' }).setProtectedHeader({ alg: 'RS256' }).setIssuedAt(nowS()).sign(svcPriv()));
    expect(noExp.status).toBe(401);
    expect(noExp.body.message).toMatch(/no exp.*insecure/);
    const long = await login(
      'svc2',
      await new SignJWT({ uid: 'svc2' })
        .setProtectedHeader({ alg: 'RS256' })
        .setIssuedAt(nowS())
        .setExpirationTime(nowS() + 3600)
        .sign(svcPriv()),
    );
    expect(long.status).toBe(401);
    expect(long.body.message).toMatch(/3600 s.*insecure/);
    const longNoIat = await login(
      'svc2',
      await new SignJWT({ uid: 'svc2' })
        .setProtectedHeader({ alg: 'RS256' })
        .setExpirationTime(nowS() + 86400)
        .sign(svcPriv()),
    );
    expect(longNoIat.body.message).toMatch(/insecure/);
    const expired = await login(
      'svc2',
      await new SignJWT({ uid: 'svc2' })
        .setProtectedHeader({ alg: 'RS256' })
        .setIssuedAt(nowS() - 60)
        .setExpirationTime(nowS() - 30)
        .sign(svcPriv()),
    );
    expect(expired.body.message).toMatch(/expired/);
    expect((await login('svc2', 'garbage')).status).toBe(401);
  });
});

describe('malformed login bodies', () => {
  it('answers 400/413 and keeps serving', async () => {
    const cases: Array<[unknown, number]> = [
      ['not json', 400],
      ['{"uid":', 400],
      ['[]', 400],
      ['"text"', 400],
      ['null', 400],
      ['42', 400],
      [{ uid: 1, password: 'x' }, 400],
      [{ uid: 'admin', password: { $ne: 1 } }, 400],
      [{ uid: 'admin' }, 400],
      [{ password: 'x' }, 400],
      [{ uid: 'admin', password: 'x', token: 'y' }, 400],
      [{ uid: 'admin', password: 'x'.repeat(5000) }, 400],
      [{ uid: 'admin', token: 'x'.repeat(20000) }, 400],
      [JSON.stringify({ uid: 'admin', password: 'p'.repeat(200_000) }), 413],
    ];
    for (const [body, status] of cases) {
      const r = await call('POST', '/acs/api/v1/auth/login', body);
      expect(r.status, JSON.stringify(body).slice(0, 40)).toBe(status);
      expect(r.body.message).toBeTypeOf('string');
    }
    const empty = await s.call('POST', '/acs/api/v1/auth/login', undefined, { 'content-type': 'application/json' });
    expect(empty.status).toBe(400);
    expect((await call('GET', '/ping')).status).toBe(200);
  });
});

describe('secrets', () => {
  it('never appear in the log or in any answer', () => {
    const hashes = s.auth.accounts
      .list()
      .map((a) => a.passwordHash)
      .filter(Boolean) as string[];
    expect(hashes.length).toBeGreaterThan(0);
    const signingKey = readFileSync(join(s.dataDir, 'auth-signing-key.pem'), 'utf8');
    const all = [...secrets, ...hashes, signingKey];
    // Also the base64 body lines of private keys, and each hash's final part.
    for (const pem of [svcKey.privatePem, otherKey.privatePem, signingKey]) all.push(...pem.split('\n').filter((l) => l.length > 40));
    for (const h of hashes) all.push(h.split('$').pop()!);
    for (const t of secrets.filter((x) => x.split('.').length === 3)) all.push(t.split('.')[2]!);
    const logs = s.logs();
    expect(logs).toContain('login failed');
    expect(logs).toContain('"uid":"admin"');
    const text = answers.join('\n');
    for (const secret of all) {
      expect(logs.includes(secret), `log holds ${secret.slice(0, 12)}…`).toBe(false);
      expect(text.includes(secret), `answer holds ${secret.slice(0, 12)}…`).toBe(false);
    }
  });
});
