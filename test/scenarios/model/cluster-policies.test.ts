// Admin-tier policies (ClusterNetworkPolicy v1alpha2, AdminNetworkPolicy / BaselineAdminNetworkPolicy
// v1alpha1) in scenarios: read wherever NetworkPolicies are (policies:, manifests, step manifests),
// validated against the upstream CRDs with file, field and line; the step's expectation is the
// tiered evaluator's, its reason the chain it followed; a cell that rests on an order upstream
// leaves undefined says so (reason, JSON flag); explain, the JSON report and the live UI carry the
// chain; `scenario run` does not deploy what the orchestrator cannot enforce.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { afterAll, describe, expect, it } from 'vitest';
import { checkScenario } from '../../../scenarios/cli/check.ts';
import { explainConnection } from '../../../scenarios/cli/explain.ts';
import { REPORT_FORMATS } from '../../../scenarios/report/formats.ts';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { readManifestSet } from '../../../scenarios/model/manifests.ts';
import type { ResolvedScenario } from '../../../scenarios/model/resolve.ts';
import { cellResults, stepResult } from '../../../scenarios/report/results.ts';
import { CellResult, ScenarioReport, type ScenarioReportDoc } from '../../../scenarios/report/schema.ts';
import { planApps } from '../../../scenarios/run/deploy-plan.ts';
import { collectorNaming, LiveExpectations, type PublishedStep } from '../../../scenarios/run/live-expectations.ts';
import { notRunCells } from '../../../scenarios/run/steps.ts';
import type { Located } from '../../../scenarios/run/observe.ts';
import { validateClusterPolicy } from '../../../shared/netpol/cluster-policy.ts';
import { stopAll, tempDir } from '../../helpers/process.ts';

afterAll(stopAll);

function load(text: string, files: Record<string, string> = {}): ResolvedScenario {
  const dir = tempDir('starmap-cnp-');
  for (const [f, t] of Object.entries(files)) {
    mkdirSync(join(dir, f, '..'), { recursive: true });
    writeFileSync(join(dir, f), t);
  }
  writeFileSync(join(dir, 'cnp.yaml'), text);
  return loadScenario(join(dir, 'cnp.yaml'));
}

const APPS = `apps:
  - {name: web, kind: probe, namespace: shop, labels: {app: web}, ports: [{name: http, port: 8080}], probes: [shop/db:5432]}
  - {name: db, kind: probe, namespace: shop, labels: {app: db}, ports: [{name: pg, port: 5432}], probes: [shop/web:8080]}`;

const cnp = (name: string, tier: string, priority: number, ingress: string, extra = '') => `  - apiVersion: policy.networking.k8s.io/v1alpha2
    kind: ClusterNetworkPolicy
    metadata: {name: ${name}}
    spec:
      tier: ${tier}
      priority: ${priority}
      subject: {namespaces: {}}
      ingress:
${ingress}${extra}`;

const SCENARIO = `name: cnp
${APPS}
policies:
${cnp('sensitive', 'Admin', 10, '        - {name: pass-db, action: Pass, from: [{namespaces: {}}]}\n')}
${cnp('default', 'Baseline', 10, '        - {action: Deny, from: [{namespaces: {}}]}\n')}
${cnp('other', 'Baseline', 10, '        - {action: Accept, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: web}}}}]}\n')}
  - apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: allow-web, namespace: shop}
    spec:
      podSelector: {matchLabels: {app: db}}
      ingress: [{from: [{podSelector: {matchLabels: {app: web}}}]}]
steps:
  - name: admin-pass-baseline-deny
    policies: [cnp/sensitive, cnp/default]
    expect: {default: deny}
  - name: networkpolicy-decides
    policies: [cnp/sensitive, cnp/default, shop/allow-web]
    expect:
      edges: [{from: shop/web, to: shop/db, expect: allow}, {from: shop/db, to: shop/web, expect: deny}]
  - name: same-priority
    policies: [cnp/sensitive, cnp/default, cnp/other]
    expect: computed
  - name: none
    policies: []
    expect: {default: allow}
`;

describe('admin-tier policies in a scenario', () => {
  const s = load(SCENARIO);
  const cell = (step: number, from: string, to: string) => expectStep(s, s.steps[step]!).cells.find((c) => c.cell.from === from && c.cell.to === to)!;

  it('are in force by id in the steps that name them, beside NetworkPolicies, and replaced with the step', () => {
    expect(s.steps.map((st) => (st.clusterPolicies ?? []).map((p) => p.id))).toEqual([
      ['cnp/sensitive', 'cnp/default'],
      ['cnp/sensitive', 'cnp/default'],
      ['cnp/sensitive', 'cnp/default', 'cnp/other'],
      [],
    ]);
    expect(s.steps[1]!.policies.map((p) => p.metadata.name)).toEqual(['allow-web']);
  });

  it('computes each cell through the tiers and gives the chain it followed as the reason', () => {
    const blocked = cell(0, 'shop/web', 'shop/db');
    expect(blocked.computed).toBe(false);
    expect(blocked.chain).toEqual({
      egress: 'no NetworkPolicy isolates shop/web for egress -> default: allowed',
      ingress: 'Admin cnp/sensitive ingress rule 0 (pass-db) Pass -> no NetworkPolicy isolates shop/db for ingress -> Baseline cnp/default ingress rule 0 Deny',
    });
    expect(blocked.reason).toBe(`egress: ${blocked.chain!.egress}; ingress: ${blocked.chain!.ingress}`);
    // A NetworkPolicy isolating the pod decides before the Baseline tier.
    const np = cell(1, 'shop/web', 'shop/db');
    expect(np.computed).toBe(true);
    expect(np.chain!.ingress).toBe('Admin cnp/sensitive ingress rule 0 (pass-db) Pass -> NetworkPolicy shop/allow-web ingress rule 0 allows');
    expect(expectStep(s, s.steps[1]!).mistakes).toEqual([]);
    // Without admin-tier policies: the NetworkPolicy reasons as before, no chain.
    expect(cell(3, 'shop/web', 'shop/db')).toMatchObject({ computed: true, reason: 'egress not isolated; ingress not isolated' });
    expect(cell(3, 'shop/web', 'shop/db').chain).toBeUndefined();
  });

  it('says when a verdict depends on the order of policies of one tier and priority (reason and JSON flag)', () => {
    const c = cell(2, 'shop/web', 'shop/db');
    expect(c.orderDependsOn).toEqual(['cnp/default', 'cnp/other']);
    expect(c.reason).toContain('(the order of cnp/default, cnp/other is undefined upstream: same tier and priority)');
    expect(cell(0, 'shop/web', 'shop/db').orderDependsOn).toBeUndefined();
    const exp = expectStep(s, s.steps[2]!);
    const docs = cellResults(exp, new Map());
    const doc = docs.find((d) => d.from === 'shop/web' && d.to === 'shop/db')!;
    expect(doc.orderDependsOn).toEqual(['cnp/default', 'cnp/other']);
    expect(doc.chain).toEqual(c.chain);
    expect([...Value.Errors(CellResult, doc)]).toEqual([]);
    const step = stepResult(exp, s.pods, docs, { settled: null, durationMs: null, budgetMs: 1, lastFlipMs: null, observed: false });
    expect(step.policies).toEqual(['cnp/sensitive', 'cnp/default', 'cnp/other']);
  });

  it('the JSON and HTML reports carry the chain (the HTML report as each cell’s reason)', () => {
    const report = checkScenario(s).report;
    expect([...Value.Errors(ScenarioReport, report)]).toEqual([]);
    const json = JSON.parse(REPORT_FORMATS.json(report)) as ScenarioReportDoc;
    expect(json.steps[2]!.cells.find((c) => c.from === 'shop/web')!.orderDependsOn).toEqual(['cnp/default', 'cnp/other']);
    const html = REPORT_FORMATS.html(report);
    const reasons = JSON.parse(/<script type="application\/json" id="starmap-reasons">(.*?)<\/script>/s.exec(html)![1]!) as string[];
    expect(reasons).toContain(cell(0, 'shop/web', 'shop/db').reason);
    expect(reasons).toContain(cell(2, 'shop/web', 'shop/db').reason);
  });

  it('scenario explain prints both chains, the NetworkPolicy tier alone and the order note', () => {
    const text = explainConnection(s, { step: 'same-priority', from: 'shop/web', to: 'shop/db' });
    expect(text.split('\n')).toEqual([
      'step 3 same-priority: policies in force: cnp/sensitive, cnp/default, cnp/other',
      'shop/web -> shop/db 5432/TCP: blocked',
      '  egress of shop/web: no NetworkPolicy isolates shop/web for egress -> default: allowed',
      '  ingress of shop/db: Admin cnp/sensitive ingress rule 0 (pass-db) Pass -> no NetworkPolicy isolates shop/db for ingress -> Baseline cnp/default ingress rule 0 Deny (the order of cnp/default, cnp/other is undefined upstream: same tier and priority)',
      '  the NetworkPolicy tier alone: egress not isolated; ingress not isolated',
      '  note: the verdict depends on the order of cnp/default, cnp/other: same tier and priority, which upstream leaves undefined',
    ]);
  });

  it('resolves {{ip ns/pod}} in networks peers once the addresses are known, and leaves the cell undecided before', () => {
    const t = load(`name: cidr
${APPS}
policies:
  - apiVersion: policy.networking.k8s.io/v1alpha2
    kind: ClusterNetworkPolicy
    metadata: {name: no-db}
    spec:
      tier: Admin
      priority: 1
      subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: web}}}}
      egress:
        - {action: Deny, to: [{networks: ["{{ip shop/db}}/32", "{{ip shop/web}}/32"]}]}
steps:
  - {name: s, policies: [cnp/no-db], expect: computed}
`);
    const unknown = expectStep(t, t.steps[0]!).cells.find((c) => c.cell.from === 'shop/web')!;
    expect(unknown.computed).toBeNull();
    const ips = new Map([
      ['shop/web', '10.0.0.1'],
      ['shop/db', '10.0.0.2'],
    ]);
    const known = expectStep(t, t.steps[0]!, ips).cells.find((c) => c.cell.from === 'shop/web')!;
    expect(known).toMatchObject({ computed: false, chain: { egress: 'Admin cnp/no-db egress rule 0 Deny' } });
    expect(() => load(t.file ? readFileSync(t.file, 'utf8').replace('{{ip shop/db}}', '{{ip shop/dbx}}') : '')).toThrow(
      /\/policies\/0 \(line \d+\): cnp\/no-db \/spec\/egress\/0\/to\/0\/networks\/0: \{\{ip shop\/dbx\}\} names no pod of this scenario/,
    );
  });

  it('refuses what the API server refuses, naming the file, the field and its line, and accepts what it accepts', () => {
    const bad = SCENARIO.replace(
      'priority: 10\n      subject: {namespaces: {}}\n      ingress:\n        - {name: pass-db',
      'priority: 1001\n      subject: {namespaces: {}}\n      ingress:\n        - {name: pass-db',
    ).replace('action: Deny', 'action: Allow');
    expect(() => load(bad)).toThrow(
      /cnp\.yaml: invalid scenario:\n {2}\/policies\/0\/spec\/priority \(line 11\): Invalid value: 1001: spec\.priority in body should be less than or equal to 1000/,
    );
    expect(() => load(bad)).toThrow(
      /\/policies\/1\/spec\/ingress\/0\/action \(line 24\): Unsupported value: "Allow": supported values: "Accept", "Deny", "Pass"/,
    );
    // networks is an egress peer only: the CRD has no such ingress field.
    const ingressNetworks = SCENARIO.replace('[{name: pass-db, action: Pass, from: [{namespaces: {}}]}]', '').replace(
      '- {name: pass-db, action: Pass, from: [{namespaces: {}}]}',
      '- {action: Pass, from: [{networks: [10.0.0.0/8]}]}',
    );
    expect(() => load(ingressNetworks)).toThrow(
      /\/policies\/0\/spec\/ingress\/0\/from\/0\/networks \(line 14\): unknown field "spec\.ingress\[0\]\.from\[0\]\.networks"/,
    );
    // Each of the upstream fixtures of the three kinds is accepted (the API server takes them).
    const anp = {
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'AdminNetworkPolicy',
      metadata: { name: 'a' },
      spec: { priority: 5, subject: { namespaces: {} }, ingress: [{ action: 'Allow', from: [{ namespaces: {} }] }] },
    };
    expect('policy' in validateClusterPolicy(anp)).toBe(true);
  });
});

describe('admin-tier policies in manifests and step manifests', () => {
  const MANIFESTS = `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: x, ports: [{name: http, containerPort: 8080}]}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: shop}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: x, ports: [{name: pg, containerPort: 5432}]}]}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default}
spec:
  subject: {namespaces: {}}
  ingress: [{action: Deny, from: [{namespaces: {}}]}]
`;

  it('reads them (no longer ignored), with the other objects', () => {
    const set = readManifestSet([{ file: 'app.yaml', text: MANIFESTS }]);
    expect(set.clusterPolicies.map((c) => [c.policy.id, c.policy.tier, c.origin])).toEqual([['banp/default', 'Baseline', 'app.yaml: document 4 (line 23)']]);
    expect([...set.ignored]).toEqual([]);
  });

  it('refuses an invalid one with the file, the document, the kind and name, the field and its line', () => {
    const bad = MANIFESTS.replace('metadata: {name: default}', 'metadata: {name: other}');
    expect(() => readManifestSet([{ file: 'app.yaml', text: bad }])).toThrow(
      /^app\.yaml: document 4 \(line 23\): BaselineAdminNetworkPolicy other: \/ \(line 23\): Invalid value: "object": Only one baseline admin network policy with metadata\.name="default" can be created in the cluster/,
    );
  });

  it('puts them in force from manifests, and a step applies and deletes them like NetworkPolicies', () => {
    const s = load(
      `name: m
manifests: [app.yaml]
steps:
  - {name: as-written, expect: computed}
  - {name: allow, manifests: {apply: [allow.yaml]}, expect: computed}
  - {name: deleted, manifests: {delete: [allow.yaml, banp.yaml]}, expect: computed}
`,
      {
        'app.yaml': MANIFESTS,
        'banp.yaml': MANIFESTS.split('---\n')[3]!,
        'allow.yaml': `apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: web-to-db}
spec:
  tier: Admin
  priority: 3
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: db}}}}
  ingress: [{action: Accept, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: web}}}}]}]
`,
      },
    );
    expect(s.steps.map((st) => (st.clusterPolicies ?? []).map((p) => p.id))).toEqual([['banp/default'], ['banp/default', 'cnp/web-to-db'], []]);
    const webToDb = (i: number) => expectStep(s, s.steps[i]!).cells.find((c) => c.cell.from === 'shop/web' && c.cell.to === 'shop/db')!.computed;
    expect([webToDb(0), webToDb(1), webToDb(2)]).toEqual([false, true, true]);
    expect(s.manifests![0]).toContain('1 admin-tier policy (banp/default)');
  });
});

describe('the chain in the live UI', () => {
  it('publishes each side’s chain as the cell’s reasons', () => {
    const stars = loadScenario('stars');
    const plan = planApps(stars, { probe: ['probe'], collector: ['collector'] }, { isolated: true }, () => '/dev/null');
    const located: Located[] = plan.map((app) => ({ app, base: `http://${app.pod.name}.${app.pod.namespace}:${app.port}` }));
    const live = new LiveExpectations({ ...collectorNaming(located)!, base: 'http://127.0.0.1:1' }, () => {});
    const deny = validateClusterPolicy({
      apiVersion: 'policy.networking.k8s.io/v1alpha2',
      kind: 'ClusterNetworkPolicy',
      metadata: { name: 'deny-all' },
      spec: { tier: 'Admin', priority: 1, subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] },
    });
    if (!('policy' in deny)) throw new Error('invalid');
    const step = { ...stars.steps[0]!, intended: null, clusterPolicies: [deny.policy] };
    live.started('stars', expectStep(stars, step), stars.steps.length, new Map());
    const doc = live.last as PublishedStep;
    expect(doc.step.policies).toContain('cnp/deny-all');
    const fb = doc.cells.find((c) => c.from === 'frontend' && c.to === 'backend')!;
    expect(fb).toMatchObject({ expected: false });
    expect(fb.reasons).toEqual([
      'egress of stars/frontend: no NetworkPolicy isolates stars/frontend for egress -> default: allowed',
      'ingress of stars/backend: Admin cnp/deny-all ingress rule 0 Deny',
    ]);
    return live.flush();
  });
});

describe('scenario run with admin-tier policies', () => {
  it('runs them on packets: only cells to externals under a nodes or domainNames rule are not run, with the rule named', () => {
    const s = load(`name: cnp-ext
${APPS}
externals:
  - {name: internet, address: 203.0.113.10}
policies:
  - apiVersion: policy.networking.k8s.io/v1alpha2
    kind: ClusterNetworkPolicy
    metadata: {name: names}
    spec:
      tier: Admin
      priority: 5
      subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: web}}}}
      egress:
        - {action: Accept, to: [{domainNames: [example.com]}]}
        - {action: Deny, to: [{networks: [0.0.0.0/0]}]}
steps:
  - name: one
    policies: [cnp/names]
    expect: computed
`);
    const exp = expectStep(s, s.steps[0]!);
    const notRun = notRunCells(exp, true);
    const webOut = exp.cells.filter((c) => c.cell.from === 'shop/web' && c.cell.to === 'external:internet');
    expect(webOut.length).toBeGreaterThan(0);
    for (const c of webOut)
      expect(notRun.get(c.cell.key)).toBe(
        'not run: Admin cnp/names egress rule 0 (domainNames peers) not enforced by this orchestrator: nodes and domainNames peers match nothing here (no node model, no DNS), so this cell to an external cannot be judged',
      );
    // Pod to pod: no node or domain name is a pod, so the rule cannot change these cells; they run.
    expect(exp.cells.filter((c) => c.cell.to !== 'external:internet' && notRun.has(c.cell.key))).toEqual([]);
    // Not a subject: its cells to the external run.
    expect(exp.cells.filter((c) => c.cell.from === 'shop/db' && notRun.has(c.cell.key))).toEqual([]);
  });
});
