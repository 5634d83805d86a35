// Policies applied on packets (issue 34): 1,000 NetworkPolicies over 100 pods, from the API call
// to every rule in force, then one policy changed in one namespace. Needs root, iproute2 and
// nftables (the orchestrator from source with --isolation=netns); skips cleanly otherwise.
// - 100 pods: 10 namespaces × 10 apps of one `sleep` task each, labelled app=a0…a9 and tier=t0/t1;
// - 1,000 policies, 100 per namespace: policy i selects app=a(i mod 10) and lets in, on TCP port
//   1000+i, pods with app=a((i+1) mod 10) of its namespace and pods of namespaces labelled
//   team=t(i mod 3), so each pod is selected by 10 policies;
// - timed: one POST /v2/starmap/changes with all 1,000 until its answer (the orchestrator answers
//   once every task namespace's `nft -f` has returned), then read back with `nft list ruleset` in
//   every task namespace: each must name each of the 10 policies selecting its pod;
// - then one policy changed (its port) in one namespace: its answer, and which task namespaces'
//   rulesets changed (read back before and after), grouped by namespace;
// - peak RSS of the orchestrator (VmHWM) after each;
// - baseline in the same run: the very rulesets read back, each loaded with one `nft -f` into a
//   scratch namespace of this bench (smbase3), one after another.
// Everything it creates uses the prefix smb3 and is removed at the end (the orchestrator's SIGTERM
// removes its namespaces; cleanupAll after, and leftovers checked).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StartedOrchestrator } from '../test/helpers/orchestrator.ts';
import { tempDir } from '../test/helpers/process.ts';
import { waitFor } from '../test/helpers/wait.ts';
import { startIsolated, stopIsolated } from './lib/isolated-orchestrator.ts';
import { met, ratio, writeResults, type ResultRow } from './lib/results.ts';

const PREFIX = 'smb3';
const SUBNET = '10.213.190.0/24';
// Not under PREFIX: the orchestrator owns every namespace named after its prefix.
const BASE_NS = 'smbase3';
const NAMESPACES = 10;
const APPS = 10;
const POLICIES_PER_NS = 100;
const GOAL_MS = 2000;

interface Task {
  namespace: string;
  pod: string;
  netns: string;
}

function app(ns: number, a: number): Record<string, unknown> {
  return {
    id: `/b3/n${ns}/a${a}`,
    cmd: 'exec sleep 100000',
    labels: { 'starmap.namespace': `n${ns}`, app: `a${a}`, tier: `t${a % 2}` },
    ipAddress: { networkName: 'starmap' },
    taskKillGracePeriodSeconds: 1,
  };
}

function policy(ns: number, i: number, port = 1000 + i): Record<string, unknown> {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: `p${i}`, namespace: `n${ns}` },
    spec: {
      podSelector: { matchLabels: { app: `a${i % APPS}` } },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { app: `a${(i + 1) % APPS}` } } }, { namespaceSelector: { matchLabels: { team: `t${i % 3}` } } }],
          ports: [{ protocol: 'TCP', port }],
        },
      ],
    },
  };
}

const sh = (args: string[]) => execFileSync(args[0]!, args.slice(1), { encoding: 'utf8', maxBuffer: 1 << 28 });
const ruleset = (netns: string) => sh(['ip', 'netns', 'exec', netns, 'nft', 'list', 'ruleset']);
const digest = (text: string) => createHash('sha256').update(text).digest('hex');

function peakRssMiB(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function tasksOf(o: StartedOrchestrator): Promise<Task[]> {
  return (await o.call('GET', '/v2/starmap/network')).body.tasks as Task[];
}

/** The policies whose comments a pod's ruleset must carry: the 10 of its namespace selecting its app. */
function expectedPolicies(t: Task): string[] {
  const a = Number(t.pod.slice(1));
  return Array.from({ length: POLICIES_PER_NS / APPS }, (_, k) => `${t.namespace}/p${a + k * APPS}`);
}

async function main(): Promise<void> {
  const o = await startIsolated('policies-apply', PREFIX, SUBNET);
  if (!o) return;
  const pid = o.proc.child.pid!;
  try {
    for (let ns = 0; ns < NAMESPACES; ns++) {
      const r = await o.call('PUT', `/v2/starmap/namespaces/n${ns}`, { labels: { team: `t${ns % 3}` } });
      if (r.status >= 300) throw new Error(`PUT namespace n${ns}: ${r.status} ${JSON.stringify(r.body)}`);
      for (let a = 0; a < APPS; a++) {
        const r2 = await o.call('POST', '/v2/apps', app(ns, a));
        if (r2.status !== 201) throw new Error(`POST app: ${r2.status} ${JSON.stringify(r2.body)}`);
      }
    }
    const pods = NAMESPACES * APPS;
    await waitFor(async () => (await tasksOf(o)).length === pods, { timeoutMs: 180_000, message: `${pods} isolated tasks` });
    const tasks = await tasksOf(o);
    const rssBefore = peakRssMiB(pid);
    console.log(`${tasks.length} tasks running; orchestrator peak RSS ${rssBefore.toFixed(0)} MiB`);

    // 1. 1,000 policies in one change.
    const all = Array.from({ length: NAMESPACES }, (_, ns) => Array.from({ length: POLICIES_PER_NS }, (_, i) => policy(ns, i))).flat();
    let t0 = performance.now();
    const put = await o.call('POST', '/v2/starmap/changes', { policies: { put: all } });
    const answeredMs = performance.now() - t0;
    if (put.status !== 200) throw new Error(`POST changes: ${put.status} ${JSON.stringify(put.body).slice(0, 500)}`);
    const texts = new Map<string, string>();
    for (const t of tasks) texts.set(t.netns, ruleset(t.netns));
    const inForceMs = performance.now() - t0;
    const missingRules = tasks.filter((t) => !expectedPolicies(t).every((p) => texts.get(t.netns)!.includes(`"${p} ingress`)));
    const rssAll = peakRssMiB(pid);
    const rules = [...texts.values()].reduce((n, s) => n + s.split('\n').filter((l) => l.includes(' accept') || l.includes(' drop')).length, 0);
    console.log(
      `1,000 policies: answered in ${answeredMs.toFixed(0)} ms (applied ${put.body.applied}, unchanged ${put.body.unchanged}), read back in every namespace after ${inForceMs.toFixed(0)} ms; ${rules} accept/drop lines; pods missing a policy: ${missingRules.length}; peak RSS ${rssAll.toFixed(0)} MiB`,
    );

    // Baseline: the same rulesets, each loaded with one nft -f into a scratch namespace.
    sh(['ip', 'netns', 'add', BASE_NS]);
    const dir = tempDir('starmap-bench-');
    const files = [...texts.values()].map((text, i) => {
      const f = join(dir, `r${i}.nft`);
      writeFileSync(f, `flush ruleset\n${text}`);
      return f;
    });
    let baseMs: number;
    try {
      const b0 = performance.now();
      for (const f of files) sh(['ip', 'netns', 'exec', BASE_NS, 'nft', '-f', f]);
      baseMs = performance.now() - b0;
    } finally {
      sh(['ip', 'netns', 'delete', BASE_NS]);
    }
    console.log(`baseline: the ${files.length} rulesets loaded with nft -f one after another in ${baseMs.toFixed(0)} ms`);

    // 2. One policy changed in one namespace.
    const before = new Map([...texts].map(([k, v]) => [k, digest(v)]));
    // A fresh request first: the keep-alive connection sat idle through the baseline and the
    // server closes idle ones, which the client may hear of only as its next request fails.
    for (let attempt = 1; ; attempt++) {
      try {
        await o.call('GET', '/ping');
        break;
      } catch (err) {
        if (attempt === 3) throw err;
      }
    }
    t0 = performance.now();
    const one = await o.call('POST', '/v2/starmap/changes', { policies: { put: [policy(3, 7, 4007)] } });
    const oneMs = performance.now() - t0;
    if (one.status !== 200) throw new Error(`POST changes (one): ${one.status} ${JSON.stringify(one.body)}`);
    const changed = tasks.filter((t) => digest(ruleset(t.netns)) !== before.get(t.netns));
    const changedNs = [...new Set(changed.map((t) => t.namespace))].sort();
    const rssOne = peakRssMiB(pid);
    console.log(
      `one policy changed (n3/p7): answered in ${oneMs.toFixed(0)} ms (applied ${one.body.applied}, unchanged ${one.body.unchanged}); rulesets changed: ${changed.length} tasks in ${changedNs.join(', ') || 'none'}; peak RSS ${rssOne.toFixed(0)} MiB`,
    );

    const rows: ResultRow[] = [
      {
        measure: `1,000 policies over ${pods} pods (${NAMESPACES} namespaces), one POST /v2/starmap/changes, to its answer`,
        value: `${(answeredMs / 1000).toFixed(2)} s (peak RSS ${rssAll.toFixed(0)} MiB)`,
        baseline: `${files.length} × nft -f of the same rulesets: ${(baseMs / 1000).toFixed(2)} s`,
        ratio: ratio(answeredMs, baseMs),
        goal: '≤ 2 s',
        met: met(answeredMs <= GOAL_MS),
      },
      {
        measure: `… to every rule read back in force (nft list ruleset in each task netns; pods missing one: ${missingRules.length})`,
        value: `${(inForceMs / 1000).toFixed(2)} s`,
        baseline: '-',
        ratio: '-',
        goal: '≤ 2 s',
        met: met(inForceMs <= GOAL_MS && missingRules.length === 0),
      },
      {
        measure: 'one policy changed in one namespace, to its answer',
        value: `${oneMs.toFixed(0)} ms (peak RSS ${rssOne.toFixed(0)} MiB)`,
        baseline: `one nft -f: ${(baseMs / files.length).toFixed(0)} ms`,
        ratio: ratio(oneMs, baseMs / files.length),
        goal: '-',
        met: '-',
      },
      {
        measure: '… task rulesets that changed (tasks applied by the orchestrator)',
        value: `${changed.length} of ${tasks.length}, in ${changedNs.length} namespace(s): ${changedNs.join(', ')} (applied ${one.body.applied})`,
        baseline: '-',
        ratio: '-',
        goal: 'only the namespaces it affects',
        met: met(changedNs.length === 1 && changedNs[0] === 'n3' && one.body.applied === changed.length),
      },
      {
        measure: `orchestrator peak RSS (VmHWM) with ${pods} tasks, before any policy`,
        value: `${rssBefore.toFixed(0)} MiB`,
        baseline: '-',
        ratio: '-',
        goal: '-',
        met: '-',
      },
    ];
    writeResults('Policies applied on packets', rows, {
      limitingFactor: `one nft process per task namespace (${files.length}, 4 at a time): those runs alone, one after another, take ${(baseMs / 1000).toFixed(1)} s here`,
    });
  } catch (err) {
    console.error(`orchestrator's output (last 3,000 characters):\n${o.proc.output().slice(-3000)}`);
    throw err;
  } finally {
    await stopIsolated('policies-apply', o, PREFIX, SUBNET);
  }
}

await main();
