// Orchestrator benchmarks, each next to a baseline measured in the same run:
// - POST /v2/apps with 100 instances of `sleep 1000` until all are TASK_RUNNING, vs spawning the
//   same 100 processes directly;
// - GET /v2/apps latency with 1,000 apps, vs a bare fastify serving the same bytes;
// - requests/s of POST /v2/apps and PUT scale, vs a bare fastify accepting the same bodies.
import Fastify from 'fastify';
import { stopAll } from '../test/helpers/process.ts';
import { startOrchestrator } from '../test/helpers/orchestrator.ts';
import { spawnDirect } from './lib/measure.ts';
import { median, percentile, ratio, table, writeResults, type ResultRow } from './lib/results.ts';
import { runBench } from './lib/run-bench.ts';

const N_TASKS = 100;
const N_APPS = 1000;
const N_SCALE = 200;
const CONCURRENCY = 8;

async function pool<T>(items: T[], n: number, fn: (x: T) => Promise<void>): Promise<number> {
  const t0 = performance.now();
  let i = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (i < items.length) await fn(items[i++]!);
    }),
  );
  return items.length / ((performance.now() - t0) / 1000);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function json(url: string, init?: RequestInit): Promise<{ status: number; body: any }> {
  const r = await fetch(url, init);
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

async function main(): Promise<void> {
  // Auth is on by default: the bench logs in as admin like a user and sends the token.
  const o = await startOrchestrator(['--log-level=warn']);
  const url = o.url;
  const orch = (path: string, init: RequestInit = {}) =>
    json(`${url}${path}`, { ...init, headers: { ...o.authHeaders, ...((init.headers ?? {}) as Record<string, string>) } });
  try {
    const post = (body: unknown) => orch('/v2/apps', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

    // 1. 100 tasks to TASK_RUNNING
    const direct = await spawnDirect(N_TASKS);
    const t0 = performance.now();
    const created = await post({ id: '/bench/many', cmd: 'exec sleep 1000', instances: N_TASKS });
    if (created.status !== 201) throw new Error(`POST failed: ${created.status}`);
    for (;;) {
      const a = (await orch(`/v2/apps/bench/many`)).body.app;
      if (a.tasksRunning === N_TASKS) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    const toRunning = performance.now() - t0;
    await orch(`/v2/apps/bench/many`, { method: 'DELETE' });
    for (;;) {
      const ts = (await orch(`/v2/tasks`)).body.tasks as unknown[];
      if (ts.length === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }

    // 2. POST /v2/apps requests/s (1,000 apps with 0 instances), vs bare fastify
    const ids = Array.from({ length: N_APPS }, (_, i) => `/bench/g${i % 10}/app-${i}`);
    const postRate = await pool(ids, CONCURRENCY, async (id) => {
      const r = await post({ id, cmd: 'sleep 1000', instances: 0, labels: { bench: 'yes' } });
      if (r.status !== 201) throw new Error(`POST ${id}: ${r.status}`);
    });
    const bare = Fastify();
    let payload = '';
    bare.post('/v2/apps', async (req, reply) => reply.code(201).send({ ...(req.body as object), tasks: [] }));
    bare.put('/v2/apps/*', async () => ({ version: new Date().toISOString(), deploymentId: crypto.randomUUID() }));
    bare.get('/v2/apps', async (_req, reply) => reply.type('application/json').send(payload));
    const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });
    const barePostRate = await pool(ids, CONCURRENCY, async (id) => {
      await json(`${bareUrl}/v2/apps`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id, cmd: 'sleep 1000', instances: 0, labels: { bench: 'yes' } }),
      });
    });

    // 3. GET /v2/apps latency with 1,000 apps
    const lat: number[] = [];
    let bytes = 0;
    for (let i = 0; i < 40; i++) {
      const s = performance.now();
      const r = await fetch(`${url}/v2/apps`, { headers: o.authHeaders });
      const t = await r.text();
      lat.push(performance.now() - s);
      bytes = t.length;
      payload = t;
    }
    const bareLat: number[] = [];
    for (let i = 0; i < 40; i++) {
      const s = performance.now();
      await (await fetch(`${bareUrl}/v2/apps`)).text();
      bareLat.push(performance.now() - s);
    }

    // 4. PUT scale 0 → 1 (each launches a task) requests/s
    const scaleIds = ids.slice(0, N_SCALE);
    const putRate = await pool(scaleIds, CONCURRENCY, async (id) => {
      const r = await orch(`/v2/apps${id}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instances: 1 }) });
      if (r.status !== 200) throw new Error(`PUT ${id}: ${r.status}`);
    });
    const barePutRate = await pool(scaleIds, CONCURRENCY, async (id) => {
      await json(`${bareUrl}/v2/apps${id}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instances: 1 }) });
    });
    await bare.close();

    const md = [
      `Orchestrator from source (\`node orchestrator/main.ts\`), auth on (token checked on every request), SQLite with synchronous=FULL, ${CONCURRENCY} concurrent clients on loopback.`,
      '',
      table(
        ['figure', 'orchestrator', 'baseline (same run)', 'ratio'],
        [
          [
            `${N_TASKS} × \`sleep 1000\`: POST /v2/apps → all TASK_RUNNING`,
            `${toRunning.toFixed(0)} ms`,
            `${direct.toFixed(0)} ms (spawn directly)`,
            `${(toRunning / direct).toFixed(1)}×`,
          ],
          [
            `GET /v2/apps, ${N_APPS} apps (${(bytes / 1024).toFixed(0)} KiB), median`,
            `${median(lat).toFixed(1)} ms`,
            `${median(bareLat).toFixed(1)} ms (bare fastify, same bytes)`,
            `${(median(lat) / median(bareLat)).toFixed(1)}×`,
          ],
          [
            `GET /v2/apps, ${N_APPS} apps, p95`,
            `${percentile(lat, 95).toFixed(1)} ms`,
            `${percentile(bareLat, 95).toFixed(1)} ms`,
            `${(percentile(lat, 95) / percentile(bareLat, 95)).toFixed(1)}×`,
          ],
          [
            'POST /v2/apps (instances 0)',
            `${postRate.toFixed(0)} req/s`,
            `${barePostRate.toFixed(0)} req/s (bare fastify echo)`,
            `${(postRate / barePostRate).toFixed(2)}×`,
          ],
          [
            'PUT /v2/apps/{id} scale 0 → 1',
            `${putRate.toFixed(0)} req/s`,
            `${barePutRate.toFixed(0)} req/s (bare fastify)`,
            `${(putRate / barePutRate).toFixed(2)}×`,
          ],
        ],
      ),
    ].join('\n');
    console.log(md);
    const row = (measure: string, value: string, baseline: string, r: string): ResultRow => ({ measure, value, baseline, ratio: r, goal: '-', met: '-' });
    writeResults('Orchestrator', [
      row(
        `${N_TASKS} × \`sleep 1000\`: POST /v2/apps → all TASK_RUNNING (from source, auth on)`,
        `${toRunning.toFixed(0)} ms`,
        `spawn directly: ${direct.toFixed(0)} ms`,
        ratio(toRunning, direct, 1),
      ),
      row(
        `GET /v2/apps, ${N_APPS} apps (${(bytes / 1024).toFixed(0)} KiB), median`,
        `${median(lat).toFixed(1)} ms`,
        `bare fastify, same bytes: ${median(bareLat).toFixed(1)} ms`,
        ratio(median(lat), median(bareLat), 1),
      ),
      row(
        `GET /v2/apps, ${N_APPS} apps, p95`,
        `${percentile(lat, 95).toFixed(1)} ms`,
        `${percentile(bareLat, 95).toFixed(1)} ms`,
        ratio(percentile(lat, 95), percentile(bareLat, 95), 1),
      ),
      row(
        `POST /v2/apps (instances 0), ${CONCURRENCY} clients`,
        `${postRate.toFixed(0)} req/s`,
        `bare fastify echo: ${barePostRate.toFixed(0)} req/s`,
        ratio(postRate, barePostRate),
      ),
      row('PUT /v2/apps/{id} scale 0 → 1', `${putRate.toFixed(0)} req/s`, `bare fastify: ${barePutRate.toFixed(0)} req/s`, ratio(putRate, barePutRate)),
    ]);
  } finally {
    await o.proc.stop('SIGTERM');
    await stopAll();
  }
}

runBench(main);
