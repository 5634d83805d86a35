// Scenario files: the schema with clear errors, and what a file means once resolved: pods (the
// model shorthand expanded), cells, manifests inline and from files, dialect policies, steps with
// their policies, labels and hand-written expectations.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILTIN } from '../../../scenarios/model/builtin.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { cellKey, type ResolvedScenario } from '../../../scenarios/model/resolve.ts';
import { ROOT, tempDir } from '../../helpers/process.ts';

/** Resolves scenario text; `files` are manifests beside it. */
function resolveText(text: string, files: Record<string, string> = {}, name = 'my.yaml'): ResolvedScenario {
  const dir = tempDir('starmap-model-');
  for (const [f, t] of Object.entries(files)) {
    mkdirSync(join(dir, f, '..'), { recursive: true });
    writeFileSync(join(dir, f), t);
  }
  const path = join(dir, name);
  writeFileSync(path, text);
  return loadScenario(path);
}

const MODEL = 'model: { namespaces: [x, y, z], pods: [a, b, c], ports: [80, 81], protocols: [TCP, UDP] }';
const deny = (ns: string, name = 'deny-all') =>
  `{ apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: { name: ${name}, namespace: ${ns} }, spec: { podSelector: {} } }`;

describe('scenario files: schema and errors', () => {
  it('every built-in is valid and every step judges something', () => {
    expect(Object.keys(BUILTIN)).toEqual(expect.arrayContaining(['stars', 'matrix-3x3']));
    for (const name of Object.keys(BUILTIN)) {
      const s = loadScenario(name);
      expect(s.steps.length).toBeGreaterThan(0);
    }
  });

  it('JSON is accepted too', () => {
    const s = resolveText(
      JSON.stringify({ name: 'j', apps: [{ name: 'a', kind: 'probe', probes: ['a'] }], steps: [{ name: 's', policies: [], expect: { default: 'allow' } }] }),
      {},
      'j.json',
    );
    expect(s.pods.map((p) => p.id)).toEqual(['default/a']);
  });

  it.each([
    ['name: [', /not valid YAML/],
    ['name: Bad_Name\napps: []\nsteps: []', /\/name \(line 1\)/],
    [
      'name: x\napps:\n  - { name: a, kind: probe, probes: [zz] }\nsteps:\n  - { name: s, policies: [], expect: { default: allow } }',
      /\/apps\/0\/probes\/0 \(line 3\): unknown pod "zz"/,
    ],
    [
      'name: x\napps:\n  - { name: a, kind: probe, probes: [a] }\nsteps:\n  - { name: s, policies: [nope], expect: { default: allow } }',
      /\/steps\/0\/policies\/0 \(line 5\): unknown policy "nope"/,
    ],
    [
      'name: x\napps:\n  - { name: a, kind: probe, probes: [a], port: 70000 }\nsteps:\n  - { name: s, policies: [], expect: { default: allow } }',
      /\/apps\/0\/port/,
    ],
    [
      'name: x\napps:\n  - { name: a, kind: probe, probes: [a] }\n  - { name: a, kind: probe, probes: [a] }\nsteps:\n  - { name: s, policies: [], expect: { default: allow } }',
      /duplicate pod "default\/a"/,
    ],
    ['name: x\napps:\n  - { name: a, kind: probe, probes: [a], colour: red }\nsteps:\n  - { name: s, policies: [], expect: { default: allow } }', /\/apps\/0/],
    ['name: x\napps:\n  - { name: a, kind: probe, probes: [a] }\nsteps:\n  - { name: s, policies: [], expect: {} }', /give `computed`, a matrix/],
    ['name: x\napps:\n  - { name: a, kind: probe, probes: [a:serve-99] }\nsteps:\n  - { name: s }', /default\/a declares no port named "serve-99"/],
    [
      'name: x\nnamespaces: { x: { labels: { kubernetes.io/metadata.name: y } } }\napps:\n  - { name: a, kind: probe, probes: [a] }\nsteps:\n  - { name: s }',
      /kubernetes.io\/metadata.name is always the namespace's name/,
    ],
    ['name: x\napps:\n  - { name: a, kind: probe, labels: { "bad key!": v }, probes: [a] }\nsteps:\n  - { name: s }', /\/apps\/0\/labels/],
    ['name: x\nsteps:\n  - { name: s }', /give apps, a model or both/],
    [`name: x\n${MODEL}\nsteps:\n  - { name: s, expect: { "80/TCP": "x" } }`, /needs a header row/],
    [`name: x\n${MODEL}\nsteps:\n  - { name: s, expect: { "80/HTTP": "x" } }`, /\/steps\/0\/expect/],
    [`name: x\n${MODEL}\nsteps:\n  - { name: s, labels: { pods: { x/q: { a: b } } } }`, /unknown pod "x\/q"/],
    [`name: x\n${MODEL}\nsteps:\n  - { name: s, labels: { namespaces: { w: { a: b } } } }`, /unknown namespace "w"/],
    [`name: x\n${MODEL}\nsteps:\n  - { name: s }\n  - { name: s }`, /duplicate step name "s"/],
  ])('refuses a bad file with the path and line: %#', (text, pattern) => {
    expect(() => resolveText(text)).toThrow(pattern);
  });

  it('names the file in every message', () => {
    expect(() => resolveText('name: x\nsteps: []\n', {}, 'bad.yaml')).toThrow(/bad\.yaml: invalid scenario/);
  });

  it('the published schema is the one the parser uses', async () => {
    const { Scenario } = await import('../../../scenarios/model/schema.ts');
    const published = JSON.parse(readFileSync(join(ROOT, 'scenarios', 'model', 'scenario.schema.json'), 'utf8')) as unknown;
    expect(published).toEqual(JSON.parse(JSON.stringify(Scenario)));
  });
});

describe('the model shorthand', () => {
  const s = resolveText(`name: m\n${MODEL}\nsteps:\n  - { name: open }\n`);

  it('creates every pod ns/pod labelled pod: <pod>, serving serve-<port>-<protocol>', () => {
    expect(s.pods.map((p) => p.id)).toEqual(['x/a', 'x/b', 'x/c', 'y/a', 'y/b', 'y/c', 'z/a', 'z/b', 'z/c']);
    const xa = s.pods[0]!;
    expect(xa).toMatchObject({ kind: 'probe', labels: { pod: 'a' }, short: 'x/a', apiPort: 9000 });
    expect(xa.ports).toEqual([
      { name: 'serve-80-tcp', port: 80, protocol: 'TCP' },
      { name: 'serve-80-udp', port: 80, protocol: 'UDP' },
      { name: 'serve-81-tcp', port: 81, protocol: 'TCP' },
      { name: 'serve-81-udp', port: 81, protocol: 'UDP' },
    ]);
    expect(s.namespaces).toEqual(['x', 'y', 'z'].map((name) => ({ name, labels: { 'kubernetes.io/metadata.name': name } })));
  });

  it('probes every other pod on every port and protocol: 288 cells', () => {
    expect(s.cells).toHaveLength(288);
    expect(s.cells.some((c) => c.from === c.to)).toBe(false);
    expect(s.cells.find((c) => c.key === cellKey('x/a', 'y/b', 81, 'UDP'))).toMatchObject({ check: 'udp' });
    expect(s.cells.find((c) => c.key === cellKey('x/a', 'y/b', 80, 'TCP'))).toMatchObject({ check: 'tcp' });
  });

  it('keeps the API port off the served ports, and lets declared namespaces add labels', () => {
    const t = resolveText(
      `name: m\nnamespaces: { y: { labels: { ns: y } } }\nmodel: { namespaces: [x, y], pods: [a], ports: [9000, 9001], protocols: [TCP, SCTP] }\nsteps:\n  - { name: open }\n`,
    );
    expect(t.pods[0]!.apiPort).toBe(9002);
    expect(t.namespaces.find((n) => n.name === 'y')!.labels).toEqual({ ns: 'y', 'kubernetes.io/metadata.name': 'y' });
    expect(t.cells.filter((c) => c.check === 'sctp')).toHaveLength(4);
  });
});

describe('pods and what they check', () => {
  it('group is an alias of namespace; targets by name, ns/name, port/protocol or port name', () => {
    const s = resolveText(`name: p
apps:
  - { name: a, group: x, kind: probe, probes: [b, y/b:81/UDP, y/b:serve-80-tcp, y/b:81], ports: [{ name: http, port: 9000 }] }
  - { name: b, namespace: x, kind: app, cmd: "true", port: 8080 }
  - { name: b, namespace: y, kind: probe, probes: [], ports: [{ name: serve-80-tcp, port: 80 }, { name: serve-81-udp, port: 81, protocol: UDP }] }
  - { name: ui, namespace: m, kind: collector, collects: [a] }
steps:
  - { name: s }
`);
    expect(s.pods.map((p) => `${p.id} ${p.short}`)).toEqual(['x/a x/a', 'x/b x/b', 'y/b y/b', 'm/ui m/ui']);
    expect(s.cells.map((c) => `${c.key} ${c.check}`)).toEqual([
      'x/a>x/b@8080/TCP tcp', // b in the same namespace first; an app's port is a plain TCP check
      'x/a>y/b@81/UDP udp',
      'x/a>y/b@80/TCP tcp',
      'm/ui>x/a@9000/TCP http', // a collector reads the probe's /status
    ]);
  });

  it('a probe checked on its own HTTP port is read with HTTP, as star does', () => {
    const s = loadScenario('stars');
    expect(s.cells.find((c) => c.key === cellKey('stars/frontend', 'stars/backend', 6379, 'TCP'))).toMatchObject({ check: 'http' });
    expect(s.pods.find((p) => p.id === 'stars/backend')!.ports).toEqual([{ name: 'http', port: 6379, protocol: 'TCP' }]);
  });
});

describe('policies', () => {
  it('manifests from files relative to the scenario, a List, inline; steps name them by namespace/name', () => {
    const s = resolveText(
      `name: p\n${MODEL}\npolicies:\n  - file: netpol/deny.yaml\n  - ${deny('z', 'inline')}\n  - { apiVersion: v1, kind: List, items: [${deny('y', 'listed')}] }\nsteps:\n  - { name: s, policies: [x/deny-all, y/deny-all, y/listed, z/inline] }\n  - { name: t }\n`,
      { 'netpol/deny.yaml': `${deny('x')}\n---\n${deny('y')}\n` },
    );
    expect(s.steps[0]!.policies.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual(['x/deny-all', 'y/deny-all', 'y/listed', 'z/inline']);
    // Absent policies: the previous step's.
    expect(s.steps[1]!.policies).toHaveLength(4);
  });

  it('a file of other kinds too: its NetworkPolicies taken, the rest ignored and counted; a bad policy or a missing file refused', () => {
    const s = resolveText(`name: p\n${MODEL}\npolicies:\n  - file: mixed.yaml\nsteps:\n  - { name: s }\n`, {
      'mixed.yaml': `${deny('x')}\n---\n{ apiVersion: v1, kind: ConfigMap, metadata: { name: c } }\n`,
    });
    expect(s.manifests).toEqual(['policies/0: mixed.yaml: 1 NetworkPolicy taken; ignored 1 object: 1 ConfigMap']);
    expect(() =>
      resolveText(`name: p\n${MODEL}\npolicies:\n  - file: bad.yaml\nsteps:\n  - { name: s }\n`, {
        'bad.yaml': `${deny('x').replace('podSelector: {}', 'podSelector: { matchLabels: { "a b": c } }')}\n---\n{ apiVersion: v1, kind: ConfigMap, metadata: { name: c } }\n`,
      }),
    ).toThrow(/\/policies\/0\/file \(line 4\): bad\.yaml: document 1 \(line 1\): NetworkPolicy x\/deny-all: \/spec\/podSelector\/matchLabels\/a b/);
    expect(() => resolveText(`name: p\n${MODEL}\npolicies:\n  - file: missing.yaml\nsteps:\n  - { name: s }\n`)).toThrow(/cannot read missing\.yaml: ENOENT/);
  });

  it('an invalid inline manifest names the field and its line', () => {
    const text = `name: p\n${MODEL}\npolicies:\n  - apiVersion: networking.k8s.io/v1\n    kind: NetworkPolicy\n    metadata: { name: bad, namespace: x }\n    spec:\n      podSelector: { matchExpressions: [{ key: pod, operator: Like, values: [a] }] }\nsteps:\n  - { name: s }\n`;
    expect(() => resolveText(text)).toThrow(/\/policies\/0\/spec\/podSelector\/matchExpressions\/0\/operator \(line 8\): Invalid value: "Like"/);
  });

  it('refuses duplicates and {{ip}} of unknown pods', () => {
    expect(() => resolveText(`name: p\n${MODEL}\npolicies:\n  - ${deny('x')}\n  - ${deny('x')}\nsteps:\n  - { name: s }\n`)).toThrow(
      /policy x\/deny-all is defined twice/,
    );
    const tpl = `{ apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: { name: t, namespace: x }, spec: { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: "{{ip q/q}}/32" } }] }] } }`;
    expect(() => resolveText(`name: p\n${MODEL}\npolicies:\n  - ${tpl}\nsteps:\n  - { name: s }\n`)).toThrow(/\{\{ip q\/q\}\} names no pod of this scenario/);
  });

  it('a step may carry its own version of a policy (an update)', () => {
    const s = resolveText(
      `name: p\n${MODEL}\npolicies:\n  - ${deny('x', 'p')}\nsteps:\n  - { name: s, policies: [x/p] }\n  - name: t\n    policies:\n      - { apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: { name: p, namespace: x }, spec: { podSelector: {}, ingress: [{}] } }\n`,
    );
    expect(s.steps[0]!.policies[0]!.spec.ingress).toBeUndefined();
    expect(s.steps[1]!.policies.map((p) => p.spec.ingress)).toEqual([[{}]]);
  });

  it('dialect policies are read as one NetworkPolicy per namespace they select', () => {
    const s = loadScenario('matrix-3x3');
    const step = s.steps.find((st) => st.name === 'web-to-db')!;
    expect(step.policies.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual(['default/isolate-db', 'default/web-to-db']);
    expect(step.policies[1]!.spec).toEqual({
      podSelector: { matchLabels: { tier: 'db' } },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ podSelector: { matchLabels: { tier: 'web' } }, namespaceSelector: {} }], ports: [{ port: 8080, protocol: 'TCP' }] }],
    });
    expect(step.dialect).toEqual({ 'isolate-db': expect.any(Object), 'web-to-db': expect.any(Object) });
  });
});

describe('steps: labels and expectations', () => {
  it('label changes replace the maps from that step on; null goes back to the declared labels', () => {
    const s = resolveText(
      `name: l\n${MODEL}\nsteps:\n  - { name: one, labels: { namespaces: { y: { ns2: updated } }, pods: { x/b: { pod: b, pod2: updated } } } }\n  - { name: two }\n  - { name: three, labels: { namespaces: { y: null }, pods: { x/b: null } } }\n`,
    );
    expect(s.steps[0]!.namespaceLabels.y).toEqual({ ns2: 'updated', 'kubernetes.io/metadata.name': 'y' });
    expect(s.steps[1]!.podLabels['x/b']).toEqual({ pod: 'b', pod2: 'updated' });
    expect(s.steps[2]!.namespaceLabels.y).toEqual({ 'kubernetes.io/metadata.name': 'y' });
    expect(s.steps[2]!.podLabels['x/b']).toEqual({ pod: 'b' });
  });

  it('per port/protocol matrices with ns/pod names; loopback cells ignored; others combine by precedence', () => {
    const s = resolveText(`name: e\nmodel: { namespaces: [x, y], pods: [a, b], ports: [80, 81], protocols: [TCP] }
steps:
  - name: s
    expect:
      default: allow
      matrix: |
        .   x/a x/b y/a y/b
        x/a X   X   X   X
        x/b X   X   X   X
        y/a .   .   .   .
        y/b .   .   .   .
      "81/TCP": |
        -   x/a x/b y/a y/b
        x/a -   .   .   .
        x/b -   -   -   -
        y/a -   -   -   -
        y/b -   -   -   -
      edges: [{ from: x/a, to: y/b, port: 81/TCP, expect: deny }]
`);
    const i = s.steps[0]!.intended!;
    expect(i.get(cellKey('x/a', 'x/b', 80, 'TCP'))).toBe(false); // matrix beats default
    expect(i.get(cellKey('x/a', 'x/b', 81, 'TCP'))).toBe(true); // the 81/TCP matrix beats matrix
    expect(i.has(cellKey('x/b', 'y/a', 81, 'TCP'))).toBe(false); // '-': not judged
    expect(i.get(cellKey('x/a', 'y/b', 81, 'TCP'))).toBe(false); // edges beat all
    expect(i.get(cellKey('y/a', 'x/a', 80, 'TCP'))).toBe(true);
    expect([...i.keys()].some((k) => k.startsWith('x/a>x/a'))).toBe(false);
  });

  it('refuses cells nothing checks, ambiguous names and bad cells', () => {
    const base = `name: e\napps:\n  - { name: a, namespace: x, kind: probe, probes: [b] }\n  - { name: b, namespace: x, kind: probe, probes: [] }\n  - { name: b, namespace: y, kind: probe, probes: [] }\nsteps:\n  - name: s\n    expect:\n      matrix: |\n`;
    expect(() => resolveText(`${base}        .   x/a x/b\n        x/b .   -\n`)).toThrow(/nothing checks x\/b -> x\/a in this scenario \(write '-' there\)/);
    expect(() => resolveText(`${base}        .   x/a b\n        x/a -   .\n`)).toThrow(/"b" is ambiguous \(x\/b, y\/b\); write namespace\/pod/);
    expect(() => resolveText(`${base}        .   x/a x/b\n        x/a -   Y\n`)).toThrow(/cell "Y" is not '\.', 'X' or '-'/);
    expect(() => resolveText(`${base}        .   x/a x/b\n        x/a -   .\n        x/b -\n`)).toThrow(/row 2: 1 cell, expected 2/);
  });

  it("takes '-' on a pair nothing checks: it judges nothing, as it says", () => {
    // a (ns1) probes b and c, b (ns2) probes a, c (ns2) probes b: nothing checks b -> c.
    const s = resolveText(`name: e
apps:
  - { name: a, namespace: ns1, kind: probe, probes: [ns2/b, ns2/c] }
  - { name: b, namespace: ns2, kind: probe, probes: [ns1/a] }
  - { name: c, namespace: ns2, kind: probe, probes: [b] }
steps:
  - name: s
    expect:
      matrix: |
        .     ns1/a ns2/b ns2/c
        ns1/a -     .     .
        ns2/b .     -     -
        ns2/c -     .     -
      "9000/TCP": |
        .     ns2/c
        ns2/b -
`);
    expect([...s.steps[0]!.intended!.entries()].sort()).toEqual(
      [
        [cellKey('ns1/a', 'ns2/b', 9000, 'TCP'), true],
        [cellKey('ns1/a', 'ns2/c', 9000, 'TCP'), true],
        [cellKey('ns2/b', 'ns1/a', 9000, 'TCP'), true],
        [cellKey('ns2/c', 'ns2/b', 9000, 'TCP'), true],
      ].sort(),
    );
    // A verdict there is still refused: nothing would check it.
    expect(() =>
      resolveText(`name: e
apps:
  - { name: a, namespace: ns1, kind: probe, probes: [ns2/b] }
  - { name: b, namespace: ns2, kind: probe, probes: [] }
steps:
  - name: s
    expect:
      matrix: |
        .     ns1/a
        ns2/b .
`),
    ).toThrow(/nothing checks ns2\/b -> ns1\/a in this scenario \(write '-' there\)/);
  });
});
