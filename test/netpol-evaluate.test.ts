// The evaluator against the semantics of NetworkPolicy v1, case by case as the upstream e2e suite
// (kubernetes/kubernetes test/e2e/network/netpol/network_policy.go) states them, over the same
// 3 x 3 model; plus what the e2e suite cannot show: the reasons, undecided addresses, IPv6.
import { describe, expect, it } from 'vitest';
import { Evaluator } from '../shared/netpol/evaluate.ts';
import { reasonLine, verdictText } from '../shared/netpol/explain.ts';
import type { NetworkPolicyObject, Protocol } from '../shared/netpol/types.ts';
import { allIds, computed, modelCluster, np, nsName, pod, Reachability } from './helpers/netpol-model.ts';

const cluster = modelCluster();
const ids = allIds();
const reach = () => new Reachability(ids, true);

function check(policies: NetworkPolicyObject[], port: number, protocol: Protocol, want: Reachability, c = cluster): void {
  expect(computed(c, policies, port, protocol)).toEqual(want.cells());
}

describe('evaluator: ingress (upstream e2e cases)', () => {
  it("default-deny-ingress isolates the namespace's pods for ingress only", () => {
    const deny = [np('x', 'deny-ingress', { podSelector: {}, ingress: [] })];
    check(deny, 80, 'TCP', reach().expectPeer({}, { ns: 'x' }, false));
    check(deny, 80, 'UDP', reach().expectPeer({}, { ns: 'x' }, false));
    check(deny, 80, 'SCTP', reach().expectPeer({}, { ns: 'x' }, false));
  });

  it('default-deny-all isolates both directions', () => {
    const deny = [np('x', 'deny-all', { podSelector: {}, ingress: [], egress: [], policyTypes: ['Ingress', 'Egress'] })];
    check(deny, 80, 'TCP', reach().expectPeer({}, { ns: 'x' }, false).expectPeer({ ns: 'x' }, {}, false));
  });

  it('podSelector peer: pods of the policy namespace only', () => {
    const p = np('x', 'x-a-allows-x-b', { podSelector: pod('a'), ingress: [{ from: [{ podSelector: pod('b') }] }] });
    check([p], 80, 'TCP', reach().allIngress('x/a', false).expect('x/b', 'x/a', true));
  });

  it('allow ingress to a target from every pod of every namespace, beside a default deny', () => {
    const ps = [
      np('x', 'deny-all', { ingress: [] }),
      np('x', 'allow-all-to-a', { podSelector: pod('a'), ingress: [{ from: [{ podSelector: {}, namespaceSelector: {} }] }] }),
    ];
    check(ps, 80, 'TCP', reach().allIngress('x/a', true).allIngress('x/b', false).allIngress('x/c', false));
  });

  it('namespaceSelector {} allows every namespace', () => {
    check([np('x', 'allow-from-another-ns', { podSelector: pod('a'), ingress: [{ from: [{ namespaceSelector: { matchLabels: {} } }] }] })], 80, 'TCP', reach());
  });

  it('namespaceSelector by the metadata.name label, with matchLabels and with matchExpressions In', () => {
    const want = reach().expectPeer({ ns: 'x' }, { ns: 'x', pod: 'a' }, false).expectPeer({ ns: 'z' }, { ns: 'x', pod: 'a' }, false);
    check([np('x', 'ml', { podSelector: pod('a'), ingress: [{ from: [{ namespaceSelector: nsName('y') }] }] })], 80, 'TCP', want);
    const me = { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In' as const, values: ['y'] }] };
    check([np('x', 'me', { podSelector: pod('a'), ingress: [{ from: [{ namespaceSelector: me }] }] })], 80, 'TCP', want);
  });

  it('podSelector with matchExpressions In', () => {
    const sel = { matchExpressions: [{ key: 'pod', operator: 'In' as const, values: ['b'] }] };
    check(
      [np('x', 'p', { podSelector: pod('a'), ingress: [{ from: [{ podSelector: sel }] }] })],
      80,
      'TCP',
      reach().allIngress('x/a', false).expect('x/b', 'x/a', true),
    );
  });

  it('two peers are OR: other namespaces (NotIn) or pod b of the same namespace', () => {
    const notX = { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn' as const, values: ['x'] }] };
    const p = np('x', 'or', { podSelector: pod('a'), ingress: [{ from: [{ namespaceSelector: notX }, { podSelector: pod('b') }] }] });
    check([p], 80, 'TCP', reach().expect('x/c', 'x/a', false));
  });

  it('namespaceSelector and podSelector in one peer are AND', () => {
    const notX = { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn' as const, values: ['x'] }] };
    const p = np('x', 'and', { podSelector: pod('a'), ingress: [{ from: [{ namespaceSelector: notX, podSelector: pod('b') }] }] });
    check([p], 80, 'TCP', reach().allIngress('x/a', false).expect('y/b', 'x/a', true).expect('z/b', 'x/a', true));
    const inBC = { matchExpressions: [{ key: 'pod', operator: 'In' as const, values: ['b', 'c'] }] };
    const multi = np('x', 'multi', { podSelector: pod('a'), ingress: [{ from: [{ namespaceSelector: notX, podSelector: inBC }] }] });
    check([multi], 80, 'TCP', reach().expectPeer({ ns: 'x' }, { ns: 'x', pod: 'a' }, false).expect('y/a', 'x/a', false).expect('z/a', 'x/a', false));
  });

  it('ports: a numeric port allows that port only; stacked policies add up', () => {
    const p81 = np('x', 'allow-81', {
      podSelector: pod('a'),
      ingress: [{ from: [{ namespaceSelector: nsName('y') }], ports: [{ port: 81, protocol: 'TCP' }] }],
    });
    const allowY = reach().expectPeer({ ns: 'x' }, { ns: 'x', pod: 'a' }, false).expectPeer({ ns: 'z' }, { ns: 'x', pod: 'a' }, false);
    check([p81], 81, 'TCP', allowY);
    check([p81], 80, 'TCP', reach().allIngress('x/a', false));
    const p80 = np('x', 'allow-80', {
      podSelector: pod('a'),
      ingress: [{ from: [{ namespaceSelector: nsName('y') }], ports: [{ port: 80, protocol: 'TCP' }] }],
    });
    check([p81, p80], 80, 'TCP', allowY);
  });

  it('allow-all rule {} opens every port', () => {
    const p = np('x', 'allow-all', { podSelector: {}, ingress: [{}] });
    check([p], 80, 'TCP', reach());
    check([p], 81, 'UDP', reach());
  });

  it('a port with only a protocol allows every port of that protocol', () => {
    const p = np('x', 'by-proto', { podSelector: pod('a'), ingress: [{ ports: [{ protocol: 'TCP' }] }] });
    check([p], 80, 'TCP', reach());
    check([p], 80, 'UDP', reach().allIngress('x/a', false));
  });

  it('UDP-only and SCTP-only rules do not allow TCP, and still isolate', () => {
    check([np('x', 'udp-81', { podSelector: pod('a'), ingress: [{ ports: [{ port: 81, protocol: 'UDP' }] }] })], 81, 'TCP', reach().allIngress('x/a', false));
    const sctp = [
      np('x', 'deny-ingress', { ingress: [] }),
      np('x', 'sctp-81', { podSelector: pod('a'), ingress: [{ ports: [{ port: 81, protocol: 'SCTP' }] }] }),
    ];
    check(sctp, 81, 'TCP', reach().expectPeer({}, { ns: 'x' }, false));
    check(sctp, 81, 'SCTP', reach().expectPeer({}, { ns: 'x', pod: 'b' }, false).expectPeer({}, { ns: 'x', pod: 'c' }, false));
    check([np('x', 'sctp-80', { podSelector: pod('a'), ingress: [{ ports: [{ port: 80, protocol: 'SCTP' }] }] })], 81, 'TCP', reach().allIngress('x/a', false));
  });

  it('a named port is resolved against the destination pod, name and protocol', () => {
    const p = np('x', 'named', { podSelector: {}, ingress: [{ ports: [{ port: 'serve-81-tcp' }] }] });
    check([p], 81, 'TCP', reach());
    check([p], 80, 'TCP', reach().expectPeer({}, { ns: 'x' }, false));
    // The same name asked for over UDP names no container port: nothing matches.
    check(
      [np('x', 'wrong-proto', { ingress: [{ ports: [{ port: 'serve-81-tcp', protocol: 'UDP' }] }] })],
      81,
      'UDP',
      reach().expectPeer({}, { ns: 'x' }, false),
    );
    // A name no pod declares is not an error; it matches nothing.
    check([np('x', 'unknown-name', { ingress: [{ ports: [{ port: 'no-such-port' }] }] })], 80, 'TCP', reach().expectPeer({}, { ns: 'x' }, false));
    const fromY = np('x', 'y-80', {
      podSelector: pod('a'),
      ingress: [{ from: [{ namespaceSelector: nsName('y') }], ports: [{ port: 'serve-80-tcp', protocol: 'TCP' }] }],
    });
    check([fromY], 80, 'TCP', reach().expectPeer({ ns: 'x' }, { ns: 'x', pod: 'a' }, false).expectPeer({ ns: 'z' }, { ns: 'x', pod: 'a' }, false));
    check([fromY], 81, 'TCP', reach().allIngress('x/a', false));
  });

  it('endPort allows the whole range, inclusive', () => {
    const c = modelCluster({ ports: [80, 81, 82], protocols: ['TCP'] });
    const p = np('x', 'range', { ingress: [{ ports: [{ port: 80, endPort: 81 }] }] });
    check([p], 80, 'TCP', reach(), c);
    check([p], 81, 'TCP', reach(), c);
    check([p], 82, 'TCP', reach().expectPeer({}, { ns: 'x' }, false), c);
  });

  it('policyTypes: [Egress] ignores ingress rules; updated policy replaces the old one', () => {
    check([np('x', 'egress-only', { podSelector: {}, ingress: [], policyTypes: ['Egress'], egress: [{}] })], 80, 'TCP', reach());
    check([np('x', 'mutate', { podSelector: {}, ingress: [{}] })], 81, 'TCP', reach());
    check([np('x', 'mutate', { podSelector: {}, ingress: [] })], 81, 'TCP', reach().expectPeer({}, { ns: 'x' }, false));
  });

  it('label changes: a namespace label that appears, a pod label that appears', () => {
    const p = np('x', 'ns2', { podSelector: pod('a'), ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns2: 'updated' } } }] }] });
    check([p], 80, 'TCP', reach().allIngress('x/a', false));
    const relabelled = { ...cluster, namespaces: cluster.namespaces.map((n) => (n.name === 'y' ? { ...n, labels: { ...n.labels, ns2: 'updated' } } : n)) };
    check([p], 80, 'TCP', reach().allIngress('x/a', false).expectPeer({ ns: 'y' }, { ns: 'x', pod: 'a' }, true), relabelled);
    const iso = np('x', 'deny-via-label', { podSelector: { matchLabels: { target: 'isolated' } }, ingress: [] });
    check([iso], 80, 'TCP', reach());
    const podRelabelled = { ...cluster, pods: cluster.pods.map((q) => (q.namespace === 'x' && q.name === 'a' ? { ...q, labels: { target: 'isolated' } } : q)) };
    check([iso], 80, 'TCP', reach().allIngress('x/a', false), podRelabelled);
  });

  it('podSelector {} peer means the policy namespace only (deny from other namespaces)', () => {
    check(
      [np('x', 'deny-other-ns', { ingress: [{ from: [{ podSelector: { matchLabels: {} } }] }] })],
      80,
      'TCP',
      reach().expectPeer({ ns: 'y' }, { ns: 'x' }, false).expectPeer({ ns: 'z' }, { ns: 'x' }, false),
    );
  });
});

describe('evaluator: egress (upstream e2e cases)', () => {
  it('deny egress from a pod and from a whole namespace', () => {
    check([np('x', 'deny-egress-a', { podSelector: pod('a'), egress: [], policyTypes: ['Egress'] })], 80, 'TCP', reach().allEgress('x/a', false));
    check([np('x', 'deny-egress-x', { egress: [], policyTypes: ['Egress'] })], 80, 'TCP', reach().expectPeer({ ns: 'x' }, {}, false));
  });

  it('egress on a named port resolves the name against the destination', () => {
    const p = np('x', 'allow-egress', { egress: [{ ports: [{ port: 'serve-80-tcp' }] }], policyTypes: ['Egress'] });
    check([p], 80, 'TCP', reach());
    check([p], 81, 'TCP', reach().expectPeer({ ns: 'x' }, {}, false));
  });

  it('ingress and egress together in one policy (policyTypes default adds Egress when egress has rules)', () => {
    const p = np('x', 'both', { podSelector: pod('a'), ingress: [{ from: [{ podSelector: pod('b') }] }], egress: [{ ports: [{ port: 80 }] }] });
    check([p], 80, 'TCP', reach().allIngress('x/a', false).expect('x/b', 'x/a', true));
    check([p], 81, 'TCP', reach().allIngress('x/a', false).allEgress('x/a', false).expect('x/b', 'x/a', true));
  });

  it('policyTypes defaulting: egress rules add Egress to Ingress; an empty egress list adds nothing', () => {
    check([np('x', 'empty-egress', { podSelector: pod('a'), ingress: [{}], egress: [] })], 80, 'TCP', reach());
    check(
      [np('x', 'egress-rules', { podSelector: pod('a'), egress: [{ ports: [{ port: 81 }] }] })],
      80,
      'TCP',
      reach().allIngress('x/a', false).allEgress('x/a', false),
    );
  });

  it('the client side can deny what the server side allows, and the reverse', () => {
    const egress = np('x', 'to-y-a', {
      podSelector: pod('a'),
      egress: [{ to: [{ namespaceSelector: nsName('y'), podSelector: pod('a') }] }],
      policyTypes: ['Egress'],
    });
    const fromXa = [{ from: [{ namespaceSelector: nsName('x'), podSelector: pod('a') }] }];
    const ingA = np('y', 'from-xa-on-ya', { podSelector: pod('a'), ingress: fromXa });
    const ingB = np('y', 'from-xa-on-yb', { podSelector: pod('b'), ingress: fromXa });
    check([egress, ingA, ingB], 80, 'TCP', reach().allEgress('x/a', false).allIngress('y/a', false).expect('x/a', 'y/a', true).allIngress('y/b', false));
  });

  it('egress by NotIn on the namespace name label', () => {
    const notY = { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn' as const, values: ['y'] }] };
    check(
      [np('x', 'not-y', { podSelector: pod('a'), egress: [{ to: [{ namespaceSelector: notY }] }], policyTypes: ['Egress'] })],
      80,
      'TCP',
      reach().expectPeer({ ns: 'x', pod: 'a' }, { ns: 'y' }, false),
    );
  });

  it('allow-all egress takes precedence over a narrower egress policy', () => {
    const p80 = np('x', 'egress-80', { egress: [{ ports: [{ port: 80 }] }], policyTypes: ['Egress'] });
    check([p80], 81, 'TCP', reach().expectPeer({ ns: 'x' }, {}, false));
    check([p80, np('x', 'allow-egress', { egress: [{}], policyTypes: ['Egress'] })], 81, 'TCP', reach());
  });
});

describe('evaluator: ipBlock', () => {
  it('egress to a pod address /32', () => {
    check(
      [np('x', 'cidr', { podSelector: pod('a'), egress: [{ to: [{ ipBlock: { cidr: '10.0.2.2/32' } }] }], policyTypes: ['Egress'] })],
      80,
      'TCP',
      reach().allEgress('x/a', false).expect('x/a', 'y/b', true),
    );
  });

  it('except carves a pod out of a large block given with host bits set (10.0.1.2/4)', () => {
    const p = np('x', 'except', {
      podSelector: pod('a'),
      egress: [{ to: [{ ipBlock: { cidr: '10.0.1.2/4', except: ['10.0.1.2/32'] } }] }],
      policyTypes: ['Egress'],
    });
    check([p], 80, 'TCP', reach().expect('x/a', 'x/b', false));
    // A second rule allowing the excepted address wins: policies and rules add up.
    const allowB = np('x', 'allow-b', { podSelector: pod('a'), egress: [{ to: [{ ipBlock: { cidr: '10.0.1.2/32' } }] }], policyTypes: ['Egress'] });
    check([p, allowB], 80, 'TCP', reach());
  });

  it('ingress from a block; IPv4 blocks never match IPv6 addresses', () => {
    const p = np('x', 'from-y', { podSelector: pod('a'), ingress: [{ from: [{ ipBlock: { cidr: '10.0.2.0/24' } }] }] });
    check([p], 80, 'TCP', reach().allIngress('x/a', false).expectPeer({ ns: 'y' }, { ns: 'x', pod: 'a' }, true));
    const v6 = modelCluster({ ipv6: true });
    check([p], 80, 'TCP', reach().allIngress('x/a', false), v6);
  });

  it('IPv6 blocks with except and host bits', () => {
    const v6 = modelCluster({ ipv6: true });
    const p = np('x', 'v6', {
      podSelector: pod('a'),
      egress: [{ to: [{ ipBlock: { cidr: 'fd00::2:5/112', except: ['fd00:0:0:0:0:0:2:2/128'] } }] }],
      policyTypes: ['Egress'],
    });
    check([p], 80, 'TCP', reach().allEgress('x/a', false).expect('x/a', 'y/a', true).expect('x/a', 'y/c', true), v6);
  });

  it('{{ip ns/pod}} is resolved from the cluster; unknown addresses leave the verdict undecided', () => {
    const p = np('x', 'tpl', { podSelector: pod('a'), egress: [{ to: [{ ipBlock: { cidr: '{{ip y/b}}/32' } }] }], policyTypes: ['Egress'] });
    check([p], 80, 'TCP', reach().allEgress('x/a', false).expect('x/a', 'y/b', true));
    const unknown = modelCluster({ noIps: true });
    const table = computed(unknown, [p], 80, 'TCP');
    // Only x/a's egress depends on addresses; everything else is decided.
    expect(
      Object.entries(table)
        .filter(([, v]) => v === null)
        .map(([k]) => k),
    ).toEqual(ids.filter((t) => t !== 'x/a').map((t) => `x/a>${t}`));
    expect(table['y/a>x/a']).toBe(true);
    // A side that is denied anyway decides the connection even when the other side is undecided.
    const withDeny = computed(unknown, [p, np('y', 'deny', { ingress: [] })], 80, 'TCP');
    expect(withDeny['x/a>y/b']).toBe(false);
  });
});

describe('evaluator: reasons', () => {
  const [xa, xb, ya] = [cluster.pods[0]!, cluster.pods[1]!, cluster.pods[3]!];
  const policies = [
    np('x', 'deny-all', { ingress: [] }),
    np('x', 'allow-y', {
      podSelector: pod('a'),
      ingress: [{ from: [{ podSelector: pod('c') }, { namespaceSelector: nsName('y') }], ports: [{ port: 79 }, { port: 80, protocol: 'TCP' }] }],
    }),
  ];
  const ev = new Evaluator(cluster, policies);

  it('names the isolating policies and the rule, peer and port that allowed it', () => {
    const v = ev.evaluate({ from: ya, to: xa, port: 80, protocol: 'TCP' });
    expect(v.allowed).toBe(true);
    expect(v.egress).toEqual({ decision: 'not-isolated', allowed: true });
    expect(v.ingress).toEqual({
      decision: 'allowed',
      allowed: true,
      isolatedBy: ['x/deny-all', 'x/allow-y'],
      allowedBy: [{ policy: 'x/allow-y', direction: 'ingress', rule: 0, peer: 1, port: 1 }],
    });
    expect(reasonLine(v)).toBe('egress not isolated; ingress allowed by x/allow-y ingress rule 0 peer 1 port 1');
    expect(verdictText({ from: ya, to: xa, port: 80, protocol: 'TCP' }, v, ev)).toBe(
      [
        'y/a -> x/a 80/TCP: allowed',
        '  egress of y/a: not isolated (no policy selects it for egress)',
        '  ingress of x/a: isolated by x/deny-all, x/allow-y; allowed by x/allow-y ingress rule 0 (peer 1: all pods in namespaces {kubernetes.io/metadata.name=y}; port 1: 80/TCP)',
      ].join('\n'),
    );
  });

  it('says that no rule allows it, naming only the blocking side', () => {
    const v = ev.evaluate({ from: xb, to: xa, port: 80, protocol: 'TCP' });
    expect(v.allowed).toBe(false);
    expect(v.ingress).toEqual({ decision: 'denied', allowed: false, isolatedBy: ['x/deny-all', 'x/allow-y'] });
    expect(reasonLine(v)).toBe('ingress isolated by x/deny-all, x/allow-y, no rule allows it');
  });

  it('loopback is never filtered', () => {
    const v = ev.evaluate({ from: xa, to: xa, port: 80, protocol: 'TCP' });
    expect(v).toMatchObject({ allowed: true, egress: { decision: 'loopback' } });
    expect(reasonLine(v)).toBe('same pod (loopback)');
  });

  it('lists every allowing rule, so a rule that is one of several is not "the" reason', () => {
    const two = new Evaluator(cluster, [np('x', 'p1', { ingress: [{}] }), np('x', 'p2', { ingress: [{ ports: [{ port: 80 }] }] })]);
    const v = two.evaluate({ from: ya, to: xa, port: 80, protocol: 'TCP' });
    expect(v.ingress.decision === 'allowed' && v.ingress.allowedBy.map((r) => r.policy)).toEqual(['x/p1', 'x/p2']);
  });

  it('refuses a CIDR that does not parse rather than guessing', () => {
    expect(() => new Evaluator(cluster, [np('x', 'bad', { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }] }] })])).toThrow(
      /x\/bad: ipBlock "10.0.0.0\/33" is not a CIDR/,
    );
  });
});
