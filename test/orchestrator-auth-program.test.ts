// The orchestrator program with --auth=on, as a real process on loopback: what stays open, the
// 401s, password and service-account login, the scenario runner's client logging in, the random
// admin password file, tokens surviving a restart, and no secret in the program's output.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { authHeader, loginWithPassword, loginWithServiceAccount } from '../orchestrator/auth/client.ts';
import { OrchestratorClient } from '../scenarios/run/orchestrator-client.ts';
import { startOrchestrator } from './helpers/orchestrator.ts';
import { stopAll, tempDir } from './helpers/process.ts';

afterAll(stopAll);

describe('orchestrator --auth=on', () => {
  it('secures the API, logs in with a password and a service account, and leaks nothing', async () => {
    const pw = 'program-admin-pw-7';
    const o = await startOrchestrator(['--auth=on', `--admin-password=${pw}`]);
    expect((await o.call('GET', '/ping')).status).toBe(200);
    for (const path of ['/v2/apps', '/v2/info', '/v2/deployments', '/acs/api/v1/users']) {
      const r = await o.call('GET', path);
      expect(r.status, path).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe('acsjwt');
      expect(r.body.message).toMatch(/token/);
    }
    const events = await fetch(`${o.url}/v2/events`, { headers: { accept: 'text/event-stream' } });
    expect(events.status).toBe(401);
    await events.body?.cancel();

    const admin = await loginWithPassword(o.url, 'admin', pw);
    expect((await o.call('GET', '/v2/apps', undefined, authHeader(admin))).status).toBe(200);

    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    const created = await o.call('PUT', '/acs/api/v1/users/ci-bot', { public_key: publicKey.export({ type: 'spki', format: 'pem' }) }, authHeader(admin));
    expect(created.status).toBe(201);
    const bot = await loginWithServiceAccount(o.url, 'ci-bot', privatePem);
    expect((await o.call('GET', '/v2/info', undefined, authHeader(bot))).status).toBe(200);

    // The scenario runner's client logs in the DC/OS way and uses the token.
    const client = new OrchestratorClient(o.url);
    await client.login('admin', pw);
    expect(await client.call('GET', '/v2/apps')).toMatchObject({ apps: [] });

    const out = o.proc.output();
    for (const secret of [pw, admin, bot, privatePem, ...privatePem.split('\n').filter((l) => l.length > 40)]) expect(out.includes(secret)).toBe(false);
  });

  it('writes a random admin password to an owner-only file, logs its location, and keeps tokens valid across a restart', async () => {
    const dataDir = tempDir('orch-auth-prog-');
    const o = await startOrchestrator(['--auth=on'], { dataDir });
    const file = join(dataDir, 'admin-password');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const pw = readFileSync(file, 'utf8').trim();
    expect(o.proc.output()).toContain(file);
    expect(o.proc.output()).not.toContain(pw);
    const token = await loginWithPassword(o.url, 'admin', pw);
    await o.proc.stop();
    const again = await startOrchestrator(['--auth=on'], { dataDir, port: o.port });
    expect((await again.call('GET', '/v2/apps', undefined, authHeader(token))).status).toBe(200);
    expect(readFileSync(file, 'utf8').trim()).toBe(pw);
    expect(again.proc.output()).not.toContain(pw);
    expect(again.proc.output()).not.toContain(token);
  });
});
