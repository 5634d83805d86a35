// `scenario diff` at scale (issues 30 and 34): two manifest sets from bench/lib/cluster-gen.ts
// (seed 1: 50 namespaces, 300 NetworkPolicies, 1,000 pods as Deployments' replicas), HEAD the
// same set with a pull request's changes (bench/lib/cluster-change.ts: three policies' ports
// edited, one policy removed, one added, a namespace and two Deployments relabelled), diffed as
// the command does (cli/diff.ts's diffSide: read and resolved, then model/diff.ts through the
// verdict matrices). Baselines of the same run: `diff A A` on the same set (no change: reading,
// resolving and one pass over the cells), and the per-cell path the command had before
// (test/helpers/diff-per-cell.ts: every cell evaluated with its reason, rule coverage over every
// cell) against the matrix path on the same sets read one pod per Deployment (176 pods, the size
// the per-cell path finishes in seconds). The command reads manifest sets without a cell object per
// cell (model/diff-scale.ts); `cells` is the same diff as it was before, every cell made by the
// resolver and walked by diffSides. Each figure in a child process of its own, with its peak
// RSS (process.resourceUsage().maxRSS is per process).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { diffSide } from '../scenarios/cli/diff.ts';
import { diffSides } from '../scenarios/model/diff.ts';
import { diffOf } from '../scenarios/model/diff-scale.ts';
import { DIFF_LIMITS } from '../scenarios/model/limits.ts';
import { diffSidesPerCell } from '../test/helpers/diff-per-cell.ts';
import { changedCluster } from './lib/cluster-change.ts';
import { clusterYaml, generateCluster, type ClusterSize } from './lib/cluster-gen.ts';
import { ratio, table, writeResults } from './lib/results.ts';

const SEED = 1;
const SIZE: ClusterSize = { namespaces: 50, pods: 1_000, policies: 300 };

type Mode = 'matrix' | 'same' | 'per-cell' | 'cells';

interface ChildFigures {
  mode: Mode;
  replicas: boolean;
  pods: number;
  cells: number;
  flips: number;
  deadRules: number;
  /** Reading and resolving both sides. */
  loadMs: number;
  /** The diff of the two resolved sides. */
  diffMs: number;
  /** CPU time of each (the machine is shared: wall time waits for a core). */
  loadCpuMs: number;
  diffCpuMs: number;
  cpuMs: number;
  maxRssMiB: number;
}

function child(mode: Mode, replicas: boolean, dirs: { base: string; head: string }): ChildFigures {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  // As the command reads them: the manifest cells deferred (model/deferred-cells.ts), except for the per-cell baseline.
  const opts = { replicas, computedOnly: true, limits: DIFF_LIMITS, deferManifestCells: mode === 'matrix' || mode === 'same' };
  const base = diffSide(dirs.base, undefined, opts);
  const head = mode === 'same' ? diffSide(dirs.base, undefined, opts) : diffSide(dirs.head, undefined, opts);
  const t1 = performance.now();
  const cpu1 = process.cpuUsage(cpu0);
  const d = mode === 'per-cell' ? diffSidesPerCell(base, head) : mode === 'cells' ? diffSides(base, head) : diffOf(base, head);
  const t2 = performance.now();
  const u = process.cpuUsage(cpu0);
  return {
    mode,
    replicas,
    pods: base.scenario.pods.length,
    cells: d.counts.cells,
    flips: d.counts.flips,
    deadRules: d.deadRules.length,
    loadMs: t1 - t0,
    diffMs: t2 - t1,
    loadCpuMs: (cpu1.user + cpu1.system) / 1000,
    diffCpuMs: (u.user + u.system - cpu1.user - cpu1.system) / 1000,
    cpuMs: (u.user + u.system) / 1000,
    maxRssMiB: process.resourceUsage().maxRSS / 1024,
  };
}

function run(mode: Mode, replicas: boolean, dirs: { base: string; head: string }): ChildFigures {
  const out = execFileSync(process.execPath, [import.meta.filename, `--child=${mode}`, String(replicas), dirs.base, dirs.head], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  const figures = JSON.parse(out.trim().split('\n').at(-1)!) as ChildFigures;
  console.log(JSON.stringify(figures));
  return figures;
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const s1 = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const total = (f: ChildFigures) => f.loadMs + f.diffMs;
const figure = (f: ChildFigures) =>
  `${s(total(f))} (read ${s(f.loadMs)}, diff ${s(f.diffMs)}; CPU: read ${s(f.loadCpuMs)}, diff ${s(f.diffCpuMs)}), ${f.maxRssMiB.toFixed(0)} MiB`;

function main(): void {
  const root = mkdtempSync(join(tmpdir(), 'starmap-diff-bench-'));
  try {
    const base = generateCluster(SEED, SIZE);
    const { head, changes } = changedCluster(base, SEED);
    const dirs = { base: join(root, 'base'), head: join(root, 'head') };
    for (const [dir, c] of [
      [dirs.base, base],
      [dirs.head, head],
    ] as const) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'cluster.yaml'), clusterYaml(c));
    }
    const load0 = loadavg()[0]!;
    const big = [run('matrix', true, dirs), run('matrix', true, dirs)];
    const same = run('same', true, dirs);
    const cells = run('cells', true, dirs);
    if (cells.flips !== big[0]!.flips || cells.deadRules !== big[0]!.deadRules || cells.cells !== big[0]!.cells)
      throw new Error('the diffs with and without cell objects differ on the large sets');
    const smallMatrix = run('matrix', false, dirs);
    const smallPerCell = run('per-cell', false, dirs);
    const load1 = loadavg()[0]!;
    if (smallMatrix.flips !== smallPerCell.flips || smallMatrix.deadRules !== smallPerCell.deadRules)
      throw new Error('the matrix and per-cell diffs differ on the small sets');
    const best = big.reduce((a, b) => (total(a) < total(b) ? a : b));
    const worst = Math.max(...big.map(total));
    // Rows short enough for RESULTS.md's line bound; the terminal gets the split (read, diff, CPU).
    const brief = (f: ChildFigures) => `${s1(total(f))} (CPU ${(f.loadCpuMs / 1000).toFixed(1)}+${s1(f.diffCpuMs)}) ${f.maxRssMiB.toFixed(0)} MiB`;
    const rows = [
      {
        measure: `diff: ${best.pods} pods, ${SIZE.policies} policies, ${(best.cells / 1e6).toFixed(1)} M cells`,
        value: big.map(brief).join('; '),
        baseline: `cell objects: ${brief(cells)}`,
        ratio: ratio(total(best), total(cells)),
        goal: 'a few seconds (≤ 5 s)',
        met: worst <= 5_000 ? 'yes' : 'no',
      },
      {
        measure: `same, 1 pod per Deployment: ${smallMatrix.pods} pods, ${smallMatrix.cells} cells`,
        value: brief(smallMatrix),
        baseline: `per-cell: ${brief(smallPerCell)}`,
        ratio: `1/${(total(smallPerCell) / total(smallMatrix)).toFixed(1)}, diff 1/${(smallPerCell.diffMs / smallMatrix.diffMs).toFixed(0)}`,
        goal: '-',
        met: '-',
      },
    ];
    const limiting = `the diff's ${(best.cells / 1e6).toFixed(2)} M matrix lookups a side (CPU ${s1(best.diffCpuMs)}), then reading the manifests (CPU ${s1(best.loadCpuMs)}); no cell objects`;
    const detail = [...big, same, cells, smallMatrix, smallPerCell].map(
      (f) => `- ${f.mode}, ${f.pods} pods: ${figure(f)}, ${f.flips} flips, ${f.deadRules} dead rules`,
    );
    console.log(
      [
        `bench/diff-scale.bench.ts: seed ${SEED}, ${SIZE.namespaces} namespaces, ${SIZE.policies} policies; HEAD: ${changes.join('; ')}. Load average ${load0.toFixed(1)} at the start, ${load1.toFixed(1)} at the end.`,
        '',
        table(
          ['measure', 'value', 'baseline (same run)', 'ratio', 'goal', 'met'],
          rows.map((r) => [r.measure, r.value, r.baseline, r.ratio, r.goal, r.met]),
        ),
        '',
        ...detail,
        '',
        `Limiting factor: ${limiting}.`,
      ].join('\n'),
    );
    writeResults('scenario diff at scale', rows, { limitingFactor: limiting });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const childArg = process.argv.find((a) => a.startsWith('--child='));
if (childArg) {
  const [replicas, base, head] = process.argv.slice(-3) as [string, string, string];
  console.log(JSON.stringify(child(childArg.slice('--child='.length) as Mode, replicas === 'true', { base, head })));
} else main();
