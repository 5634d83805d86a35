// scenario export: every built-in scenario's manifests validate offline against the Kubernetes
// schemas (kubernetes-models, as test/distribution-manifests.test.ts checks deploy/kubernetes) and
// the admin-tier CRD (shared/netpol/crd/, as the API server checks it); what the pods run, how
// the steps are laid out, the labels cleanup selects on; the command's files and its bad input.
// `kubectl apply --dry-run=client` needs an API server for discovery even so: it runs only when
// kubectl reaches one (none here).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ConfigMap, Namespace, Pod, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { checkClusterPolicy, validateClusterPolicy } from '../../../shared/netpol/cluster-policy.ts';
import { substitute } from '../../../shared/netpol/ip-template.ts';
import { BUILTIN } from '../../../scenarios/model/builtin.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { clusterPolicyManifest } from '../../../scenarios/run/kubernetes-cluster-policies.ts';
import { exportScenario, SCENARIO_LABEL, type KubernetesExport } from '../../../scenarios/run/kubernetes-manifests.ts';
import { NODE, runToEnd, stopAll, tempDir } from '../../helpers/process.ts';

afterAll(stopAll);

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
}

const MODELS: Record<string, new (o: never) => { validate: () => void }> = {
  'v1/Namespace': Namespace,
  'v1/Service': Service,
  'v1/ConfigMap': ConfigMap,
  'v1/Pod': Pod,
  'apps/v1/Deployment': Deployment,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
};

/** A documentation address per pod, as run --kubernetes fills in the pods' own. */
const addressOf = (seen: Map<string, string>) => (ref: string) => {
  if (!seen.has(ref)) seen.set(ref, `192.0.2.${seen.size + 1}`);
  return seen.get(ref)!;
};

/** Every object of an export, templates filled with documentation addresses. */
function objects(ex: KubernetesExport): { file: string; obj: Obj }[] {
  return ex.files
    .filter((f) => /\.ya?ml(\.tmpl)?$/.test(f.path))
    .flatMap((f) =>
      parseAllDocuments(f.path.endsWith('.tmpl') ? substitute(f.content, addressOf(new Map()))! : f.content).map((d) => {
        if (d.errors.length) throw new Error(`${f.path}: ${d.errors.map((e) => e.message).join('; ')}`);
        return { file: f.path, obj: d.toJS() as Obj };
      }),
    )
    .filter((o) => o.obj !== null);
}

/** Problems of one object against its schema ('' when none). */
function invalid(obj: Obj): string {
  if (obj.kind === 'ClusterNetworkPolicy') {
    const r = validateClusterPolicy(obj);
    return 'errors' in r ? JSON.stringify(r.errors) : '';
  }
  const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
  if (!Model) return `unexpected ${obj.apiVersion} ${obj.kind}`;
  try {
    new Model(obj as never).validate();
    return '';
  } catch (err) {
    return (err as Error).message;
  }
}

const builtins = Object.keys(BUILTIN).sort();

describe('scenario export', () => {
  it('exports every built-in scenario, and every object validates against the Kubernetes schemas and carries the scenario label', () => {
    expect(builtins.length).toBeGreaterThan(50);
    let count = 0;
    const kinds = new Set<string>();
    for (const name of builtins) {
      const ex = exportScenario(loadScenario(name));
      for (const { file, obj } of objects(ex)) {
        count++;
        kinds.add(obj.kind);
        expect(invalid(obj), `${name} ${file}: ${obj.kind} ${obj.metadata.name}`).toBe('');
        expect(obj.metadata.labels?.[SCENARIO_LABEL], `${name} ${file}: ${obj.kind} ${obj.metadata.name}`).toBe(ex.label);
      }
    }
    expect(count).toBeGreaterThan(1000);
    // No RBAC: nothing in the pods calls the API server.
    expect([...kinds].sort()).toEqual(['ClusterNetworkPolicy', 'ConfigMap', 'Deployment', 'Namespace', 'NetworkPolicy', 'Pod', 'Service']);
  });

  it('the validators do reject a broken object (the check has teeth)', () => {
    const ex = exportScenario(loadScenario('stars'));
    const pod = objects(ex).find((o) => o.obj.kind === 'Pod')!.obj as unknown as { spec: { containers: { ports: unknown }[] } };
    pod.spec.containers[0]!.ports = [{ containerPort: 'eighty' }];
    expect(invalid(pod as unknown as Obj)).toMatch(/containerPort/);
    const cnp = objects(exportScenario(loadScenario(builtins.find((b) => b.startsWith('cnp-conformance/'))!))).find(
      (o) => o.obj.kind === 'ClusterNetworkPolicy',
    )!.obj;
    (cnp.spec as { priority: unknown }).priority = 5000;
    expect(invalid(cnp)).toMatch(/priority/);
  });

  it('writes each admin-tier policy as a ClusterNetworkPolicy that reads back as the same policy', () => {
    let n = 0;
    for (const name of builtins.filter((b) => b.startsWith('cnp-conformance/')))
      for (const st of loadScenario(name).steps)
        for (const p of st.clusterPolicies ?? []) {
          const r = checkClusterPolicy(clusterPolicyManifest(p, { [SCENARIO_LABEL]: 'x' }), { templates: true });
          expect('policy' in r && r.policy, `${name} ${p.id}`).toEqual({ ...p, id: `cnp/${p.name}`, kind: 'ClusterNetworkPolicy' });
          n++;
        }
    expect(n).toBeGreaterThan(20);
  });

  it('stars: a probe pod per model pod with its labels, ports and cluster names; the collector as a Deployment with a Service; a directory per step', () => {
    const ex = exportScenario(loadScenario('stars'), { image: 'registry.example/starmap:test' });
    const all = objects(ex);
    const get = (kind: string, ns: string, name: string) =>
      all.find((o) => o.obj.kind === kind && o.obj.metadata.namespace === ns && o.obj.metadata.name === name)?.obj;
    const frontend = get('Pod', 'stars', 'frontend') as unknown as {
      metadata: { labels: Record<string, string> };
      spec: { hostname: string; subdomain: string; containers: { image: string; args: string[]; ports: unknown[] }[] };
    };
    expect(frontend.metadata.labels).toMatchObject({ role: 'frontend', [SCENARIO_LABEL]: 'stars' });
    expect(frontend.spec).toMatchObject({ hostname: 'frontend', subdomain: 'starmap-pods' });
    const c = frontend.spec.containers[0]!;
    expect(c.image).toBe('registry.example/starmap:test');
    expect(c.args).toEqual([
      'probe',
      '--urls=http://frontend.starmap-pods.stars.svc:80/status,http://backend.starmap-pods.stars.svc:6379/status,http://client.starmap-pods.client.svc:9000/status',
      '--http-address=0.0.0.0',
      '--http-port=80',
      '--http-probe-seconds=1',
      '--timeout-seconds=0.5',
    ]);
    expect(c.ports).toEqual([{ name: 'http', containerPort: 80, protocol: 'TCP' }]);
    expect(get('Service', 'stars', 'starmap-pods')?.spec).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true });
    expect(get('Deployment', 'management-ui', 'management-ui')).toBeDefined();
    expect(get('Service', 'management-ui', 'management-ui')?.spec).toMatchObject({ ports: [{ port: 9001 }] });
    expect(all.find((o) => o.obj.kind === 'Namespace' && o.obj.metadata.name === 'client')!.obj.metadata.labels).toMatchObject({ role: 'client' });
    expect(ex.files.map((f) => f.path).filter((p) => p.startsWith('step-'))).toEqual([
      'step-1/step.yaml',
      'step-2/step.yaml',
      'step-2/policies.yaml',
      'step-3/step.yaml',
      'step-3/policies.yaml',
      'step-4/step.yaml',
      'step-4/policies.yaml',
      'step-5/step.yaml',
      'step-5/policies.yaml',
    ]);
    const step3 = all.filter((o) => o.file === 'step-3/policies.yaml').map((o) => `${o.obj.metadata.namespace}/${o.obj.metadata.name}`);
    expect(step3).toEqual(['stars/default-deny', 'client/default-deny', 'stars/allow-ui', 'client/allow-ui']);
    const observerConfig = all.find((o) => o.obj.kind === 'ConfigMap' && o.obj.metadata.name === 'starmap-observer-resources')!.obj as unknown as {
      data: Record<string, string>;
    };
    const observer = JSON.parse(observerConfig.data['resources.json']!) as { id: string; url: string }[];
    expect(observer.map((r) => r.id)).toEqual(['probe.stars.frontend', 'probe.stars.backend', 'probe.client.client', 'collector.management-ui.management-ui']);
  });

  it('the namespace default is never created nor deleted: matrix-3x3 writes no Namespace for it', () => {
    const ex = exportScenario(loadScenario('matrix-3x3'));
    expect(
      objects(ex)
        .filter((o) => o.obj.kind === 'Namespace')
        .map((o) => o.obj.metadata.name),
    ).toEqual([ex.observerNamespace]);
  });

  it('policies with {{ip ns/pod}} go to needs-addresses.yaml.tmpl, which kubectl apply -f DIR skips', () => {
    const ex = exportScenario(loadScenario('netpol-3x3'));
    const tmpl = ex.files.filter((f) => f.path.endsWith('needs-addresses.yaml.tmpl'));
    expect(tmpl.length).toBeGreaterThan(0);
    for (const f of tmpl) expect(f.content).toMatch(/\{\{\s*ip [a-z0-9-]+\/[a-z0-9-]+\s*\}\}/);
    expect(ex.files.filter((f) => f.path.endsWith('.yaml')).some((f) => f.content.includes('{{'))).toBe(false);
  });

  it('the command writes the files, prints them with --to -, and says bad input with exit 2', async () => {
    const dir = join(tempDir('starmap-export-'), 'out');
    const r = await runToEnd(NODE, ['scenarios/main.ts', 'export', 'stars', '--to', dir]);
    expect(r.code, r.output).toBe(0);
    expect(readdirSync(dir).sort()).toEqual([
      '00-namespaces.yaml',
      '01-pods.yaml',
      '02-observer.yaml',
      'README.md',
      'step-1',
      'step-2',
      'step-3',
      'step-4',
      'step-5',
    ]);
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toContain('kubectl apply -f step-2/');
    // Again into the same directory: an earlier export is replaced.
    expect((await runToEnd(NODE, ['scenarios/main.ts', 'export', 'stars', '--to', dir])).code).toBe(0);
    const printed = await runToEnd(NODE, ['scenarios/main.ts', 'export', 'stars', '--to', '-']);
    expect(printed.code).toBe(0);
    expect(printed.output).toContain('# ==> step-2/policies.yaml <==');
    const other = tempDir('starmap-export-');
    writeFileSync(join(other, 'mine.txt'), 'not an export');
    const refused = await runToEnd(NODE, ['scenarios/main.ts', 'export', 'stars', '--to', other]);
    expect(refused.code).toBe(2);
    expect(refused.output).toMatch(/scenario: error: --to .*not empty/);
    const bad = join(other, 'bad.yaml');
    writeFileSync(bad, 'name: Bad_Name\napps:\n  - { name: a, kind: probe, probes: [a] }\nsteps:\n  - { name: one, policies: [], expect: computed }\n');
    const r2 = await runToEnd(NODE, ['scenarios/main.ts', 'export', bad, '--to', join(other, 'x')]);
    expect(r2.code, r2.output).toBe(2);
    expect(r2.output).toMatch(/bad\.yaml/);
    expect(existsSync(join(other, 'x'))).toBe(false);
  });

  // kubectl's client-side dry run still asks an API server for its discovery documents.
  const server = spawnSync('kubectl', ['get', '--raw', '/version', '--request-timeout=3s'], { encoding: 'utf8' });
  it.skipIf(server.status !== 0)(
    `kubectl apply --dry-run=client accepts every file (${server.error ? 'not run: kubectl missing' : server.status !== 0 ? 'not run: kubectl reaches no API server' : 'kubectl and a server'})`,
    () => {
      const dir = tempDir('starmap-export-');
      const ex = exportScenario(loadScenario('stars'));
      for (const f of ex.files) {
        mkdirSync(join(dir, f.path, '..'), { recursive: true });
        writeFileSync(join(dir, f.path), f.content);
      }
      for (const sub of ['.', 'step-2']) {
        const r = spawnSync('kubectl', ['apply', '--dry-run=client', '-f', join(dir, sub)], { encoding: 'utf8' });
        expect(r.status, r.stderr).toBe(0);
      }
    },
  );
});
