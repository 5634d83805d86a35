// deploy/marathon: the stars demo as Marathon groups. Checked at schema level (ids, resources,
// ports, health checks on /healthz, labels, commands running the agents), then deployed to
// Starmap's own orchestrator with the built binaries (dist/bin) on loopback ports: every task turns
// healthy and the collector sees all three probes, each reaching the other two agents.
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, removeTempDirs, ROOT, stopAll } from './helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from './helpers/orchestrator.ts';
import { waitFor } from './helpers/wait.ts';

const DIR = join(ROOT, 'deploy', 'marathon');
const BIN = join(ROOT, 'dist', 'bin');

interface App {
  id: string;
  cmd: string;
  env: Record<string, string>;
  cpus: number;
  mem: number;
  instances: number;
  portDefinitions: { port: number; protocol: string; name: string }[];
  requirePorts: boolean;
  healthChecks: { protocol: string; path: string; portIndex: number }[];
  labels: Record<string, string>;
}
interface Group {
  id: string;
  labels?: Record<string, string>;
  apps: App[];
}

const groups: Group[] = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => JSON.parse(readFileSync(join(DIR, f), 'utf8')) as Group);
const apps = groups.flatMap((g) => g.apps);

let orch: StartedOrchestrator | undefined;

afterAll(async () => {
  // Tasks run in process groups of their own: delete the apps (the orchestrator kills their tasks)
  // and wait until no task is left before stopping the orchestrator.
  if (orch) {
    for (const a of apps) await orch.call('DELETE', `/v2/apps${a.id}?force=true`).catch(() => undefined);
    await waitFor(
      async () => {
        const r = await orch!.call<{ tasks: unknown[] }>('GET', '/v2/tasks');
        return r.status === 200 && r.body.tasks.length === 0;
      },
      { timeoutMs: 20_000, message: 'all tasks gone' },
    ).catch((e: unknown) => console.error(e));
  }
  await stopAll();
  removeTempDirs();
});

describe('Marathon groups', () => {
  it('are the stars demo: /stars, /client, /management-ui with sane app definitions', () => {
    expect(groups.map((g) => g.id).sort()).toEqual(['/client', '/management-ui', '/stars']);
    expect(apps.map((a) => a.id).sort()).toEqual(['/client/client', '/management-ui/collector', '/stars/backend', '/stars/frontend']);
    const ports: Record<string, number> = { '/stars/frontend': 80, '/stars/backend': 6379, '/client/client': 9000, '/management-ui/collector': 9001 };
    for (const g of groups) {
      for (const a of g.apps) {
        expect(a.id.startsWith(`${g.id}/`), a.id).toBe(true);
        expect(a.id).toMatch(/^(\/[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/);
        expect(a.cpus > 0 && a.mem >= 64 && a.instances === 1, a.id).toBe(true);
        expect(
          a.portDefinitions.map((p) => p.port),
          a.id,
        ).toEqual([ports[a.id]]);
        expect(a.healthChecks, a.id).toEqual([expect.objectContaining({ protocol: 'HTTP', path: '/healthz', portIndex: 0 })]);
        expect(a.labels['app.kubernetes.io/part-of'], a.id).toBe('starmap-stars-demo');
        const program = a.id.endsWith('collector') ? 'collector' : 'probe';
        expect(a.cmd, a.id).toContain(`"\${STARMAP_BIN}/${program}"`);
        expect(a.cmd, a.id).toContain('--http-port="${PORT0}"');
        expect(a.env.STARMAP_BIN, a.id).toBeTruthy();
      }
    }
    // Collector resources and probe targets name the same URLs (the UI matches them character for character).
    const collector = apps.find((a) => a.id.endsWith('collector'))!;
    const resourceUrls = (JSON.parse(collector.env.RESOURCES_JSON!) as { url: string }[]).map((r) => r.url).join(',');
    for (const a of apps.filter((x) => x !== collector)) expect(a.env.PROBE_URLS).toBe(resourceUrls);
  });

  it('deploy to the orchestrator with the built agents and turn healthy', async (ctx) => {
    const missing = ['probe', 'collector'].filter((p) => !existsSync(join(BIN, p)));
    if (missing.length) ctx.skip(`not built: dist/bin/${missing.join(', dist/bin/')} (npm run build)`);
    if (!existsSync(join(ROOT, 'orchestrator', 'main.ts'))) ctx.skip('orchestrator/main.ts does not exist yet');

    // Loopback ports instead of 80/6379/9000/9001, and loopback URLs instead of Mesos-DNS names.
    const port: Record<string, number> = {};
    for (const a of apps) port[a.id] = await freePort();
    const url = (id: string): string => `http://127.0.0.1:${port[id]}/status`;
    const dnsToLocal: Record<string, string> = {
      'frontend-stars.marathon.mesos:80': `127.0.0.1:${port['/stars/frontend']}`,
      'backend-stars.marathon.mesos:6379': `127.0.0.1:${port['/stars/backend']}`,
      'client-client.marathon.mesos:9000': `127.0.0.1:${port['/client/client']}`,
    };
    const localise = (s: string): string => s.replace(/[a-z-]+\.marathon\.mesos:\d+/g, (m) => dnsToLocal[m] ?? m);
    const local: Group[] = structuredClone(groups).map((g) => ({
      ...g,
      apps: g.apps.map((a) => ({
        ...a,
        portDefinitions: [{ ...a.portDefinitions[0]!, port: port[a.id]! }],
        env: Object.fromEntries(Object.entries(a.env).map(([k, v]) => [k, k === 'STARMAP_BIN' ? BIN : k === 'STARMAP_ADDRESS' ? '127.0.0.1' : localise(v)])),
        healthChecks: a.healthChecks.map((h) => ({ ...h, gracePeriodSeconds: 30, intervalSeconds: 1, timeoutSeconds: 2 })),
      })),
    }));

    const o = await startOrchestrator();
    orch = o;
    // Marathon's way: each group file goes to POST /v2/groups as it is.
    for (const g of local) {
      const r = await o.call('POST', '/v2/groups', g);
      expect(r.status, `${g.id}: ${r.text}`).toBe(201);
    }
    for (const a of apps) {
      await waitFor(
        async () => {
          const r = await o.call<{ app: { tasksHealthy: number } }>('GET', `/v2/apps${a.id}`);
          return r.status === 200 && r.body.app.tasksHealthy === 1;
        },
        { timeoutMs: 30_000, message: `${a.id} healthy` },
      );
    }
    const collector = `http://127.0.0.1:${port['/management-ui/collector']}`;
    await waitFor(
      async () => {
        const r = (await (await fetch(`${collector}/responses`)).json()) as {
          responses: Record<string, { url: string; json: { status: { targets: { url: string; reachable: boolean }[] } } } | null>;
        };
        const ids = ['frontend', 'backend', 'client'];
        return ids.every((id) => {
          const resp = r.responses[id];
          return resp && resp.json.status.targets.length === 3 && resp.json.status.targets.every((t) => t.reachable);
        });
      },
      { timeoutMs: 30_000, message: 'collector sees the three probes, each reaching all agents' },
    );
    expect(url('/stars/frontend')).toContain('127.0.0.1');
  }, 120_000);
});
