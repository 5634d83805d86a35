// Crash safety: kill -9 in the middle of a stream of writes, restart on the same data dir: every
// acknowledged write is there, running deployments too, and the old tasks are replaced (their
// processes killed), never adopted.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { afterAll, describe, expect, it } from 'vitest';
import { pidsMatching, stopAll, tempDir } from './helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from './helpers/orchestrator.ts';
import { waitFor } from './helpers/wait.ts';

let o: StartedOrchestrator | undefined;
afterAll(async () => {
  await o?.proc.stop('SIGTERM');
  await stopAll();
});

const pidsOf = pidsMatching;

describe('kill -9', () => {
  it('keeps every acknowledged write, running deployments, and replaces tasks', async () => {
    const dataDir = tempDir('orch-crash-');
    const args = ['--task-port-min=36000', '--task-port-max=36999'];
    o = await startOrchestrator(args, { dataDir });
    const marker = `sleep 4${process.pid % 1000}7`;
    expect((await o.call('POST', '/v2/apps', { id: '/keep', cmd: `exec ${marker}`, instances: 2 })).status).toBe(201);
    await waitFor(async () => (await o!.call('GET', '/v2/apps/keep')).body.app.tasksRunning === 2, { timeoutMs: 15_000 });
    const oldPids = pidsOf(marker);
    expect(oldPids).toHaveLength(2);
    // A deployment that cannot finish (never healthy) must survive too.
    const stuck = await o.call('POST', '/v2/apps', {
      id: '/stuck',
      cmd: 'exec sleep 1000',
      healthChecks: [{ protocol: 'COMMAND', command: { value: 'false' } }],
    });
    const stuckDeployment = stuck.body.deployments[0].id;

    // A stream of writes from 4 clients; kill -9 once 60 have been acknowledged.
    const acked = new Map<string, number>();
    let stop = false;
    const base = o.url;
    const auth = o.authHeaders;
    const client = async (c: number) => {
      for (let i = 0; !stop; i++) {
        const id = `/stream/c${c}/a${i}`;
        try {
          const r = await fetch(`${base}/v2/apps`, {
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({ id, cmd: 'sleep 1', instances: 0 }),
          });
          if (r.status === 201) acked.set(id, 0);
          await r.text();
          const u = await fetch(`${base}/v2/apps${id}`, {
            method: 'PUT',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({ instances: 0, labels: { n: String(i) } }),
          });
          if (u.status === 200) acked.set(id, 1);
          await u.text();
        } catch {
          return;
        }
      }
    };
    const clients = [0, 1, 2, 3].map(client);
    await waitFor(() => acked.size >= 60, { timeoutMs: 30_000, intervalMs: 5 });
    o.proc.child.kill('SIGKILL');
    await o.proc.exited;
    stop = true;
    await Promise.all(clients);
    const snapshot = new Map(acked);

    o = await startOrchestrator(args, { dataDir, port: o.port });
    const apps = new Map(((await o.call('GET', '/v2/apps?id=stream')).body.apps as any[]).map((a) => [a.id, a]));
    for (const [id, stage] of snapshot) {
      expect(apps.has(id), id).toBe(true);
      if (stage === 1) expect(apps.get(id).labels.n, id).toBeDefined();
    }
    expect(((await o.call('GET', '/v2/deployments')).body as any[]).map((d) => d.id)).toContain(stuckDeployment);
    // Old processes are killed; new tasks are started.
    await waitFor(() => oldPids.every((p) => !pidsOf(marker).includes(p)), { timeoutMs: 15_000, message: 'old task processes killed' });
    const keep = await waitFor(
      async () => {
        const a = (await o!.call('GET', '/v2/apps/keep')).body.app;
        return a.tasksRunning === 2 ? a : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(pidsOf(marker)).toHaveLength(2);
    expect(keep.versions ?? keep.version).toBeDefined();
    expect((await o.call('GET', '/v2/apps/keep/versions')).body.versions).toHaveLength(1);
  }, 90_000);

  it('refuses a second orchestrator on the same data dir', async () => {
    const dataDir = tempDir('orch-lock-');
    const first = await startOrchestrator([], { dataDir });
    const { start } = await import('./helpers/process.ts');
    const { NODE } = await import('./helpers/process.ts');
    const second = start(NODE, ['orchestrator/main.ts', '--http-port=0', `--data-dir=${dataDir}`]);
    expect(await second.exited).toBe(1);
    expect(second.output()).toMatch(/in use by another orchestrator \(pid \d+\)/);
    await first.proc.stop('SIGTERM');
  }, 30_000);
});
