// kill -9, again and again: in the middle of a stream of writes, in the middle of the start-up that
// stops the previous run's tasks (which ignore SIGTERM, so that stopping them takes their grace
// period), and with writes sent while that start-up is still going on (issue 16). At the end
// nothing acknowledged is lost and nothing is stuck: every deployment finishes, no task stays
// TASK_STAGING, every app runs its instances, no app stays locked, no old process survives.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { afterAll, describe, expect, it } from 'vitest';
import { NODE, freePort, killPids, pidsMatching, start, stopAll, tempDir, waitForHttp } from './helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from './helpers/orchestrator.ts';
import { waitFor } from './helpers/wait.ts';

const ITERATIONS = Number(process.env.STARMAP_CRASH_ITERATIONS ?? 6);
const ARGS = ['--local-port-min=13000', '--local-port-max=13200', '--task-port-min=40400', '--task-port-max=40599'];
const MARKER = `sleep 8${process.pid % 1000}41`;
const CMD = `trap '' TERM; exec ${MARKER}`;

const markerPids = () => pidsMatching(MARKER);

afterAll(async () => {
  await stopAll();
  killPids(pidsMatching(MARKER)); // only if a failure left them
});

/** What the orchestrator acknowledged, per app: the instances and the label value it must show. */
type Acked = Map<string, { instances: number; w: string }>;

/** Writes to fresh apps, one writer per app (create, then relabel and scale), until stopped. */
function writers(o: StartedOrchestrator, prefix: string, acked: Acked, count: number): { stop: () => Promise<void> } {
  let stopped = false;
  const call = async (method: string, path: string, body: unknown) => {
    const r = await fetch(`${o.url}${path}`, { method, headers: { ...o.authHeaders, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await r.text();
    return r.status;
  };
  const one = async (k: number) => {
    for (let n = 0; !stopped; n++) {
      const id = `${prefix}/w${k}n${n}`;
      try {
        if ((await call('POST', '/v2/apps', { id, cmd: CMD, instances: 1, taskKillGracePeriodSeconds: 2, labels: { w: '0' } })) === 201)
          acked.set(id, { instances: 1, w: '0' });
        if ((await call('PUT', `/v2/apps${id}?force=true`, { instances: 2, labels: { w: '1' } })) === 200) acked.set(id, { instances: 2, w: '1' });
      } catch {
        return; // the orchestrator is gone
      }
    }
  };
  const running = Array.from({ length: count }, (_, k) => one(k));
  return {
    stop: async () => {
      stopped = true;
      await Promise.all(running);
    },
  };
}

describe('kill -9, repeatedly', () => {
  it(`loses nothing acknowledged and leaves nothing stuck (${ITERATIONS} crashes)`, async () => {
    const dataDir = tempDir('orch-crashes-');
    const port = await freePort();
    const acked: Acked = new Map();
    let o = await startOrchestrator(ARGS, { dataDir, port });
    for (let i = 0; i < ITERATIONS; i++) {
      const mode = i % 3;
      if (mode === 1) {
        // The middle of start-up: the port answers while the previous run's tasks are still being stopped.
        o.proc.child.kill('SIGKILL');
        await o.proc.exited;
        const p = start(NODE, [
          'orchestrator/main.ts',
          '--http-address=127.0.0.1',
          `--http-port=${port}`,
          `--data-dir=${dataDir}`,
          '--hostname=127.0.0.1',
          '--log-level=warn',
          ...ARGS,
        ]);
        await waitForHttp(`http://127.0.0.1:${port}/ping`, 20_000);
        p.child.kill('SIGKILL');
        await p.exited;
        o = await startOrchestrator(ARGS, { dataDir, port });
        continue;
      }
      // mode 0: writes sent at once after a restart wait for its recovery; mode 2: writes once it is
      // over (every app runs its instances again: nothing launches before recovery ends).
      if (mode === 2) {
        await waitFor(async () => ((await o.call('GET', '/v2/apps?id=/crash/')).body.apps as any[]).every((a) => a.tasksRunning === a.instances), {
          timeoutMs: 60_000,
          message: `recovered in iteration ${i}`,
        });
      }
      const before = acked.size;
      const w = writers(o, `/crash/i${i}`, acked, 3);
      await waitFor(() => acked.size >= before + 4, { timeoutMs: 30_000, intervalMs: 5, message: `writes acknowledged in iteration ${i}` });
      o.proc.child.kill('SIGKILL');
      await o.proc.exited;
      await w.stop();
      o = await startOrchestrator(ARGS, { dataDir, port });
    }
    // Writes sent while this last start-up is still stopping the previous run's tasks, and no
    // crash after them: they must not leave their tasks TASK_STAGING and their apps locked.
    const before = acked.size;
    const last = writers(o, '/crash/last', acked, 2);
    await waitFor(() => acked.size >= before + 2, { timeoutMs: 30_000, intervalMs: 5, message: 'writes during the last recovery acknowledged' });
    await last.stop();

    // Every acknowledged write is there.
    const apps = new Map(((await o.call('GET', '/v2/apps?id=/crash/')).body.apps as any[]).map((a) => [a.id, a]));
    for (const [id, want] of acked) {
      expect(apps.get(id), id).toBeDefined();
      // A later write may have landed without its answer: never less than what was acknowledged.
      expect(apps.get(id).instances, id).toBeGreaterThanOrEqual(want.instances);
      expect(Number(apps.get(id).labels.w), id).toBeGreaterThanOrEqual(Number(want.w));
    }
    // Nothing stuck: deployments end, every task runs, every app has its instances.
    await waitFor(async () => ((await o.call('GET', '/v2/deployments')).body as any[]).length === 0, {
      timeoutMs: 60_000,
      message: 'every deployment finished',
    });
    const settled = await waitFor(
      async () => {
        const list = (await o.call('GET', '/v2/apps?id=/crash/&embed=apps.tasks')).body.apps as any[];
        const ok = list.every((a) => a.tasks.length === a.instances && a.tasks.every((t: any) => t.state === 'TASK_RUNNING'));
        return ok ? list : undefined;
      },
      { timeoutMs: 60_000, message: 'every app runs its instances, no task left TASK_STAGING' },
    );
    // Old processes are gone: exactly one per running task carries the marker.
    const tasks = settled.reduce((n, a) => n + a.instances, 0);
    await waitFor(() => markerPids().length === tasks, { timeoutMs: 30_000, message: `${tasks} task processes, no leftovers (found ${markerPids().length})` });
    // No app is locked: an update without force goes through.
    const first = settled[0];
    expect((await o.call('PUT', `/v2/apps${first.id}`, { instances: first.instances + 1 })).status).toBe(200);
    await o.proc.stop('SIGTERM');
    expect(acked.size).toBeGreaterThanOrEqual(4 * Math.ceil((ITERATIONS * 2) / 3));
  }, 300_000);
});
