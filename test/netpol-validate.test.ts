// NetworkPolicy validation as the Kubernetes API server does it: defaults, every rule of the
// upstream validation (names, labels, selectors, CIDRs, ports, policyTypes), strict decoding of
// unknown fields with JSON pointer paths, and the bound on the work a document may cost.
import { describe, expect, it } from 'vitest';
import { labelKeyErrors, portNameErrors } from '../shared/netpol/names.ts';
import { MAX_VALUES, cidrStrictlyInside, parseCidr, validateNetworkPolicy, type Cidr, type FieldErrors } from '../shared/netpol/validate.ts';
import type { NetworkPolicyObject } from '../shared/netpol/types.ts';

function np(spec: unknown, metadata: unknown = { name: 'p', namespace: 'x' }): Record<string, unknown> {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata, spec };
}

function ok(doc: unknown): NetworkPolicyObject {
  const v = validateNetworkPolicy(doc);
  if ('errors' in v) throw new Error(JSON.stringify(v.errors));
  return v.policy;
}

function errs(doc: unknown): FieldErrors[] {
  const v = validateNetworkPolicy(doc);
  if (!('errors' in v)) throw new Error(`accepted: ${JSON.stringify(v.policy)}`);
  return v.errors;
}

/** The errors as "path: message" lines (easier to read in a failing assertion). */
function lines(doc: unknown): string[] {
  return errs(doc).flatMap((e) => e.errors.map((m) => `${e.path}: ${m}`));
}

describe('defaults and normalisation', () => {
  it('fills namespace, podSelector, protocol and policyTypes as the API server does', () => {
    expect(ok({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'deny' } })).toEqual({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'deny', namespace: 'default' },
      spec: { podSelector: {}, policyTypes: ['Ingress'] },
    });
    const p = ok(np({ podSelector: { matchLabels: { app: 'db' } }, ingress: [{ ports: [{ port: 5432 }, { port: 'dns', protocol: 'UDP' }, {}] }] }));
    expect(p.spec.ingress![0]!.ports).toEqual([{ protocol: 'TCP', port: 5432 }, { protocol: 'UDP', port: 'dns' }, { protocol: 'TCP' }]);
    expect(p.spec.policyTypes).toEqual(['Ingress']);
  });

  it('adds Egress to the default policyTypes only when egress has a rule; explicit ones are kept', () => {
    expect(ok(np({ podSelector: {}, egress: [] })).spec.policyTypes).toEqual(['Ingress']);
    expect(ok(np({ podSelector: {}, egress: [{}] })).spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(ok(np({ podSelector: {}, egress: [{}], policyTypes: ['Egress'] })).spec.policyTypes).toEqual(['Egress']);
    expect(ok(np({ podSelector: {}, policyTypes: [] })).spec.policyTypes).toEqual(['Ingress']);
  });

  it('accepts what `kubectl get netpol -o yaml` prints and drops the server-managed metadata', () => {
    const doc = np(
      { podSelector: {}, policyTypes: ['Ingress'] },
      {
        name: 'allow',
        namespace: 'y',
        labels: { team: 'a' },
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"x":1}\n' },
        uid: '0f3c',
        resourceVersion: '123',
        generation: 1,
        creationTimestamp: '2026-01-01T00:00:00Z',
        managedFields: [{ manager: 'kubectl', fieldsV1: { 'f:spec': {} } }],
      },
    );
    expect(ok({ ...doc, status: {} }).metadata).toEqual({
      name: 'allow',
      namespace: 'y',
      labels: { team: 'a' },
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"x":1}\n' },
    });
  });

  it('reads JSON null as absent (YAML `ingress:` with nothing under it)', () => {
    const p = ok(np({ podSelector: null, ingress: [{ from: null, ports: [{ port: 80, protocol: null, endPort: null }] }], egress: null, policyTypes: null }));
    expect(p.spec).toEqual({ podSelector: {}, ingress: [{ ports: [{ protocol: 'TCP', port: 80 }] }], policyTypes: ['Ingress'] });
  });

  it('keeps CIDRs as written, host bits included (the v1 API accepts 10.1.2.3/8)', () => {
    const p = ok(np({ podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.1.2.3/8', except: ['10.1.2.0/24'] } }] }] }));
    expect(p.spec.ingress![0]!.from![0]!.ipBlock).toEqual({ cidr: '10.1.2.3/8', except: ['10.1.2.0/24'] });
    ok(np({ podSelector: {}, egress: [{ to: [{ ipBlock: { cidr: '2001:db8::/32', except: ['2001:db8:1::/48', '2001:db8::1/128'] } }] }] }));
  });

  it('accepts selectors with both parts, every operator, SCTP, endPort and named ports nobody declares', () => {
    const spec = {
      podSelector: { matchExpressions: [{ key: 'app.kubernetes.io/name', operator: 'In', values: ['a', 'b'] }] },
      ingress: [
        {
          from: [
            {
              podSelector: { matchLabels: { pod: 'a' } },
              namespaceSelector: {
                matchExpressions: [
                  { key: 'ns', operator: 'NotIn', values: ['y'] },
                  { key: 'x', operator: 'Exists' },
                  { key: 'z', operator: 'DoesNotExist', values: [] },
                ],
              },
            },
          ],
          ports: [
            { port: 80, endPort: 81 },
            { port: 'serve-80-sctp', protocol: 'SCTP' },
            { port: 7, endPort: 7 },
          ],
        },
      ],
    };
    expect(ok(np(spec)).spec.ingress).toEqual([
      {
        from: spec.ingress[0]!.from,
        ports: [
          { protocol: 'TCP', port: 80, endPort: 81 },
          { protocol: 'SCTP', port: 'serve-80-sctp' },
          { protocol: 'TCP', port: 7, endPort: 7 },
        ],
      },
    ]);
  });
});

describe('refusals, each with its JSON pointer path', () => {
  it('names apiVersion, kind and metadata problems', () => {
    expect(lines({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'Bad_Name', namespace: 'Under_score' } })).toEqual([
      '/apiVersion: Unsupported value: "v1": supported values: "networking.k8s.io/v1"',
      '/kind: Unsupported value: "Pod": supported values: "NetworkPolicy"',
      expect.stringMatching(
        /^\/metadata\/name: Invalid value: "Bad_Name": not an RFC 1123 subdomain: "B" \(character 1\) is not allowed \(lower case only\); a lowercase RFC 1123 subdomain/,
      ),
      expect.stringMatching(
        /^\/metadata\/namespace: Invalid value: "Under_score": not an RFC 1123 label: "U" \(character 1\) is not allowed \(lower case only\); a lowercase RFC 1123 label/,
      ),
    ]);
    expect(lines({ kind: 'NetworkPolicy', metadata: { generateName: 'p-' } })).toEqual([
      '/apiVersion: Required value: networking.k8s.io/v1',
      '/metadata/name: Required value: name is required (generateName is not supported: a policy needs a stable name)',
    ]);
    expect(lines(np({}, { name: 'a'.repeat(254), namespace: 'n'.repeat(64) }))).toEqual([
      expect.stringContaining('/metadata/name: Invalid value:'),
      expect.stringContaining('/metadata/namespace: Invalid value:'),
    ]);
    expect(lines('nope')).toEqual(['/: must be an object (a networking.k8s.io/v1 NetworkPolicy)']);
    expect(lines([])).toEqual(['/: must be an object (a networking.k8s.io/v1 NetworkPolicy)']);
  });

  it('says which character of a name breaks the RFC 1123 rule, before the rule', () => {
    const nameError = (name: string, namespace = 'x') => lines(np({}, { name, namespace }));
    expect(nameError('use_common_labels_same_values')).toEqual([
      expect.stringMatching(
        /^\/metadata\/name: Invalid value: "use_common_labels_same_values": not an RFC 1123 subdomain: "_" \(character 4\) is not allowed \(write '-'\); a lowercase RFC 1123 subdomain must consist of/,
      ),
    ]);
    expect(nameError('-p')).toEqual([expect.stringContaining(': not an RFC 1123 subdomain: "-" (character 1) starts a part; it must be a letter or digit;')]);
    expect(nameError('a.b-.c')).toEqual([expect.stringContaining(': not an RFC 1123 subdomain: "-" (character 4) ends a part; it must be a letter or digit;')]);
    expect(nameError('a..b')).toEqual([expect.stringContaining(': not an RFC 1123 subdomain: character 3 leaves an empty part between dots;')]);
    expect(nameError('p', 'a.b')).toEqual([
      expect.stringContaining('/metadata/namespace: Invalid value: "a.b": not an RFC 1123 label: "." (character 2) is not allowed;'),
    ]);
    expect(nameError('p', 'ns-')).toEqual([expect.stringContaining('not an RFC 1123 label: "-" (character 3) ends it; it must be a letter or digit;')]);
    expect(nameError('pé')).toEqual([expect.stringContaining('"é" (character 2) is not allowed;')]);
  });

  it('refuses unknown fields wherever they are, escaping keys in the path', () => {
    const doc = { ...np({ podSelector: { matchLabel: {} }, ingres: [], ingress: [{ form: [] }] }, { name: 'p', 'a/b': 1 }), extra: true };
    expect(errs(doc)).toEqual([
      { path: '/extra', errors: [expect.stringContaining('unknown field (expected one of: apiVersion, kind, metadata, spec, status)')] },
      { path: '/metadata/a~1b', errors: [expect.stringContaining('unknown field')] },
      { path: '/spec/ingres', errors: [expect.stringContaining('unknown field (expected one of: podSelector, ingress, egress, policyTypes)')] },
      { path: '/spec/podSelector/matchLabel', errors: [expect.stringContaining('unknown field (expected one of: matchLabels, matchExpressions)')] },
      { path: '/spec/ingress/0/form', errors: [expect.stringContaining('unknown field (expected one of: ports, from)')] },
    ]);
  });

  it('checks label keys and values in metadata and selectors', () => {
    expect(
      lines(
        np(
          {
            podSelector: { matchLabels: { 'Bad Key': 'x', 'example.com/ok': 'bad value!', 'a/b/c': '', [`${'x'.repeat(64)}`]: 'v', 'UPPER.com/x': 'y', n: 3 } },
          },
          { name: 'p', labels: { '/x': 'v' } },
        ),
      ),
    ).toEqual([
      '/metadata/labels/~1x: prefix part must be non-empty',
      expect.stringMatching(/^\/spec\/podSelector\/matchLabels\/Bad Key: name part must consist of/),
      expect.stringMatching(/^\/spec\/podSelector\/matchLabels\/example.com~1ok: Invalid value: "bad value!": a valid label must be an empty string/),
      expect.stringMatching(/^\/spec\/podSelector\/matchLabels\/a~1b~1c: a qualified name must consist/),
      '/spec/podSelector/matchLabels/' + 'x'.repeat(64) + ': name part must be no more than 63 characters',
      expect.stringMatching(/^\/spec\/podSelector\/matchLabels\/UPPER.com~1x: prefix part a lowercase RFC 1123 subdomain/),
      '/spec/podSelector/matchLabels/n: must be a string',
    ]);
  });

  it('checks selector operators and their values', () => {
    const exprs = [
      { key: 'a', operator: 'Equals', values: ['x'] },
      { key: 'b', operator: 'In' },
      { key: 'c', operator: 'NotIn', values: [] },
      { key: 'd', operator: 'Exists', values: ['x'] },
      { key: '', operator: 'DoesNotExist' },
      { key: 'e', operator: 'In', values: ['ok', 'not ok', 5] },
      { key: 'f', operator: 'in', values: ['x'] },
    ];
    expect(lines(np({ podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchExpressions: exprs } }] }] }))).toEqual([
      '/spec/ingress/0/from/0/namespaceSelector/matchExpressions/0/operator: Invalid value: "Equals": not a valid selector operator (supported: In, NotIn, Exists, DoesNotExist)',
      "/spec/ingress/0/from/0/namespaceSelector/matchExpressions/1/values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
      "/spec/ingress/0/from/0/namespaceSelector/matchExpressions/2/values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
      "/spec/ingress/0/from/0/namespaceSelector/matchExpressions/3/values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
      '/spec/ingress/0/from/0/namespaceSelector/matchExpressions/4/key: name part must be non-empty',
      expect.stringMatching(/^\/spec\/ingress\/0\/from\/0\/namespaceSelector\/matchExpressions\/5\/values\/1: Invalid value: "not ok": a valid label/),
      '/spec/ingress/0/from/0/namespaceSelector/matchExpressions/5/values/2: must be a string',
      expect.stringContaining('/matchExpressions/6/operator: Invalid value: "in": not a valid selector operator'),
    ]);
  });

  it('checks peers and ipBlocks: one kind of peer, CIDRs that parse, except strictly inside cidr', () => {
    const from = [
      {},
      { ipBlock: { cidr: '10.0.0.0/8' }, podSelector: {} },
      { ipBlock: { cidr: '10.0.0.0/33' } },
      { ipBlock: { cidr: 'nope' } },
      { ipBlock: {} },
      { ipBlock: { cidr: '10.0.0.0/16', except: ['10.1.0.0/24', '10.0.0.0/16', '10.0.0.0/8', '2001:db8::/64', '10.0.1.0/24', 'x'] } },
      { ipBlock: { cidr: '::ffff:10.0.0.0/104' } },
    ];
    expect(lines(np({ podSelector: {}, ingress: [{ from }] }))).toEqual([
      '/spec/ingress/0/from/0: Required value: must specify a peer (podSelector, namespaceSelector or ipBlock)',
      '/spec/ingress/0/from/1: Forbidden: may not specify both ipBlock and another peer',
      '/spec/ingress/0/from/2/ipBlock/cidr: Invalid value: "10.0.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)',
      '/spec/ingress/0/from/3/ipBlock/cidr: Invalid value: "nope": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)',
      '/spec/ingress/0/from/4/ipBlock/cidr: Required value',
      '/spec/ingress/0/from/5/ipBlock/except/0: Invalid value: "10.1.0.0/24": must be a strict subset of `cidr` (10.0.0.0/16)',
      '/spec/ingress/0/from/5/ipBlock/except/1: Invalid value: "10.0.0.0/16": must be a strict subset of `cidr` (10.0.0.0/16)',
      '/spec/ingress/0/from/5/ipBlock/except/2: Invalid value: "10.0.0.0/8": must be a strict subset of `cidr` (10.0.0.0/16)',
      '/spec/ingress/0/from/5/ipBlock/except/3: Invalid value: "2001:db8::/64": must be a strict subset of `cidr` (10.0.0.0/16)',
      '/spec/ingress/0/from/5/ipBlock/except/5: Invalid value: "x": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)',
      '/spec/ingress/0/from/6/ipBlock/cidr: Invalid value: "::ffff:10.0.0.0/104": must not have an IPv4-mapped IPv6 address',
    ]);
  });

  it('checks ports: numbers, names, endPort and protocols', () => {
    const ports = [
      { port: 0 },
      { port: 65536 },
      { port: 80.5 },
      { port: '80' },
      { port: 'Http' },
      { port: 'a-very-long-port-name' },
      { port: 'http', endPort: 90 },
      { port: 90, endPort: 80 },
      { endPort: 80 },
      { port: 1, endPort: 70000 },
      { port: 53, protocol: 'udp' },
      { port: 1, protocol: 'ICMP' },
      { port: true },
    ];
    expect(lines(np({ podSelector: {}, egress: [{ ports }] }))).toEqual([
      '/spec/egress/0/ports/0/port: Invalid value: 0: must be between 1 and 65535, inclusive',
      '/spec/egress/0/ports/1/port: Invalid value: 65536: must be between 1 and 65535, inclusive',
      '/spec/egress/0/ports/2/port: must be an integer',
      '/spec/egress/0/ports/3/port: Invalid value: "80": must contain at least one letter (a-z)',
      '/spec/egress/0/ports/4/port: Invalid value: "Http": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
      '/spec/egress/0/ports/5/port: Invalid value: "a-very-long-port-name": must be no more than 15 characters',
      '/spec/egress/0/ports/6/endPort: Invalid value: may not be specified when `port` is non-numeric',
      '/spec/egress/0/ports/7/endPort: Invalid value: 80: must be greater than or equal to `port`',
      '/spec/egress/0/ports/8/endPort: Invalid value: may not be specified when `port` is not specified',
      '/spec/egress/0/ports/9/endPort: Invalid value: 70000: must be between 1 and 65535, inclusive',
      '/spec/egress/0/ports/10/protocol: Unsupported value: "udp": supported values: "TCP", "UDP", "SCTP"',
      '/spec/egress/0/ports/11/protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"',
      '/spec/egress/0/ports/12/port: must be a port number or a port name',
    ]);
  });

  it('checks policyTypes and the types of every list', () => {
    expect(lines(np({ podSelector: {}, policyTypes: ['Ingress', 'Egress', 'Ingress'] }))).toEqual([
      '/spec/policyTypes: Invalid value: may not specify more than two policyTypes',
    ]);
    expect(lines(np({ podSelector: {}, policyTypes: ['ingress'] }))).toEqual([
      '/spec/policyTypes/0: Unsupported value: "ingress": supported values: "Ingress", "Egress"',
    ]);
    expect(lines(np({ podSelector: [], ingress: {}, egress: 'x', policyTypes: 'Ingress' }))).toEqual([
      '/spec/podSelector: must be an object',
      '/spec/ingress: must be an array',
      '/spec/egress: must be an array',
      '/spec/policyTypes: must be an array',
    ]);
  });
});

describe('bounded work', () => {
  it('refuses a document with more values than the bound, quickly, whatever its shape', () => {
    const t0 = performance.now();
    const wide = np({ podSelector: {}, ingress: Array.from({ length: MAX_VALUES }, () => ({ ports: [{ port: 80 }] })) });
    expect(errs(wide)).toEqual([{ path: '/', errors: [`the document is too large: Starmap reads at most ${MAX_VALUES} values per NetworkPolicy`] }]);
    const manyKeys = Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`k${i}`, 1]));
    expect(errs(np({ podSelector: manyKeys }))[0]!.errors[0]).toMatch(/too large/);
    expect(errs(np({ podSelector: { matchLabels: manyKeys } }))[0]!.errors[0]).toMatch(/too large/);
    // Long strings are judged by their length first, and quoted shortened in messages.
    const long = 'a'.repeat(1_000_000);
    const e = lines(
      np({ podSelector: { matchLabels: { k: long } }, ingress: [{ from: [{ ipBlock: { cidr: long } }], ports: [{ port: long }] }] }, { name: long }),
    );
    expect(e.every((l) => l.length < 700)).toBe(true);
    expect(performance.now() - t0).toBeLessThan(5000); // generous: a guard against quadratic work, not a benchmark
  });
});

describe('CIDR parsing', () => {
  const net = (s: string) => {
    const c = parseCidr(s);
    if ('error' in c) throw new Error(c.error);
    return c;
  };
  it('parses IPv4 and IPv6 (compressed, embedded IPv4), masking host bits', () => {
    expect(net('10.1.2.3/8')).toMatchObject({ family: 4, prefix: 8, text: '10.0.0.0/8' });
    expect(net('0.0.0.0/0').text).toBe('0.0.0.0/0');
    expect(net('192.168.001.010/32').text).toBe('192.168.1.10/32');
    expect(net('2001:DB8::1/64').text).toBe('2001:db8:0:0:0:0:0:0/64');
    expect(net('::/0').text).toBe('0:0:0:0:0:0:0:0/0');
    expect(net('64:ff9b::10.0.0.1/128').text).toBe('64:ff9b:0:0:0:0:a00:1/128');
    expect(net('1:2:3:4:5:6:7:8/128').text).toBe('1:2:3:4:5:6:7:8/128');
    for (const bad of [
      '10.0.0.0',
      '10.0.0/8',
      '10.0.0.256/8',
      '10.0.0.0/-1',
      '1::2::3/64',
      '1:2:3:4:5:6:7:8:9/64',
      '12345::/64',
      'fe80::1%eth0/64',
      '10.0.0.0/8/8',
      '1:2:3:4:5:6:7::8/64x',
    ]) {
      expect(parseCidr(bad), bad).toHaveProperty('error');
    }
  });
  it('tells strict subsets', () => {
    const inside = (a: string, b: string) => cidrStrictlyInside(net(a) as Cidr, net(b) as Cidr);
    expect(inside('10.1.0.0/16', '10.0.0.0/8')).toBe(true);
    expect(inside('10.0.0.0/8', '10.0.0.0/8')).toBe(false);
    expect(inside('11.0.0.0/16', '10.0.0.0/8')).toBe(false);
    expect(inside('10.0.0.1/32', '0.0.0.0/0')).toBe(true);
    expect(inside('2001:db8::/48', '2001:db8::/32')).toBe(true);
    expect(inside('2001:db9::/48', '2001:db8::/32')).toBe(false);
  });
  it('checks label keys and port names as apimachinery does', () => {
    expect(labelKeyErrors('kubernetes.io/metadata.name')).toEqual([]);
    expect(labelKeyErrors('a_b.C-9')).toEqual([]);
    expect(portNameErrors('serve-80-tcp')).toEqual([]);
    expect(portNameErrors('-a--')).toEqual(['must not contain consecutive hyphens', 'must not begin or end with a hyphen']);
  });
});
