// The tiered evaluator (shared/netpol/tiers.ts): cells per second with admin-tier policies
// (ClusterNetworkPolicy, Admin and Baseline tiers) in force beside NetworkPolicies, against the
// NetworkPolicy evaluator alone on the same model and NetworkPolicies, in the same run.
import { rng as prng } from '../test/fuzz/values.ts';
import { validateClusterPolicy, type ClusterPolicy } from '../shared/netpol/cluster-policy.ts';
import { Evaluator } from '../shared/netpol/evaluate.ts';
import { TieredEvaluator } from '../shared/netpol/tiers.ts';
import type { NetworkPolicyObject, Protocol } from '../shared/netpol/types.ts';
import { validateNetworkPolicy } from '../shared/netpol/validate.ts';
import { generate } from '../test/helpers/netpol-gen.ts';
import { median, ratio, writeResults, type ResultRow } from './lib/results.ts';

const PROTOCOLS: Protocol[] = ['TCP', 'UDP'];
const PORTS = [80, 81];
const VALUES = ['a', 'b', 'c'];

/** `n` valid ClusterNetworkPolicies, half per tier, with selector subjects and peers, ports, networks and all three actions. */
function clusterPolicies(seed: number, n: number): ClusterPolicy[] {
  const r = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const sel = () => (r() < 0.3 ? {} : { matchLabels: { [pick(['app', 'tier', 'env'])]: pick(VALUES) } });
  const peer = (egress: boolean) =>
    egress && r() < 0.2
      ? { networks: [pick(['10.0.0.0/8', '192.168.0.0/16', '0.0.0.0/0'])] }
      : r() < 0.5
        ? { namespaces: sel() }
        : { pods: { namespaceSelector: sel(), podSelector: sel() } };
  const rule = (egress: boolean, tier: string) => ({
    action: pick(tier === 'Admin' ? ['Accept', 'Deny', 'Pass'] : ['Accept', 'Deny']),
    [egress ? 'to' : 'from']: [peer(egress), peer(egress)],
    ...(r() < 0.5
      ? { protocols: [{ [pick(['tcp', 'udp'])]: { destinationPort: r() < 0.5 ? { number: pick(PORTS) } : { range: { start: 80, end: 81 } } } }] }
      : {}),
  });
  return Array.from({ length: n }, (_, i) => {
    const tier = i % 2 === 0 ? 'Admin' : 'Baseline';
    const doc = {
      apiVersion: 'policy.networking.k8s.io/v1alpha2',
      kind: 'ClusterNetworkPolicy',
      metadata: { name: `p${i}` },
      spec: {
        tier,
        priority: Math.floor(r() * 20),
        subject: r() < 0.5 ? { namespaces: sel() } : { pods: { namespaceSelector: sel(), podSelector: sel() } },
        ingress: Array.from({ length: 3 }, () => rule(false, tier)),
        egress: Array.from({ length: 3 }, () => rule(true, tier)),
      },
    };
    const v = validateClusterPolicy(doc);
    if ('errors' in v) throw new Error(`generated policy p${i} is invalid: ${JSON.stringify(v.errors)}`);
    return v.policy;
  });
}

function measure(size: { namespaces: number; pods: number }, policies: NetworkPolicyObject[], cluster: ClusterPolicy[] | undefined, rounds: number) {
  const g = generate(7, { ...size, policies: 0 });
  // Addresses, so that networks peers decide.
  g.pods.forEach((p, i) => (p.ip = `10.1.${Math.floor(i / 200)}.${(i % 200) + 1}`));
  const pairs = g.pods.flatMap((from) => g.pods.filter((to) => to !== from).map((to) => [from, to] as const));
  const cells = pairs.length * PORTS.length * PROTOCOLS.length;
  const times: number[] = [];
  let allowed = 0;
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    // A fresh evaluator each round, as the runner makes one per step.
    const ev = cluster ? new TieredEvaluator(g, policies, cluster) : new Evaluator(g, policies);
    for (const [from, to] of pairs)
      for (const port of PORTS) for (const protocol of PROTOCOLS) if (ev.evaluate({ from, to, port, protocol }).allowed) allowed++;
    times.push(performance.now() - t0);
  }
  if (allowed < 0) throw new Error('unreachable'); // keeps the loop's result alive
  const ms = median(times);
  return { cellsPerSecond: cells / (ms / 1000), ms, cells };
}

const rows: (string | number)[][] = [];
for (const [namespaces, pods] of [
  [3, 3],
  [5, 5],
  [10, 10],
] as const) {
  const policies = generate(11, { namespaces, pods, policies: 10 }).policies.map((p) => (validateNetworkPolicy(p) as { policy: NetworkPolicyObject }).policy);
  for (const n of [10, 50]) {
    const cluster = clusterPolicies(13, n);
    const rounds = namespaces * pods > 50 ? 15 : 100;
    measure({ namespaces, pods }, policies, undefined, 3);
    measure({ namespaces, pods }, policies, cluster, 3);
    const base = measure({ namespaces, pods }, policies, undefined, rounds);
    const m = measure({ namespaces, pods }, policies, cluster, rounds);
    rows.push([
      `${namespaces} x ${pods} (${namespaces * pods} pods)`,
      m.cells,
      n,
      `${m.ms.toFixed(2)} ms`,
      Math.round(m.cellsPerSecond).toLocaleString('en'),
      Math.round(base.cellsPerSecond).toLocaleString('en'),
      `${((m.cellsPerSecond / base.cellsPerSecond) * 100).toFixed(0)} %`,
    ]);
    console.log(rows.at(-1)!.join('  '));
  }
}

// Every cell of the model (pod pairs x ports 80, 81 x TCP, UDP) with 10 generated NetworkPolicies
// (every feature) and generated ClusterNetworkPolicies (half Admin, half Baseline; 3 ingress and 3
// egress rules each with namespace, pod and networks peers, ports and ranges, Accept / Deny / Pass;
// priorities 0-19, so same-priority ties occur), by the tiered evaluator, against the NetworkPolicy
// evaluator alone on the same cells in the same run. A fresh evaluator per model, as the runner makes
// one per step. Median of 100 rounds (15 for 100 pods) after 3 warm-up rounds.
writeResults(
  'Tiered evaluator: admin-tier policies in force',
  rows.map((r): ResultRow => ({
    measure: `cells/s, ${r[0]}, ${r[2]} cluster policies (${r[1]} cells, ${r[3]})`,
    value: String(r[4]),
    baseline: `${r[5]} (NetworkPolicy only)`,
    ratio: ratio(Number(String(r[4]).replace(/,/g, '')), Number(String(r[5]).replace(/,/g, ''))),
    goal: '-',
    met: '-',
  })),
  { limitingFactor: 'per cell, every admin-tier rule of the policies selecting either pod is matched in order; no classes of identical pods yet' },
);
