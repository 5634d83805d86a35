// The admin tiers in the renderer without root: ClusterNetworkPolicy (and the v1alpha1 kinds)
// compiled (orchestrator/isolation/compile-tiers.ts), rendered (render.ts) and read back by the nft
// interpreter (test/helpers/nft-sim.ts): a case per action and tier, their order, priorities, the
// ports and peers, and the drop site each Deny counts under. Then every step of the built-in
// cnp-conformance set judged both ways: the rendered rules against the tiered evaluator
// (shared/netpol/tiers.ts), which the renderer never reads. Real packets: tiers-netns.test.ts.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileRules } from '../../../orchestrator/isolation/compile.ts';
import { dropTag } from '../../../orchestrator/isolation/drop-tags.ts';
import { validateClusterPolicy, type ClusterPolicy } from '../../../shared/netpol/cluster-policy.ts';
import { resolveClusterPolicy } from '../../../shared/netpol/cluster-policy-doc.ts';
import { resolvePolicy } from '../../../shared/netpol/ip-template.ts';
import { TieredEvaluator } from '../../../shared/netpol/tiers.ts';
import type { NamespaceInfo, NetworkPolicyObject, PodInfo, Protocol } from '../../../shared/netpol/types.ts';
import { validateNetworkPolicy } from '../../../shared/netpol/validate.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { simulateCluster } from '../../helpers/nft-sim.ts';
import { ROOT } from '../../helpers/process.ts';

const GW = '10.213.0.1';

function cnp(name: string, tier: 'Admin' | 'Baseline', priority: number, spec: Record<string, unknown>): ClusterPolicy {
  const v = validateClusterPolicy({
    apiVersion: 'policy.networking.k8s.io/v1alpha2',
    kind: 'ClusterNetworkPolicy',
    metadata: { name },
    spec: { tier, priority, subject: { namespaces: {} }, ...spec },
  });
  if ('errors' in v) throw new Error(JSON.stringify(v.errors));
  return v.policy;
}

function np(namespace: string, name: string, spec: unknown): NetworkPolicyObject {
  const v = validateNetworkPolicy({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec });
  if ('errors' in v) throw new Error(JSON.stringify(v.errors));
  return v.policy;
}

/** Namespaces x and y with pods a and b (labelled pod=<name>) serving web 80/TCP and dns 53/UDP. */
function model(): { namespaces: NamespaceInfo[]; pods: PodInfo[] } {
  const namespaces = ['x', 'y'].map((n) => ({ name: n, labels: { 'kubernetes.io/metadata.name': n, ns: n } }));
  let ip = 2;
  const pods = namespaces.flatMap((n) =>
    ['a', 'b'].map((p) => ({
      namespace: n.name,
      name: p,
      labels: { pod: p },
      ip: `10.213.0.${ip++}`,
      ports: [
        { name: 'web', port: 80, protocol: 'TCP' as const },
        { name: 'dns', port: 53, protocol: 'UDP' as const },
      ],
    })),
  );
  return { namespaces, pods };
}

const fromX = (action: string, extra: Record<string, unknown> = {}) => ({
  ingress: [{ action, from: [{ namespaces: { matchLabels: { ns: 'x' } } }], ...extra }],
});

function sim(clusterPolicies: ClusterPolicy[], policies: NetworkPolicyObject[] = []) {
  return simulateCluster({ ...model(), policies, clusterPolicies, gateway: GW });
}

const denyAllIngressOf = (ns: string) => np(ns, 'deny-all', { podSelector: {}, policyTypes: ['Ingress'] });
const allowAllIngressOf = (ns: string) => np(ns, 'allow-all', { podSelector: {}, ingress: [{}], policyTypes: ['Ingress'] });

describe('one action per tier', () => {
  it('Admin Accept accepts what a NetworkPolicy would drop', () => {
    const s = sim([cnp('accept-x', 'Admin', 10, fromX('Accept'))], [denyAllIngressOf('y')]);
    expect(s('x/a', 'y/a', 80, 'TCP').allowed).toBe(true);
    expect(s('x/a', 'y/a', 80, 'TCP').ingress.rule).toBe('Admin cnp/accept-x ingress rule 0');
    // Not the peer the rule names: the NetworkPolicy decides.
    expect(s('y/b', 'y/a', 80, 'TCP').allowed).toBe(false);
  });

  it('Admin Deny drops what a NetworkPolicy allows, through a drop site named after the rule', () => {
    const s = sim([cnp('deny-x', 'Admin', 10, fromX('Deny'))], [allowAllIngressOf('y')]);
    const v = s('x/a', 'y/a', 80, 'TCP');
    expect(v.allowed).toBe(false);
    expect(v.ingress).toMatchObject({ verdict: 'drop', counted: true, tag: dropTag({ side: 'ingress', policies: ['Admin cnp/deny-x ingress rule 0'] }) });
    expect(s('y/b', 'y/a', 80, 'TCP').allowed).toBe(true);
  });

  it('Admin Pass skips the rest of the Admin tier: the NetworkPolicy decides, or without one the Baseline tier', () => {
    const pass = cnp('pass-x', 'Admin', 10, fromX('Pass'));
    const denyLater = cnp('deny-x', 'Admin', 20, fromX('Deny'));
    const baselineDeny = cnp('baseline-deny', 'Baseline', 10, fromX('Deny'));
    // The NetworkPolicy allows: allowed, although a later Admin rule denies.
    expect(sim([pass, denyLater], [allowAllIngressOf('y')])('x/a', 'y/a', 80, 'TCP').allowed).toBe(true);
    // The NetworkPolicy isolates and allows nothing: dropped by its default drop.
    const isolated = sim([pass, denyLater], [denyAllIngressOf('y')])('x/a', 'y/a', 80, 'TCP');
    expect(isolated.ingress).toMatchObject({ verdict: 'drop', tag: dropTag({ side: 'ingress', policies: ['y/deny-all'] }) });
    // No NetworkPolicy: the Baseline tier.
    const baseline = sim([pass, denyLater, baselineDeny])('x/a', 'y/a', 80, 'TCP');
    expect(baseline.ingress).toMatchObject({ verdict: 'drop', tag: dropTag({ side: 'ingress', policies: ['Baseline cnp/baseline-deny ingress rule 0'] }) });
    // No Baseline rule either: the default accepts.
    expect(sim([pass, denyLater])('x/a', 'y/a', 80, 'TCP').allowed).toBe(true);
  });

  it('Baseline Deny and Accept decide only where no NetworkPolicy isolates the side', () => {
    const deny = cnp('baseline-deny', 'Baseline', 10, fromX('Deny'));
    expect(sim([deny])('x/a', 'y/a', 80, 'TCP').allowed).toBe(false);
    expect(sim([deny], [allowAllIngressOf('y')])('x/a', 'y/a', 80, 'TCP').allowed).toBe(true);
    const accept = cnp('baseline-accept', 'Baseline', 10, fromX('Accept'));
    const denyAll = cnp('baseline-deny-all', 'Baseline', 20, { ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] });
    expect(sim([accept, denyAll])('x/a', 'y/a', 80, 'TCP').allowed).toBe(true);
    expect(sim([accept, denyAll])('y/b', 'y/a', 80, 'TCP').allowed).toBe(false);
    // A NetworkPolicy that isolates and denies wins over a Baseline Accept.
    expect(sim([accept], [denyAllIngressOf('y')])('x/a', 'y/a', 80, 'TCP').allowed).toBe(false);
  });

  it('the default accepts: a tier policy that matches nothing changes nothing', () => {
    const s = sim([cnp('deny-z', 'Admin', 10, { ingress: [{ action: 'Deny', from: [{ namespaces: { matchLabels: { ns: 'z' } } }] }] })]);
    expect(s('x/a', 'y/a', 80, 'TCP').allowed).toBe(true);
  });
});

describe('order', () => {
  it('Admin policies by priority, lower first, whatever their names', () => {
    const s = sim([cnp('a-deny', 'Admin', 20, fromX('Deny')), cnp('b-accept', 'Admin', 5, fromX('Accept'))], [denyAllIngressOf('y')]);
    expect(s('x/a', 'y/a', 80, 'TCP').ingress.rule).toBe('Admin cnp/b-accept ingress rule 0');
  });

  it('the rules of one policy in their order; same priority by name (upstream leaves it undefined)', () => {
    const rules = cnp('rules', 'Admin', 10, {
      ingress: [
        { action: 'Deny', from: [{ pods: { namespaceSelector: {}, podSelector: { matchLabels: { pod: 'a' } } } }] },
        { action: 'Accept', from: [{ namespaces: {} }] },
      ],
    });
    const s = sim([rules]);
    expect(s('x/a', 'y/a', 80, 'TCP').allowed).toBe(false);
    expect(s('x/b', 'y/a', 80, 'TCP').allowed).toBe(true);
    const same = sim([cnp('zz-accept', 'Admin', 10, fromX('Accept')), cnp('aa-deny', 'Admin', 10, fromX('Deny'))]);
    expect(same('x/a', 'y/a', 80, 'TCP').ingress.rule).toBe('Admin cnp/aa-deny ingress rule 0');
  });

  it('v1alpha1 kinds are the same tiers: AdminNetworkPolicy Allow is Accept, BaselineAdminNetworkPolicy the Baseline', () => {
    const anp = validateClusterPolicy({
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'AdminNetworkPolicy',
      metadata: { name: 'allow-x' },
      spec: { priority: 1, subject: { namespaces: {} }, ingress: [{ name: 'x', action: 'Allow', from: [{ namespaces: { matchLabels: { ns: 'x' } } }] }] },
    });
    const banp = validateClusterPolicy({
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'BaselineAdminNetworkPolicy',
      metadata: { name: 'default' },
      spec: { subject: { namespaces: {} }, ingress: [{ name: 'all', action: 'Deny', from: [{ namespaces: {} }] }] },
    });
    if ('errors' in anp || 'errors' in banp) throw new Error('invalid');
    const s = sim([anp.policy, banp.policy]);
    expect(s('x/a', 'y/a', 80, 'TCP').ingress.rule).toBe('Admin anp/allow-x ingress rule 0');
    expect(s('y/b', 'y/a', 80, 'TCP').ingress).toMatchObject({
      verdict: 'drop',
      tag: dropTag({ side: 'ingress', policies: ['Baseline banp/default ingress rule 0'] }),
    });
  });
});

describe('peers and ports', () => {
  it('ports: a number, a range, a named port (ingress: the task itself)', () => {
    const number = sim([cnp('n', 'Admin', 1, fromX('Deny', { protocols: [{ tcp: { destinationPort: { number: 80 } } }] }))]);
    expect(number('x/a', 'y/a', 80, 'TCP').allowed).toBe(false);
    expect(number('x/a', 'y/a', 81, 'TCP').allowed).toBe(true);
    expect(number('x/a', 'y/a', 80, 'UDP').allowed).toBe(true);
    const range = sim([cnp('r', 'Admin', 1, fromX('Deny', { protocols: [{ udp: { destinationPort: { range: { start: 50, end: 60 } } } }] }))]);
    expect([49, 50, 53, 60, 61].map((p) => range('x/a', 'y/a', p, 'UDP').allowed)).toEqual([true, false, false, false, true]);
    const named = sim([cnp('p', 'Admin', 1, fromX('Deny', { protocols: [{ destinationNamedPort: 'dns' }] }))]);
    expect(named('x/a', 'y/a', 53, 'UDP').allowed).toBe(false);
    expect(named('x/a', 'y/a', 53, 'TCP').allowed).toBe(true);
    expect(named('x/a', 'y/a', 80, 'TCP').allowed).toBe(true);
  });

  it('egress: networks (CIDRs, pods included), named ports per destination pod, pods peers', () => {
    const egress = (to: unknown[], extra: Record<string, unknown> = {}) =>
      cnp('e', 'Admin', 1, { subject: { namespaces: { matchLabels: { ns: 'x' } } }, egress: [{ action: 'Deny', to, ...extra }] });
    const nets = sim([egress([{ networks: ['10.213.0.4/31'] }])]); // y/a and y/b
    expect(['x/b', 'y/a', 'y/b'].map((to) => nets('x/a', to, 80, 'TCP').allowed)).toEqual([true, false, false]);
    expect(nets('y/a', 'y/b', 80, 'TCP').allowed).toBe(true); // not a subject
    const named = sim([egress([{ namespaces: { matchLabels: { ns: 'y' } } }], { protocols: [{ destinationNamedPort: 'web' }] })]);
    expect(named('x/a', 'y/a', 80, 'TCP').allowed).toBe(false);
    expect(named('x/a', 'y/a', 53, 'UDP').allowed).toBe(true);
    expect(named('x/a', 'x/b', 80, 'TCP').allowed).toBe(true);
    const pods = sim([egress([{ pods: { namespaceSelector: { matchLabels: { ns: 'y' } }, podSelector: { matchLabels: { pod: 'b' } } } }])]);
    expect(['y/a', 'y/b'].map((to) => pods('x/a', to, 80, 'TCP').allowed)).toEqual([true, false]);
    expect(pods('x/a', 'y/b', 80, 'TCP').egress).toMatchObject({ verdict: 'drop', tag: dropTag({ side: 'egress', policies: ['Admin cnp/e egress rule 0'] }) });
  });

  it('nodes and domainNames peers match nothing here and are listed as not enforced', () => {
    const m = model();
    const p = cnp('ext', 'Admin', 1, {
      subject: { namespaces: { matchLabels: { ns: 'x' } } },
      egress: [
        { action: 'Deny', to: [{ nodes: { matchLabels: { 'kubernetes.io/os': 'linux' } } }] },
        { action: 'Deny', to: [{ domainNames: ['example.com'] }] },
      ],
    });
    const pods = m.pods.map((x) => ({
      ...x,
      taskId: `${x.namespace}/${x.name}`,
      appId: '/a',
      netns: 'n',
      ip: x.ip!,
      pod: x.name,
      dialectLabels: {},
      groups: [],
    }));
    const rules = compileRules({ pods, namespaces: m.namespaces, dialect: [], policies: [], clusterPolicies: [p], gateway: GW });
    expect(rules.find((r) => r.taskId === 'x/a')!.egress.unenforced).toEqual(['Admin cnp/ext egress rule 0', 'Admin cnp/ext egress rule 1']);
    expect(sim([p])('x/a', 'y/a', 80, 'TCP').allowed).toBe(true);
  });
});

describe('the built-in cnp-conformance set: rendered rules and the tiered evaluator agree', () => {
  const dir = join(ROOT, 'scenarios/builtin/cnp-conformance');
  const files = readdirSync(dir).filter((f) => /^(admin|baseline)-.*\.yaml$/.test(f));

  it('covers the set', () => expect(files.length).toBeGreaterThanOrEqual(20));

  it.each(files)('%s: every TCP and UDP cell of every step', (file) => {
    const s = loadScenario(join(dir, file));
    const ips = new Map(s.pods.map((p, i) => [p.id, `10.213.1.${i + 2}`]));
    let judged = 0;
    const wrong: string[] = [];
    for (const step of s.steps) {
      const exp = expectStep(s, step, ips);
      const pods = exp.cluster.pods.filter((p) => !p.external && !p.hostNetwork);
      const ipOf = (ref: string) => ips.get(ref);
      const check = simulateCluster({
        namespaces: exp.cluster.namespaces,
        pods,
        policies: step.policies.map((p) => resolvePolicy(p, ipOf)),
        clusterPolicies: (step.clusterPolicies ?? []).map((p) => resolveClusterPolicy(p, ipOf)),
        gateway: GW,
      });
      const evaluator = new TieredEvaluator(exp.cluster, step.policies, step.clusterPolicies ?? []);
      for (const from of pods)
        for (const to of pods) {
          if (from === to) continue;
          for (const { port, protocol } of to.ports.filter((x) => x.protocol !== 'SCTP') as { port: number; protocol: Protocol }[]) {
            const want = evaluator.evaluate({ from, to, port, protocol }).allowed;
            const got = check(`${from.namespace}/${from.name}`, `${to.namespace}/${to.name}`, port, protocol).allowed;
            judged++;
            if (want !== got)
              wrong.push(`${step.name}: ${from.namespace}/${from.name} -> ${to.namespace}/${to.name} ${port}/${protocol}: evaluator ${want}, rules ${got}`);
          }
        }
    }
    expect(wrong).toEqual([]);
    expect(judged).toBeGreaterThan(0);
  });
});
