// `scenario check DIR` end to end at cluster scale (issues 29 and 34): a 10,000-pod / 1,000-policy
// manifest set (bench/generate-manifests.ts, seed 1, 500 namespaces, --replicas) checked through
// the real command in a child process, summarised by workload (cli/check-scale.ts), with its wall
// time, peak RSS (GNU time's maximum resident set size of the child) and the sizes of its JSON
// and HTML reports; taken twice. Baselines in the same run: the per-cell check at a set
// it takes (200 pods, under its 200,000-cell bound) against the summary form of that same set, and
// every cell streamed to NDJSON (--report-cells) at 1,000 pods, for the rate and the file size.
// With admin tiers (issue 34): the same 10,000-pod set plus 20 Admin and Baseline
// ClusterNetworkPolicies (bench/lib/cluster-policies-gen.ts), through the tier matrix
// (shared/netpol/tier-matrix.ts), taken twice against the set without them.
// The machine is shared (2 cores, other engineers' tests): the load average is in the header.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateManifests } from './generate-manifests.ts';
import { table, writeResults } from './lib/results.ts';

const ROOT = join(import.meta.dirname, '..');
const TIME = '/usr/bin/time';
const SUBNET = '10.213.0.0/16';

interface Figures {
  wallS: number;
  /** user + system CPU seconds of the child: what the shared machine's load does not inflate. */
  cpuS: number;
  maxRssMiB: number;
  code: number | null;
  stdout: string;
}

/** `scenario check ARGS` in a child under GNU time: wall seconds and peak RSS. */
function check(args: string[]): Figures {
  if (!existsSync(TIME)) throw new Error(`${TIME} is needed for the peak RSS of the child (apt-get install time)`);
  const dir = mkdtempSync(join(tmpdir(), 'starmap-bench-time-'));
  const out = join(dir, 'time.txt');
  const r = spawnSync(TIME, ['-f', '%e %M %U %S', '-o', out, process.execPath, 'scenarios/main.ts', 'check', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const [wall, rss, user, sys] = readFileSync(out, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
  rmSync(dir, { recursive: true, force: true });
  if (r.status !== 0 && r.status !== 3) throw new Error(`scenario check ${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
  const f = { wallS: wall!, cpuS: user! + sys!, maxRssMiB: rss! / 1024, code: r.status, stdout: r.stdout };
  console.log(JSON.stringify({ args, wallS: f.wallS, cpuS: f.cpuS, maxRssMiB: Math.round(f.maxRssMiB), code: f.code }));
  return f;
}

const size = (file: string) => statSync(file).size;
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const s = (x: number) => `${x.toFixed(1)} s`;
const mib = (x: number) => `${x.toFixed(0)} MiB`;

function main(): void {
  const work = mkdtempSync(join(tmpdir(), 'starmap-bench-check-'));
  try {
    const big = join(work, 'big');
    const made = generateManifests(big, 1, { pods: 10_000, policies: 1_000, namespaces: 500 });
    const reports = (tag: string) => ({ json: join(work, `${tag}.json`), html: join(work, `${tag}.html`) });
    const goal = [1, 2].map((i) => {
      const r = reports(`big${i}`);
      const f = check([big, '--replicas', '--netns-subnet', SUBNET, '--report-json', r.json, '--report-html', r.html]);
      return { ...f, json: size(r.json), html: size(r.html) };
    });
    const summary = JSON.parse(readFileSync(reports('big1').json, 'utf8')) as {
      counts: { cells: number; classes: number; workloads: number; allowed: number; denied: number };
    };

    // The same set with admin tiers.
    const tiered = join(work, 'tiered');
    const tieredMade = generateManifests(tiered, 1, { pods: 10_000, policies: 1_000, namespaces: 500, adminPolicies: 20 });
    const withTiers = [1, 2].map((i) => {
      const r = reports(`tiered${i}`);
      const f = check([tiered, '--replicas', '--netns-subnet', SUBNET, '--report-json', r.json]);
      return { ...f, json: size(r.json) };
    });
    const tieredSummary = JSON.parse(readFileSync(reports('tiered1').json, 'utf8')) as {
      counts: { cells: number; allowed: number; denied: number; classes: number };
    };
    if (tieredSummary.counts.cells !== summary.counts.cells) throw new Error('the set with admin tiers has other cells than the set without');

    // The per-cell check at a set it takes, and the summary form of the same set.
    const small = join(work, 'small');
    const smallMade = generateManifests(small, 1, { pods: 200, policies: 20, namespaces: 10 });
    const rp = reports('per-cell');
    const perCell = check([small, '--replicas', '--netns-subnet', SUBNET, '--report-json', rp.json]);
    if (!('steps' in (JSON.parse(readFileSync(rp.json, 'utf8')) as object))) throw new Error('the baseline set was not checked cell by cell');
    const rs = reports('summary-small');
    const summarySmall = check([small, '--replicas', '--netns-subnet', SUBNET, '--summary', '--report-json', rs.json]);
    const smallCells = (JSON.parse(readFileSync(rs.json, 'utf8')) as { counts: { cells: number } }).counts.cells;

    // Every cell streamed at 1,000 pods.
    const mid = join(work, 'mid');
    generateManifests(mid, 1, { pods: 1_000, policies: 100, namespaces: 50 });
    const cellsFile = join(work, 'cells.ndjson');
    const streamed = check([mid, '--replicas', '--netns-subnet', SUBNET, '--report-cells', cellsFile]);
    const streamedBytes = size(cellsFile);
    const streamedCells = readFileSync(cellsFile, 'utf8').split('\n').length - 1;

    const best = goal.reduce((a, b) => (a.wallS < b.wallS ? a : b));
    const met = (ok: boolean) => (ok ? 'yes' : 'no');
    const rows = [
      [
        `check of ${made.pods.toLocaleString('en')} pods / ${made.namespaces} ns / ${made.policies.toLocaleString('en')} policies (${(summary.counts.cells / 1e6).toFixed(1)} M cells, ${summary.counts.classes} classes)`,
        `${goal.map((f) => s(f.wallS)).join('; ')} (CPU ${goal.map((f) => s(f.cpuS)).join('; ')})`,
        'per-cell: refused (> 200,000 cells)',
        '-',
        'CPU ≤ 60 s',
        met(Math.max(...goal.map((f) => f.cpuS)) <= 60),
      ],
      [
        'peak RSS of that check (GNU time)',
        goal.map((f) => mib(f.maxRssMiB)).join('; '),
        '-',
        '-',
        '≤ 1 GiB',
        met(Math.max(...goal.map((f) => f.maxRssMiB)) <= 1024),
      ],
      [
        'its JSON report (summary by workload)',
        mb(best.json),
        `${summary.counts.cells.toLocaleString('en')} cells`,
        '-',
        'a few MB',
        met(best.json <= 4 * 2 ** 20),
      ],
      ['its HTML report', mb(best.html), '-', '-', 'a few MB', met(best.html <= 4 * 2 ** 20)],
      [
        `the same with ${tieredMade.adminPolicies} Admin/Baseline ClusterNetworkPolicies (tier matrix)`,
        `${withTiers.map((f) => s(f.wallS)).join('; ')} (CPU ${withTiers.map((f) => s(f.cpuS)).join('; ')})`,
        `no tiers: CPU ${goal.map((f) => s(f.cpuS)).join('; ')}`,
        `${(Math.min(...withTiers.map((f) => f.cpuS)) / Math.min(...goal.map((f) => f.cpuS))).toFixed(2)}× CPU`,
        'CPU ≤ 10 s',
        met(Math.min(...withTiers.map((f) => f.cpuS)) <= 10),
      ],
      [
        'peak RSS with admin tiers (GNU time)',
        withTiers.map((f) => mib(f.maxRssMiB)).join('; '),
        `no tiers: ${goal.map((f) => mib(f.maxRssMiB)).join('; ')}`,
        `${(Math.max(...withTiers.map((f) => f.maxRssMiB)) / Math.max(...goal.map((f) => f.maxRssMiB))).toFixed(2)}×`,
        '≤ 1 GiB',
        met(Math.max(...withTiers.map((f) => f.maxRssMiB)) <= 1024),
      ],
      [
        'its verdicts: allowed / denied (tiers / none)',
        `${tieredSummary.counts.allowed.toLocaleString('en')} / ${tieredSummary.counts.denied.toLocaleString('en')}`,
        `${summary.counts.allowed.toLocaleString('en')} / ${summary.counts.denied.toLocaleString('en')}`,
        '-',
        '-',
        'measured',
      ],
      [
        `a set the per-cell check takes: ${smallMade.pods} pods (${smallCells.toLocaleString('en')} cells), summary form`,
        `${s(summarySmall.wallS)} (CPU ${s(summarySmall.cpuS)}), ${mib(summarySmall.maxRssMiB)}, JSON ${mb(size(rs.json))}`,
        `per-cell: ${s(perCell.wallS)} (CPU ${s(perCell.cpuS)}), ${mib(perCell.maxRssMiB)}, JSON ${mb(size(rp.json))}`,
        `${(summarySmall.cpuS / perCell.cpuS).toFixed(2)}× CPU`,
        '-',
        '-',
      ],
      [
        `--report-cells at 1,000 pods (${streamedCells.toLocaleString('en')} cells streamed as NDJSON)`,
        `${s(streamed.wallS)} (CPU ${s(streamed.cpuS)}), ${mib(streamed.maxRssMiB)}, ${mb(streamedBytes)}`,
        '-',
        `${((streamedBytes / streamedCells) | 0).toString()} bytes/cell`,
        'memory independent of the cell count',
        'measured',
      ],
    ];
    writeResults(
      'scenario check at cluster scale',
      rows.map(([m = '', v = '', b = '', r = '', g = '', t = '']) => ({ measure: m, value: v, baseline: b, ratio: r, goal: g, met: t })),
      {
        limitingFactor:
          'reading and validating 500 YAML files and building the class matrix (CPU; with tiers, a verdict per class cell); memory is inputs, matrix, V8 headroom',
      },
    );
    console.log(table(['measure', 'value', 'baseline', 'ratio', 'goal', 'met'], rows));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main();
