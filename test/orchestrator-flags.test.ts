// The orchestrator program: flags in both spellings, errors naming the flag, --auth=on wiring,
// /v2/events wired, the single-file executable.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NODE, ROOT, runToEnd, stopAll } from './helpers/process.ts';
import { startOrchestrator } from './helpers/orchestrator.ts';

afterAll(async () => {
  await stopAll();
});

describe('orchestrator flags', () => {
  it('--help explains the flags; bad values exit 2 naming the flag', async () => {
    const help = await runToEnd(NODE, ['orchestrator/main.ts', '--help']);
    expect(help.code).toBe(0);
    for (const f of [
      '--http-port',
      '--data-dir',
      '--hostname',
      '--local-port-min',
      '--task-port-min',
      '--auth',
      '--event_subscriber',
      '--default_network_name',
      '--env_vars_prefix',
    ])
      expect(help.output).toContain(f);
    const bad = await runToEnd(NODE, ['orchestrator/main.ts', '--http-port=99999']);
    expect(bad.code).toBe(2);
    expect(bad.output).toMatch(/--http-port/);
    const range = await runToEnd(NODE, ['orchestrator/main.ts', '--local-port-min=2000', '--local-port-max=1000']);
    expect(range.code).toBe(2);
    expect(range.output).toMatch(/--local-port-min/);
  });

  it('accepts Marathon underscore spellings and reports them in /v2/info', async () => {
    const o = await startOrchestrator([
      '--event_subscriber',
      'http_callback',
      '--http_endpoints',
      'http://127.0.0.1:9/cb',
      '--default_network_name',
      'dcos',
      '--local_port_min',
      '15000',
      '--local_port_max',
      '15100',
      '--mesos_role',
      'slave_public',
    ]);
    const info = (await o.call('GET', '/v2/info')).body;
    expect(info.event_subscriber).toEqual({ type: 'http_callback', http_endpoints: ['http://127.0.0.1:9/cb'] });
    expect(info.marathon_config).toMatchObject({ local_port_min: 15000, local_port_max: 15100, default_network_name: 'dcos', mesos_role: 'slave_public' });
    expect((await o.call('GET', '/v2/eventSubscriptions')).body).toEqual({ callbackUrls: ['http://127.0.0.1:9/cb'] });
    const created = await o.call('POST', '/v2/apps', { id: '/ip', cmd: 'sleep 1', instances: 0, ipAddress: {} });
    expect(created.body.ipAddress.networkName).toBe('dcos');
    expect(created.body.ports).toBeUndefined();
    await o.proc.stop('SIGTERM');
  }, 30_000);

  it('--auth=on requires a token except for /ping and the login', async () => {
    const o = await startOrchestrator(['--auth=on', '--admin-password=correct-horse-battery']);
    expect((await o.call('GET', '/ping')).status).toBe(200);
    expect((await o.call('GET', '/v2/apps')).status).toBe(401);
    const login = await o.call('POST', '/acs/api/v1/auth/login', { uid: 'admin', password: 'correct-horse-battery' });
    expect(login.status).toBe(200);
    const ok = await o.call('GET', '/v2/apps', undefined, { authorization: `token=${login.body.token}` });
    expect(ok.status).toBe(200);
    await o.proc.stop('SIGTERM');
  }, 30_000);

  const bin = join(ROOT, 'dist', 'bin', 'orchestrator');
  it.skipIf(!existsSync(bin))(
    'the single-file executable serves the API and runs tasks',
    async () => {
      const o = await startOrchestrator(['--task-port-min=38000', '--task-port-max=38100'], { binary: bin });
      expect((await o.call('POST', '/v2/apps', { id: '/b', cmd: 'exec sleep 1000' })).status).toBe(201);
      const { waitFor } = await import('./helpers/wait.ts');
      await waitFor(async () => (await o.call('GET', '/v2/apps/b')).body.app.tasksRunning === 1, { timeoutMs: 15_000 });
      await o.proc.stop('SIGTERM');
    },
    30_000,
  );
});
