// Which scenarios share a deployment (run/share.ts), and what that deployment probes and serves.
import { describe, expect, it } from 'vitest';
import { loadTargets } from '../scenarios/model/load.ts';
import type { ResolvedScenario } from '../scenarios/model/resolve.ts';
import { canShare, deploymentScenario, shareDeployments } from '../scenarios/run/share.ts';

const e2e = loadTargets('k8s-e2e').scenarios;
const cnp = loadTargets('cnp-conformance').scenarios;

/** A copy of `s` whose pod `id` declares `ports` instead. */
function withPorts(s: ResolvedScenario, id: string, ports: ResolvedScenario['pods'][number]['ports']): ResolvedScenario {
  return { ...s, name: `${s.name}-copy`, pods: s.pods.map((p) => (p.id === id ? { ...p, ports } : p)) };
}

describe('sharing deployments', () => {
  it('puts the whole k8s-e2e set, TCP and SCTP scenarios, on one deployment probing the union of the cells', () => {
    const groups = shareDeployments(e2e);
    expect(groups.map((g) => g.length)).toEqual([48]);
    const deployed = deploymentScenario(groups[0]!);
    const keys = new Set(deployed.cells.map((c) => c.key));
    expect(keys.size).toBe(deployed.cells.length);
    for (const s of e2e) for (const c of s.cells) expect(keys.has(c.key)).toBe(true);
    // Every pod serves every port any scenario declares for it (the SCTP tests' too).
    for (const p of deployed.pods) for (const s of e2e) for (const port of s.pods.find((q) => q.id === p.id)!.ports) expect(p.ports).toContainEqual(port);
  });

  it('puts the cnp-conformance scenarios with the same pods on one deployment whatever their cells and ports', () => {
    const groups = shareDeployments(cnp);
    expect(groups.length).toBe(5);
    const big = groups.find((g) => g.length > 1)!;
    expect(big.length).toBe(20);
    expect(new Set(big.map((s) => JSON.stringify(s.cells.map((c) => c.key)))).size).toBeGreaterThan(1);
    // Each deployment keeps its scenarios in the set's order.
    for (const g of groups) expect(g.map((s) => cnp.indexOf(s))).toEqual([...g.map((s) => cnp.indexOf(s))].sort((a, b) => a - b));
  });

  it('keeps scenarios apart whose pods differ in anything but their ports', () => {
    const [a] = e2e;
    const relabelled = { ...a!, name: 'relabelled', pods: a!.pods.map((p, i) => (i === 0 ? { ...p, labels: { ...p.labels, extra: 'x' } } : p)) };
    expect(shareDeployments([a!, relabelled]).map((g) => g.length)).toEqual([1, 1]);
    const slower = { ...a!, name: 'slower', probeSeconds: a!.probeSeconds + 1 };
    expect(shareDeployments([a!, slower]).map((g) => g.length)).toEqual([1, 1]);
  });

  it('keeps scenarios apart whose port names disagree', () => {
    const [a] = e2e;
    const pod = a!.pods[0]!;
    const renamed = withPorts(
      a!,
      pod.id,
      pod.ports.map((p, i) => (i === 0 ? { ...p, name: 'other-name' } : p)),
    );
    expect(canShare([a!, renamed])).toBe(false);
    expect(shareDeployments([a!, renamed]).map((g) => g.length)).toEqual([1, 1]);
    // One name for two ports is no better.
    const named = pod.ports.find((p) => p.name)!;
    const moved = withPorts(a!, pod.id, [...pod.ports.filter((p) => p !== named), { name: named.name, port: 9999, protocol: 'TCP' }]);
    expect(canShare([a!, moved])).toBe(false);
    // An empty name is no name: two unnamed ports do not clash.
    const unnamed = withPorts(a!, pod.id, [...pod.ports, { name: '', port: 7001, protocol: 'TCP' }, { name: '', port: 7002, protocol: 'UDP' }]);
    expect(canShare([a!, unnamed])).toBe(true);
    expect(() => deploymentScenario([a!, renamed])).toThrow(/ports that disagree/);
  });

  it('keeps apart a scenario with a cell to a port its pod does not declare that another pod set serves', () => {
    const [a] = e2e;
    const cell = a!.cells.find((c) => c.protocol === 'TCP' && c.port !== a!.pods.find((p) => p.id === c.to)!.apiPort)!;
    const to = a!.pods.find((p) => p.id === cell.to)!;
    // In `bare`, the destination declares no port: the cell there checks a port nothing serves.
    const bare = withPorts(a!, to.id, []);
    expect(canShare([a!, bare])).toBe(false);
    // Without that cell it may share: its pod then serves ports it does not use.
    const noCell = { ...bare, cells: bare.cells.filter((c) => c.to !== to.id) };
    expect(canShare([a!, noCell])).toBe(true);
    expect(deploymentScenario([noCell, a!]).pods.find((p) => p.id === to.id)!.ports).toEqual(to.ports);
  });
});
