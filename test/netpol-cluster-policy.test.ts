// The admin tiers (shared/netpol/cluster-policy.ts, crd-schema.ts, tiers.ts): every document of
// upstream's conformance suite and CRD tests validates as the API server would take it, refusals
// name the field in the API server's words, the v1alpha1 kinds read as the same tiers, and the
// tiered evaluator follows the order Admin -> NetworkPolicy -> Baseline -> default with its chain.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import adminCrd from '../shared/netpol/crd/adminnetworkpolicies.v1alpha1.json' with { type: 'json' };
import baselineCrd from '../shared/netpol/crd/baselineadminnetworkpolicies.v1alpha1.json' with { type: 'json' };
import clusterCrd from '../shared/netpol/crd/clusternetworkpolicies.v1alpha2.json' with { type: 'json' };
import { validateClusterPolicy, type ClusterPolicy } from '../shared/netpol/cluster-policy.ts';
import { fieldPath, unknownRules, type StructuralSchema } from '../shared/netpol/crd-schema.ts';
import { chainText, TieredEvaluator } from '../shared/netpol/tiers.ts';
import type { NetworkPolicyObject, PodInfo } from '../shared/netpol/types.ts';
import { ROOT } from './helpers/process.ts';

const UPSTREAM = join(ROOT, 'test/fixtures/network-policy-api');

/** The documents of an upstream file; the experimental ones are Go templates of the host-network ports, rendered as upstream's suite renders them. */
function docs(file: string): unknown[] {
  const text = readFileSync(file, 'utf8').replace(/\{\{ index \.HostNetworkPorts (\d) \}\}/g, (_, i: string) => String(34345 + Number(i)));
  return parseAllDocuments(text)
    .map((d) => d.toJS() as unknown)
    .filter((d) => d !== null);
}

function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => join(dir, f));
}

const policy = (doc: unknown): ClusterPolicy => {
  const r = validateClusterPolicy(doc);
  if ('errors' in r) throw new Error(JSON.stringify(r.errors));
  return r.policy;
};

const errorsOf = (doc: unknown): string[] => {
  const r = validateClusterPolicy(doc);
  return 'errors' in r ? r.errors.flatMap((e) => e.errors.map((m) => `${fieldPath(e.path) || '<root>'}: ${m}`)) : [];
};

const cnp = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name },
  spec,
});

describe('validation against the upstream CRDs', () => {
  it('implements every CEL rule the CRDs carry', () => {
    for (const crd of [clusterCrd, adminCrd, baselineCrd]) expect(unknownRules(crd.schema as StructuralSchema)).toEqual([]);
  });

  it('accepts every ClusterNetworkPolicy of the conformance suite and the CRD tests’ valid examples', () => {
    const accepted = [...files(join(UPSTREAM, 'conformance/base')), ...files(join(UPSTREAM, 'pkg/crdtest/testdata/valid'))].flatMap((f) =>
      docs(f)
        .filter((d) => (d as { kind?: string }).kind === 'ClusterNetworkPolicy')
        .map((d) => ({ f, errors: errorsOf(d) })),
    );
    expect(accepted.length).toBeGreaterThan(20);
    expect(accepted.filter((a) => a.errors.length > 0)).toEqual([]);
  });

  it('refuses the CRD tests’ invalid example, naming the field as the API server does', () => {
    const [doc] = docs(join(UPSTREAM, 'pkg/crdtest/testdata/invalid/invalid-ingress-action.yaml'));
    expect(errorsOf(doc)).toEqual([
      'spec.ingress[0].action: Unsupported value: "Invalid": supported values: "Accept", "Deny", "Pass"',
      'spec.ingress[0].from[0].namespaces.namespaceSelector: unknown field "spec.ingress[0].from[0].namespaces.namespaceSelector"',
    ]);
  });

  it.each([
    [
      { tier: 'Admin', priority: 1001, subject: { namespaces: {} } },
      'spec.priority: Invalid value: 1001: spec.priority in body should be less than or equal to 1000',
    ],
    [{ tier: 'Top', priority: 1, subject: { namespaces: {} } }, 'spec.tier: Unsupported value: "Top": supported values: "Admin", "Baseline"'],
    [{ tier: 'Admin', priority: 1 }, 'spec.subject: Required value'],
    [
      { tier: 'Admin', priority: 1, subject: { namespaces: {}, pods: { podSelector: {} } } },
      'spec.subject: Invalid value: 2: spec.subject in body should have at most 1 properties',
    ],
    [
      { tier: 'Admin', priority: 1, subject: { namespaces: {} }, ingress: Array.from({ length: 26 }, () => ({ action: 'Deny', from: [{ namespaces: {} }] })) },
      'spec.ingress: Too many: 26: must have at most 25 items',
    ],
    [
      { tier: 'Admin', priority: 1, subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [] }] },
      'spec.ingress[0].from: Invalid value: 0: spec.ingress[0].from in body should have at least 1 items',
    ],
    [
      { tier: 'Admin', priority: 1, subject: { namespaces: {} }, egress: [{ action: 'Deny', to: [{ networks: ['10.0.0.0/8', 'nope'] }] }] },
      'spec.egress[0].to[0].networks[1]: Invalid value: "nope": Invalid CIDR format provided',
    ],
    [
      { tier: 'Admin', priority: 1, subject: { namespaces: {} }, egress: [{ action: 'Deny', to: [{ networks: ['10.0.0.0/8', '10.0.0.0/8'] }] }] },
      'spec.egress[0].to[0].networks[1]: Duplicate value: "10.0.0.0/8"',
    ],
    [
      {
        tier: 'Admin',
        priority: 1,
        subject: { namespaces: {} },
        ingress: [{ action: 'Deny', from: [{ namespaces: {} }], protocols: [{ tcp: { destinationPort: { range: { start: 90, end: 80 } } } }] }],
      },
      'spec.ingress[0].protocols[0].tcp.destinationPort.range: Invalid value: "object": Start port must be less than End port',
    ],
    [
      {
        tier: 'Admin',
        priority: 1,
        subject: { namespaces: {} },
        egress: [{ action: 'Accept', to: [{ networks: ['10.0.0.0/8'] }], protocols: [{ destinationNamedPort: 'http' }] }],
      },
      'spec.egress[0]: Invalid value: "object": networks/nodes/domainNames peer cannot be set with namedPorts since there are no namedPorts for networks/nodes/domainNames',
    ],
    [{ tier: 'Admin', priority: 1, subject: { namespaces: {} }, extra: true }, 'spec.extra: unknown field "spec.extra"'],
  ])('refuses %j', (spec, message) => {
    expect(errorsOf(cnp('p', spec))).toContain(message);
  });

  it('refuses a name the API server refuses, and reads JSON null as absent', () => {
    expect(errorsOf(cnp('Bad_Name', { tier: 'Admin', priority: 1, subject: { namespaces: {} } }))[0]).toMatch(
      /^metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/,
    );
    expect(errorsOf(cnp('ok', { tier: 'Admin', priority: 1, subject: { namespaces: {} }, ingress: null }))).toEqual([]);
  });

  it('stores a selector upstream stores though it cannot select, and warns', () => {
    const r = validateClusterPolicy(cnp('w', { tier: 'Admin', priority: 1, subject: { namespaces: { matchExpressions: [{ key: 'a', operator: 'Near' }] } } }));
    expect('policy' in r && r.warnings).toEqual([
      '/spec/subject/namespaces/matchExpressions/0/operator: "Near" is not a selector operator (In, NotIn, Exists, DoesNotExist): the selector selects nothing',
    ]);
  });

  it('reads AdminNetworkPolicy and BaselineAdminNetworkPolicy (v1alpha1) as the Admin and Baseline tiers', () => {
    const anp = policy({
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'AdminNetworkPolicy',
      metadata: { name: 'a' },
      spec: {
        priority: 7,
        subject: { namespaces: {} },
        ingress: [
          {
            name: 'web',
            action: 'Allow',
            from: [{ namespaces: {} }],
            ports: [{ portNumber: { protocol: 'UDP', port: 53 } }, { namedPort: 'http' }, { portRange: { protocol: 'TCP', start: 8000, end: 8080 } }],
          },
        ],
      },
    });
    expect(anp).toEqual({
      id: 'anp/a',
      kind: 'AdminNetworkPolicy',
      name: 'a',
      tier: 'Admin',
      priority: 7,
      subject: { namespaces: {} },
      ingress: [
        {
          name: 'web',
          action: 'Accept',
          peers: [{ namespaces: {} }],
          protocols: [{ protocol: 'UDP', port: { number: 53 } }, { namedPort: 'http' }, { protocol: 'TCP', port: { range: { start: 8000, end: 8080 } } }],
        },
      ],
      egress: [],
    });
    const banp = {
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'BaselineAdminNetworkPolicy',
      spec: { subject: { namespaces: {} }, egress: [{ action: 'Deny', to: [{ pods: { namespaceSelector: {}, podSelector: {} } }] }] },
    };
    expect(policy({ ...banp, metadata: { name: 'default' } })).toMatchObject({ id: 'banp/default', tier: 'Baseline', priority: 1000 });
    expect(errorsOf({ ...banp, metadata: { name: 'other' } })).toContain(
      '<root>: Invalid value: "object": Only one baseline admin network policy with metadata.name="default" can be created in the cluster',
    );
  });
});

// A small cluster: shop/web, shop/api, shop/db; ops/monitor; a host-network node agent.
const pod = (namespace: string, name: string, labels: Record<string, string>, ip: string, extra: Partial<PodInfo> = {}): PodInfo => ({
  namespace,
  name,
  labels,
  ip,
  ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
  ...extra,
});
const web = pod('shop', 'web', { app: 'web' }, '10.1.0.1');
const api = pod('shop', 'api', { app: 'api' }, '10.1.0.2');
const db = pod('shop', 'db', { app: 'db' }, '10.1.0.3', { ports: [{ name: 'pg', port: 5432, protocol: 'TCP' }] });
const monitor = pod('ops', 'monitor', { app: 'monitor' }, '10.2.0.1');
const agent = pod('ops', 'agent', { app: 'agent' }, '192.168.0.10', { hostNetwork: true });
const cluster = {
  namespaces: [
    { name: 'shop', labels: { team: 'shop' } },
    { name: 'ops', labels: { team: 'ops' } },
  ],
  pods: [web, api, db, monitor, agent],
};
const ns = (name: string) => ({ matchLabels: { 'kubernetes.io/metadata.name': name } });
const allowApiToDb: NetworkPolicyObject = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { namespace: 'shop', name: 'db-from-api' },
  spec: { podSelector: { matchLabels: { app: 'db' } }, policyTypes: ['Ingress'], ingress: [{ from: [{ podSelector: { matchLabels: { app: 'api' } } }] }] },
};

function verdict(nps: NetworkPolicyObject[], cnps: unknown[], from: PodInfo, to: PodInfo, port = 80) {
  const ev = new TieredEvaluator(cluster, nps, cnps.map(policy));
  return ev.evaluate({ from, to, port, protocol: 'TCP' });
}

describe('the tiered evaluator', () => {
  const sensitive = cnp('sensitive', {
    tier: 'Admin',
    priority: 10,
    subject: { pods: { namespaceSelector: ns('shop'), podSelector: { matchLabels: { app: 'db' } } } },
    ingress: [
      { name: 'monitoring', action: 'Accept', from: [{ namespaces: ns('ops') }] },
      { action: 'Deny', from: [{ pods: { namespaceSelector: ns('shop'), podSelector: { matchLabels: { app: 'web' } } } }] },
      { action: 'Pass', from: [{ namespaces: ns('shop') }] },
    ],
  });
  const baselineDeny = cnp('default', {
    tier: 'Baseline',
    priority: 0,
    subject: { namespaces: {} },
    ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }],
  });

  it('an Admin Accept decides before NetworkPolicy (which would block)', () => {
    const v = verdict([allowApiToDb], [sensitive], monitor, db, 5432);
    expect(v.allowed).toBe(true);
    expect(v.ingress.decidedBy).toBe('admin');
    expect(v.ingress.networkPolicy.decision).toBe('denied');
    expect(chainText('ingress', db, v.ingress)).toBe('Admin cnp/sensitive ingress rule 0 (monitoring) Accept');
  });

  it('an Admin Deny decides before NetworkPolicy (which would allow)', () => {
    const allowAll: NetworkPolicyObject = { ...allowApiToDb, metadata: { namespace: 'shop', name: 'all' }, spec: { podSelector: {}, ingress: [{}] } };
    const v = verdict([allowAll], [sensitive], web, db, 5432);
    expect(v.allowed).toBe(false);
    expect(chainText('ingress', db, v.ingress)).toBe('Admin cnp/sensitive ingress rule 1 Deny');
  });

  it('a Pass hands the side to NetworkPolicy, which then decides and the Baseline tier is not reached', () => {
    const v = verdict([allowApiToDb], [sensitive, baselineDeny], api, db, 5432);
    expect(v.allowed).toBe(true);
    expect(v.ingress.decidedBy).toBe('networkpolicy');
    expect(chainText('ingress', db, v.ingress)).toBe('Admin cnp/sensitive ingress rule 2 Pass -> NetworkPolicy shop/db-from-api ingress rule 0 allows');
  });

  it('with no NetworkPolicy isolating the pod, the Baseline tier decides; with none matching, the default allows', () => {
    const v = verdict([], [sensitive, baselineDeny], api, db, 5432);
    expect(v.allowed).toBe(false);
    expect(chainText('ingress', db, v.ingress)).toBe(
      'Admin cnp/sensitive ingress rule 2 Pass -> no NetworkPolicy isolates shop/db for ingress -> Baseline cnp/default ingress rule 0 Deny',
    );
    const open = verdict([], [], web, api);
    expect(open.allowed).toBe(true);
    expect(chainText('egress', web, open.egress)).toBe('no NetworkPolicy isolates shop/web for egress -> default: allowed');
  });

  it('each side goes through the tiers on its own: an egress Accept does not open the destination’s ingress', () => {
    const egressAccept = cnp('out', {
      tier: 'Admin',
      priority: 1,
      subject: { namespaces: ns('shop') },
      egress: [{ action: 'Accept', to: [{ namespaces: {} }] }],
    });
    const v = verdict([], [egressAccept, baselineDeny], web, api);
    expect(v.egress).toMatchObject({ allowed: true, decidedBy: 'admin' });
    expect(v.ingress).toMatchObject({ allowed: false, decidedBy: 'baseline' });
    expect(v.allowed).toBe(false);
  });

  it('protocols match on protocol and port, a range, or the destination’s named port', () => {
    const ports = cnp('ports', {
      tier: 'Admin',
      priority: 1,
      subject: { namespaces: ns('shop') },
      ingress: [
        { action: 'Deny', from: [{ namespaces: {} }], protocols: [{ destinationNamedPort: 'pg' }] },
        {
          action: 'Deny',
          from: [{ namespaces: {} }],
          protocols: [{ udp: { destinationPort: { number: 80 } } }, { tcp: { destinationPort: { range: { start: 8000, end: 8080 } } } }],
        },
      ],
    });
    expect(verdict([], [ports], api, db, 5432).allowed).toBe(false); // pg is db's 5432/TCP
    expect(verdict([], [ports], api, web, 5432).allowed).toBe(true); // web has no pg port
    expect(verdict([], [ports], api, web, 80).allowed).toBe(true); // 80/UDP is denied, not 80/TCP
    expect(verdict([], [ports], api, web, 8080).allowed).toBe(false);
  });

  it('networks peers match pod addresses too (cluster-internal traffic is checked against them), and an unknown address is undecided', () => {
    const noPods = cnp('no-internal', {
      tier: 'Admin',
      priority: 1,
      subject: { namespaces: ns('shop') },
      egress: [{ action: 'Deny', to: [{ networks: ['10.2.0.0/16'] }] }],
    });
    expect(verdict([], [noPods], web, monitor).allowed).toBe(false);
    expect(verdict([], [noPods], web, api).allowed).toBe(true);
    const unknown = { ...monitor, ip: undefined };
    const ev = new TieredEvaluator({ ...cluster, pods: [web, unknown] }, [], [policy(noPods)]);
    expect(ev.evaluate({ from: web, to: unknown, port: 80, protocol: 'TCP' }).allowed).toBeNull();
  });

  it('host-network pods are neither subjects nor pod peers', () => {
    const denyAll = cnp('deny-all', { tier: 'Admin', priority: 1, subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] });
    expect(verdict([], [denyAll], web, agent).ingress.decidedBy).toBe('default'); // agent is not a subject
    expect(verdict([], [denyAll], agent, web).allowed).toBe(true); // nor a peer of `namespaces`
  });

  it('a lower priority value goes first; the same priority with different actions is reported as order-dependent', () => {
    const accept = (name: string, priority: number) =>
      cnp(name, { tier: 'Admin', priority, subject: { namespaces: ns('shop') }, ingress: [{ action: 'Accept', from: [{ namespaces: {} }] }] });
    const deny = (name: string, priority: number) =>
      cnp(name, { tier: 'Admin', priority, subject: { namespaces: ns('shop') }, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] });
    expect(verdict([], [deny('b', 2), accept('a', 1)], web, api).allowed).toBe(true);
    expect(verdict([], [deny('b', 1), accept('a', 2)], web, api).allowed).toBe(false);
    const tie = verdict([], [deny('b', 5), accept('a', 5)], web, api);
    expect(tie.ingress.orderDependsOn).toEqual(['cnp/a', 'cnp/b']);
    expect(chainText('ingress', api, tie.ingress)).toMatch(/\(the order of cnp\/a, cnp\/b is undefined upstream: same tier and priority\)$/);
  });

  it('a pod reaching itself is loopback, whatever the tiers say', () => {
    const denyAll = cnp('deny-all', { tier: 'Admin', priority: 1, subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] });
    expect(verdict([], [denyAll], web, web)).toMatchObject({ allowed: true, ingress: { decidedBy: 'loopback' } });
  });
});
