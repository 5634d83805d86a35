// `scenario check|explain` pointed at Kubernetes manifests (a directory, a file, stdin), scenario
// files with `manifests:`, steps that apply and delete manifests, and `policies: - file: DIR`,
// through the real command (a child process) where the exit code and the streams matter.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { checkScenario } from '../../../scenarios/cli/check.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { NODE, removeTempDirs, ROOT, tempDir } from '../../helpers/process.ts';

afterAll(removeTempDirs);

function scenario(args: string[], input?: string): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(NODE, ['scenarios/main.ts', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000, ...(input !== undefined ? { input } : {}) });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const SHOP = join(ROOT, 'examples', 'shop');

describe('scenario check on manifests', () => {
  it('a directory: the summary, then the matrix by workload of what the policies compute', () => {
    const r = scenario(['check', 'examples/shop']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.slice(0, 3)).toEqual([
      'manifests: 2 files: 4 workloads (3 Deployment, 1 StatefulSet) making 4 pods, 3 NetworkPolicies, 3 Services, 3 namespaces',
      'Services: shop/web 80→http=8080/TCP, shop/api 8080→http=8080/TCP, shop-data/postgres 5432→postgres=5432/TCP',
      'ignored 5 objects: 2 ConfigMap, 1 Ingress, 1 Secret, 1 ServiceAccount',
    ]);
    expect(r.stdout).toContain('step 1/1 as-written: computed (28 cells)'); // 18 between pods, 10 with the external standing in shop/api's ipBlock
    // Only the api reaches the database's port; the monitoring namespace only its metrics.
    expect(r.stdout).toMatch(/5432\/TCP\ncomputed\n\s+shop-data\/postgres\nshop\/web\s+X\nshop\/api\s+\.\nmonitoring\/prometheus X\n/);
    expect(r.stdout).toMatch(/9187\/TCP\ncomputed\n\s+shop-data\/postgres\nshop\/web\s+X\nshop\/api\s+X\nmonitoring\/prometheus \.\n/);
    expect(r.stdout).toContain('shop: the policies say what every step intends');
  });

  it('a file, and stdin (-) with --namespace for objects that name none, --replicas for every replica', () => {
    const file = scenario(['check', 'examples/shop/rendered.yaml', '--replicas']);
    expect(file.code).toBe(0);
    expect(file.stdout).toContain('making 7 pods');
    expect(file.stdout).toMatch(/shop\/api-2\s/);
    const text = `apiVersion: v1\nkind: Pod\nmetadata: { name: a, labels: { app: a } }\nspec: { containers: [{ name: c, ports: [{ containerPort: 80 }] }] }\n---\napiVersion: v1\nkind: Pod\nmetadata: { name: b }\nspec: { containers: [{ name: c, ports: [{ containerPort: 81 }] }] }\n---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: { name: deny-a }\nspec: { podSelector: { matchLabels: { app: a } } }\n`;
    const r = scenario(['check', '-', '-n', 'team'], text);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    // One port per destination: one table; team/a is isolated by deny-a.
    expect(r.stdout).toMatch(/computed\n\s+team\/a team\/b\nteam\/a -\s+\.\s*\nteam\/b X\s+-\s*\n/);
  });

  it('bad manifests: exit 2, the file, the document, the kind, the field and the line; no pods: said so', () => {
    const dir = tempDir('starmap-mcli-');
    writeFileSync(join(dir, 'a.yaml'), '# Source: x/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: c }\n');
    mkdirSync(join(dir, 'sub'));
    writeFileSync(
      join(dir, 'sub', 'web.yaml'),
      '---\napiVersion: apps/v1\nkind: Deployment\nmetadata: { name: web }\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          ports: [{ containerPort: http }]\n',
    );
    const r = scenario(['check', dir]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `scenario: error: ${dir}/sub/web.yaml: document 1 (line 2): Deployment default/web: /spec/template/spec/containers/0/ports/0/containerPort (line 10): Invalid value: "http": must be between 1 and 65535, inclusive\n`,
    );
    const none = scenario(['check', join(dir, 'a.yaml')]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('make no pods');
    expect(none.stderr).toContain('ignored 1 object: 1 ConfigMap');
  });

  it('too many pods or cells for the machine: said before anything, with the count and the limit (higher for a computed-only check)', () => {
    const text = (n: number) =>
      `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: w }\nspec: { replicas: ${n}, template: { spec: { containers: [{ name: c, ports: [{ containerPort: 80 }] }] } } }\n`;
    const run = scenario(['run', '-', '--replicas', '--isolation', 'off'], text(500));
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(
      'the manifests make 500 pods (as many as each manifest asks (--replicas)); at most 100 for a run on packets: each pod is a process on this machine (scenario check computes up to 1000)',
    );
    // Past the per-cell bound, check summarises by workload (cli/check-scale.ts, test/scenarios/cli/check-scale.test.ts).
    const cells = scenario(['check', '-', '--replicas', '--netns-subnet', '10.213.0.0/20'], text(500));
    expect(cells.stderr).toBe('');
    expect(cells.code).toBe(0);
    expect(cells.stdout).toContain('cells: 249,500 (249,500 allowed, 0 denied)');
    const pods = scenario(['check', '-', '--replicas'], text(30_000));
    expect(pods.code).toBe(2);
    expect(pods.stderr).toContain('the manifests make 30000 pods (as many as each manifest asks (--replicas)); at most 20000 for scenario check of manifests');
  }, 120_000);

  it('explain: why one connection between two workloads is allowed or not', () => {
    const r = scenario(['explain', 'examples/shop', '--step', '1', '--from', 'shop/web', '--to', 'shop-data/postgres:postgres']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('shop/web -> shop-data/postgres 5432/TCP: blocked');
    expect(r.stdout).toContain('isolated by shop-data/default-deny, shop-data/postgres');
  });
});

describe('scenario files with manifests', () => {
  it('manifests: beside apps:, the manifests policies in force from the first step; apps probe workloads by name', () => {
    const dir = tempDir('starmap-mcli-');
    cpSync(SHOP, join(dir, 'chart'), { recursive: true });
    const file = join(dir, 's.yaml');
    writeFileSync(
      file,
      'name: s\nmanifests: [chart/]\napps:\n  - { name: outsider, namespace: elsewhere, kind: probe, probes: [shop/web:http, shop-data/postgres:postgres] }\nsteps:\n  - { name: one }\n  - { name: open, policies: [] }\n',
    );
    const s = loadScenario(file);
    expect(s.pods.map((p) => p.id)).toEqual(['elsewhere/outsider', 'shop/web', 'shop/api', 'shop-data/postgres', 'monitoring/prometheus', 'external:api-e2p0']);
    const at = (step: number, key: string) => expectStep(s, s.steps[step]!).cells.find((c) => c.cell.key === key)?.computed;
    expect(s.steps[0]!.policies.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual(['shop-data/default-deny', 'shop-data/postgres', 'shop/api']);
    expect(at(0, 'elsewhere/outsider>shop-data/postgres@5432/TCP')).toBe(false);
    expect(at(0, 'elsewhere/outsider>shop/web@8080/TCP')).toBe(true);
    expect(at(1, 'elsewhere/outsider>shop-data/postgres@5432/TCP')).toBe(true);
    expect(s.namespaces.find((n) => n.name === 'shop-data')!.labels).toEqual({ team: 'shop', tier: 'data', 'kubernetes.io/metadata.name': 'shop-data' });
  });

  it('a step applies a rollout (new pod-template labels) and new policies: examples/shop-rollout.yaml', () => {
    const r = checkScenario(loadScenario(join(ROOT, 'examples', 'shop-rollout.yaml')));
    expect(r.ok).toBe(true);
    const s = loadScenario(join(ROOT, 'examples', 'shop-rollout.yaml'));
    expect(s.steps[1]!.podLabels['shop/api']).toEqual({ 'app.kubernetes.io/name': 'api-server', 'app.kubernetes.io/part-of': 'shop' });
    expect(s.steps[0]!.podLabels['shop/api']).toEqual({ 'app.kubernetes.io/name': 'api', 'app.kubernetes.io/part-of': 'shop' });
    // Replaced by namespace and name, not added.
    expect(s.steps[2]!.policies).toHaveLength(3);
    expect(s.steps[2]!.policies.find((p) => p.metadata.name === 'api')!.spec.podSelector).toEqual({ matchLabels: { 'app.kubernetes.io/name': 'api-server' } });
  });

  it('a step deletes a policy; deleting a workload, changing its ports, deleting what is not there: refused, saying why', () => {
    const dir = tempDir('starmap-mcli-');
    cpSync(SHOP, join(dir, 'chart'), { recursive: true });
    const rendered = readFileSync(join(SHOP, 'rendered.yaml'), 'utf8').split('\n---\n');
    const pick = (pattern: string) => rendered.find((d) => d.includes(pattern))!;
    writeFileSync(join(dir, 'deny.yaml'), pick('name: default-deny'));
    writeFileSync(join(dir, 'web.yaml'), pick('name: web\n  namespace: shop\n  labels'));
    writeFileSync(
      join(dir, 'new.yaml'),
      pick('name: web\n  namespace: shop\n  labels').replace('name: web\n  namespace: shop', 'name: web2\n  namespace: shop'),
    );
    writeFileSync(join(dir, 'ports.yaml'), pick('name: web\n  namespace: shop\n  labels').replace('containerPort: 8080', 'containerPort: 8081'));
    const file = join(dir, 's.yaml');
    writeFileSync(file, 'name: s\nmanifests: [chart]\nsteps:\n  - { name: one }\n  - { name: open-data, manifests: { delete: [deny.yaml] } }\n');
    const s = loadScenario(file);
    expect(s.steps[1]!.policies.map((p) => p.metadata.name)).toEqual(['postgres', 'api']);
    const refused = (step: string) => {
      writeFileSync(file, `name: s\nmanifests: [chart]\nsteps:\n  - { name: one }\n  - { name: two, manifests: ${step} }\n`);
      return () => loadScenario(file);
    };
    expect(refused('{ delete: [web.yaml] }')).toThrow(/Deployment shop\/web: a step cannot delete a workload/);
    expect(refused('{ apply: [ports.yaml] }')).toThrow(/Deployment shop\/web: its container ports change/);
    expect(refused('{ delete: [deny.yaml, deny.yaml] }')).toThrow(/Duplicate value/);
    writeFileSync(file, 'name: s\nmanifests: [chart]\nsteps:\n  - { name: one, policies: [] }\n  - { name: two, manifests: { delete: [deny.yaml] } }\n');
    expect(() => loadScenario(file)).toThrow(/NetworkPolicy shop-data\/default-deny is not in force at this step \(nothing to delete\)/);
  });

  it('a step that applies a new workload adds its pods from that step on: its cells are not judged before, intents there do not see it', () => {
    const dir = tempDir('starmap-mcli-');
    cpSync(SHOP, join(dir, 'chart'), { recursive: true });
    const web = readFileSync(join(SHOP, 'rendered.yaml'), 'utf8')
      .split('\n---\n')
      .find((d) => d.includes('name: web\n  namespace: shop\n  labels'))!;
    writeFileSync(join(dir, 'new.yaml'), web.replace('name: web\n  namespace: shop', 'name: web2\n  namespace: shop'));
    const file = join(dir, 's.yaml');
    writeFileSync(
      file,
      'name: s\nmanifests: [chart]\nsteps:\n  - { name: one, assert: [{ allow: "shop/* -> shop/api:http" }] }\n  - { name: two, manifests: { apply: [new.yaml] }, assert: [{ allow: "shop/* -> shop/api:http" }] }\n',
    );
    const s = loadScenario(file);
    expect(s.pods.find((p) => p.id === 'shop/web2')).toMatchObject({ fromStep: 1, workload: 'Deployment shop/web2' });
    const key = 'shop/web2>shop/api@8080/TCP';
    const [one, two] = [expectStep(s, s.steps[0]!), expectStep(s, s.steps[1]!)];
    expect(one.cells.find((c) => c.cell.key === key)).toMatchObject({ intended: null, expected: null });
    expect(one.cells.filter((c) => c.cell.from === 'shop/web2' || c.cell.to === 'shop/web2').every((c) => c.expected === null)).toBe(true);
    expect(two.cells.find((c) => c.cell.key === key)).toMatchObject({ intended: true, computed: true, expected: true });
    expect(s.steps[0]!.assertions![0]!.cells).toEqual(['shop/web>shop/api@8080/TCP']);
    expect(s.steps[1]!.assertions![0]!.cells).toEqual(['shop/web>shop/api@8080/TCP', key]);
    expect(checkScenario(s).ok).toBe(true);
  });

  it('policies: - file: a file of rendered manifests (not only NetworkPolicies) takes its policies and counts the rest', () => {
    const dir = tempDir('starmap-mcli-');
    cpSync(SHOP, join(dir, 'chart'), { recursive: true });
    const file = join(dir, 's.yaml');
    writeFileSync(
      file,
      'name: s\nmodel: { namespaces: [shop, shop-data], pods: [a], ports: [5432], protocols: [TCP] }\npolicies: [{ file: chart/rendered.yaml }]\nsteps:\n  - { name: deny, policies: [shop-data/default-deny] }\n',
    );
    const s = loadScenario(file);
    expect(s.steps[0]!.policies.map((p) => p.metadata.name)).toEqual(['default-deny']);
    expect(s.manifests).toEqual([
      'policies/0: chart/rendered.yaml: 3 NetworkPolicies taken; ignored 12 objects: 3 Deployment, 3 Service, 2 ConfigMap, 1 Ingress, 1 Secret, 1 ServiceAccount, 1 StatefulSet',
    ]);
    expect(checkScenario(s).text.split('\n')[0]).toBe(s.manifests![0]);
  });

  it('policies: - file: a directory of rendered manifests takes its NetworkPolicies, ignoring the rest', () => {
    const dir = tempDir('starmap-mcli-');
    cpSync(SHOP, join(dir, 'chart'), { recursive: true });
    const file = join(dir, 's.yaml');
    writeFileSync(
      file,
      'name: s\nmodel: { namespaces: [shop, shop-data], pods: [a], ports: [5432], protocols: [TCP] }\npolicies: [{ file: chart }]\nsteps:\n  - { name: deny, policies: [shop-data/default-deny] }\n',
    );
    const s = loadScenario(file);
    expect(s.steps[0]!.policies.map((p) => p.metadata.name)).toEqual(['default-deny']);
    expect(expectStep(s, s.steps[0]!).cells.find((c) => c.cell.key === 'shop/a>shop-data/a@5432/TCP')!.computed).toBe(false);
  });
});
