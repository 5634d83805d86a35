// Orchestrator auth under pressure and across starts: failed-login lockouts per account and per
// client (with an injected clock, no waiting), the bound on concurrent password hashing, the cost
// of a hash, the first admin account (given password, environment, random password file), the
// signing key kept across restarts, token lifetime, and --auth=off.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { LoginError, authHeader, loginWithPassword } from '../../../orchestrator/auth/client.ts';
import { DEFAULT_SCRYPT, hashPassword } from '../../../orchestrator/auth/passwords.ts';
import { removeTempDirs, tempDir } from '../../helpers/process.ts';
import { startAuthServer, type AuthServer } from '../../orchestrator-auth-setup.ts';

const ADMIN_PW = 'admin-secret-pw-1';
const servers: AuthServer[] = [];
async function server(...args: Parameters<typeof startAuthServer>): Promise<AuthServer> {
  const s = await startAuthServer(...args);
  servers.push(s);
  return s;
}
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});
afterAll(() => removeTempDirs());

const login = (s: AuthServer, uid: string, password: string) => s.call('POST', '/acs/api/v1/auth/login', { uid, password });

describe('failed-login lockout', () => {
  it('locks an account for a client address after repeated failures, refusing even the right password, then lets it in', async () => {
    const s = await server({ pairLockout: { freeFailures: 3, baseLockoutMs: 1000 } });
    for (let i = 0; i < 4; i++) expect((await login(s, 'admin', `wrong-${i}`)).status).toBe(401);
    const locked = await login(s, 'admin', ADMIN_PW);
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toBe('1');
    expect(locked.body.message).toMatch(/Too many failed login attempts/);
    // Another failure doubles the lockout.
    s.clock.now += 1001;
    expect((await login(s, 'admin', 'wrong-again')).status).toBe(401);
    expect((await login(s, 'admin', ADMIN_PW)).headers.get('retry-after')).toBe('2');
    s.clock.now += 2001;
    const ok = await login(s, 'admin', ADMIN_PW);
    expect(ok.status).toBe(200);
    // Success clears the account's failures.
    for (let i = 0; i < 3; i++) expect((await login(s, 'admin', `wrong-${i}`)).status).toBe(401);
    expect((await login(s, 'admin', ADMIN_PW)).status).toBe(200);
  });

  it('treats unknown accounts the same way (no enumeration)', async () => {
    const s = await server({ pairLockout: { freeFailures: 2, baseLockoutMs: 60_000 } });
    const seq = async (uid: string) => {
      const out: Array<[number, unknown]> = [];
      for (let i = 0; i < 4; i++) {
        const r = await login(s, uid, 'wrong-pass');
        out.push([r.status, r.body]);
      }
      return out;
    };
    expect(await seq('ghost')).toEqual(await seq('admin'));
  });

  it('locks a client that guesses across many accounts', async () => {
    const s = await server({ clientLockout: { freeFailures: 5, baseLockoutMs: 30_000 } });
    for (let i = 0; i < 6; i++) expect((await login(s, `user${i}`, 'guess-123')).status).toBe(401);
    const r = await login(s, 'admin', ADMIN_PW);
    expect(r.status).toBe(429);
    expect(Number(r.headers.get('retry-after'))).toBe(30);
    s.clock.now += 30_001;
    expect((await login(s, 'admin', ADMIN_PW)).status).toBe(200);
  });

  it('also counts failed service-account logins', async () => {
    const s = await server({ pairLockout: { freeFailures: 1, baseLockoutMs: 5000 } });
    for (let i = 0; i < 2; i++) expect((await s.call('POST', '/acs/api/v1/auth/login', { uid: 'svc', token: 'a.b.c' })).status).toBe(401);
    expect((await s.call('POST', '/acs/api/v1/auth/login', { uid: 'svc', token: 'a.b.c' })).status).toBe(429);
  });
});

describe('hashing cost and concurrency', () => {
  it('costs tens of milliseconds per hash by default', async () => {
    const t0 = performance.now();
    const h = await hashPassword('some-password', DEFAULT_SCRYPT);
    expect(performance.now() - t0).toBeGreaterThan(20);
    expect(h).toMatch(/^scrypt\$32768\$8\$1\$/);
  });

  it('takes about as long for an unknown account as for a wrong password', async () => {
    const s = await server({
      scrypt: DEFAULT_SCRYPT,
      pairLockout: { freeFailures: 1000 },
      accountLockout: { freeFailures: 1000 },
      clientLockout: { freeFailures: 1000 },
    });
    // Interleaved, and the fastest of several runs: the intrinsic cost, not the machine's load.
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 7; i++) {
      for (const [uid, times] of [
        ['admin', known],
        ['nobody-here', unknown],
      ] as const) {
        const t0 = performance.now();
        expect((await login(s, uid, 'wrong-password')).status).toBe(401);
        times.push(performance.now() - t0);
      }
    }
    const fastest = (xs: number[]) => Math.min(...xs);
    expect(fastest(known)).toBeGreaterThan(20);
    expect(fastest(unknown) / fastest(known)).toBeGreaterThan(0.4);
    expect(fastest(unknown) / fastest(known)).toBeLessThan(2.5);
  });

  it('refuses a flood of logins with 429 instead of queueing without bound, and keeps serving', async () => {
    const s = await server({ scrypt: DEFAULT_SCRYPT, maxConcurrentHashes: 1, maxQueuedHashes: 2, clientLockout: { freeFailures: 1000 } });
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => login(s, `flood${i}`, 'wrong-password')));
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((x) => x === 429).length).toBeGreaterThan(0);
    expect(statuses.filter((x) => x === 401).length).toBeGreaterThanOrEqual(3);
    expect(statuses.every((x) => x === 401 || x === 429)).toBe(true);
    const busy = replies.find((r) => r.status === 429)!;
    expect(busy.body.message).toMatch(/in progress/);
    expect(busy.headers.get('retry-after')).toBe('1');
    expect((await s.call('GET', '/ping')).status).toBe(200);
    expect((await login(s, 'admin', ADMIN_PW)).status).toBe(200);
  });
});

describe('the first account and the signing key', () => {
  it('writes a random admin password to an owner-only file and logs only its location', async () => {
    const s = await server({ adminPassword: undefined, env: {} });
    const file = join(s.dataDir, 'admin-password');
    expect(s.auth.adminPasswordFile).toBe(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const pw = readFileSync(file, 'utf8').trim();
    expect(pw.length).toBeGreaterThanOrEqual(20);
    expect(s.logs()).toContain(file);
    expect(s.logs()).not.toContain(pw);
    const token = await loginWithPassword(s.base, 'admin', pw);
    expect(statSync(join(s.dataDir, 'auth-signing-key.pem')).mode & 0o777).toBe(0o600);
    const dataDir = s.dataDir;
    await servers.pop()!.close();
    // A restart keeps the password, the key (old tokens stay valid) and does not write a new file.
    const again = await server({ dataDir, adminPassword: undefined, env: {} });
    expect(again.auth.adminPasswordFile).toBeUndefined();
    expect(readFileSync(file, 'utf8').trim()).toBe(pw);
    expect((await again.call('GET', '/v2/apps', undefined, authHeader(token))).body.who).toBe('admin');
    expect((await login(again, 'admin', pw)).status).toBe(200);
    expect(again.logs()).not.toContain(pw);
    expect(again.logs()).not.toContain(token);
  });

  it('takes the admin password from STARMAP_ADMIN_PASSWORD, and a later given password replaces it', async () => {
    const dataDir = tempDir('orch-auth-');
    const s = await server({ dataDir, adminPassword: undefined, env: { STARMAP_ADMIN_PASSWORD: 'from-the-env-1' } });
    expect(s.auth.adminPasswordFile).toBeUndefined();
    expect((await login(s, 'admin', 'from-the-env-1')).status).toBe(200);
    expect(s.logs()).not.toContain('from-the-env-1');
    await servers.pop()!.close();
    const t = await server({ dataDir, adminPassword: 'from-the-flag-2', env: { STARMAP_ADMIN_PASSWORD: 'from-the-env-1' } });
    expect((await login(t, 'admin', 'from-the-flag-2')).status).toBe(200);
    expect((await login(t, 'admin', 'from-the-env-1')).status).toBe(401);
    expect(t.logs()).not.toContain('from-the-flag-2');
  });

  it('names a damaged signing key file at start', async () => {
    const dataDir = tempDir('orch-auth-');
    writeFileSync(join(dataDir, 'auth-signing-key.pem'), 'garbage', { mode: 0o600 });
    await expect(startAuthServer({ dataDir })).rejects.toThrow(/auth-signing-key\.pem is not a PEM private key/);
  });

  it('refuses a too short admin password at start', async () => {
    await expect(startAuthServer({ adminPassword: 'short' })).rejects.toThrow(/at least 8/);
  });
});

describe('client helper', () => {
  it('reports a failed login with its status and message, never the password', async () => {
    const s = await server();
    const err = await loginWithPassword(s.base, 'admin', 'not-the-password').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LoginError);
    expect((err as LoginError).status).toBe(401);
    expect((err as LoginError).message).toMatch(/Invalid username or password/);
    expect((err as LoginError).message).not.toContain('not-the-password');
  });
});

describe('token lifetime and --auth=off', () => {
  it('issues tokens with the configured lifetime, refused once expired', async () => {
    const s = await server({ tokenLifetimeSeconds: 60 });
    const token = await loginWithPassword(s.base, 'admin', ADMIN_PW);
    const p = decodeJwt(token);
    expect(p.exp! - p.iat!).toBe(60);
    expect((await s.call('GET', '/v2/apps', undefined, authHeader(token))).status).toBe(200);
    s.clock.now += 61_000;
    const r = await s.call('GET', '/v2/apps', undefined, authHeader(token));
    expect(r.status).toBe(401);
    expect(r.body.message).toMatch(/expired/);
  });

  it('opens everything with a warning when auth is off', async () => {
    const s = await server({ enabled: false });
    expect((await s.call('GET', '/v2/apps')).body).toEqual({ apps: [], who: null });
    expect((await s.call('GET', '/acs/api/v1/users')).status).toBe(200);
    expect(s.logs()).toMatch(/authentication is OFF/);
    expect(s.logs()).toMatch(/"level":40/);
  });
});
