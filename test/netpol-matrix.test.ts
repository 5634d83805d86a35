// The whole-matrix path (shared/netpol/matrix.ts) against the per-cell evaluator: on generated
// clusters (test/helpers/netpol-gen.ts, every feature at random, and bench/lib/cluster-gen.ts,
// realistic teams and Deployments) every cell's verdict and reasons must be the evaluator's, and
// the counts, rows and diffs must be what cell-by-cell evaluation gives. A disagreement names the
// seed and the cell.
import { describe, expect, it } from 'vitest';
import { generateCluster } from '../bench/lib/cluster-gen.ts';
import { Evaluator, type Cluster, type Verdict } from '../shared/netpol/evaluate.ts';
import { VerdictMatrix, type PortCell } from '../shared/netpol/matrix.ts';
import type { NetworkPolicyObject, PodInfo } from '../shared/netpol/types.ts';
import { validateNetworkPolicy } from '../shared/netpol/validate.ts';
import { generate } from './helpers/netpol-gen.ts';

const valid = (policies: NetworkPolicyObject[]) => policies.map((p) => (validateNetworkPolicy(p) as { policy: NetworkPolicyObject }).policy);

/** Every ordered pod pair (self included) at every asked port, with the matrix's verdict beside the evaluator's. */
function disagreements(label: string, cluster: Cluster, policies: NetworkPolicyObject[], asked: PortCell[], extra: PortCell[] = []): string[] {
  const ev = new Evaluator(cluster, policies);
  const m = new VerdictMatrix(cluster, policies, { ports: extra });
  const out: string[] = [];
  for (const from of cluster.pods)
    for (const to of cluster.pods) {
      const ports = [...to.ports.map((p) => ({ port: p.port, protocol: p.protocol })), ...asked];
      for (const { port, protocol } of ports) {
        const want = ev.evaluate({ from, to, port, protocol });
        const got = m.evaluate({ from, to, port, protocol });
        if (JSON.stringify(got) !== JSON.stringify(want) && out.length < 5)
          out.push(
            `${label}: ${from.namespace}/${from.name} -> ${to.namespace}/${to.name} ${port}/${protocol}: matrix ${JSON.stringify(got)}, evaluator ${JSON.stringify(want)}`,
          );
      }
    }
  return out;
}

const ALL: PortCell[] = [80, 81, 443, 8080, 9999].flatMap((port) => (['TCP', 'UDP', 'SCTP'] as const).map((protocol) => ({ port, protocol })));

describe("the whole matrix gives the per-cell evaluator's verdicts and reasons", () => {
  it('on 150 clusters of test/helpers/netpol-gen.ts (every feature at random), declared and asked ports', () => {
    const bad: string[] = [];
    for (let seed = 1; seed <= 150 && bad.length === 0; seed++) {
      const g = generate(seed, { namespaces: 3, pods: 4, policies: 3 + (seed % 6) });
      bad.push(...disagreements(`seed ${seed}`, g, valid(g.policies), ALL, ALL.slice(0, 3 + (seed % 10))));
    }
    expect(bad).toEqual([]);
  });

  it('when some addresses are not known yet (undecided ipBlocks, as before deployment)', () => {
    const bad: string[] = [];
    for (let seed = 1; seed <= 60 && bad.length === 0; seed++) {
      const g = generate(seed, { namespaces: 3, pods: 3, policies: 5 });
      const pods = g.pods.map((p, i) => (i % 3 === seed % 3 ? { ...p, ip: undefined } : p));
      bad.push(...disagreements(`seed ${seed}`, { namespaces: g.namespaces, pods }, valid(g.policies), ALL, ALL.slice(0, 4)));
    }
    expect(bad).toEqual([]);
  });

  it('on realistic clusters of bench/lib/cluster-gen.ts (teams, Deployments, default deny plus allows, ipBlocks on node ranges)', () => {
    const bad: string[] = [];
    let addressDependent = 0;
    for (let seed = 1; seed <= 6 && bad.length === 0; seed++) {
      const c = generateCluster(seed, { namespaces: 8, pods: 70, policies: 10 + seed * 6, podsPerNode: 4 });
      bad.push(...disagreements(`seed ${seed}`, c, valid(c.policies), [{ port: 443, protocol: 'TCP' }]));
      addressDependent += new VerdictMatrix(c, valid(c.policies)).stats().addressDependentCells;
    }
    expect(bad).toEqual([]);
    // The classes' cells that ipBlocks split by address were among those compared.
    expect(addressDependent).toBeGreaterThan(0);
  });
});

describe('the whole matrix: counts, rows, diffs', () => {
  const c = generateCluster(3, { namespaces: 7, pods: 60, policies: 30, podsPerNode: 3 });
  const policies = valid(c.policies);
  const m = new VerdictMatrix(c, policies);
  const ev = new Evaluator(c, policies);
  const cellsOf = (to: PodInfo) => to.ports.map((p) => ({ port: p.port, protocol: p.protocol }));

  it('counts every pair of distinct pods at each destination port cell, as evaluating them one by one does', () => {
    const want = { cells: 0, allowed: 0, denied: 0, undecided: 0 };
    for (const from of c.pods)
      for (const to of c.pods) {
        if (from === to) continue;
        for (const cell of cellsOf(to)) {
          const v = ev.evaluate({ from, to, ...cell });
          want.cells++;
          want[v.allowed === true ? 'allowed' : v.allowed === false ? 'denied' : 'undecided']++;
        }
      }
    expect(want.allowed).toBeGreaterThan(0);
    expect(want.denied).toBeGreaterThan(0);
    expect(m.stats().addressDependentCells).toBeGreaterThan(0);
    expect(m.counts()).toEqual(want);
  });

  it("a row is one pod's cells to every other pod, each the evaluator's verdict", () => {
    const from = c.pods[17]!;
    const got: [string, number, string, Verdict][] = [];
    m.row(from, (to, cell, v) => got.push([`${to.namespace}/${to.name}`, cell.port, cell.protocol, v]));
    const want = c.pods
      .filter((to) => to !== from)
      .flatMap((to) => cellsOf(to).map((cell) => [`${to.namespace}/${to.name}`, cell.port, cell.protocol, ev.evaluate({ from, to, ...cell })]));
    expect(JSON.parse(JSON.stringify(got))).toEqual(JSON.parse(JSON.stringify(want)));
  });

  it('a diff against another policy set names exactly the cells whose verdict changed', () => {
    const fewer = policies.filter((_, i) => i % 3 !== 1);
    const after = new VerdictMatrix(c, fewer);
    const evAfter = new Evaluator(c, fewer);
    const want: string[] = [];
    for (const from of c.pods)
      for (const to of c.pods) {
        if (from === to) continue;
        for (const cell of cellsOf(to))
          if (ev.evaluate({ from, to, ...cell }).allowed !== evAfter.evaluate({ from, to, ...cell }).allowed)
            want.push(`${from.name} -> ${to.namespace}/${to.name} ${cell.port}/${cell.protocol}`);
      }
    const got: string[] = [];
    const n = m.diff(after, (d) => got.push(`${d.from.name} -> ${d.to.namespace}/${d.to.name} ${d.port}/${d.protocol}`));
    expect(want.length).toBeGreaterThan(0);
    expect(n).toBe(want.length);
    expect(got.sort()).toEqual(want.sort());
  });

  it("a pod that is not the cluster's own object, or a port nobody declares, is answered by the evaluator", () => {
    const stranger = { ...c.pods[5]!, labels: { app: 'stranger' } };
    const to = c.pods[9]!;
    expect(m.evaluate({ from: stranger, to, port: 8080, protocol: 'TCP' })).toEqual(ev.evaluate({ from: stranger, to, port: 8080, protocol: 'TCP' }));
    expect(m.evaluate({ from: c.pods[1]!, to, port: 12345, protocol: 'UDP' })).toEqual(ev.evaluate({ from: c.pods[1]!, to, port: 12345, protocol: 'UDP' }));
    expect(() => m.row(stranger, () => undefined)).toThrow(/is not a pod of this matrix' cluster/);
  });
});

describe('bench/lib/cluster-gen.ts', () => {
  it('is seeded, makes the size asked, valid policies, and YAML of every object', async () => {
    const { clusterYaml } = await import('../bench/lib/cluster-gen.ts');
    const a = generateCluster(42, { namespaces: 20, pods: 300, policies: 45 });
    expect(generateCluster(42, { namespaces: 20, pods: 300, policies: 45 })).toEqual(a);
    expect([a.namespaces.length, a.pods.length, a.policies.length]).toEqual([20, 300, 45]);
    for (const p of a.policies) expect('errors' in validateNetworkPolicy(p) ? p.metadata : 'ok').toBe('ok');
    expect(new Set(a.policies.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).size).toBe(45);
    expect(new Set(a.pods.map((p) => p.ip)).size).toBe(300);
    const yaml = clusterYaml(a);
    expect(yaml.match(/^kind: NetworkPolicy$/gm)?.length).toBe(45);
    expect(yaml.match(/^kind: Namespace$/gm)?.length).toBe(20);
  });
});
