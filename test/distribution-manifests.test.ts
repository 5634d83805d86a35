// deploy/kubernetes: every object validates offline against the Kubernetes JSON schemas shipped in
// the kubernetes-models package, every image is pinned, every container is locked down, and the
// demo has the shape of the Calico stars demo (namespaces, ports, NodePort 30002, five policy steps).
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Namespace, Service, ConfigMap } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { ROOT } from './helpers/process.ts';

const DIR = join(ROOT, 'deploy', 'kubernetes');

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

const files = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort();
const objects: { file: string; obj: Obj }[] = files.flatMap((file) =>
  parseAllDocuments(readFileSync(join(DIR, file), 'utf8')).map((d) => {
    if (d.errors.length) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
    return { file, obj: d.toJS() as Obj };
  }),
);

const MODELS: Record<string, new (o: never) => { validate: () => void }> = {
  'v1/Namespace': Namespace,
  'v1/Service': Service,
  'v1/ConfigMap': ConfigMap,
  'apps/v1/Deployment': Deployment,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
};

interface Container {
  name: string;
  image: string;
  args?: string[];
  securityContext?: Record<string, unknown>;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  readinessProbe?: { httpGet?: { path: string } };
  livenessProbe?: { httpGet?: { path: string } };
  ports?: { containerPort: number }[];
}
interface PodSpec {
  securityContext?: Record<string, unknown>;
  containers: Container[];
  volumes?: { configMap?: { name: string } }[];
}
const deployments = objects.filter((o) => o.obj.kind === 'Deployment').map((o) => o.obj as Obj & { spec: { template: { spec: PodSpec } } });
const byName = (kind: string, name: string, ns: string): Obj | undefined =>
  objects.map((o) => o.obj).find((o) => o.kind === kind && o.metadata.name === name && o.metadata.namespace === ns);

describe('Kubernetes manifests', () => {
  it('validate against the Kubernetes schemas (kubernetes-models)', () => {
    expect(objects.length).toBeGreaterThan(10);
    for (const { file, obj } of objects) {
      const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
      expect(Model, `${file}: unexpected ${obj.apiVersion} ${obj.kind}`).toBeDefined();
      expect(() => new Model!(obj as never).validate(), `${file}: ${obj.kind} ${obj.metadata.name}`).not.toThrow();
    }
  });

  it('the validator does reject a broken object (the check has teeth)', () => {
    const bad = structuredClone(deployments[0]!) as unknown as { spec: { replicas: unknown } };
    bad.spec.replicas = 'one';
    expect(() => new Deployment(bad as never).validate()).toThrow(/replicas/);
  });

  it('pins every image and locks every container down', () => {
    expect(deployments.length).toBe(4);
    for (const d of deployments) {
      const pod = d.spec.template.spec;
      expect(pod.securityContext, d.metadata.name).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      for (const c of pod.containers) {
        const where = `${d.metadata.name}/${c.name}`;
        expect(c.image, where).toMatch(/^[^:@]+(:[\w][\w.-]*|@sha256:[0-9a-f]{64})$/);
        expect(c.image, where).not.toMatch(/:latest$/);
        expect(c.securityContext, where).toMatchObject({
          runAsNonRoot: true,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
          seccompProfile: { type: 'RuntimeDefault' },
        });
        expect((c.securityContext!.capabilities as { add?: unknown }).add, where).toBeUndefined();
        expect(c.resources?.requests?.cpu && c.resources.requests.memory && c.resources.limits?.cpu && c.resources.limits.memory, where).toBeTruthy();
        expect(c.readinessProbe?.httpGet?.path, where).toBe('/healthz');
        expect(c.livenessProbe?.httpGet?.path, where).toBe('/healthz');
      }
    }
  });

  it('is the stars demo: namespaces, agents, ports, UI on NodePort 30002, resources from a ConfigMap', () => {
    for (const ns of ['stars', 'client', 'management-ui'])
      expect(
        objects.find((o) => o.obj.kind === 'Namespace' && o.obj.metadata.name === ns),
        ns,
      ).toBeDefined();
    const expectAgent = (name: string, ns: string, program: string, port: number): Container => {
      const d = byName('Deployment', name, ns) as (typeof deployments)[number] | undefined;
      expect(d, `${ns}/${name}`).toBeDefined();
      const c = d!.spec.template.spec.containers[0]!;
      expect(c.args?.[0]).toBe(program);
      expect(c.args).toContain(`--http-port=${port}`);
      expect(c.ports?.[0]?.containerPort).toBe(port);
      const svc = byName('Service', name, ns) as Obj & { spec: { ports: { port: number; nodePort?: number }[] } };
      expect(svc.spec.ports[0]!.port).toBe(port);
      return c;
    };
    const urls = 'http://frontend.stars:80/status,http://backend.stars:6379/status,http://client.client:9000/status';
    for (const [name, ns, port] of [
      ['frontend', 'stars', 80],
      ['backend', 'stars', 6379],
      ['client', 'client', 9000],
    ] as const) {
      expect(expectAgent(name, ns, 'probe', port).args).toContain(`--urls=${urls}`);
    }
    expect(expectAgent('management-ui', 'management-ui', 'collector', 9001).args).toContain('--resources-file=/config/resources.json');
    const ui = byName('Service', 'management-ui', 'management-ui') as Obj & { spec: { type: string; ports: { nodePort?: number }[] } };
    expect(ui.spec.type).toBe('NodePort');
    expect(ui.spec.ports[0]!.nodePort).toBe(30002);
    const cm = byName('ConfigMap', 'collector-resources', 'management-ui')!;
    const resources = JSON.parse(cm.data!['resources.json']!) as { id: string; url: string }[];
    // The UI draws an edge when a probe's target URL equals a resource URL, character for character.
    expect(resources.map((r) => r.url).join(',')).toBe(urls);
  });

  it('has the five policy steps, one file each', () => {
    const steps = files.filter((f) => f.startsWith('policy-'));
    expect(steps).toEqual([
      'policy-1-default-deny.yaml',
      'policy-2-allow-ui.yaml',
      'policy-3-allow-ui-client.yaml',
      'policy-4-backend-policy.yaml',
      'policy-5-frontend-policy.yaml',
    ]);
    for (const f of steps) for (const o of objects.filter((x) => x.file === f)) expect(o.obj.kind).toBe('NetworkPolicy');
    const np = (name: string, ns: string) => byName('NetworkPolicy', name, ns) as Obj & { spec: { ingress?: { ports?: { port: number }[] }[] } };
    expect(np('default-deny', 'stars').spec.ingress).toBeUndefined();
    expect(np('default-deny', 'client').spec.ingress).toBeUndefined();
    expect(np('backend-policy', 'stars').spec.ingress![0]!.ports![0]!.port).toBe(6379);
    expect(np('frontend-policy', 'stars').spec.ingress![0]!.ports![0]!.port).toBe(80);
  });
});
