/* eslint-disable @typescript-eslint/no-explicit-any */
// Orchestrator accounts under attack, over real HTTP on loopback (issue 16, issue 13): login-token
// lifetime judged by the server's clock, tokens that die with their account (also across a
// restart), lockout per (account, client address) with several real source addresses in 127/8,
// and the DC/OS login cookie that marathon-lb reads, which authenticates nothing by itself.
import { execFileSync } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { SignJWT, decodeJwt } from 'jose';
import { Agent, request } from 'undici';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { authHeader, loginWithPassword, loginWithServiceAccount, serviceLoginToken } from '../../../orchestrator/auth/client.ts';
import { clientKey } from '../../../orchestrator/auth/login-throttle.ts';
import { removeTempDirs, tempDir } from '../../helpers/process.ts';
import { FAST_SCRYPT, startAuthServer, type AuthServer } from '../../orchestrator-auth-setup.ts';

const ADMIN_PW = 'admin-secret-pw-1';
const servers: AuthServer[] = [];
const agents: Agent[] = [];
async function server(...args: Parameters<typeof startAuthServer>): Promise<AuthServer> {
  const s = await startAuthServer(...args);
  servers.push(s);
  return s;
}
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});
afterAll(async () => {
  for (const a of agents) await a.close();
  removeTempDirs();
});

function rsa() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, publicPem: publicKey.export({ type: 'spki', format: 'pem' }) as string };
}
const key = rsa();
const nowS = (s: AuthServer) => Math.floor(s.clock.now / 1000);

/**
 * A login sent from a given loopback source address (127.0.0.x): a real other client. node:http,
 * because it binds the socket to `localAddress` (undici's connect option does not).
 */
function loginFrom(s: AuthServer, from: string, uid: string, password: string): Promise<{ status: number; body: any; retryAfter: string | undefined }> {
  const url = new URL(`${s.base}/acs/api/v1/auth/login`);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress: from,
        agent: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => {
          const retry = res.headers['retry-after'];
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), retryAfter: typeof retry === 'string' ? retry : undefined });
        });
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ uid, password }));
  });
}

describe('service-account login tokens', () => {
  it("judges the login token's remaining lifetime by the server's clock, not by its iat", async () => {
    const s = await server();
    const admin = await loginWithPassword(s.base, 'admin', ADMIN_PW);
    expect((await s.call('PUT', '/acs/api/v1/users/bot', { public_key: key.publicPem }, authHeader(admin))).status).toBe(201);
    const sign = (claims: { iat?: number; exp: number }) => {
      const jwt = new SignJWT({ uid: 'bot' }).setProtectedHeader({ alg: 'RS256' }).setExpirationTime(claims.exp);
      if (claims.iat !== undefined) jwt.setIssuedAt(claims.iat);
      return jwt.sign(createPrivateKey(key.privatePem));
    };
    const tenYears = nowS(s) + 10 * 365 * 24 * 3600;
    const forged = await s.call('POST', '/acs/api/v1/auth/login', { uid: 'bot', token: await sign({ iat: tenYears - 30, exp: tenYears }) });
    expect(forged.status).toBe(401);
    expect(forged.body.message).toMatch(/insecure/);
    const justOver = await s.call('POST', '/acs/api/v1/auth/login', { uid: 'bot', token: await sign({ iat: nowS(s) + 670, exp: nowS(s) + 700 }) });
    expect(justOver.status).toBe(401);
    // A token made a while ago (iat long past) that expires soon is fine: what counts is what is left.
    const old = await s.call('POST', '/acs/api/v1/auth/login', { uid: 'bot', token: await sign({ iat: nowS(s) - 3000, exp: nowS(s) + 30 }) });
    expect(old.status).toBe(200);
  });
});

describe('tokens die with their account', () => {
  it("does not revive a deleted account's tokens when the uid is created again, also after a restart", async () => {
    const s = await server();
    const admin = await loginWithPassword(s.base, 'admin', ADMIN_PW);
    expect((await s.call('PUT', '/acs/api/v1/users/bot', { public_key: key.publicPem }, authHeader(admin))).status).toBe(201);
    expect((await s.call('PUT', '/acs/api/v1/users/bob', { password: 'bob-password-1' }, authHeader(admin))).status).toBe(201);
    const oldBot = await loginWithServiceAccount(s.base, 'bot', key.privatePem);
    const oldBob = await loginWithPassword(s.base, 'bob', 'bob-password-1');
    for (const uid of ['bot', 'bob']) expect((await s.call('DELETE', `/acs/api/v1/users/${uid}`, undefined, authHeader(admin))).status).toBe(204);
    // Same uid, same key, same password: still another account.
    expect((await s.call('PUT', '/acs/api/v1/users/bot', { public_key: key.publicPem }, authHeader(admin))).status).toBe(201);
    expect((await s.call('PUT', '/acs/api/v1/users/bob', { password: 'bob-password-1' }, authHeader(admin))).status).toBe(201);
    for (const t of [oldBot, oldBob]) {
      const r = await s.call('GET', '/v2/apps', undefined, authHeader(t));
      expect(r.status).toBe(401);
      expect(r.body.message).toMatch(/no longer exists/);
    }
    const newBot = await loginWithServiceAccount(s.base, 'bot', key.privatePem);
    expect(decodeJwt(newBot).aid).not.toBe(decodeJwt(oldBot).aid);
    expect((await s.call('GET', '/v2/apps', undefined, authHeader(newBot))).body.who).toBe('bot');
    const dataDir = s.dataDir;
    await servers.pop()!.close();
    const again = await server({ dataDir });
    for (const t of [oldBot, oldBob]) expect((await again.call('GET', '/v2/apps', undefined, authHeader(t))).status).toBe(401);
    expect((await again.call('GET', '/v2/apps', undefined, authHeader(newBot))).body.who).toBe('bot');
  });

  it('gives accounts of an older database an id at start; tokens without one are refused', async () => {
    const dataDir = tempDir('orch-auth-');
    const db = new DatabaseSync(join(dataDir, 'state.db'));
    db.exec(`CREATE TABLE auth_accounts (uid TEXT PRIMARY KEY, type TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',
      created TEXT NOT NULL, password_hash TEXT, public_key TEXT, fingerprint TEXT)`);
    db.prepare("INSERT INTO auth_accounts (uid, type, created, public_key) VALUES ('old-bot', 'service', '2020-01-01T00:00:00.000Z', ?)").run(key.publicPem);
    db.close();
    const s = await server({ dataDir });
    const bot = await loginWithServiceAccount(s.base, 'old-bot', key.privatePem);
    expect((await s.call('GET', '/v2/apps', undefined, authHeader(bot))).body.who).toBe('old-bot');
    const signingKey = createPrivateKey(readFileSync(join(dataDir, 'auth-signing-key.pem'), 'utf8'));
    const legacy = await new SignJWT({ uid: 'old-bot' })
      .setProtectedHeader({ alg: 'RS256' })
      .setIssuedAt(nowS(s))
      .setExpirationTime(nowS(s) + 600)
      .sign(signingKey);
    expect((await s.call('GET', '/v2/apps', undefined, authHeader(legacy))).status).toBe(401);
  });
});

describe('lockout per (account, client address)', () => {
  it('a stranger who keeps failing locks himself out, not the owner', async () => {
    const s = await server({ scrypt: FAST_SCRYPT });
    for (let i = 0; i < 6; i++) expect((await loginFrom(s, '127.0.0.2', 'admin', `guess-${i}`)).status).toBe(401);
    const stranger = await loginFrom(s, '127.0.0.2', 'admin', ADMIN_PW);
    expect(stranger.status).toBe(429);
    expect(Number(stranger.retryAfter)).toBeGreaterThanOrEqual(1);
    // Kept locked by one request per lock period: still only the stranger's address.
    s.clock.now += 60_000;
    expect((await loginFrom(s, '127.0.0.2', 'admin', 'guess-again')).status).toBe(401);
    expect((await loginFrom(s, '127.0.0.2', 'admin', ADMIN_PW)).status).toBe(429);
    expect((await loginFrom(s, '127.0.0.1', 'admin', ADMIN_PW)).status).toBe(200);
  });

  it('bounds guesses spread over many addresses, and the owner (known address) still gets in', async () => {
    const s = await server({ accountLockout: { freeFailures: 10, baseLockoutMs: 60_000 } });
    expect((await loginFrom(s, '127.0.0.1', 'admin', ADMIN_PW)).status).toBe(200); // the owner's address
    // 5 addresses × 2 guesses and one more: none is locked on its own (5 free per address), together
    // they are 11, one over the account's 10.
    for (let a = 2; a < 7; a++) for (let i = 0; i < 2; i++) expect((await loginFrom(s, `127.0.0.${a}`, 'admin', `g${a}-${i}`)).status).toBe(401);
    expect((await loginFrom(s, '127.0.0.7', 'admin', 'one-more')).status).toBe(401);
    const fresh = await loginFrom(s, '127.0.0.9', 'admin', ADMIN_PW);
    expect(fresh.status).toBe(429);
    expect(fresh.retryAfter).toBe('60');
    // The owner's own mistakes do not feed the account-wide count, and the owner is let in.
    expect((await loginFrom(s, '127.0.0.1', 'admin', 'typo-pw')).status).toBe(401);
    expect((await loginFrom(s, '127.0.0.1', 'admin', ADMIN_PW)).status).toBe(200);
    s.clock.now += 60_001;
    expect((await loginFrom(s, '127.0.0.9', 'admin', ADMIN_PW)).status).toBe(200);
  });

  it('counts a host once: IPv4-mapped IPv6 as IPv4, an IPv6 address by its /64', () => {
    expect(clientKey('::ffff:127.0.0.2')).toBe('127.0.0.2');
    expect(clientKey('127.0.0.2')).toBe('127.0.0.2');
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe(clientKey('2001:db8:1:2:ffff:1:2:3'));
    expect(clientKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8:1:3::1')).not.toBe(clientKey('2001:db8:1:2::1'));
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
  });
});

describe('the DC/OS login cookie (marathon-lb reads it)', () => {
  const cookieOf = (headers: Headers) => headers.get('set-cookie') ?? '';

  it('carries the same token, HttpOnly and SameSite=Strict, and lives as long as the token', async () => {
    const s = await server({ tokenLifetimeSeconds: 7200 });
    const r = await s.call('POST', '/acs/api/v1/auth/login', { uid: 'admin', password: ADMIN_PW });
    expect(r.status).toBe(200);
    const cookie = cookieOf(r.headers);
    expect(cookie).toMatch(new RegExp(`^dcos-acs-auth-cookie=${r.body.token.replace(/\./g, '\\.')}; `));
    const attrs = cookie.split('; ').slice(1);
    expect(attrs).toContain('HttpOnly');
    expect(attrs).toContain('SameSite=Strict');
    expect(attrs).toContain('Path=/');
    expect(attrs).toContain('Max-Age=7200');
    expect(attrs).not.toContain('Secure'); // plain HTTP: a Secure cookie would never be sent back
  });

  it("answers marathon-lb's service-account login (uid, token, exp) with the cookie, honouring a shorter exp", async () => {
    const s = await server();
    const admin = await loginWithPassword(s.base, 'admin', ADMIN_PW);
    expect((await s.call('PUT', '/acs/api/v1/users/mlb', { public_key: key.publicPem }, authHeader(admin))).status).toBe(201);
    // What marathon-lb's DCOSAuth posts: a 60 s login token and the wanted expiry of the token.
    const loginToken = await new SignJWT({ uid: 'mlb', exp: nowS(s) + 60 })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
      .sign(createPrivateKey(key.privatePem));
    const r = await s.call('POST', '/acs/api/v1/auth/login', { uid: 'mlb', token: loginToken, exp: nowS(s) + 3600 });
    expect(r.status).toBe(200);
    const fromCookie = /^dcos-acs-auth-cookie=([^;]+);/.exec(cookieOf(r.headers))?.[1];
    expect(fromCookie).toBe(r.body.token);
    expect(decodeJwt(fromCookie!).exp).toBe(nowS(s) + 3600);
    expect(cookieOf(r.headers)).toContain('Max-Age=3600');
    // marathon-lb then sends "Authorization: token=<cookie value>".
    expect((await s.call('GET', '/v2/apps', undefined, { authorization: `token=${fromCookie}` })).body.who).toBe('mlb');
    // exp never lengthens the configured lifetime, and must be sane.
    const long = await s.call('POST', '/acs/api/v1/auth/login', {
      uid: 'mlb',
      token: await serviceLoginToken('mlb', key.privatePem),
      exp: nowS(s) + 10 * 365 * 86400,
    });
    expect(decodeJwt(long.body.token).exp).toBe(nowS(s) + 5 * 24 * 3600);
    for (const exp of ['soon', nowS(s) - 5, 1.5]) {
      const bad = await s.call('POST', '/acs/api/v1/auth/login', { uid: 'mlb', token: await serviceLoginToken('mlb', key.privatePem), exp });
      expect(bad.status).toBe(400);
      expect(bad.body.message).toMatch(/'exp'/);
    }
  });

  it('authenticates by the Authorization header only: the cookie alone opens nothing', async () => {
    const s = await server();
    const r = await s.call('POST', '/acs/api/v1/auth/login', { uid: 'admin', password: ADMIN_PW });
    const cookie = cookieOf(r.headers).split(';')[0]!;
    const cookieOnly = await s.call('GET', '/v2/apps', undefined, { cookie });
    expect(cookieOnly.status).toBe(401);
    expect(cookieOnly.headers.get('www-authenticate')).toBe('acsjwt');
    // A cross-site form post carries cookies, never headers: refused too.
    const write = await s.call('PUT', '/acs/api/v1/users/evil', { password: 'evil-password-1' }, { cookie, origin: 'http://evil.example' });
    expect(write.status).toBe(401);
    expect((await s.call('GET', '/v2/apps', undefined, { ...authHeader(r.body.token), cookie })).body.who).toBe('admin');
    expect((await s.call('GET', '/v2/apps', undefined, authHeader(r.body.token))).body.who).toBe('admin');
  });

  it('marks the cookie Secure when the login came over TLS', async (ctx) => {
    const dir = tempDir('orch-auth-tls-');
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
          '-days',
          '1',
          '-subj',
          '/CN=127.0.0.1',
        ],
        { stdio: 'ignore' },
      );
    } catch {
      console.warn('skipped: openssl is needed to make a test certificate (apt-get install openssl)');
      ctx.skip();
    }
    const s = await server({ https: { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') } });
    const agent = new Agent({ connect: { rejectUnauthorized: false } });
    agents.push(agent);
    expect(s.base).toMatch(/^https:/);
    const res = await request(`${s.base}/acs/api/v1/auth/login`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uid: 'admin', password: ADMIN_PW }),
    });
    const body = (await res.body.json()) as { token: string };
    expect(res.statusCode).toBe(200);
    const cookie = String(res.headers['set-cookie']);
    expect(cookie.startsWith(`dcos-acs-auth-cookie=${body.token};`)).toBe(true);
    expect(cookie.split('; ')).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Strict', 'Secure']));
  });
});
