// The class matrix with admin tiers (shared/netpol/tier-matrix.ts) against the per-cell tiered
// evaluator: on random small clusters (test/helpers/netpol-gen.ts, with replicas so that classes
// have several members) and random Admin and Baseline policies (subjects and peers by namespace and
// pod selectors, `networks` blocks, protocols with numbers, ranges and named ports, Accept, Deny,
// Pass, equal priorities), every cell's TieredVerdict must be TieredEvaluator's, chains and all:
// asked one by one (evaluate) and in blocks (blocks(), each cell exactly once).
import { describe, expect, it } from 'vitest';
import type { Cluster } from '../shared/netpol/evaluate.ts';
import type { Action, ClusterPeer, ClusterPolicy, ClusterProtocol, ClusterRule } from '../shared/netpol/cluster-policy.ts';
import { TierMatrix } from '../shared/netpol/tier-matrix.ts';
import { TieredEvaluator } from '../shared/netpol/tiers.ts';
import type { LabelSelector, NetworkPolicyObject, PodInfo, Protocol } from '../shared/netpol/types.ts';
import { validateNetworkPolicy } from '../shared/netpol/validate.ts';
import { generate } from './helpers/netpol-gen.ts';

const valid = (policies: NetworkPolicyObject[]) => policies.map((p) => (validateNetworkPolicy(p) as { policy: NetworkPolicyObject }).policy);

function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => ((s = (s * 1103515245 + 12345) >>> 0) & 0x7fffffff) / 0x80000000;
}

function randomClusterPolicies(seed: number, cluster: Cluster, count: number, networks: boolean): ClusterPolicy[] {
  const r = prng(seed * 7919);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const chance = (p: number) => r() < p;
  const sel = (): LabelSelector => {
    const x = r();
    if (x < 0.25) return {};
    if (x < 0.5) return { matchLabels: { 'kubernetes.io/metadata.name': pick(cluster.namespaces).name } };
    if (x < 0.75) return { matchLabels: { [pick(['app', 'tier', 'env'])]: pick(['a', 'b', 'c']) } };
    return { matchExpressions: [{ key: pick(['app', 'tier', 'env']), operator: pick(['Exists', 'DoesNotExist'] as const) }] };
  };
  const podSel = () => ({ namespaceSelector: sel(), podSelector: sel() });
  const peer = (egress: boolean): ClusterPeer => {
    const x = r();
    if (egress && networks && x < 0.3) return { networks: [pick(['10.213.1.0/24', '10.213.2.8/29', '10.213.0.0/16', '10.213.3.11/32'])] };
    return x < 0.6 ? { namespaces: sel() } : { pods: podSel() };
  };
  const protocol = (): ClusterProtocol => {
    if (chance(0.2)) return { namedPort: pick(['p80-tcp', 'p443-udp', 'p8080-sctp']) };
    const proto = pick(['TCP', 'UDP', 'SCTP'] as Protocol[]);
    return chance(0.5)
      ? { protocol: proto, port: { number: pick([80, 81, 443, 8080]) } }
      : { protocol: proto, port: { range: { start: 80, end: pick([81, 443, 9000]) } } };
  };
  const rules = (egress: boolean): ClusterRule[] =>
    Array.from({ length: Math.floor(r() * 3) }, (): ClusterRule => {
      const rule: ClusterRule = {
        action: pick(['Accept', 'Deny', 'Pass'] as Action[]),
        peers: Array.from({ length: 1 + Math.floor(r() * 2) }, () => peer(egress)),
      };
      if (chance(0.5)) rule.protocols = Array.from({ length: 1 + Math.floor(r() * 2) }, protocol);
      return rule;
    });
  return Array.from({ length: count }, (_, i): ClusterPolicy => {
    const tier = chance(0.6) ? 'Admin' : 'Baseline';
    return {
      id: `cnp/c${i}`,
      kind: 'ClusterNetworkPolicy',
      name: `c${i}`,
      tier,
      priority: pick([1, 2, 2, 5]),
      subject: chance(0.5) ? { namespaces: sel() } : { pods: podSel() },
      ingress: rules(false),
      egress: rules(true),
    };
  });
}

/** Each generated pod with `replicas` copies (same labels and ports, own name and address). */
function withReplicas(pods: PodInfo[], replicas: number): PodInfo[] {
  return pods.flatMap((p, i) =>
    Array.from({ length: replicas }, (_, k) => ({ ...p, name: `${p.name}-${k}`, ip: `10.213.${(i % 3) + 1}.${10 + i * replicas + k}` })),
  );
}

const ASKED = [80, 443, 9999].flatMap((port) => (['TCP', 'UDP', 'SCTP'] as const).map((protocol) => ({ port, protocol })));

function disagreements(label: string, cluster: Cluster, policies: NetworkPolicyObject[], clusterPolicies: ClusterPolicy[]): string[] {
  const ev = new TieredEvaluator(cluster, policies, clusterPolicies);
  const m = new TierMatrix(cluster, policies, clusterPolicies);
  const bad: string[] = [];
  for (const from of cluster.pods)
    for (const to of cluster.pods)
      for (const { port, protocol } of [...to.ports, ...ASKED]) {
        const want = JSON.stringify(ev.evaluate({ from, to, port, protocol }));
        const got = JSON.stringify(m.evaluate({ from, to, port, protocol }));
        if (got !== want && bad.length < 3)
          bad.push(`${label}: ${from.namespace}/${from.name} -> ${to.namespace}/${to.name} ${port}/${protocol}: matrix ${got}, evaluator ${want}`);
      }
  return bad;
}

/** Every cell of blocks() (each pod to each other, the destination's declared and asked ports) once, with the evaluator's verdict. */
function blockDisagreements(label: string, cluster: Cluster, policies: NetworkPolicyObject[], clusterPolicies: ClusterPolicy[]): string[] {
  const ev = new TieredEvaluator(cluster, policies, clusterPolicies);
  const m = new TierMatrix(cluster, policies, clusterPolicies, { ports: ASKED });
  const bad: string[] = [];
  const seen = new Map<string, number>();
  m.blocks((from, to, cell, verdict, sameClass) => {
    for (const f of from)
      for (const t of to) {
        if (f === t) {
          if (!sameClass && bad.length < 3) bad.push(`${label}: a block holds pod ${f} to itself but is not sameClass`);
          continue;
        }
        const key = `${f} ${t} ${cell.port}/${cell.protocol}`;
        seen.set(key, (seen.get(key) ?? 0) + 1);
        const conn = { from: cluster.pods[f]!, to: cluster.pods[t]!, port: cell.port, protocol: cell.protocol };
        const want = JSON.stringify(ev.evaluate(conn));
        const got = JSON.stringify(verdict);
        if (got !== want && bad.length < 3) bad.push(`${label}: block ${key}: matrix ${got}, evaluator ${want}`);
      }
  });
  let expected = 0;
  cluster.pods.forEach((from, f) =>
    cluster.pods.forEach((to, t) => {
      if (f === t) return;
      const cells = new Set([...to.ports, ...ASKED].map((c) => `${c.port}/${c.protocol}`));
      for (const c of cells) {
        expected++;
        if (seen.get(`${f} ${t} ${c}`) !== 1 && bad.length < 3) bad.push(`${label}: cell ${f} ${t} ${c} visited ${seen.get(`${f} ${t} ${c}`) ?? 0} times`);
      }
    }),
  );
  if (seen.size !== expected && bad.length < 3) bad.push(`${label}: blocks visit ${seen.size} cells, ${expected} expected`);
  return bad;
}

describe("the tier matrix gives TieredEvaluator's verdicts and chains", () => {
  it('on 120 random clusters with random Admin and Baseline policies (no networks peers: every cell from the class matrix)', () => {
    const bad: string[] = [];
    for (let seed = 1; seed <= 120 && bad.length === 0; seed++) {
      const g = generate(seed, { namespaces: 3, pods: 3, policies: 2 + (seed % 5) });
      const cluster = { namespaces: g.namespaces, pods: withReplicas(g.pods, 2) };
      const cps = randomClusterPolicies(seed, cluster, 1 + (seed % 6), false);
      bad.push(...disagreements(`seed ${seed}`, cluster, valid(g.policies), cps));
      bad.push(...blockDisagreements(`seed ${seed}`, cluster, valid(g.policies), cps));
    }
    expect(bad).toEqual([]);
  });

  it('with networks peers (their subjects go per cell) and some addresses not known yet', () => {
    const bad: string[] = [];
    for (let seed = 1; seed <= 60 && bad.length === 0; seed++) {
      const g = generate(seed, { namespaces: 3, pods: 3, policies: 3 });
      const pods = withReplicas(g.pods, 2).map((p, i) => (i % 5 === seed % 5 ? { ...p, ip: undefined } : p));
      const cluster = { namespaces: g.namespaces, pods };
      const cps = randomClusterPolicies(seed, cluster, 2 + (seed % 4), true);
      bad.push(...disagreements(`seed ${seed}`, cluster, valid(g.policies), cps));
      bad.push(...blockDisagreements(`seed ${seed}`, cluster, valid(g.policies), cps));
    }
    expect(bad).toEqual([]);
  });

  it('with host-network and external pods (never subjects nor pod peers: classes of their own), blocks and cells', () => {
    const bad: string[] = [];
    for (let seed = 1; seed <= 40 && bad.length === 0; seed++) {
      const g = generate(seed, { namespaces: 3, pods: 3, policies: 3 });
      const pods = withReplicas(g.pods, 2).map((p, i) => (i % 4 === 1 ? { ...p, hostNetwork: true } : i % 7 === 3 ? { ...p, external: true } : p));
      const cluster = { namespaces: g.namespaces, pods };
      const cps = randomClusterPolicies(seed, cluster, 2 + (seed % 4), seed % 2 === 0);
      bad.push(...disagreements(`seed ${seed}`, cluster, valid(g.policies), cps));
      bad.push(...blockDisagreements(`seed ${seed}`, cluster, valid(g.policies), cps));
    }
    expect(bad).toEqual([]);
  });

  it('computes a side once per subject set, peer profile and port signature, not per pod pair', () => {
    const g = generate(3, { namespaces: 3, pods: 3, policies: 3 });
    const cluster = { namespaces: g.namespaces, pods: withReplicas(g.pods, 4) };
    const cps = randomClusterPolicies(3, cluster, 4, false);
    const m = new TierMatrix(cluster, valid(g.policies), cps);
    let cells = 0;
    for (const from of cluster.pods)
      for (const to of cluster.pods)
        for (const { port, protocol } of to.ports) {
          m.evaluate({ from, to, port, protocol });
          cells++;
        }
    expect(m.stats().addressClasses).toBe(0);
    expect(m.stats().classes).toBeLessThanOrEqual(9);
    expect(m.stats().templates).toBeGreaterThan(0);
    expect(m.stats().templates * 4).toBeLessThan(cells);
  });
});
