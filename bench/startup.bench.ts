// The executables at start and at rest (issue #17), each next to a `node -e` http server on the
// same Node in the same run: start to first answer (wall time, and the CPU the process used until
// then, which the load of a shared machine distorts less), idle RSS of a probe with 3 targets, and
// what an executable is made of. Runs alternate program and baseline; medians.
// Usage: node bench/startup.bench.ts [--program=BIN_DIR] (other executables, e.g. an older build).
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, statSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { loadavg } from 'node:os';
import { basename, join } from 'node:path';
import { NODE, ROOT, freePort, stopAll, tempDir } from '../test/helpers/process.ts';
import { cpuMsOf, rssOf } from './lib/measure.ts';
import { median, met, ratio, table, writeResults, type ResultRow } from './lib/results.ts';
import { runBench } from './lib/run-bench.ts';
import { bundleProgram } from '../scripts/lib/bundle.ts';
import { writeExecutable } from '../scripts/lib/sea.ts';
import { orchestratorRoutePlan } from './lib/orchestrator-routes.ts';

const binDir = process.argv.find((a) => a.startsWith('--program='))?.slice('--program='.length) ?? join(ROOT, 'dist', 'bin');
// 15: with 9, one program's median moved by up to 0.15× between two runs on an idle machine.
const REPEATS = Number(process.env.BENCH_REPEATS ?? 15);
const BARE = (port: number) => ['-e', `require('http').createServer((q,r)=>r.end('{}')).listen(${port},'127.0.0.1')`];

interface Start {
  wallMs: number;
  cpuMs: number;
}

/** Spawns, polls `path` every 2 ms until it answers; wall time, and the process' CPU at that moment. */
async function firstAnswer(cmd: string, args: (port: number) => string[], path: string): Promise<Start> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(cmd, args(port), { stdio: 'ignore' });
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      await res.arrayBuffer();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 2));
    }
  }
  const wallMs = performance.now() - t0;
  const cpuMs = cpuMsOf(child.pid!);
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  return { wallMs, cpuMs };
}

/**
 * A copy of `file` in `dir`, written at once, to run instead of it. How a file came into the page
 * cache changes how fast it starts: the orchestrator as a build wrote it (injected, then appended
 * to), or after the machine had been short of memory, started ~4.5 ms slower than a copy of the
 * same bytes, and the Node runtime of a clone that had run the tests ~3 ms slower (bench/RESULTS.md,
 * tenth round). Every executable measured here, and the baseline's runtime, runs from such a copy.
 */
function freshCopy(file: string, dir: string): string {
  const copy = join(dir, basename(file));
  copyFileSync(file, copy);
  return copy;
}

async function main(): Promise<void> {
  const load0 = loadavg()[0]!;
  const open = net.createServer((c) => c.destroy());
  await new Promise<void>((r) => open.listen({ port: 0, host: '127.0.0.1' }, r));
  const openPort = (open.address() as net.AddressInfo).port;
  const dataDir = tempDir('starmap-bench-');

  // The floor: bench/lib/fastify-floor.ts as an executable bundled and made like the programs'
  // (scripts/lib/bundle.ts, scripts/lib/sea.ts).
  const floorDir = tempDir('starmap-bench-');
  const floorBundle = join(floorDir, 'fastify-floor.cjs');
  await bundleProgram(join(ROOT, 'bench', 'lib', 'fastify-floor.ts'), floorBundle);
  const floor = join(floorDir, 'fastify-floor');
  const arch = process.arch as 'x64' | 'arm64';
  writeExecutable({
    name: 'fastify-floor',
    bundlePath: floorBundle,
    runtime: NODE,
    arch,
    start: 'warm-code-cache',
    execArgv: [],
    out: floor,
    work: join(floorDir, 'work'),
  });
  const runDir = tempDir('starmap-bench-');
  const node = freshCopy(NODE, runDir);
  const bin = (name: string) => (existsSync(join(binDir, name)) ? freshCopy(join(binDir, name), runDir) : join(binDir, name));
  const floorCopy = freshCopy(floor, runDir);
  const probeBin = bin('probe');
  // As many routes of each method as the orchestrator registers: what fastify alone costs it.
  const orchestratorRoutes = await orchestratorRoutePlan(tempDir('starmap-bench-'));

  const programs: { name: string; bin: string; label: string; args: (port: number) => string[]; path: string }[] = [
    {
      name: 'probe',
      bin: probeBin,
      label: 'dist/bin/probe (GET /status)',
      args: (port: number) => [`--urls=127.0.0.1:${openPort}`, '--http-address=127.0.0.1', `--http-port=${port}`, '--log-level=warn'],
      path: '/status',
    },
    {
      name: 'collector',
      bin: bin('collector'),
      label: 'dist/bin/collector (GET /responses)',
      args: (port: number) => ['--http-address=127.0.0.1', `--http-port=${port}`, '--log-level=warn'],
      path: '/responses',
    },
    // A restart: the data dir (state, signing key, admin password) was made by a first start.
    {
      name: 'orchestrator',
      bin: bin('orchestrator'),
      label: 'dist/bin/orchestrator (GET /ping, a restart on its data dir)',
      args: (port: number) => ['--http-address=127.0.0.1', `--http-port=${port}`, `--data-dir=${dataDir}`, '--log-level=warn'],
      path: '/ping',
    },
    {
      name: 'bare fastify',
      bin: floorCopy,
      label: "bench/lib/fastify-floor.ts as an executable (GET /): one fastify route and the programs' schema controller, nothing else",
      args: (port: number) => [String(port)],
      path: '/',
    },
    {
      name: "bare fastify, the orchestrator's routes",
      bin: floorCopy,
      label: `the same with ${orchestratorRoutes.routes} more routes, as many of each method as the orchestrator registers (${orchestratorRoutes.plan}; fastify adds a HEAD route for each GET), each a trivial handler with a params schema`,
      args: (port: number) => [String(port), orchestratorRoutes.plan],
      path: '/',
    },
  ].filter((p) => existsSync(p.bin));

  const startRows: (string | number)[][] = [];
  const results: ResultRow[] = [];
  const bareAll: Start[] = [];
  for (const p of programs) {
    await firstAnswer(p.bin, p.args, p.path); // makes the orchestrator's data dir
    const prog: Start[] = [];
    const bare: Start[] = [];
    for (let i = 0; i < REPEATS; i++) {
      if (i % 2 === 0) {
        prog.push(await firstAnswer(p.bin, p.args, p.path));
        bare.push(await firstAnswer(node, BARE, '/'));
      } else {
        bare.push(await firstAnswer(node, BARE, '/'));
        prog.push(await firstAnswer(p.bin, p.args, p.path));
      }
    }
    bareAll.push(...bare);
    const pw = median(prog.map((s) => s.wallMs));
    const bw = median(bare.map((s) => s.wallMs));
    const pc = median(prog.map((s) => s.cpuMs));
    const bc = median(bare.map((s) => s.cpuMs));
    startRows.push([p.label, `${pw.toFixed(0)} ms`, `${(pw / bw).toFixed(2)}×`, `${pc.toFixed(0)} ms`, `${(pc / bc).toFixed(2)}×`]);
    // Issue 17's goal is for the three programs; the fastify floors show what fastify alone costs.
    const program = p.bin !== floorCopy;
    results.push({
      measure: `start to first answer, median of ${REPEATS}: ${program ? p.label : p.name}`,
      value: `${pw.toFixed(0)} ms (CPU ${pc.toFixed(0)} ms)`,
      baseline: `\`node -e\` server: ${bw.toFixed(0)} ms (CPU ${bc.toFixed(0)} ms)`,
      ratio: `${ratio(pw, bw)} (CPU ${ratio(pc, bc)})`,
      goal: program ? '≤ 1.5×' : '-',
      met: program ? met(pw / bw <= 1.5) : '-',
    });
    console.log(`start ${p.name}: ${pw.toFixed(0)} ms (${(pw / bw).toFixed(2)}×), CPU ${pc.toFixed(0)} ms (${(pc / bc).toFixed(2)}×)`);
  }
  startRows.push([
    '`node -e` http server (baseline)',
    `${median(bareAll.map((s) => s.wallMs)).toFixed(0)} ms`,
    '1.00×',
    `${median(bareAll.map((s) => s.cpuMs)).toFixed(0)} ms`,
    '1.00×',
  ]);

  // Idle RSS: a probe with 3 targets, after 40 checks of each (every second for 40 s, which a probe
  // at its default 5 s reaches after 200 s): by then V8 has optimised what a check runs, where a
  // reading after a few checks missed that (with undici's WebAssembly parser, 17 MiB more). Next
  // to a node -e server that has answered one request. Three of each run side by side.
  const rssRows: (string | number)[][] = [];
  // The probes' HTTP target answers here, so that the baseline has answered one request only.
  const httpTarget = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => httpTarget.listen({ port: 0, host: '127.0.0.1' }, r));
  const httpTargetPort = (httpTarget.address() as net.AddressInfo).port;
  if (existsSync(join(binDir, 'probe'))) {
    const kinds = [
      {
        name: 'TCP open, TCP refused, UDP',
        targets: async () => [`127.0.0.1:${openPort}`, `127.0.0.1:${await freePort()}`, `udp://127.0.0.1:${await freePort()}`],
      },
      {
        name: 'TCP open, TCP refused, HTTP',
        targets: async () => [`127.0.0.1:${openPort}`, `127.0.0.1:${await freePort()}`, `http://127.0.0.1:${httpTargetPort}/`],
      },
    ];
    const rounds = await Promise.all(
      [0, 1, 2].map(async () => {
        const bport = await freePort();
        const bare = spawn(node, BARE(bport), { stdio: 'ignore' });
        const fport = await freePort();
        const floorProc = spawn(floorCopy, [String(fport)], { stdio: 'ignore' });
        const started = await Promise.all(
          kinds.map(async (k) => {
            const port = await freePort();
            const args = [
              `--urls=${(await k.targets()).join(',')}`,
              '--http-address=127.0.0.1',
              `--http-port=${port}`,
              '--http-probe-seconds=1',
              '--log-level=warn',
            ];
            return { child: spawn(probeBin, args, { stdio: 'ignore' }), port };
          }),
        );
        return { bare, bport, floorProc, fport, started };
      }),
    );
    await new Promise((r) => setTimeout(r, 40_000));
    const probes: number[][] = kinds.map(() => []);
    const bares: number[] = [];
    const floors: number[] = [];
    for (const { bare, bport, floorProc, fport, started } of rounds) {
      for (const { port } of started) await (await fetch(`http://127.0.0.1:${port}/status`)).arrayBuffer();
      await (await fetch(`http://127.0.0.1:${bport}/`)).arrayBuffer();
      await (await fetch(`http://127.0.0.1:${fport}/`)).arrayBuffer();
      started.forEach(({ child }, k) => probes[k]!.push(rssOf(child.pid!)));
      bares.push(rssOf(bare.pid!));
      floors.push(rssOf(floorProc.pid!));
      for (const c of [...started.map((x) => x.child), bare, floorProc]) {
        c.kill('SIGKILL');
        await new Promise((r) => c.once('exit', r));
      }
    }
    const br = median(bares);
    kinds.forEach((k, i) => {
      const pr = median(probes[i]!);
      rssRows.push([`dist/bin/probe, 3 targets (${k.name}), every 1 s, after 40 s`, `${pr.toFixed(1)} MiB`, `${(pr / br).toFixed(2)}×`]);
      results.push({
        measure: `idle RSS, median of 3: dist/bin/probe, 3 targets (${k.name}), every 1 s, after 40 s`,
        value: `${pr.toFixed(1)} MiB`,
        baseline: `\`node -e\` http server: ${br.toFixed(1)} MiB`,
        ratio: ratio(pr, br),
        goal: '≤ 1.2×',
        met: met(pr / br <= 1.2),
      });
      console.log(`idle RSS: probe (${k.name}) ${pr.toFixed(1)} MiB, bare ${br.toFixed(1)} MiB`);
    });
    const fr = median(floors);
    rssRows.push(['bench/lib/fastify-floor.ts as an executable, after one request', `${fr.toFixed(1)} MiB`, `${(fr / br).toFixed(2)}×`]);
    results.push({
      measure: 'idle RSS: bare fastify executable, after one request',
      value: `${fr.toFixed(1)} MiB`,
      baseline: `${br.toFixed(1)} MiB`,
      ratio: ratio(fr, br),
      goal: '-',
      met: '-',
    });
    console.log(`idle RSS: bare fastify executable ${fr.toFixed(1)} MiB`);
    rssRows.push(['`node -e` http server after one request (baseline)', `${br.toFixed(1)} MiB`, '1.00×']);
  }

  // Size: the executable next to the runtime it is made from: the runtime stripped of symbols (as
  // scripts/build.ts does), and within it ICU's data (a symbol of the runtime, found with nm).
  const runtime = statSync(NODE).size;
  const stripped = join(tempDir('starmap-bench-'), 'node');
  copyFileSync(NODE, stripped);
  let strippedSize = NaN;
  let icuSize = NaN;
  try {
    execFileSync('strip', [stripped]);
    strippedSize = statSync(stripped).size;
    const icu = /^[0-9a-f]+ ([0-9a-f]+) [rR] icudt\d+_dat$/m.exec(execFileSync('nm', ['-S', NODE], { encoding: 'utf8', maxBuffer: 1 << 30 }));
    if (icu) icuSize = parseInt(icu[1]!, 16);
  } catch {
    // strip or nm missing: the figures say n/a
  }
  const mb = (x: number) => (Number.isNaN(x) ? 'n/a' : `${(x / 1e6).toFixed(1)} MB`);
  const sizeRows = programs
    .filter((p) => p.bin !== floorCopy)
    .map((p) => {
      const size = statSync(join(binDir, p.name)).size;
      const bundle = join(ROOT, 'dist', 'bundle', `${p.name}.cjs`);
      results.push({
        measure: `executable size: dist/bin/${p.name} (bundle ${existsSync(bundle) ? mb(statSync(bundle).size) : '-'})`,
        value: mb(size),
        baseline: `the stripped Node runtime: ${mb(strippedSize)}`,
        ratio: `+${mb(size - strippedSize)}`,
        goal: 'as small as the runtime allows',
        met: '-',
      });
      return [`dist/bin/${p.name}`, mb(size), mb(size - strippedSize), existsSync(bundle) ? mb(statSync(bundle).size) : '-'];
    });
  open.close();
  httpTarget.close();
  await stopAll();

  const md = [
    `Each figure a median of ${REPEATS} starts, program and baseline alternated; the baseline is \`node -e "require('http').createServer(…).listen(…)"\` on the same Node (${process.version}). Start = spawn until the first complete answer (polling every 2 ms); CPU = the CPU time of the process' threads at that moment (the scheduler's count, bench/lib/measure.ts). Load average ${load0.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end (2 cores shared with other work).`,
    '',
    table(['start to first answer', 'wall', 'vs baseline', 'CPU until then', 'vs baseline'], startRows),
    '',
    table(['idle RSS (median of 3)', 'RSS', 'vs baseline'], rssRows),
    '',
    table(['executable', 'size', 'above the stripped runtime (SEA blob with the loader; bundle + code cache appended)', 'bundle (JS)'], sizeRows),
    '',
    `The Node runtime is ${mb(runtime)} with symbols, ${mb(strippedSize)} stripped; of that, ICU's full data (every locale, for Intl) is ${mb(icuSize)}, and the rest is V8, OpenSSL, libuv, Node's built-in modules with their code cache and Node's own start-up snapshot. An executable is the stripped runtime, its SEA blob (a small loader) and, appended after the ELF image, the program's bundle (esbuild, minified) and V8's code cache for it: of what loading the bundle and the program's warm-up compiled (scripts/lib/warm-code-cache.ts). The loader reads both with pread, so their pages do not stay in the process' memory as the SEA's mapped assets did (~2 MiB of an idle probe); the orchestrator's loader starts its task spawner without reading them. What could still go: ICU's data (~${mb(icuSize)}) only with a Node built --with-intl=small-icu or none (not published on npm; the agents use no locale but English, and URL parsing needs ICU only for IDNA host names); the code cache (the difference between the blob and the bundle) at the price of a slower start.`,
  ].join('\n');
  writeResults('Start-up, idle memory and size', results, {
    limitingFactor: `the runtime: Node stripped is ${mb(strippedSize)}, of which ICU's full data is ${mb(icuSize)} (only a Node built with small-icu drops it)`,
  });
  console.log(md);
  process.exit(0);
}

runBench(main);
