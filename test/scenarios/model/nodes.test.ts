// The node model in scenarios (issue 31): `nodes:` (default one node, starmap-node-0, with a Linux
// node's labels) and `hostNetwork` pods on them; admin-tier `nodes` peers are judged against the
// pod's node, bad node references are refused at their field and line, and a run neither deploys
// a hostNetwork pod nor reports its cells as observed (no node namespace yet).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import type { ResolvedScenario } from '../../../scenarios/model/resolve.ts';
import { planApps } from '../../../scenarios/run/deploy-plan.ts';
import { HOST_NETWORK_NOT_RUN, notRunCells } from '../../../scenarios/run/steps.ts';
import { stopAll, tempDir } from '../../helpers/process.ts';

afterAll(stopAll);

function load(text: string): ResolvedScenario {
  const dir = tempDir('starmap-nodes-');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'nodes.yaml'), text);
  return loadScenario(join(dir, 'nodes.yaml'));
}

const scenario = (nodes: string, agentNode: string) => `name: nodes
${nodes}apps:
  - {name: web, kind: probe, namespace: shop, labels: {app: web}, ports: [{name: http, port: 8080}], probes: [ops/agent:9000]}
  - {name: agent, kind: probe, namespace: ops, hostNetwork: true${agentNode}, probes: []}
policies:
  - apiVersion: policy.networking.k8s.io/v1alpha2
    kind: ClusterNetworkPolicy
    metadata: {name: no-linux-nodes}
    spec:
      tier: Admin
      priority: 1
      subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: shop}}}
      egress:
        - {action: Deny, to: [{nodes: {matchLabels: {kubernetes.io/os: linux}}}]}
steps:
  - {name: s, policies: [cnp/no-linux-nodes], expect: computed}
`;

const cellTo = (s: ResolvedScenario) => {
  const exp = expectStep(s, s.steps[0]!);
  return { exp, cell: exp.cells.find((c) => c.cell.to === 'ops/agent')! };
};

describe('nodes in scenarios', () => {
  it('a scenario without nodes: has one Linux node, and a hostNetwork pod on it is matched by a nodes peer', () => {
    const s = load(scenario('', ''));
    expect(s.nodes).toEqual([
      { name: 'starmap-node-0', labels: { 'kubernetes.io/hostname': 'starmap-node-0', 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' } },
    ]);
    expect(s.pods.find((p) => p.id === 'ops/agent')).toMatchObject({ hostNetwork: true, node: 'starmap-node-0' });
    const { cell } = cellTo(s);
    expect(cell.computed).toBe(false);
    expect(cell.reason).toContain('Admin cnp/no-linux-nodes egress rule 0 Deny');
  });

  it('declared nodes: the pod’s own node decides (a Windows node is not matched)', () => {
    const nodes = 'nodes:\n  - {name: lin}\n  - {name: win, labels: {kubernetes.io/os: windows}}\n';
    expect(cellTo(load(scenario(nodes, ', node: lin'))).cell.computed).toBe(false);
    expect(cellTo(load(scenario(nodes, ', node: win'))).cell.computed).toBe(true);
  });

  it('refuses a node that does not exist, and a hostNetwork pod that names none among several, naming field and line', () => {
    const nodes = 'nodes:\n  - {name: lin}\n  - {name: win}\n';
    expect(() => load(scenario(nodes, ', node: mac'))).toThrow(/\/apps\/1\/node \(line 7\): no node "mac" \(the nodes are "lin", "win"\)/);
    expect(() => load(scenario(nodes, ''))).toThrow(/\/apps\/1\/node \(line 7\): a hostNetwork pod among 2 nodes must name its node/);
    expect(() => load(scenario('nodes:\n  - {name: lin}\n  - {name: lin}\n', ', node: lin'))).toThrow(/\/nodes\/1\/name \(line 4\): duplicate node "lin"/);
  });

  it('a run does not deploy a hostNetwork pod, and its cells are not run, saying why', () => {
    const s = load(scenario('', ''));
    const { exp, cell } = cellTo(s);
    expect(notRunCells(exp, true).get(cell.cell.key)).toBe(HOST_NETWORK_NOT_RUN);
    const plan = planApps(s, { probe: ['probe'], collector: ['collector'] }, { isolated: true, addresses: new Map() }, () => 'resources.json');
    expect(plan.map((a) => a.pod.id)).toEqual(['shop/web']);
  });
});
