// The built-in cnp-conformance set (upstream's ClusterNetworkPolicy conformance suite, 24
// scenarios) run on packets: `scenario run cnp-conformance --isolation=netns` from the command to
// its exit, with the bundled orchestrator enforcing the admin tiers in nftables. Figures: the wall
// time of the whole set (goal: under a minute), the judged TCP and UDP cells and how many passed,
// and the time per scenario. Needs root, iproute2 and nftables; skips cleanly otherwise. Its own
// prefix smcb and subnet 10.213.154.0/24, checked empty at the end.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { leftovers } from '../orchestrator/isolation/index.ts';
import type { SetReportDoc } from '../scenarios/report/schema.ts';
import { isolationSkipReason } from '../test/helpers/isolation.ts';
import { tempDir } from '../test/helpers/process.ts';
import { writeResults } from './lib/results.ts';

const PREFIX = 'smcb';
const SUBNET = '10.213.154.0/24';
const GOAL_S = 60;

const missing = isolationSkipReason();
if (missing) {
  console.log(`cnp-conformance: skipped, ${missing} (needs root, iproute2 and nftables)`);
} else {
  const json = join(tempDir('starmap-bench-cnp-'), 'report.json');
  const started = process.hrtime.bigint();
  const r = spawnSync(
    process.execPath,
    ['scenarios/main.ts', 'run', 'cnp-conformance', '--isolation=netns', `--netns-prefix=${PREFIX}`, `--netns-subnet=${SUBNET}`, `--report-json=${json}`],
    { cwd: join(import.meta.dirname, '..'), stdio: ['ignore', 'ignore', 'inherit'], timeout: 1_800_000 },
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const report = JSON.parse(readFileSync(json, 'utf8')) as SetReportDoc;
  const cells = report.scenarios.flatMap((s) => s.steps.flatMap((st) => st.cells)).filter((c) => c.expected !== null && c.protocol !== 'SCTP');
  const passed = cells.filter((c) => c.status === 'pass').length;
  const notRun = cells.filter((c) => c.status === 'not run').length;
  const steps = report.scenarios.reduce((n, s) => n + s.steps.length, 0);
  const left = await leftovers(PREFIX, SUBNET);
  if (Object.values(left).some((l) => l.length > 0)) console.error(`cnp-conformance: left behind: ${JSON.stringify(left)}`);
  console.log(`cnp-conformance: exit ${r.status}, ${seconds.toFixed(1)} s, ${passed} of ${cells.length} judged TCP/UDP cells passed`);
  writeResults(
    'ClusterNetworkPolicy conformance set on packets',
    [
      {
        measure: `whole set: ${report.scenarios.length} scenarios, ${steps} steps, wall time`,
        value: `${seconds.toFixed(1)} s`,
        baseline: 'before poke and sharing: 498.2 s',
        ratio: `${(498.2 / seconds).toFixed(2)}×`,
        goal: `< ${GOAL_S} s`,
        met: seconds < GOAL_S ? 'yes' : 'no',
      },
      {
        measure: 'judged TCP and UDP cells passed on packets (the rest not run: node peers need the node model)',
        value: `${passed} of ${cells.length}, ${notRun} not run`,
        baseline: '-',
        ratio: '-',
        goal: 'all',
        met: passed === cells.length && cells.length > 0 ? 'yes' : 'no',
      },
      {
        measure: 'per scenario (deploy, every step settled and observed, stop)',
        value: `${(seconds / report.scenarios.length).toFixed(1)} s`,
        baseline: '-',
        ratio: '-',
        goal: '-',
        met: '-',
      },
    ],
    {
      limitingFactor:
        'five deployments (20 scenarios share one; the CIDR and node-peer ones have pods of their own), each step a policy write, a poked check and one drop-counter read (~1 s)',
    },
  );
  process.exitCode = r.status === 0 ? 0 : 1;
}
