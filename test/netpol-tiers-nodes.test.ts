// The node model in the evaluators: admin-tier `nodes` peers match endpoints at a node's address
// (host-network pods, by their node's labels), and NetworkPolicy sees a host-network pod only by its
// address (never a subject, never matched by pod or namespace selectors). The class matrices agree
// with the evaluators on such pods.
import { describe, expect, it } from 'vitest';
import { validateClusterPolicy, type ClusterPolicy } from '../shared/netpol/cluster-policy.ts';
import type { Cluster } from '../shared/netpol/evaluate.ts';
import { Evaluator } from '../shared/netpol/evaluate.ts';
import { VerdictMatrix } from '../shared/netpol/matrix.ts';
import { TierMatrix } from '../shared/netpol/tier-matrix.ts';
import { chainText, TieredEvaluator } from '../shared/netpol/tiers.ts';
import { nodeLabels, type NetworkPolicyObject, type PodInfo } from '../shared/netpol/types.ts';

const policy = (name: string, spec: Record<string, unknown>): ClusterPolicy => {
  const r = validateClusterPolicy({ apiVersion: 'policy.networking.k8s.io/v1alpha2', kind: 'ClusterNetworkPolicy', metadata: { name }, spec });
  if ('errors' in r) throw new Error(JSON.stringify(r.errors));
  return r.policy;
};
const pod = (namespace: string, name: string, ip: string, extra: Partial<PodInfo> = {}): PodInfo => ({
  namespace,
  name,
  labels: { app: name },
  ip,
  ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
  ...extra,
});

const web = pod('shop', 'web', '10.1.0.1');
const api = pod('shop', 'api', '10.1.0.2');
const linuxAgent = pod('ops', 'agent', '172.18.0.2', { hostNetwork: true, node: 'linux-0' });
const winAgent = pod('ops', 'win-agent', '172.18.0.3', { hostNetwork: true, node: 'win-0' });
const cluster: Cluster = {
  namespaces: [
    { name: 'shop', labels: { 'kubernetes.io/metadata.name': 'shop' } },
    { name: 'ops', labels: { 'kubernetes.io/metadata.name': 'ops' } },
  ],
  pods: [web, api, linuxAgent, winAgent],
  nodes: [
    { name: 'linux-0', labels: nodeLabels('linux-0'), ip: '172.18.0.2' },
    { name: 'win-0', labels: nodeLabels('win-0', { 'kubernetes.io/os': 'windows' }), ip: '172.18.0.3' },
  ],
};
const denyToLinuxNodes = policy('no-nodes', {
  tier: 'Admin',
  priority: 5,
  subject: { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'shop' } } },
  egress: [{ name: 'linux', action: 'Deny', to: [{ nodes: { matchLabels: { 'kubernetes.io/os': 'linux' } } }] }],
});
const conn = (from: PodInfo, to: PodInfo) => ({ from, to, port: 80, protocol: 'TCP' as const });

describe('admin-tier nodes peers', () => {
  it('match a host-network pod by its node’s labels, and no pod of the pod network', () => {
    const ev = new TieredEvaluator(cluster, [], [denyToLinuxNodes]);
    const toLinux = ev.evaluate(conn(web, linuxAgent));
    expect(toLinux.allowed).toBe(false);
    expect(chainText('egress', web, toLinux.egress)).toBe('Admin cnp/no-nodes egress rule 0 (linux) Deny');
    expect(ev.evaluate(conn(web, winAgent)).allowed).toBe(true); // its node is not linux
    expect(ev.evaluate(conn(web, api)).allowed).toBe(true); // a pod is not a node
  });

  it('take the only node for a host-network pod that names none, and match nothing when the cluster has no nodes', () => {
    const unnamed = pod('ops', 'agent', '172.18.0.2', { hostNetwork: true });
    const one: Cluster = { ...cluster, pods: [web, unnamed], nodes: [cluster.nodes![0]!] };
    expect(new TieredEvaluator(one, [], [denyToLinuxNodes]).evaluate(conn(web, unnamed)).allowed).toBe(false);
    const none: Cluster = { namespaces: cluster.namespaces, pods: [web, unnamed] };
    expect(new TieredEvaluator(none, [], [denyToLinuxNodes]).evaluate(conn(web, unnamed)).allowed).toBe(true);
  });

  it('are egress peers only: a node reaching a subject is not matched by them (nor is a host-network pod ever a subject)', () => {
    const ev = new TieredEvaluator(cluster, [], [denyToLinuxNodes]);
    const v = ev.evaluate(conn(linuxAgent, web));
    expect(v.allowed).toBe(true);
    expect(v.egress.decidedBy).toBe('default');
  });
});

describe('NetworkPolicy and host-network pods', () => {
  const denyAllOps: NetworkPolicyObject = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { namespace: 'ops', name: 'deny-all' },
    spec: { podSelector: {}, policyTypes: ['Ingress', 'Egress'] },
  };
  const webFrom = (from: NetworkPolicyObject['spec']['ingress']): NetworkPolicyObject => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { namespace: 'shop', name: 'web-in' },
    spec: { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress'], ingress: from },
  });

  it('never select one: its own sides stay not isolated', () => {
    const v = new Evaluator(cluster, [denyAllOps]).evaluate(conn(web, linuxAgent));
    expect(v.ingress.decision).toBe('not-isolated');
    expect(new Evaluator(cluster, [denyAllOps]).evaluate(conn(linuxAgent, web)).egress.decision).toBe('not-isolated');
  });

  it('match one as a peer only by ipBlock, never by pod or namespace selectors', () => {
    const bySelector = webFrom([{ from: [{ namespaceSelector: {} }] }]);
    expect(new Evaluator(cluster, [bySelector]).evaluate(conn(linuxAgent, web)).allowed).toBe(false);
    expect(new Evaluator(cluster, [bySelector]).evaluate(conn(api, web)).allowed).toBe(true);
    const byBlock = webFrom([{ from: [{ ipBlock: { cidr: '172.18.0.0/24' } }] }]);
    expect(new Evaluator(cluster, [byBlock]).evaluate(conn(linuxAgent, web)).allowed).toBe(true);
  });

  it('the class matrices give the evaluators’ verdicts for every cell', () => {
    const nps = [denyAllOps, webFrom([{ from: [{ namespaceSelector: {} }] }])];
    const cnps = [denyToLinuxNodes];
    const matrix = new VerdictMatrix(cluster, nps);
    const tiers = new TierMatrix(cluster, nps, cnps);
    const ev = new Evaluator(cluster, nps);
    const tiered = new TieredEvaluator(cluster, nps, cnps);
    for (const from of cluster.pods)
      for (const to of cluster.pods) {
        expect(matrix.evaluate(conn(from, to)).allowed, `${from.name} -> ${to.name}`).toBe(ev.evaluate(conn(from, to)).allowed);
        expect(tiers.evaluate(conn(from, to)).allowed, `${from.name} -> ${to.name}`).toBe(tiered.evaluate(conn(from, to)).allowed);
      }
  });
});
