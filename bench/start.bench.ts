// The first minute of `npm start` on a warm machine (dependencies installed, executables built):
// in a fresh clone of HEAD (test/helpers/npm-start.ts), the time from `npm start` to the printed
// collector UI address answering, and to the first passing step of the stars demo. Baseline in
// the same run: npm's own cost, `npm run` of a script that does nothing, from the same clone.
// Runs under `flock /tmp/starmap-netns.lock` when it can isolate (its own prefix smsb and subnet
// 10.213.141.0/24). Usage: node bench/start.bench.ts [runs, default 3]
import { spawnSync } from 'node:child_process';
import { cloneWorktree, npmStart } from '../test/helpers/npm-start.ts';
import { isolationSkipReason } from '../test/helpers/isolation.ts';
import { median, writeResults, type ResultRow } from './lib/results.ts';

const runs = Number(process.argv[2] ?? 3);
const clone = cloneWorktree();
const isolated = isolationSkipReason() === undefined;
const ui: number[] = [];
const firstPass: number[] = [];
const npmAlone: number[] = [];
const build: number[] = [];
try {
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    spawnSync('npm', ['exec', '--', 'true'], { cwd: clone.dir, stdio: 'ignore' });
    npmAlone.push(performance.now() - t0);

    const t1 = performance.now();
    const run = npmStart(clone, ['--netns-prefix=smsb', '--netns-subnet=10.213.141.0/24']);
    try {
      const shown = await run.waitFor(/collector UI: (http:\/\/\S+)/, 240_000);
      const url = shown.match[1]!;
      for (;;) {
        const res = await fetch(url, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
        if (res?.status === 200) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      ui.push(performance.now() - t1);
      const pass = await run.waitFor(/step 1\/\d+ \S+: PASS/, 120_000);
      firstPass.push(pass.ms);
      build.push(Number(/build finished in ([\d.]+) s/.exec(run.output())?.[1] ?? NaN) * 1000);
      if (i === 0)
        process.stdout.write(
          `--- npm start, first run, up to the first step:\n${run.output().slice(0, run.output().indexOf(pass.match[0]) + pass.match[0].length)}\n---\n`,
        );
    } finally {
      await run.interrupt(60_000);
    }
    console.log(`run ${i + 1}: UI answers after ${(ui[i]! / 1000).toFixed(1)} s, first step passed after ${(firstPass[i]! / 1000).toFixed(1)} s`);
  }
} finally {
  clone.remove();
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const base = median(npmAlone);
const vsNpm = (ms: number[]) => `${(median(ms) / base).toFixed(0)}×`;
const row = (measure: string, ms: number[]): ResultRow => ({
  measure,
  value: `${s(median(ms))} (${ms.map(s).join(', ')})`,
  baseline: `npm alone: ${s(base)}`,
  ratio: vsNpm(ms),
  goal: '-',
  met: '-',
});
const where = isolated ? 'isolated (netns + nftables)' : 'without isolation (loopback)';
writeResults('`npm start` on a warm machine', [
  row(`\`npm start\` to the printed collector UI answering, ${where}, median of ${runs}`, ui),
  row('`npm start` to the first step passing (PASS printed)', firstPass),
  row('… of which the build check (scripts/build.ts)', build),
]);
