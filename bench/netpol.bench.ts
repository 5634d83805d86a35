// NetworkPolicy benchmarks:
// - the evaluator: cells per second against the model size and the number of policies, next to a
//   baseline measured in the same run (the same cells with no policy in force, where every verdict
//   is "not isolated"), and the time to compute the 3 x 3 model with 10 policies;
// - the runner on real packets (root with iproute2 and nftables; run under
//   `flock /tmp/starmap-netns.lock`): the built-in netpol-3x3 scenario (288 cells per step), steps
//   per minute and, per step, the time from writing the policies to the last flipped cell showing
//   and to the step settling, against the settle budget (probe interval + timeout + 1 s); and the
//   k8s-e2e set (the upstream suite's 48 tests) as a whole.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Evaluator } from '../shared/netpol/evaluate.ts';
import type { NetworkPolicyObject, Protocol } from '../shared/netpol/types.ts';
import { validateNetworkPolicy } from '../shared/netpol/validate.ts';
import { isolationMissing } from '../scenarios/cli/run.ts';
import type { ScenarioReportDoc } from '../scenarios/report/results.ts';
import { generate } from '../test/helpers/netpol-gen.ts';
import { NODE, ROOT, tempDir } from '../test/helpers/process.ts';
import { median, met, ratio, table, writeResults, type ResultRow } from './lib/results.ts';

const PROTOCOLS: Protocol[] = ['TCP', 'UDP'];
const PORTS = [80, 81];

/** Evaluates every cell (pairs × 2 ports × 2 protocols) `rounds` times; returns cells/s and ms per model. */
function measure(
  size: { namespaces: number; pods: number },
  policies: NetworkPolicyObject[],
  rounds: number,
): { cellsPerSecond: number; msPerModel: number; cells: number } {
  const g = generate(7, { ...size, policies: 0 });
  const pairs = g.pods.flatMap((from) => g.pods.filter((to) => to !== from).map((to) => [from, to] as const));
  const cells = pairs.length * PORTS.length * PROTOCOLS.length;
  const times: number[] = [];
  let allowed = 0;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    // A fresh evaluator each round: what a runner pays per step (it compiles the policies too).
    const ev = new Evaluator(g, policies);
    for (const [from, to] of pairs)
      for (const port of PORTS) for (const protocol of PROTOCOLS) if (ev.evaluate({ from, to, port, protocol }).allowed) allowed++;
    times.push(performance.now() - t0);
  }
  if (allowed < 0) throw new Error('unreachable'); // keeps the loop's result alive
  const ms = median(times);
  return { cellsPerSecond: cells / (ms / 1000), msPerModel: ms, cells };
}

interface Figures {
  md: string;
  rows: ResultRow[];
  note?: string;
}

const plain = (measure: string, value: string): ResultRow => ({ measure, value, baseline: '-', ratio: '-', goal: '-', met: '-' });

function evaluatorFigures(): Figures {
  const rows: (string | number)[][] = [];
  const results: ResultRow[] = [];
  for (const [namespaces, pods] of [
    [3, 3],
    [5, 5],
    [10, 10],
  ] as const) {
    for (const n of [10, 100]) {
      const policies = generate(11, { namespaces, pods, policies: n }).policies.map(
        (p) => (validateNetworkPolicy(p) as { policy: NetworkPolicyObject }).policy,
      );
      const rounds = namespaces * pods > 50 ? 15 : 100;
      // Warm-up rounds first, so that neither side pays for the JIT.
      measure({ namespaces, pods }, [], 3);
      measure({ namespaces, pods }, policies, 3);
      const base = measure({ namespaces, pods }, [], rounds);
      const m = measure({ namespaces, pods }, policies, rounds);
      rows.push([
        `${namespaces} x ${pods} (${namespaces * pods} pods)`,
        m.cells,
        n,
        `${m.msPerModel.toFixed(2)} ms`,
        Math.round(m.cellsPerSecond).toLocaleString('en'),
        Math.round(base.cellsPerSecond).toLocaleString('en'),
        `${((m.cellsPerSecond / base.cellsPerSecond) * 100).toFixed(0)} %`,
      ]);
      console.log(rows.at(-1)!.join('  '));
      results.push({
        measure: `evaluator, every cell of ${namespaces} x ${pods} (${m.cells} cells), ${n} policies, fresh evaluator`,
        value: `${m.msPerModel.toFixed(2)} ms (${Math.round(m.cellsPerSecond).toLocaleString('en')} cells/s)`,
        baseline: `no policies: ${Math.round(base.cellsPerSecond).toLocaleString('en')} cells/s`,
        ratio: ratio(m.cellsPerSecond, base.cellsPerSecond),
        goal: '-',
        met: '-',
      });
    }
  }
  const md = [
    'Every cell of the model (pod pairs x ports 80, 81 x TCP, UDP) evaluated with generated policies that use every feature (selectors with matchExpressions, namespace selectors, ipBlocks with except, named ports, ranges, egress); a fresh evaluator per model, as the runner makes one per step. The baseline is the same cells with no policy in force, in the same run. Median of 100 rounds (15 for 25 and 100 pods) after 3 warm-up rounds.',
    '',
    table(['model', 'cells', 'policies', 'whole model', 'cells/s', 'cells/s, no policies', 'vs baseline'], rows),
  ].join('\n');
  return { md, rows: results };
}

function runnerFigures(): Figures {
  const missing = isolationMissing();
  if (missing) {
    const note = `the runner on real packets was not measured: network isolation is not available here (${missing})`;
    return { md: note, rows: [], note };
  }
  const dir = tempDir('starmap-bench-');
  const json = join(dir, 'report.json');
  const t0 = performance.now();
  try {
    execFileSync(NODE, [join(ROOT, 'scenarios', 'main.ts'), 'run', 'netpol-3x3', '--isolation=netns', `--report-json=${json}`], {
      stdio: 'ignore',
      timeout: 600_000,
    });
  } catch (err) {
    const note = `the netpol-3x3 run failed (${(err as Error).message.split('\n')[0]}): no figures`;
    return { md: note, rows: [], note };
  }
  const wall = performance.now() - t0;
  const report = JSON.parse(readFileSync(json, 'utf8')) as ScenarioReportDoc;
  const steps = report.steps;
  const perStep = steps.map((s) => (s.applyMs ?? 0) + (s.durationMs ?? 0));
  const rows = steps.map((s) => [
    s.name,
    s.counts.cells,
    s.cells.filter((c) => c.changedAfterMs !== null).length,
    `${s.applyMs ?? '?'} ms`,
    s.lastFlipMs === null ? '-' : `${(s.lastFlipMs / 1000).toFixed(2)} s`,
    `${((s.durationMs ?? 0) / 1000).toFixed(2)} s`,
    `${(((s.durationMs ?? 0) / s.budgetMs) * 100).toFixed(0)} %`,
    s.passed ? 'pass' : (s.failure ?? 'fail'),
  ]);
  const budget = steps[0]?.budgetMs ?? 0;
  const totalMs = perStep.reduce((a, b) => a + b, 0);
  const results: ResultRow[] = [
    ...steps.map((st): ResultRow => ({
      measure: `netpol-3x3 step "${st.name}": change applied + settled (${st.cells.filter((c) => c.changedAfterMs !== null).length} flips)`,
      value: `${st.applyMs ?? '?'} ms + ${((st.durationMs ?? 0) / 1000).toFixed(2)} s`,
      baseline: `settle budget: ${(st.budgetMs / 1000).toFixed(1)} s`,
      ratio: ratio(st.durationMs ?? NaN, st.budgetMs),
      goal: 'pass within budget',
      met: met(st.passed),
    })),
    plain('netpol-3x3: steps per minute (change + settle)', (60_000 / (totalMs / perStep.length)).toFixed(1)),
    plain(
      'netpol-3x3: cells observed per second while settling',
      Math.round(steps.reduce((a, st) => a + st.counts.cells, 0) / (totalMs / 1000)).toLocaleString('en'),
    ),
    plain('netpol-3x3: whole run (start, deploy 9 pods, 4 steps, clean up)', `${(wall / 1000).toFixed(1)} s`),
  ];
  const md = [
    `The built-in netpol-3x3 scenario (3 x 3 model, ports 80 and 81, TCP and UDP: 288 cells per step; probe interval 1 s, check timeout 0.5 s, so the settle budget is ${(budget / 1000).toFixed(1)} s) through the bundled orchestrator with network namespaces and nftables, ${report.passed ? 'every step passing' : 'NOT every step passing'}. A step's time is the change (one POST /v2/starmap/changes, applied in every task namespace) plus settling (every cell checked since the change and as expected). The first step has no flips: everything appears.`,
    '',
    table(['step', 'cells', 'cells that flipped', 'change applied', 'write to last flip shown', 'settled after', 'vs budget', 'result'], rows),
    '',
    table(
      ['figure', 'value'],
      [
        ['steps per minute (change + settle, excluding deployment)', (60_000 / (perStep.reduce((a, b) => a + b, 0) / perStep.length)).toFixed(1)],
        [
          'cells observed per second while settling',
          Math.round(steps.reduce((a, s) => a + s.counts.cells, 0) / (perStep.reduce((a, b) => a + b, 0) / 1000)).toLocaleString('en'),
        ],
        ['whole run (start orchestrator, deploy 9 pods, 4 steps, clean up)', `${(wall / 1000).toFixed(1)} s`],
      ],
    ),
  ].join('\n');
  return { md, rows: results };
}

/** The Kubernetes e2e set (48 upstream tests as scenarios) on real packets: wall time and steps per minute. */
function e2eSetFigures(): Figures {
  if (isolationMissing()) return { md: '', rows: [] };
  const json = join(tempDir('starmap-bench-'), 'report.json');
  const t0 = performance.now();
  try {
    execFileSync(NODE, [join(ROOT, 'scenarios', 'main.ts'), 'run', 'k8s-e2e', '--isolation=netns', `--report-json=${json}`], {
      stdio: 'ignore',
      timeout: 1_800_000,
    });
  } catch (err) {
    const note = `the k8s-e2e set failed (${(err as Error).message.split('\n')[0]}): no figures`;
    return { md: note, rows: [], note };
  }
  const wall = performance.now() - t0;
  const set = JSON.parse(readFileSync(json, 'utf8')) as { scenarios: ScenarioReportDoc[] };
  const steps = set.scenarios.flatMap((r) => r.steps);
  const count = (o: string) => set.scenarios.filter((r) => r.outcome === o).length;
  const stepMs = steps.map((st) => (st.applyMs ?? 0) + (st.durationMs ?? 0));
  const results: ResultRow[] = [
    plain('k8s-e2e set: scenarios pass / not run (SCTP) / fail', `${count('pass')} / ${count('not run')} / ${count('fail')}`),
    {
      measure: `k8s-e2e set: ${steps.length} steps, wall time (start, 1 shared deployment, all steps, clean-up)`,
      value: `${(wall / 1000).toFixed(0)} s`,
      baseline: 'before poke and sharing: 101 s',
      ratio: `${(101_000 / wall).toFixed(2)}×`,
      goal: '<= 60 s',
      met: wall <= 60_000 ? 'yes' : 'no',
    },
    plain('k8s-e2e set: steps per minute', ((steps.length * 60_000) / wall).toFixed(1)),
    plain('k8s-e2e set: median step (slowest)', `${(median(stepMs) / 1000).toFixed(2)} s (${(Math.max(...stepMs) / 1000).toFixed(2)} s)`),
  ];
  const md = [
    "The built-in k8s-e2e set (the upstream suite's 48 tests as scenarios, each on the 3 x 3 model) in one `scenario run k8s-e2e`: one deployment (the SCTP tests' ports served beside the others), every step a change, a poke of the probes and a settle.",
    '',
    table(
      ['figure', 'value'],
      [
        ['scenarios: pass / not run (SCTP) / fail', `${count('pass')} / ${count('not run')} / ${count('fail')}`],
        ['steps', steps.length],
        ['whole set, wall time (orchestrator start, 1 deployment, all steps, clean-up)', `${(wall / 1000).toFixed(0)} s`],
        ['steps per minute over the whole set', ((steps.length * 60_000) / wall).toFixed(1)],
        ['median step (change + settle)', `${(median(stepMs) / 1000).toFixed(2)} s`],
        ['slowest step', `${(Math.max(...stepMs) / 1000).toFixed(2)} s`],
      ],
    ),
  ].join('\n');
  return { md, rows: results };
}

const evaluator = evaluatorFigures();
const runner = runnerFigures();
console.log(runner.md);
const e2e = e2eSetFigures();
console.log(e2e.md);
const notes = [
  runner.note,
  e2e.note,
  e2e.rows.length > 0
    ? 'k8s-e2e: a step is its policy write, one check timeout (probes poked) and one read of the drop counters (about 1 s: nft list per task)'
    : undefined,
].filter((n) => n !== undefined);
writeResults('NetworkPolicy evaluator and scenario runner', [...evaluator.rows, ...runner.rows, ...e2e.rows], {
  ...(notes.length > 0 ? { limitingFactor: notes.join('; ') } : {}),
});
