// Memory per pod on packets (issue 34, row 4: <= 20 MiB per pod, servers and probes included).
// An isolated orchestrator (--isolation=netns, from source) runs N probe pods as tasks
// (dist/bin/probe, as the scenario runner deploys them): each serves 80/tcp and 80/udp and checks
// TARGETS other pods (TCP and UDP alternately) every 5 s. Once every probe has a result for every
// target (GET /status from the host), PSS, RSS and private memory (/proc/PID/smaps_rollup) are summed over every process
// under the orchestrator (the tasks' trees) and given per pod. PSS is the fair figure: the
// executable's text is shared by every probe and PSS splits it between them. Baseline in the same
// run: one bare `node -e` http server. Needs root, iproute2 and nftables; skips cleanly otherwise.
// Usage: node bench/pod-memory.bench.ts [--pods=N] [--flags=V8FLAG,...] [--threads=N]
//   --flags / --threads: the probe runs with these NODE_OPTIONS / UV_THREADPOOL_SIZE (a lever
//   measured side by side; such a run prints its figures but leaves RESULTS.md alone).
// Everything it creates uses the prefix smb5 and is removed at the end.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { NODE, ROOT, freePort, start, waitForHttp } from '../test/helpers/process.ts';
import { waitFor } from '../test/helpers/wait.ts';
import { startIsolated, stopIsolated } from './lib/isolated-orchestrator.ts';
import { met, ratio, writeResults } from './lib/results.ts';
import { runBench } from './lib/run-bench.ts';

const PREFIX = 'smb5';
const SUBNET = '10.213.200.0/22';
const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const PODS = Number(arg('pods') ?? 100);
const TARGETS = 10;
const PORT = 8080;
const GOAL_MIB = 20;
const V8_FLAGS = (arg('flags') ?? '').split(',').filter(Boolean);
const THREADS = arg('threads');
const PROBE = join(ROOT, 'dist', 'bin', 'probe');

/** Pod i's address: 10.213.200.10 onwards (the orchestrator's IPAM takes what the label asks). */
function address(i: number): string {
  const n = 10 + i;
  return `10.213.${200 + (n >> 8)}.${n & 255}`;
}

interface Memory {
  pss: number;
  rss: number;
  priv: number;
}

/** PSS, RSS and private memory of one process in MiB (zero if it has gone). */
function memoryOf(pid: number): Memory {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
    return { pss: kb('Pss') / 1024, rss: kb('Rss') / 1024, priv: (kb('Private_Clean') + kb('Private_Dirty')) / 1024 };
  } catch {
    return { pss: 0, rss: 0, priv: 0 };
  }
}

/** Every descendant of `root` (not `root` itself), from /proc's parent links. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const ppid = Number(/^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${d}/status`, 'utf8'))?.[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0)
    for (const c of children.get(queue.pop()!) ?? []) {
      out.push(c);
      queue.push(c);
    }
  return out;
}

const sum = (ms: Memory[]): Memory => ms.reduce((a, m) => ({ pss: a.pss + m.pss, rss: a.rss + m.rss, priv: a.priv + m.priv }), { pss: 0, rss: 0, priv: 0 });

function probeApp(i: number): Record<string, unknown> {
  const urls = Array.from({ length: TARGETS }, (_, k) => {
    const to = address((i + 1 + k) % PODS);
    return k % 2 === 0 ? `tcp://${to}:80` : `udp://${to}:80`;
  });
  const labels = { 'starmap.namespace': 'bench', app: `p${i}`, 'starmap.address': address(i) };
  return {
    id: `/b5/bench/p${i}`,
    args: [
      PROBE,
      `--urls=${urls.join(',')}`,
      '--serve=80/tcp,80/udp',
      '--http-address=0.0.0.0',
      `--http-port=${PORT}`,
      '--http-probe-seconds=5',
      '--timeout-seconds=1',
    ],
    env: { ...(V8_FLAGS.length > 0 ? { NODE_OPTIONS: V8_FLAGS.join(' ') } : {}), ...(THREADS ? { UV_THREADPOOL_SIZE: THREADS } : {}) },
    instances: 1,
    labels,
    ipAddress: { networkName: 'starmap', labels },
    taskKillGracePeriodSeconds: 1,
  };
}

/** True once pod i's probe has a result for each of its targets (GET /status, star's shape). */
async function checked(i: number): Promise<boolean> {
  try {
    const r = await fetch(`http://${address(i)}:${PORT}/status`, { signal: AbortSignal.timeout(2000) });
    const body = (await r.json()) as { status?: { targets?: { checkedAt?: string | null }[] } };
    const targets = body.status?.targets ?? [];
    return targets.length === TARGETS && targets.every((t) => Boolean(t.checkedAt));
  } catch {
    return false;
  }
}

async function bareServer(): Promise<Memory> {
  const port = await freePort();
  const p = start(NODE, ['-e', `require('http').createServer((q,r)=>r.end('ok')).listen(${port},'127.0.0.1')`]);
  await waitForHttp(`http://127.0.0.1:${port}/`);
  const m = memoryOf(p.child.pid!);
  await p.stop();
  return m;
}

async function main(): Promise<void> {
  const o = await startIsolated('pod-memory', PREFIX, SUBNET);
  if (!o) return;
  const pid = o.proc.child.pid!;
  try {
    for (let i = 0; i < PODS; i++) {
      const r = await o.call('POST', '/v2/apps', probeApp(i));
      if (r.status !== 201) throw new Error(`POST app p${i}: ${r.status} ${JSON.stringify(r.body)}`);
    }
    const t0 = performance.now();
    await waitFor(async () => ((await o.call('GET', '/v2/starmap/network')).body.tasks as unknown[]).length === PODS, {
      timeoutMs: 600_000,
      message: `${PODS} isolated tasks`,
    });
    const pending = new Set(Array.from({ length: PODS }, (_, i) => i));
    await waitFor(
      async () => {
        // All at once: one unreachable probe must not hold up the round by its 2 s timeout.
        const done = await Promise.all([...pending].map(async (i) => ((await checked(i)) ? i : -1)));
        for (const i of done) pending.delete(i);
        return pending.size === 0;
      },
      { timeoutMs: 180_000, message: `every probe's ${TARGETS} checks` },
    );
    const readyS = (performance.now() - t0) / 1000;
    const pids = descendants(pid);
    const pods = sum(pids.map(memoryOf));
    const orch = memoryOf(pid);
    const bare = await bareServer();
    const per = { pss: pods.pss / PODS, rss: pods.rss / PODS, priv: pods.priv / PODS };
    const lever = [V8_FLAGS.join(' '), THREADS ? `UV_THREADPOOL_SIZE=${THREADS}` : ''].filter(Boolean).join(' ') || 'default flags';
    console.log(
      `${PODS} probe pods (${lever}), ${pids.length} processes, all checked after ${readyS.toFixed(0)} s: per pod PSS ${per.pss.toFixed(1)} MiB, ` +
        `RSS ${per.rss.toFixed(1)} MiB, private ${per.priv.toFixed(1)} MiB; total PSS ${pods.pss.toFixed(0)} MiB; ` +
        `orchestrator RSS ${orch.rss.toFixed(0)} MiB PSS ${orch.pss.toFixed(0)} MiB; bare node http server PSS ${bare.pss.toFixed(1)} MiB RSS ${bare.rss.toFixed(1)} MiB`,
    );
    if (V8_FLAGS.length === 0 && !THREADS)
      writeResults(
        'Pod memory on packets',
        [
          {
            measure: `PSS per pod (${PODS} dist/bin/probe tasks, each --serve tcp+udp and ${TARGETS} targets, all checked; ${pids.length} processes)`,
            value: `${per.pss.toFixed(1)} MiB`,
            baseline: `${bare.pss.toFixed(1)} MiB (bare node -e http server)`,
            ratio: ratio(per.pss, bare.pss),
            goal: `≤ ${GOAL_MIB} MiB`,
            met: met(per.pss <= GOAL_MIB),
          },
          {
            measure: 'private memory per pod',
            value: `${per.priv.toFixed(1)} MiB`,
            baseline: `${bare.priv.toFixed(1)} MiB`,
            ratio: ratio(per.priv, bare.priv),
            goal: '-',
            met: '-',
          },
          {
            measure: 'RSS per pod (counts the shared executable text in each)',
            value: `${per.rss.toFixed(1)} MiB`,
            baseline: `${bare.rss.toFixed(1)} MiB`,
            ratio: ratio(per.rss, bare.rss),
            goal: '-',
            met: '-',
          },
          {
            measure: `from the last POST /v2/apps to every probe having checked all its targets`,
            value: `${readyS.toFixed(0)} s`,
            baseline: '-',
            ratio: '-',
            goal: '-',
            met: '-',
          },
          { measure: `orchestrator RSS with ${PODS} isolated tasks`, value: `${orch.rss.toFixed(0)} MiB`, baseline: '-', ratio: '-', goal: '-', met: '-' },
        ],
        {
          limitingFactor:
            'private memory per pod (V8 heap, Node runtime, probe code) stays; PSS falls toward it as more pods share the executable; baseline: one server alone',
        },
      );
  } finally {
    await stopIsolated('pod-memory', o, PREFIX, SUBNET);
  }
  process.exit(0);
}

runBench(main);
