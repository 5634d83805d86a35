// The NetworkPolicy side of the renderer without root: every feature compiled, rendered and read
// back by the nft interpreter (test/helpers/nft-sim.ts), plus the pure parts (pods from tasks,
// range and prefix merging, drop counters, the fault switch). The real-packet tests are in
// test/orchestrator/isolation/netpol-netns.test.ts.
import { describe, expect, it } from 'vitest';
import { podIdentity, podOf, parseDiscoveryPorts, namespacesOf } from '../../../orchestrator/isolation/cluster.ts';
import { compileRules, parseFault } from '../../../orchestrator/isolation/compile.ts';
import { parseDropSets } from '../../../orchestrator/isolation/drops.ts';
import { dropTag } from '../../../orchestrator/isolation/drop-tags.ts';
import { mergeRanges, outermostPrefixes, renderRuleset } from '../../../orchestrator/isolation/render.ts';
import type { NamespaceInfo, NetworkPolicyObject, PodInfo, Protocol } from '../../../shared/netpol/types.ts';
import { validateNetworkPolicy } from '../../../shared/netpol/validate.ts';
import { evaluateRuleset, renderCluster, simulateCluster } from '../../helpers/nft-sim.ts';

const GW = '10.213.0.1';

function np(namespace: string, name: string, spec: unknown): NetworkPolicyObject {
  const v = validateNetworkPolicy({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec });
  if ('errors' in v) throw new Error(JSON.stringify(v.errors));
  return v.policy;
}

/** The upstream model: namespaces x, y, z with pods a, b, c (labelled pod=<name>) serving 80/81 on TCP and UDP. */
function model(extraNsLabels: Record<string, Record<string, string>> = {}): { namespaces: NamespaceInfo[]; pods: PodInfo[] } {
  const namespaces = ['x', 'y', 'z'].map((n) => ({ name: n, labels: { 'kubernetes.io/metadata.name': n, ns: n, ...(extraNsLabels[n] ?? {}) } }));
  let ip = 2;
  const pods = namespaces.flatMap((n) =>
    ['a', 'b', 'c'].map((p) => ({
      namespace: n.name,
      name: p,
      labels: { pod: p },
      ip: `10.213.0.${ip++}`,
      ports: [80, 81].flatMap((port) => (['TCP', 'UDP'] as const).map((protocol) => ({ name: `serve-${port}-${protocol.toLowerCase()}`, port, protocol }))),
    })),
  );
  return { namespaces, pods };
}

/** Which of the 9 pods `from` reaches on port/protocol, as "x/a x/b …". */
function reach(policies: NetworkPolicyObject[], from: string, port: number, protocol: Protocol = 'TCP', m = model()): string {
  const sim = simulateCluster({ ...m, policies, gateway: GW });
  return m.pods
    .map((p) => `${p.namespace}/${p.name}`)
    .filter((to) => to !== from && sim(from, to, port, protocol).allowed)
    .join(' ');
}

/** Who reaches `to` on port/protocol. */
function reachedBy(policies: NetworkPolicyObject[], to: string, port: number, protocol: Protocol = 'TCP', m = model()): string {
  const sim = simulateCluster({ ...m, policies, gateway: GW });
  return m.pods
    .map((p) => `${p.namespace}/${p.name}`)
    .filter((from) => from !== to && sim(from, to, port, protocol).allowed)
    .join(' ');
}

const ALL_BUT = (me: string) => ['x/a', 'x/b', 'x/c', 'y/a', 'y/b', 'y/c', 'z/a', 'z/b', 'z/c'].filter((p) => p !== me).join(' ');

describe('ingress', () => {
  it('no policy: open; an empty ingress list: default deny for the selected pods only', () => {
    expect(reachedBy([], 'x/a', 80)).toBe(ALL_BUT('x/a'));
    const deny = np('x', 'deny', { podSelector: { matchLabels: { pod: 'a' } } });
    expect(reachedBy([deny], 'x/a', 80)).toBe('');
    expect(reachedBy([deny], 'x/b', 80)).toBe(ALL_BUT('x/b'));
    // A policy in another namespace selects nothing here.
    expect(reachedBy([np('y', 'deny', { podSelector: {} })], 'x/a', 80)).toBe(ALL_BUT('x/a'));
  });

  it('podSelector alone means the policy namespace; namespaceSelector alone every pod there; both together AND', () => {
    const sel = (from: unknown[]) => np('x', 'p', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ from }] });
    expect(reachedBy([sel([{ podSelector: { matchLabels: { pod: 'b' } } }])], 'x/a', 80)).toBe('x/b');
    expect(reachedBy([sel([{ namespaceSelector: { matchLabels: { ns: 'y' } } }])], 'x/a', 80)).toBe('y/a y/b y/c');
    expect(reachedBy([sel([{ namespaceSelector: { matchLabels: { ns: 'y' } }, podSelector: { matchLabels: { pod: 'b' } } }])], 'x/a', 80)).toBe('y/b');
    // Two peers: OR.
    expect(reachedBy([sel([{ namespaceSelector: { matchLabels: { ns: 'y' } } }, { podSelector: { matchLabels: { pod: 'b' } } }])], 'x/a', 80)).toBe(
      'x/b y/a y/b y/c',
    );
    // namespaceSelector {} : every namespace.
    expect(reachedBy([sel([{ namespaceSelector: {}, podSelector: { matchLabels: { pod: 'c' } } }])], 'x/a', 80)).toBe('x/c y/c z/c');
  });

  it('matchExpressions: In, NotIn (a missing key matches), Exists, DoesNotExist', () => {
    const m = model({ y: { tier: 'web' }, z: { tier: 'db' } });
    const from = (expr: unknown) => [
      np('x', 'p', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ from: [{ namespaceSelector: { matchExpressions: [expr] } }] }] }),
    ];
    expect(reachedBy(from({ key: 'tier', operator: 'In', values: ['web', 'db'] }), 'x/a', 80, 'TCP', m)).toBe('y/a y/b y/c z/a z/b z/c');
    expect(reachedBy(from({ key: 'tier', operator: 'NotIn', values: ['web'] }), 'x/a', 80, 'TCP', m)).toBe('x/b x/c z/a z/b z/c');
    expect(reachedBy(from({ key: 'tier', operator: 'Exists' }), 'x/a', 80, 'TCP', m)).toBe('y/a y/b y/c z/a z/b z/c');
    expect(reachedBy(from({ key: 'tier', operator: 'DoesNotExist' }), 'x/a', 80, 'TCP', m)).toBe('x/b x/c');
  });

  it('ports: number, endPort, protocol only, and names resolved against the destination pod', () => {
    const on = (ports: unknown[]) => [np('x', 'p', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ ports }] })];
    expect(reachedBy(on([{ port: 81 }]), 'x/a', 80)).toBe('');
    expect(reachedBy(on([{ port: 81 }]), 'x/a', 81)).toBe(ALL_BUT('x/a'));
    expect(reachedBy(on([{ port: 81 }]), 'x/a', 81, 'UDP')).toBe('');
    expect(reachedBy(on([{ port: 79, endPort: 80 }]), 'x/a', 80)).toBe(ALL_BUT('x/a'));
    expect(reachedBy(on([{ protocol: 'UDP' }]), 'x/a', 12345, 'UDP')).toBe(ALL_BUT('x/a'));
    expect(reachedBy(on([{ port: 'serve-81-udp', protocol: 'UDP' }]), 'x/a', 81, 'UDP')).toBe(ALL_BUT('x/a'));
    // The name with the wrong protocol, and a name nobody declares: nothing.
    expect(reachedBy(on([{ port: 'serve-81-udp' }]), 'x/a', 81)).toBe('');
    expect(reachedBy(on([{ port: 'nobody-has-it' }]), 'x/a', 80)).toBe('');
  });

  it('ipBlock with except, host bits ignored', () => {
    const m = model();
    const ipOf = (id: string) => m.pods.find((p) => `${p.namespace}/${p.name}` === id)!.ip!;
    const p = np('x', 'p', {
      podSelector: { matchLabels: { pod: 'a' } },
      ingress: [{ from: [{ ipBlock: { cidr: `${ipOf('x/b')}/24`, except: [`${ipOf('y/a')}/32`, `${ipOf('y/b')}/31`] } }] }],
    });
    // y/a (.5) is excepted; y/b (.6) and y/c (.7) share the /31 .6-.7.
    expect(reachedBy([p], 'x/a', 80, 'TCP', m)).toBe('x/b x/c z/a z/b z/c');
  });
});

describe('egress and both sides', () => {
  it('egress default deny, then to a pod, a namespace and an ipBlock with except', () => {
    const m = model();
    const eg = (to?: unknown[], ports?: unknown[]) =>
      np('x', 'eg', {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Egress'],
        egress: to || ports ? [{ ...(to ? { to } : {}), ...(ports ? { ports } : {}) }] : [],
      });
    expect(reach([eg()], 'x/a', 80)).toBe('');
    expect(reach([eg()], 'x/b', 80)).toBe(ALL_BUT('x/b'));
    expect(reach([eg([{ podSelector: { matchLabels: { pod: 'c' } } }])], 'x/a', 80)).toBe('x/c');
    expect(reach([eg([{ namespaceSelector: { matchLabels: { ns: 'z' } } }])], 'x/a', 80)).toBe('z/a z/b z/c');
    expect(reach([eg([{ ipBlock: { cidr: '10.213.0.0/24', except: ['10.213.0.8/29'] } }])], 'x/a', 80, 'TCP', m)).toBe('x/b x/c y/a y/b y/c');
    // An egress-only policy leaves ingress open even if it lists ingress rules.
    const egressOnly = np('x', 'e', { podSelector: {}, policyTypes: ['Egress'], ingress: [], egress: [{}] });
    expect(reachedBy([egressOnly], 'x/a', 80)).toBe(ALL_BUT('x/a'));
  });

  it('named ports on egress resolve per destination pod, each with its own number', () => {
    const m = model();
    m.pods.find((p) => p.namespace === 'y' && p.name === 'b')!.ports = [{ name: 'web', port: 8080, protocol: 'TCP' }];
    m.pods.find((p) => p.namespace === 'y' && p.name === 'c')!.ports = [{ name: 'web', port: 9090, protocol: 'TCP' }];
    const eg = np('x', 'eg', { podSelector: { matchLabels: { pod: 'a' } }, policyTypes: ['Egress'], egress: [{ ports: [{ port: 'web' }] }] });
    expect(reach([eg], 'x/a', 8080, 'TCP', m)).toBe('y/b');
    expect(reach([eg], 'x/a', 9090, 'TCP', m)).toBe('y/c');
    expect(reach([eg], 'x/a', 80, 'TCP', m)).toBe('');
  });

  it('a connection needs the source egress AND the destination ingress; each side says which rule decided', () => {
    const m = model();
    const egress = np('x', 'out', {
      podSelector: { matchLabels: { pod: 'a' } },
      policyTypes: ['Egress'],
      egress: [{ to: [{ podSelector: { matchLabels: { pod: 'b' } } }] }],
    });
    const ingress = np('x', 'in', { podSelector: { matchLabels: { pod: 'b' } }, ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'c' } } }] }] });
    const sim = simulateCluster({ ...m, policies: [egress, ingress], gateway: GW });
    expect(sim('x/a', 'x/b', 80, 'TCP')).toEqual({
      allowed: false,
      egress: { verdict: 'accept', counted: false, rule: 'x/out egress 0' },
      // Counted under the tag of b's ingress drop site: its isolating policy x/in.
      ingress: { verdict: 'drop', counted: true, tag: dropTag({ side: 'ingress', policies: ['x/in'] }) },
    });
    expect(sim('x/a', 'x/c', 80, 'TCP')).toMatchObject({ allowed: false, egress: { verdict: 'drop', counted: true }, ingress: { verdict: 'accept' } });
    expect(sim('x/c', 'x/b', 80, 'TCP')).toMatchObject({ allowed: true, ingress: { rule: 'x/in ingress 0' } });
  });

  it('the host: its packets always enter; a task under an egress policy reaches it only through a rule', () => {
    const m = model();
    const r = renderCluster({ ...m, policies: [np('x', 'all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] })], gateway: GW });
    const xa = r.get('x/a')!;
    expect(evaluateRuleset(xa, 'input', { src: GW, dst: '10.213.0.2', port: 80, protocol: 'TCP' }).verdict).toBe('accept');
    expect(evaluateRuleset(xa, 'output', { src: '10.213.0.2', dst: GW, port: 8080, protocol: 'TCP' }).verdict).toBe('drop');
    const toHost = renderCluster({
      ...m,
      policies: [np('x', 'all', { podSelector: {}, policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: `${GW}/32` } }] }] })],
      gateway: GW,
    });
    expect(evaluateRuleset(toHost.get('x/a')!, 'output', { src: '10.213.0.2', dst: GW, port: 8080, protocol: 'TCP' }).verdict).toBe('accept');
  });

  it('SCTP rules are rendered like TCP and UDP ones', () => {
    const p = np('x', 'p', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ ports: [{ port: 80, protocol: 'SCTP' }] }] });
    expect(reachedBy([p], 'x/a', 80, 'SCTP')).toBe(ALL_BUT('x/a'));
    expect(reachedBy([p], 'x/a', 80, 'TCP')).toBe('');
    expect(renderCluster({ ...model(), policies: [p] }).get('x/a')).toContain('sctp dport { 80 } accept');
  });
});

describe('the rule model with the dialect and the fault switch', () => {
  const task = (taskId: string, ip: string, labels: Record<string, string>, groups: string[] = []) => ({
    taskId,
    appId: `/s/${taskId}`,
    labels,
    groups,
    ip,
    netns: `ns-${taskId}`,
  });

  it('dialect policies and NetworkPolicies add up on ingress; network groups still restrict both', () => {
    const tasks = [task('a', '10.213.0.2', { role: 'db' }, ['g']), task('b', '10.213.0.3', { role: 'api' }, ['g']), task('c', '10.213.0.4', { role: 'web' })];
    const pods = tasks.map((t) => podOf(t, new Map()));
    const rules = compileRules({
      pods,
      namespaces: namespacesOf(new Map(), pods),
      dialect: [{ id: 'd', selector: { labels: { role: 'db' } }, ingress: [{ from: [{ labels: { role: 'api' } }] }] }],
      policies: [
        np('default', 'n', { podSelector: { matchLabels: { role: 'db' } }, ingress: [{ from: [{ podSelector: { matchLabels: { role: 'web' } } }] }] }),
      ],
      gateway: GW,
    });
    const a = rules.find((r) => r.taskId === 'a')!;
    expect(a.ingress.rules.map((r) => r.origin)).toEqual(['policy d ingress 0', 'default/n ingress 0']);
    expect(a.ingress.limit).toEqual({ origin: 'groups g', ips: ['10.213.0.3'] });
    const text = renderRuleset(a);
    expect(evaluateRuleset(text, 'input', { src: '10.213.0.3', dst: '10.213.0.2', port: 1, protocol: 'TCP' }).verdict).toBe('accept');
    // c is allowed by the NetworkPolicy but not in group g: the group limit wins.
    expect(evaluateRuleset(text, 'input', { src: '10.213.0.4', dst: '10.213.0.2', port: 1, protocol: 'TCP' })).toEqual({
      verdict: 'drop',
      counted: true,
      rule: 'groups g',
      tag: dropTag({ side: 'ingress', policies: ['groups g'] }),
    });
  });

  it('leaves out exactly the rule the fault names', () => {
    expect(parseFault('x/p:egress:2')).toEqual({ policy: 'x/p', direction: 'egress', index: 2 });
    expect(parseFault('x/p:sideways:1')).toHaveProperty('error');
    const m = model();
    const p = np('x', 'p', {
      podSelector: { matchLabels: { pod: 'a' } },
      ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }] }, { from: [{ podSelector: { matchLabels: { pod: 'c' } } }] }],
    });
    const pods = m.pods.map((q) => ({
      taskId: `${q.namespace}/${q.name}`,
      appId: '',
      netns: '',
      ip: q.ip!,
      namespace: q.namespace,
      pod: q.name,
      labels: q.labels,
      dialectLabels: q.labels,
      groups: [],
      ports: q.ports,
    }));
    const rules = compileRules({
      pods,
      namespaces: m.namespaces,
      dialect: [],
      policies: [p],
      gateway: GW,
      fault: { policy: 'x/p', direction: 'ingress', index: 1 },
    });
    expect(rules.find((r) => r.taskId === 'x/a')!.ingress).toMatchObject({ isolated: true, rules: [{ origin: 'x/p ingress 0' }] });
  });
});

describe('pure parts', () => {
  it('derives pods from tasks: namespace, name, labels without bookkeeping, replacements, named ports', () => {
    expect(podIdentity('/starmap/e2e/x/a', { 'starmap.namespace': 'x' })).toEqual({ namespace: 'x', pod: 'a' });
    expect(podIdentity('/grp/app', {})).toEqual({ namespace: 'default', pod: 'app' });
    expect(podIdentity('/grp/app', { 'starmap.pod': 'p1' })).toEqual({ namespace: 'default', pod: 'p1' });
    const t = {
      taskId: 't',
      appId: '/s/x/a',
      labels: { 'starmap.namespace': 'x', 'starmap.scenario': 's', pod: 'a' },
      groups: [],
      ip: '10.213.0.2',
      netns: 'n',
    };
    expect(podOf(t, new Map())).toMatchObject({ namespace: 'x', pod: 'a', labels: { pod: 'a' }, dialectLabels: t.labels });
    expect(podOf(t, new Map([['x/a', { pod: 'z' }]]))).toMatchObject({
      labels: { pod: 'z' },
      dialectLabels: { 'starmap.namespace': 'x', 'starmap.scenario': 's', pod: 'z' },
    });
    expect(
      parseDiscoveryPorts([
        { number: 80, name: 'http', protocol: 'tcp' },
        { number: 53, name: 'dns', protocol: 'udp,tcp' },
        { number: 9, protocol: 'sctp' },
        { number: 0 },
        { name: 'x' },
        'junk',
        { number: 7, protocol: 'icmp' },
      ]),
    ).toEqual([
      { name: 'http', port: 80, protocol: 'TCP' },
      { name: 'dns', port: 53, protocol: 'UDP' },
      { name: 'dns', port: 53, protocol: 'TCP' },
      { name: '', port: 9, protocol: 'SCTP' },
    ]);
    expect(parseDiscoveryPorts(undefined)).toEqual([]);
    expect(namespacesOf(new Map([['y', { team: 'a', 'kubernetes.io/metadata.name': 'lie' }]]), [podOf(t, new Map())])).toEqual([
      { name: 'x', labels: { 'kubernetes.io/metadata.name': 'x' } },
      { name: 'y', labels: { team: 'a', 'kubernetes.io/metadata.name': 'y' } },
    ]);
  });

  it('merges port ranges and nested prefixes (nft refuses overlapping intervals)', () => {
    expect(
      mergeRanges([
        [81, 90],
        [80, 80],
        [85, 100],
        [200, 200],
        [102, 103],
        [101, 101],
      ]),
    ).toEqual([
      [80, 103],
      [200, 200],
    ]);
    expect(outermostPrefixes(['10.1.0.0/16', '10.1.2.0/24', '10.1.0.0/16', '10.2.0.0/16', '2001:db8:0:0:0:0:0:0/48', '2001:db8:0:1:0:0:0:0/64'])).toEqual([
      '10.1.0.0/16',
      '10.2.0.0/16',
      '2001:db8:0:0:0:0:0:0/48',
    ]);
  });

  it('renders unrestricted sides as open chains that still read conntrack', () => {
    const r = renderCluster({ ...model(), policies: [] }).get('x/a')!;
    const track = '    ct state established,related accept comment "conntrack from the first packet, so that each connection has its true direction"\n';
    expect(r).toContain(`  chain input {\n    type filter hook input priority 0; policy accept;\n${track}  }`);
    expect(r).toContain(`  chain output {\n    type filter hook output priority 0; policy accept;\n${track}  }`);
  });

  it('reads drop counters from nft -j output', () => {
    const json = JSON.stringify({
      nftables: [
        { metainfo: { version: '1.0.6' } },
        {
          set: {
            family: 'inet',
            name: 'ingress_drops',
            table: 'starmap',
            elem: [
              { elem: { val: { concat: ['10.213.0.3', 'tcp', 80] }, counter: { packets: 3, bytes: 180 } } },
              { elem: { val: { concat: ['10.213.0.4', 'udp', 81] }, counter: { packets: 9, bytes: 1 } } },
              // With the drop site's tag (the packet's mark): the same peer and port as another site's element.
              { elem: { val: { concat: ['10.213.0.3', 'tcp', 80, 305441741] }, counter: { packets: 2, bytes: 120 } } },
            ],
          },
        },
        {
          set: {
            family: 'inet',
            name: 'egress_drops',
            table: 'starmap',
            elem: [
              { elem: { val: { concat: ['10.213.0.5', 132, 80] }, counter: { packets: 1, bytes: 1 }, expires: 5 } },
              { elem: { val: { concat: ['10.213.0.6', 'tcp', 1] }, counter: { packets: 0, bytes: 0 } } },
            ],
          },
        },
      ],
    });
    expect(parseDropSets(json)).toEqual({
      ingress: [
        { peer: '10.213.0.4', port: 81, protocol: 'UDP', packets: 9 },
        { peer: '10.213.0.3', port: 80, protocol: 'TCP', packets: 3 },
        { peer: '10.213.0.3', port: 80, protocol: 'TCP', tag: 305441741, packets: 2 },
      ],
      egress: [{ peer: '10.213.0.5', port: 80, protocol: 'SCTP', packets: 1 }],
    });
    expect(parseDropSets('not json')).toEqual({ ingress: [], egress: [] });
  });
});
