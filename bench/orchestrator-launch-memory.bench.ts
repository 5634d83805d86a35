// The orchestrator's rows of issue #17, each next to its baseline in the same run:
//   1. POST /v2/apps with `instances: 100` of `exec sleep 1000` until all 100 are TASK_RUNNING, vs
//      spawning the same 100 `sh -c` processes directly (as the executor does), alternated, 3 times;
//   2. RSS with 1,000 apps (instances 0) 2 s after GET /v2/apps, with the default V8 flags and with
//      --optimize-for-size, and 12 s after (settled), vs bare fastify (its own process) having
//      served the same bytes.
// The orchestrator runs as shipped (dist/bin/orchestrator) and, to compare V8 flags, from source
// (`node [flags] orchestrator/main.ts`, which also holds Node's TypeScript stripper: ~17 MiB),
// --auth=off, each measurement in a fresh process with a fresh data dir. The bare fastify
// baseline runs as plain JavaScript (`node -e`), so it pays no stripper either.
// Usage: node bench/orchestrator-launch-memory.bench.ts [--before=BIN_DIR[,BIN_DIR...]] [--only=launch|memory] [--flags] [--apps=N]
//   --before: older builds' orchestrators launch (and the first holds 1,000 apps) too, alternated
//     with this one and the baseline;
//   --flags: so does the orchestrator from source with V8's defaults and with --optimize-for-size;
//   --apps: each orchestrator holds N apps (instances 0, served once by GET /v2/apps) before it
//     launches, and the baseline spawns from a fresh process (this one has grown by then, and a
//     fork's cost grows with the forking process' memory).
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { NODE, ROOT, freePort, runToEnd, start, stopAll, tempDir, waitForHttp, type Running } from '../test/helpers/process.ts';
import { rssOf, spawnDirect } from './lib/measure.ts';
import { median, met, table, writeResults, type ResultRow } from './lib/results.ts';
import { runBench } from './lib/run-bench.ts';
import { EXEC_ARGV } from '../scripts/lib/exec-argv.ts';

const N_TASKS = 100;
const N_APPS = 1000;
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);

const BIN = join(ROOT, 'dist', 'bin', 'orchestrator');
const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const BEFORE = arg('before');
const BEFORE_FIRST = BEFORE?.split(',').find(Boolean);
const ONLY = arg('only');
const HELD_APPS = Number(arg('apps') ?? 0);

/** How to start it: the executable (this build's or another), or `node <flags> orchestrator/main.ts`. */
type How = { binary: true; path?: string } | { binary: false; nodeFlags: string[] };

async function orchestrator(how: How): Promise<{ url: string; proc: Running }> {
  const port = await freePort();
  const [cmd, ...pre] = how.binary ? [how.path ?? BIN] : [NODE, ...how.nodeFlags, 'orchestrator/main.ts'];
  const proc = start(cmd!, [
    ...pre,
    '--http-address=127.0.0.1',
    `--http-port=${port}`,
    `--data-dir=${tempDir('starmap-bench-')}`,
    '--hostname=127.0.0.1',
    '--auth=off',
    '--log-level=warn',
  ]);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/ping`, 30_000);
  return { url, proc };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(url: string, method: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(url, { method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

async function launch(url: string): Promise<number> {
  const t0 = performance.now();
  const created = await call(`${url}/v2/apps`, 'POST', { id: '/bench/many', cmd: 'exec sleep 1000', instances: N_TASKS });
  if (created.status !== 201) throw new Error(`POST failed: ${created.status}`);
  for (;;) {
    const a = (await call(`${url}/v2/apps/bench/many`, 'GET')).body.app;
    if (a.tasksRunning === N_TASKS) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const ms = performance.now() - t0;
  await call(`${url}/v2/apps/bench/many`, 'DELETE');
  for (let i = 0; i < 1000 && ((await call(`${url}/v2/tasks`, 'GET')).body.tasks as unknown[]).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
  return ms;
}

/** Creates `n` apps (instances 0) in the orchestrator at `url`, 8 requests at a time. */
async function createApps(url: string, n: number): Promise<void> {
  const ids = Array.from({ length: n }, (_, i) => `/bench/g${i % 10}/app-${i}`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        const r = await call(`${url}/v2/apps`, 'POST', { id, cmd: 'sleep 1000', instances: 0, labels: { bench: 'yes' } });
        if (r.status !== 201) throw new Error(`POST ${id}: ${r.status}`);
      }
    }),
  );
}

/** The launch baseline in a fresh process (`node`, which loads bench/lib/measure.ts). */
async function spawnDirectFresh(n: number): Promise<number> {
  const code = `import { spawnDirect } from ${JSON.stringify(join(ROOT, 'bench', 'lib', 'measure.ts'))}; console.log(await spawnDirect(${n}));`;
  const r = await runToEnd(NODE, ['--input-type=module', '-e', code]);
  const ms = Number(r.output.trim().split('\n').pop());
  if (r.code !== 0 || !Number.isFinite(ms)) throw new Error(`baseline failed: ${r.output}`);
  return ms;
}

/**
 * RSS 2 s after the last request, and (with `settle`) 12 s after it: V8's memory reducer shrinks
 * the heap ~8 s after the last mark-compact of a burst, so the first reading catches the burst's
 * garbage or not depending on when V8 last collected (the tenth round's build: 94-114 MiB at 2 s
 * over more than 40 starts, 77-78 MiB at 12 s; bench/RESULTS.md).
 */
async function rssAfter(pid: number, settle: boolean): Promise<{ rss: number; settled: number }> {
  await new Promise((r) => setTimeout(r, 2000));
  const rss = rssOf(pid);
  if (!settle) return { rss, settled: NaN };
  await new Promise((r) => setTimeout(r, 10_000));
  return { rss, settled: rssOf(pid) };
}

async function thousandApps(how: How, settle = false): Promise<{ rss: number; settled: number; body: string }> {
  const o = await orchestrator(how);
  await createApps(o.url, N_APPS);
  let body = '';
  for (let i = 0; i < 5; i++) body = await (await fetch(`${o.url}/v2/apps`)).text();
  const { rss, settled } = await rssAfter(o.proc.child.pid!, settle);
  await o.proc.stop();
  return { rss, settled, body };
}

async function bareRss(body: string): Promise<{ rss: number; settled: number }> {
  const file = join(tempDir('starmap-bench-'), 'apps.json');
  writeFileSync(file, body);
  const port = await freePort();
  const source = `const b=require('fs').readFileSync(${JSON.stringify(file)});const a=require('fastify')();a.get('/*',async(q,r)=>r.type('application/json').send(b));a.listen({host:'127.0.0.1',port:${port}})`;
  const p = start(NODE, ['-e', source]);
  await waitForHttp(`http://127.0.0.1:${port}/v2/apps`);
  for (let i = 0; i < 5; i++) await (await fetch(`http://127.0.0.1:${port}/v2/apps`)).text();
  const rss = await rssAfter(p.child.pid!, true);
  await p.stop();
  return rss;
}

/** A row of the terminal's table as a RESULTS.md row, with issue 17's goals for the shipped executable. */
function resultRow([measure = '', value = '', baseline = '', r = '']: string[]): ResultRow {
  const launch = measure.startsWith('POST /v2/apps') && measure.endsWith(': dist/bin/orchestrator');
  const memory = measure.startsWith('RSS with') && measure.endsWith(': dist/bin/orchestrator');
  return {
    measure,
    value,
    baseline: baseline.replace(' (bare fastify, plain JavaScript, having served the same /v2/apps bytes)', ' (bare fastify, same bytes served)'),
    ratio: r,
    goal: launch ? '≤ 2×' : memory ? '≤ 120 MiB' : '-',
    met: launch ? met(parseFloat(r) <= 2) : memory ? met(parseFloat(value) <= 120) : '-',
  };
}

async function main(): Promise<void> {
  const load0 = loadavg()[0]!;
  const rows: string[][] = [];
  // 1. Launch: every program and the baseline in turn, the order rotated each round.
  if (ONLY !== 'memory') {
    const programs: { name: string; how: How }[] = [
      { name: 'dist/bin/orchestrator', how: { binary: true } },
      ...(BEFORE ?? '')
        .split(',')
        .filter(Boolean)
        .map((dir) => ({ name: `${dir}/orchestrator (before)`, how: { binary: true as const, path: join(dir, 'orchestrator') } })),
      ...(process.argv.includes('--flags')
        ? [
            { name: 'from source, default V8 flags', how: { binary: false as const, nodeFlags: [] } },
            { name: 'from source, --optimize-for-size', how: { binary: false as const, nodeFlags: ['--optimize-for-size'] } },
          ]
        : []),
    ];
    const running = await Promise.all(programs.map((p) => orchestrator(p.how)));
    if (HELD_APPS > 0)
      for (const o of running) {
        await createApps(o.url, HELD_APPS);
        await (await fetch(`${o.url}/v2/apps`)).text();
      }
    const times: number[][] = programs.map(() => []);
    const direct: number[] = [];
    const steps: (() => Promise<void>)[] = [
      ...running.map((o, i) => async () => void times[i]!.push(await launch(o.url))),
      async () => void direct.push(HELD_APPS > 0 ? await spawnDirectFresh(N_TASKS) : await spawnDirect(N_TASKS)),
    ];
    for (let r = 0; r < REPEATS; r++) for (let k = 0; k < steps.length; k++) await steps[(r + k) % steps.length]!();
    const rss = running.map((o) => rssOf(o.proc.child.pid!));
    await Promise.all(running.map((o) => o.proc.stop()));
    const dir = median(direct);
    programs.forEach((p, i) => {
      const api = median(times[i]!);
      console.log(
        `launch: ${p.name} ${api.toFixed(0)} ms (${times[i]!.map((t) => t.toFixed(0)).join(', ')}; RSS after ${rss[i]!.toFixed(0)} MiB), direct ${dir.toFixed(0)} ms (${direct.map((t) => t.toFixed(0)).join(', ')})`,
      );
      rows.push([
        `POST /v2/apps, instances ${N_TASKS} of \`exec sleep 1000\` → all TASK_RUNNING${HELD_APPS > 0 ? `, ${HELD_APPS} apps held` : ''}: ${p.name}`,
        `${api.toFixed(0)} ms`,
        `${dir.toFixed(0)} ms (spawning ${N_TASKS} \`sh -c\` directly${HELD_APPS > 0 ? ', from a fresh process' : ''})`,
        `${(api / dir).toFixed(2)}×`,
      ]);
    });
  }

  // 2. RSS at 1,000 apps.
  if (ONLY !== 'launch') {
    type Sample = 'shipped' | 'shippedSettled' | 'before' | 'beforeSettled' | 'plain' | 'size' | 'bare' | 'bareSettled';
    const rss: Record<Sample, number[]> = { shipped: [], shippedSettled: [], before: [], beforeSettled: [], plain: [], size: [], bare: [], bareSettled: [] };
    for (let r = 0; r < REPEATS; r++) {
      const shipped = await thousandApps({ binary: true }, true);
      rss.shipped.push(shipped.rss);
      rss.shippedSettled.push(shipped.settled);
      if (BEFORE_FIRST) {
        const before = await thousandApps({ binary: true, path: join(BEFORE_FIRST, 'orchestrator') }, true);
        rss.before.push(before.rss);
        rss.beforeSettled.push(before.settled);
      }
      rss.plain.push((await thousandApps({ binary: false, nodeFlags: [] })).rss);
      rss.size.push((await thousandApps({ binary: false, nodeFlags: ['--optimize-for-size'] })).rss);
      const bareSample = await bareRss(shipped.body);
      rss.bare.push(bareSample.rss);
      rss.bareSettled.push(bareSample.settled);
    }
    const [shipped, plain, size, bare] = [median(rss.shipped), median(rss.plain), median(rss.size), median(rss.bare)];
    const [shippedSettled, bareSettled] = [median(rss.shippedSettled), median(rss.bareSettled)];
    const list = (xs: number[]) => xs.map((m) => m.toFixed(0)).join(', ');
    console.log(
      `RSS at ${N_APPS} apps: executable ${shipped.toFixed(0)} MiB (${list(rss.shipped)}), settled ${shippedSettled.toFixed(0)} MiB (${list(rss.shippedSettled)}); from source ${plain.toFixed(0)} MiB, with --optimize-for-size ${size.toFixed(0)} MiB; bare ${bare.toFixed(0)} MiB, settled ${bareSettled.toFixed(0)} MiB`,
    );
    rows.push(
      [
        `RSS with ${N_APPS} apps (instances 0), 2 s after GET /v2/apps: dist/bin/orchestrator`,
        `${shipped.toFixed(0)} MiB (${list(rss.shipped)})`,
        `${bare.toFixed(0)} MiB (bare fastify, plain JavaScript, having served the same /v2/apps bytes)`,
        `${(shipped / bare).toFixed(2)}×`,
      ],
      [
        `the same, 12 s after (once V8's memory reducer has run)`,
        `${shippedSettled.toFixed(0)} MiB (${list(rss.shippedSettled)})`,
        `${bareSettled.toFixed(0)} MiB`,
        `${(shippedSettled / bareSettled).toFixed(2)}×`,
      ],
      ...(BEFORE_FIRST
        ? [
            [
              `the same, ${BEFORE_FIRST}/orchestrator (before), 2 s and 12 s after`,
              `${median(rss.before).toFixed(0)} MiB (${list(rss.before)}); ${median(rss.beforeSettled).toFixed(0)} MiB (${list(rss.beforeSettled)})`,
              `${bare.toFixed(0)} MiB; ${bareSettled.toFixed(0)} MiB`,
              `${(median(rss.before) / bare).toFixed(2)}×; ${(median(rss.beforeSettled) / bareSettled).toFixed(2)}×`,
            ],
          ]
        : []),
      [`the same from source, default V8 flags`, `${plain.toFixed(0)} MiB`, `${bare.toFixed(0)} MiB`, `${(plain / bare).toFixed(2)}×`],
      [`the same from source, --optimize-for-size`, `${size.toFixed(0)} MiB`, `${bare.toFixed(0)} MiB`, `${(size / bare).toFixed(2)}×`],
    );
  }
  await stopAll();

  const md = [
    `dist/bin/orchestrator (as shipped, with its V8 flags from scripts/lib/exec-argv.ts: ${(EXEC_ARGV['orchestrator'] ?? []).join(' ') || 'none'}; tasks forked by its spawner, orchestrator/tasks/spawner.ts) and, for the V8 flags, the orchestrator from source (\`node [flags] orchestrator/main.ts\`, which also holds Node's TypeScript stripper, ~17 MiB); --auth=off, a fresh data dir each time; medians of ${REPEATS}, programs and baseline alternated. Load average ${load0.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end (2 cores shared with other work).`,
    '',
    table(['figure', 'orchestrator', 'baseline (same run)', 'ratio'], rows),
  ].join('\n');
  // A partial run (--only, --before, --flags) prints its figures but leaves the written section alone.
  if (ONLY === undefined && BEFORE === undefined && HELD_APPS === 0 && !process.argv.includes('--flags'))
    writeResults('Orchestrator: launching and memory', rows.map(resultRow));
  console.log(md);
  process.exit(0);
}

runBench(main);
