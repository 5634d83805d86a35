// Kubernetes manifests as the scenario model (scenarios/model/): the pods each kind makes (labels
// from the pod template, named ports of every container and sidecar, replicas), namespaces,
// what is ignored and what is noted, errors that name the file, document, kind, field and line,
// the bounds, reading directories, and the same verdicts whether pods come from `apps:` or from
// the workloads that describe them.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ruleCoverage } from '../../../scenarios/model/coverage.ts';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { manifestPods, manifestSummary, readManifestSet, type ManifestSet } from '../../../scenarios/model/manifests.ts';
import { readManifestSources } from '../../../scenarios/model/sources.ts';
import { MAX_CELLS, MAX_PODS, type ResolvedScenario } from '../../../scenarios/model/resolve.ts';
import { removeTempDirs, tempDir } from '../../helpers/process.ts';

afterAll(removeTempDirs);

const read = (text: string, opts: { namespace?: string } = {}): ManifestSet => readManifestSet([{ file: 'm.yaml', text }], opts);
const pods = (text: string, replicas = false) => manifestPods(read(text), { replicas, maxPods: MAX_PODS, maxCells: MAX_CELLS });
const LIMITS = { maxPods: MAX_PODS, maxCells: MAX_CELLS };

/** A pod spec with one container serving `ports` (YAML flow). */
const podSpec = (ports = '[{ name: http, containerPort: 8080 }]') => `{ containers: [{ name: c, image: x, ports: ${ports} }] }`;
const template = (labels = '{ app: web }', ports?: string) => `{ metadata: { labels: ${labels} }, spec: ${podSpec(ports)} }`;

describe('the kinds that make pods', () => {
  it.each([
    ['Pod', 'v1', `metadata: { name: w, labels: { app: web } }\nspec: ${podSpec()}`, 1],
    ['Deployment', 'apps/v1', `metadata: { name: w }\nspec: { replicas: 3, template: ${template()} }`, 3],
    ['ReplicaSet', 'apps/v1', `metadata: { name: w }\nspec: { replicas: 2, template: ${template()} }`, 2],
    ['StatefulSet', 'apps/v1', `metadata: { name: w }\nspec: { serviceName: w, replicas: 2, template: ${template()} }`, 2],
    ['DaemonSet', 'apps/v1', `metadata: { name: w }\nspec: { template: ${template()} }`, 1],
    ['Job', 'batch/v1', `metadata: { name: w }\nspec: { parallelism: 2, template: ${template()} }`, 2],
    ['CronJob', 'batch/v1', `metadata: { name: w }\nspec: { schedule: "* * * * *", jobTemplate: { spec: { parallelism: 4, template: ${template()} } } }`, 4],
    ['ReplicationController', 'v1', `metadata: { name: w }\nspec: { replicas: 2, template: ${template()} }`, 2],
  ])('%s: labels from the pod template, its named ports, one pod (or each replica with replicas)', (kind, apiVersion, body, replicas) => {
    const text = `apiVersion: ${apiVersion}\nkind: ${kind}\n${body}\n`;
    const set = read(text);
    expect(set.workloads).toMatchObject([{ kind, namespace: 'default', name: 'w', labels: { app: 'web' }, replicas }]);
    expect(pods(text)).toEqual([
      {
        id: 'default/w',
        namespace: 'default',
        name: 'w',
        kind: 'probe',
        short: 'w',
        labels: { app: 'web' },
        apiPort: 9000,
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        workload: `${kind} default/w`,
      },
    ]);
    expect(pods(text, true).map((p) => p.id)).toEqual(Array.from({ length: replicas }, (_, i) => `default/w-${i}`));
  });

  it('ports of every container and of sidecar init containers (restartPolicy: Always), protocol TCP by default, each listener once', () => {
    const text = `apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: shop }
spec:
  template:
    metadata: { labels: { app: web, tier: front } }
    spec:
      initContainers:
        - { name: migrate, image: x, ports: [{ name: ignored, containerPort: 7000 }] }
        - { name: proxy, image: x, restartPolicy: Always, ports: [{ name: proxy, containerPort: 15001 }] }
      containers:
        - { name: web, image: x, ports: [{ name: http, containerPort: 8080 }, { name: dns, containerPort: 53, protocol: UDP }] }
        - { name: metrics, image: x, ports: [{ containerPort: 9000 }, { name: again, containerPort: 8080 }] }
        - { name: worker, image: x }
`;
    const [pod] = pods(text);
    expect(pod!.ports).toEqual([
      { name: 'http', port: 8080, protocol: 'TCP' },
      { name: 'dns', port: 53, protocol: 'UDP' },
      { name: '', port: 9000, protocol: 'TCP' },
      { name: 'proxy', port: 15001, protocol: 'TCP' },
    ]);
    // 9000 is a declared port: the probe's own API moves out of its way.
    expect(pod!.apiPort).toBe(9001);
    expect(pod!.labels).toEqual({ app: 'web', tier: 'front' });
    expect(pod!.short).toBe('shop/web');
  });

  it('the namespace from metadata, else --namespace, else default; Namespace objects give labels, every namespace its name label', () => {
    const text = `apiVersion: v1
kind: Namespace
metadata: { name: shop, labels: { team: a } }
---
apiVersion: v1
kind: Pod
metadata: { name: p, namespace: shop }
spec: ${podSpec()}
---
apiVersion: v1
kind: Pod
metadata: { name: q }
spec: ${podSpec()}
`;
    expect(pods(text).map((p) => p.id)).toEqual(['shop/p', 'default/q']);
    const set = read(text, { namespace: 'other' });
    expect(manifestPods(set, LIMITS).map((p) => p.id)).toEqual(['shop/p', 'other/q']);
    expect(Object.fromEntries(set.namespaces)).toEqual({ shop: { team: 'a', 'kubernetes.io/metadata.name': 'shop' } });
  });

  it('reads helm output (# Source: lines, empty documents), kubectl List output and JSON', () => {
    const helm = `---\n# Source: shop/templates/web.yaml\napiVersion: v1\nkind: Pod\nmetadata: { name: a }\nspec: ${podSpec()}\n---\n# Source: shop/templates/empty.yaml\n---\n`;
    const list = `apiVersion: v1\nkind: List\nitems:\n  - { apiVersion: v1, kind: Pod, metadata: { name: b, namespace: x }, spec: ${podSpec()} }\n  - { apiVersion: v1, kind: ConfigMap, metadata: { name: c } }\nmetadata: { resourceVersion: "" }\n`;
    const json = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'c' },
      spec: { containers: [{ name: 'c', ports: [{ containerPort: 80 }] }] },
    });
    const set = readManifestSet([
      { file: 'helm.yaml', text: helm },
      { file: 'list.yaml', text: list },
      { file: 'c.json', text: json },
    ]);
    expect(manifestPods(set, LIMITS).map((p) => p.id)).toEqual(['default/a', 'x/b', 'default/c']);
    expect(set.ignored).toEqual(new Map([['ConfigMap', 1]]));
  });

  it('everything else is ignored and counted; a known kind from another API group is named with its apiVersion', () => {
    const text = [
      'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: a }',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: b }',
      'apiVersion: v1\nkind: Secret\nmetadata: { name: s }',
      'apiVersion: example.com/v1\nkind: Deployment\nmetadata: { name: d }\nspec: { anything: 1 }',
      'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: { name: x.example.com }',
      `apiVersion: v1\nkind: Pod\nmetadata: { name: p }\nspec: ${podSpec()}`,
    ].join('\n---\n');
    const set = read(text);
    expect(manifestSummary(set, manifestPods(set, LIMITS))).toEqual([
      'manifests: 1 file: 1 workload (1 Pod) making 1 pod, 0 NetworkPolicies, 0 Services, 1 namespace',
      'ignored 5 objects: 2 ConfigMap, 1 CustomResourceDefinition, 1 Deployment (example.com/v1), 1 Secret',
    ]);
  });

  it('says plainly what changes what a policy means: hostNetwork (left out), multus networks, no container ports, replicas 0', () => {
    const text = [
      `apiVersion: apps/v1\nkind: DaemonSet\nmetadata: { name: agent, namespace: kube-system }\nspec: { template: { metadata: { labels: { app: agent } }, spec: { hostNetwork: true, containers: [{ name: a, ports: [{ containerPort: 9100 }] }] } } }`,
      `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: router }\nspec: { template: { metadata: { labels: { app: r }, annotations: { k8s.v1.cni.cncf.io/networks: macvlan-conf } }, spec: ${podSpec()} } }`,
      `apiVersion: batch/v1\nkind: Job\nmetadata: { name: batch }\nspec: { template: { spec: { containers: [{ name: j }] } } }`,
      `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: off }\nspec: { replicas: 0, template: ${template()} }`,
    ].join('\n---\n');
    const set = read(text);
    expect(set.notes).toEqual([
      'm.yaml: document 1 (line 1): DaemonSet kube-system/agent: hostNetwork: true: NetworkPolicy does not apply to its pods; left out of the model',
      'm.yaml: document 2 (line 6): Deployment default/router: has multus networks (macvlan-conf): NetworkPolicy covers only its cluster network; the others are not modelled',
      'm.yaml: document 3 (line 11): Job default/batch: declares no container ports: nothing probes it (it still probes the others)',
      'm.yaml: document 4 (line 16): Deployment default/off: replicas: 0: it makes no pods',
    ]);
    expect(manifestPods(set, LIMITS).map((p) => p.id)).toEqual(['default/router', 'default/batch']);
  });

  it('a Service whose targetPort name the pods it selects do not declare is noted', () => {
    const text = `apiVersion: v1\nkind: Pod\nmetadata: { name: web, labels: { app: web } }\nspec: ${podSpec()}\n---\napiVersion: v1\nkind: Service\nmetadata: { name: web }\nspec: { selector: { app: web }, ports: [{ port: 80, targetPort: http }, { port: 81, targetPort: htp }] }\n`;
    expect(read(text).notes).toEqual(['m.yaml: document 2 (line 6): Service default/web port 81: targetPort "htp" is not a TCP port name of Pod web']);
  });
});

describe('bad manifests get an answer naming the file, the document, the kind, the field and the line', () => {
  it.each([
    [
      `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: c }\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: { name: web, namespace: shop }\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          ports:\n            - containerPort: 99999\n`,
      'm.yaml: document 2 (line 5): Deployment shop/web: /spec/template/spec/containers/0/ports/0/containerPort (line 14): Invalid value: 99999: must be between 1 and 65535, inclusive',
    ],
    [
      `apiVersion: v1\nkind: Pod\nmetadata: { name: p, labels: { "bad key!": v } }\nspec: ${podSpec()}\n`,
      /^m\.yaml: document 1 \(line 1\): Pod default\/p: \/metadata\/labels\/bad key! \(line 3\): label key: name part must consist/,
    ],
    [
      `apiVersion: v1\nkind: Pod\nmetadata: { name: p }\nspec: ${podSpec('[{ containerPort: 80, protocol: tcp }]')}\n`,
      /\/spec\/containers\/0\/ports\/0\/protocol \(line 4\): Unsupported value: "tcp"/,
    ],
    [
      `apiVersion: v1\nkind: Pod\nmetadata: { name: p }\nspec: ${podSpec('[{ name: Http, containerPort: 80 }]')}\n`,
      /\/spec\/containers\/0\/ports\/0\/name \(line 4\): Invalid value: "Http"/,
    ],
    [
      `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: w }\nspec: { replicas: many, template: ${template()} }\n`,
      /Deployment default\/w: \/spec\/replicas \(line 4\): Invalid value: "many"/,
    ],
    [
      `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: w }\nspec: {}\n`,
      /Deployment default\/w: \/spec\/template \(line 4\): Required value: a pod template/,
    ],
    [
      `apiVersion: v1\nkind: Pod\nmetadata: { name: My.Pod }\nspec: ${podSpec()}\n`,
      /Pod default\/My\.Pod: \/metadata\/name \(line 3\): Invalid value: "My.Pod"/,
    ],
    [`kind: Pod\nmetadata: { name: p }\n`, /^m\.yaml: document 1 \(line 1\): Pod: \/apiVersion \(line 1\): Required value: apiVersion/],
    [
      `apiVersion: v1\nkind: Pod\nmetadata: { name: p }\nspec: ${podSpec()}\n---\napiVersion: v1\nkind: Pod\nmetadata: { name: p }\nspec: ${podSpec()}\n`,
      /document 2 \(line 6\): Pod default\/p: \/metadata\/name \(line 8\): Duplicate value: Pod default\/p is also m\.yaml: document 1/,
    ],
    [
      `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: { name: n }\nspec:\n  podSelector: { matchExpressions: [{ key: a, operator: Like }] }\n`,
      /^m\.yaml: document 1 \(line 1\): NetworkPolicy default\/n: \/spec\/podSelector\/matchExpressions\/0\/operator \(line 5\): Invalid value: "Like"/,
    ],
    [
      `apiVersion: v1\nkind: Namespace\nmetadata: { name: a, labels: { kubernetes.io/metadata.name: b } }\n`,
      /Namespace a: .*kubernetes\.io\/metadata\.name is always the namespace's name/,
    ],
    [`a: [1, 2\n`, /^m\.yaml: document 1 \(line 1\): not valid YAML\/JSON/],
    ['name: s\nmanifests: [x]\nsteps: [{ name: a }]\n', /^m\.yaml: document 1 \(line 1\): a scenario file \(top-level steps\), not a Kubernetes manifest/],
    [`- just\n- a list\n`, /^m\.yaml: document 1 \(line 1\): not a Kubernetes object/],
    [`apiVersion: v1\nkind: List\nitems: { a: 1 }\n`, /a List needs an items array/],
  ])('%#', (text, message) => {
    expect(() => read(text)).toThrow(message);
  });

  it('every problem at once, with the count', () => {
    const text = `apiVersion: v1\nkind: Pod\nmetadata: { name: a }\nspec: { containers: [] }\n---\napiVersion: v1\nkind: Pod\nmetadata: { name: b }\nspec: ${podSpec('[{ containerPort: 0 }]')}\n`;
    expect(() => read(text)).toThrow(
      /^2 problems:\n {2}m\.yaml: document 1 \(line 1\): Pod default\/a: \/spec\/containers \(line 4\): Required value: at least one container\n {2}m\.yaml: document 2 \(line 6\): Pod default\/b: \/spec\/containers\/0\/ports\/0\/containerPort \(line 9\)/,
    );
  });

  it('aliases are bounded as in scenario files', () => {
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      ...Array.from({ length: 8 }, (_, i) => `${'bcdefghi'[i]}: &${'bcdefghi'[i]} [${Array(10).fill(`*${'abcdefgh'[i]}`).join(', ')}]`),
    ].join('\n');
    expect(() => read(bomb)).toThrow(/^m\.yaml: document 1 \(line 1\): not valid YAML\/JSON: its aliases \(\*name\) expand more than 100 times/);
  });

  it('too many pods or cells is said before anything is made, with the count and the limit', () => {
    const huge = `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: w }\nspec: { replicas: 1000000000, template: ${template()} }\n`;
    expect(pods(huge)).toHaveLength(1);
    expect(() => pods(huge, true)).toThrow(
      'the manifests make 1000000000 pods (as many as each manifest asks (--replicas)); at most 100: each pod is a process on this machine',
    );
    // 90 pods with 2 ports: 90 * 2 * 89 = 16020 cells.
    const many = Array.from(
      { length: 90 },
      (_, i) => `apiVersion: v1\nkind: Pod\nmetadata: { name: p${i} }\nspec: ${podSpec('[{ containerPort: 80 }, { containerPort: 81 }]')}`,
    ).join('\n---\n');
    expect(() => pods(many)).toThrow(
      "the manifests make 16020 cells (90 pods probing every other pod's ports); at most 10000: each is a check every probe interval",
    );
  });
});

describe('reading manifests from a directory', () => {
  it('recursively, *.yaml, *.yml and *.json in name order, hidden entries and other files skipped, each directory once', () => {
    const dir = tempDir('starmap-manifests-');
    mkdirSync(join(dir, 'b', 'c'), { recursive: true });
    mkdirSync(join(dir, '.git'));
    writeFileSync(join(dir, 'z.yml'), 'a: 1\n');
    writeFileSync(join(dir, 'b', 'a.yaml'), 'a: 2\n');
    writeFileSync(join(dir, 'b', 'c', 'x.json'), '{}');
    writeFileSync(join(dir, 'b', 'README.md'), '# no');
    writeFileSync(join(dir, '.git', 'x.yaml'), 'a: 3\n');
    symlinkSync(dir, join(dir, 'b', 'loop'));
    expect(readManifestSources(dir, 'chart').map((s) => s.file)).toEqual(['chart/b/a.yaml', 'chart/b/c/x.json', 'chart/z.yml']);
    const empty = tempDir('starmap-manifests-');
    expect(() => readManifestSources(empty, 'empty')).toThrow('empty: no manifest files (*.yaml, *.yml, *.json) in this directory');
    expect(() => readManifestSources(join(empty, 'nope'), 'nope')).toThrow('nope: cannot read: ENOENT');
  });
});

/** Computed verdict of every cell of the first step, by cell key. */
function computed(s: ResolvedScenario): Record<string, boolean | null> {
  return Object.fromEntries(expectStep(s, s.steps[0]!).cells.map((c) => [c.cell.key, c.computed]));
}

describe('the same policies, the same cells, whether pods come from apps: or from workloads', () => {
  const POLICIES = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: { name: db-from-api, namespace: data }
spec:
  podSelector: { matchLabels: { app: db } }
  ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: shop } }, podSelector: { matchLabels: { app: api } } }], ports: [{ port: pg }] }]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: { name: api-egress, namespace: shop }
spec:
  podSelector: { matchLabels: { app: api } }
  policyTypes: [Egress]
  egress: [{ to: [{ namespaceSelector: {} }], ports: [{ port: 5432 }, { port: 53, protocol: UDP }] }]
`;
  const WORKLOADS = `apiVersion: v1
kind: Namespace
metadata: { name: shop, labels: { team: shop } }
---
apiVersion: apps/v1
kind: Deployment
metadata: { name: api, namespace: shop }
spec: { replicas: 3, template: { metadata: { labels: { app: api } }, spec: { containers: [{ name: api, ports: [{ name: http, containerPort: 8080 }] }] } } }
---
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: db, namespace: data }
spec: { template: { metadata: { labels: { app: db } }, spec: { containers: [{ name: db, ports: [{ name: pg, containerPort: 5432 }, { name: metrics, containerPort: 9187 }] }] } } }
---
apiVersion: apps/v1
kind: DaemonSet
metadata: { name: dns, namespace: kube-system }
spec: { template: { metadata: { labels: { app: dns } }, spec: { containers: [{ name: dns, ports: [{ name: dns, containerPort: 53, protocol: UDP }] }] } } }
`;
  const APPS = `apps:
  - { name: api, namespace: shop, kind: probe, labels: { app: api }, port: 9000, ports: [{ name: http, port: 8080 }], probes: [data/db, kube-system/dns] }
  - { name: db, namespace: data, kind: probe, labels: { app: db }, port: 9000, ports: [{ name: pg, port: 5432 }, { name: metrics, port: 9187 }], probes: [shop/api, kube-system/dns] }
  - { name: dns, namespace: kube-system, kind: probe, labels: { app: dns }, port: 9000, ports: [{ name: dns, port: 53, protocol: UDP }], probes: [shop/api, data/db] }
namespaces: { shop: { labels: { team: shop } } }
`;

  it('every cell computes the same', () => {
    const dir = tempDir('starmap-manifests-');
    writeFileSync(join(dir, 'policies.yaml'), POLICIES);
    writeFileSync(join(dir, 'workloads.yaml'), WORKLOADS);
    writeFileSync(
      join(dir, 'apps.yaml'),
      `name: apps\n${APPS}policies: [{ file: policies.yaml }]\nsteps: [{ name: s, policies: [data/db-from-api, shop/api-egress] }]\n`,
    );
    writeFileSync(join(dir, 'from-manifests.yaml'), 'name: from-manifests\nmanifests: [workloads.yaml, policies.yaml]\nsteps: [{ name: s }]\n');
    const fromApps = loadScenario(join(dir, 'apps.yaml'));
    const fromManifests = loadScenario(join(dir, 'from-manifests.yaml'));
    expect(fromManifests.cells.map((c) => c.key).sort()).toEqual(fromApps.cells.map((c) => c.key).sort());
    const verdicts = computed(fromManifests);
    expect(verdicts).toEqual(computed(fromApps));
    // And they say what the policies mean: only the api reaches the database's pg port.
    expect(verdicts['shop/api>data/db@5432/TCP']).toBe(true);
    expect(verdicts['kube-system/dns>data/db@5432/TCP']).toBe(false);
    expect(verdicts['shop/api>data/db@9187/TCP']).toBe(false);
    expect(verdicts['shop/api>kube-system/dns@53/UDP']).toBe(true);
    expect(verdicts['data/db>shop/api@8080/TCP']).toBe(true);
    // The three replicas make one pod unless asked.
    expect(loadScenario(join(dir, 'from-manifests.yaml'), { replicas: true }).pods.map((p) => p.id)).toEqual([
      'shop/api-0',
      'shop/api-1',
      'shop/api-2',
      'data/db-0',
      'kube-system/dns-0',
    ]);
  });

  it('the same intents judge the same cells, and the same rules are exercised or dead', () => {
    const dir = tempDir('starmap-manifests-');
    writeFileSync(join(dir, 'policies.yaml'), POLICIES);
    writeFileSync(join(dir, 'workloads.yaml'), WORKLOADS);
    const assert = 'assert: [{ deny: "* -> data/db:pg", except: [app=api] }, { allow: "shop/* -> namespace=kube-system:53/UDP" }]';
    writeFileSync(
      join(dir, 'apps.yaml'),
      `name: apps\n${APPS}policies: [{ file: policies.yaml }]\nsteps: [{ name: s, policies: [data/db-from-api, shop/api-egress], ${assert} }]\n`,
    );
    writeFileSync(join(dir, 'from-manifests.yaml'), `name: from-manifests\nmanifests: [workloads.yaml, policies.yaml]\nsteps: [{ name: s, ${assert} }]\n`);
    const [fromApps, fromManifests] = [loadScenario(join(dir, 'apps.yaml')), loadScenario(join(dir, 'from-manifests.yaml'))];
    expect(fromManifests.steps[0]!.assertions).toEqual(fromApps.steps[0]!.assertions);
    expect(fromApps.steps[0]!.assertions!.map((a) => a.cells)).toEqual([['kube-system/dns>data/db@5432/TCP'], ['shop/api>kube-system/dns@53/UDP']]);
    const coverage = (s: ResolvedScenario) => ruleCoverage(expectStep(s, s.steps[0]!));
    expect(coverage(fromManifests)).toEqual(coverage(fromApps));
    expect(expectStep(fromApps, fromApps.steps[0]!).mistakes).toEqual([]);
  });
});
