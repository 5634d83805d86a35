// DNS in a scenario's model (issue 31, model/dns.ts, model/externals.ts `names:`): externals carry
// names, refused with the field and the line when they clash; the cluster's DNS pod joins the
// evaluator's cluster only when names or domainNames are used; and the example's verdicts and
// reasons (a domainNames allowlist, then with DNS denied) as `scenario check` gives them.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { kubeDnsAddress } from '../../../scenarios/model/dns.ts';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { notRunCells } from '../../../scenarios/run/steps.ts';
import { NODE, removeTempDirs, ROOT, tempDir } from '../../helpers/process.ts';

afterAll(removeTempDirs);

const EXAMPLE = 'examples/domain-names/scenario.yaml';

function scenario(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(NODE, ['scenarios/main.ts', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 90_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function write(text: string): string {
  const file = join(tempDir('starmap-dns-'), 's.yaml');
  writeFileSync(file, text);
  return file;
}

const withExternals = (hosts: string) => `name: t
apps:
  - { name: web, namespace: shop, kind: probe, probes: [] }
externals:
${hosts}
steps:
  - { name: one, expect: computed }
`;

describe('externals with names', () => {
  it('refuses a name two externals share and a cluster.local name, naming the field and the line', () => {
    const file = write(
      withExternals(`  - { name: a, address: 203.0.113.10, names: [www.example.com] }
  - { name: b, address: 203.0.113.11, names: [WWW.example.com., api.svc.cluster.local] }`),
    );
    const r = scenario(['check', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('/externals/1/names/0');
    expect(r.stderr).toContain("the name www.example.com is also external:a's: one host per name");
    expect(r.stderr).toContain('/externals/1/names/1');
    expect(r.stderr).toContain('inside the cluster domain cluster.local');
    expect(r.stderr).toContain('/externals/1/names/0 (line 6)');
  });

  it('refuses a name that is no host name (a wildcard) by the schema', () => {
    const r = scenario(['check', write(withExternals(`  - { name: a, address: 203.0.113.10, names: ['*.example.com'] }`))]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('/externals/0/names/0');
  });

  it('adds the DNS pod to the cluster only when names are used', () => {
    const plain = loadScenario(write(withExternals(`  - { name: a, address: 203.0.113.10 }`)));
    expect(plain.dns).toBeUndefined();
    expect(expectStep(plain, plain.steps[0]!).cluster.pods.map((p) => `${p.namespace}/${p.name}`)).toEqual(['shop/web', 'external/a']);
    const named = loadScenario(write(withExternals(`  - { name: a, address: 203.0.113.10, names: [www.example.com] }`)));
    expect(named.dns).toEqual({ ip: '10.213.0.254' });
    const pods = expectStep(named, named.steps[0]!).cluster.pods;
    expect(pods.map((p) => `${p.namespace}/${p.name}`)).toEqual(['shop/web', 'external/a', 'kube-system/kube-dns']);
    expect(pods[1]!.names).toEqual(['www.example.com']);
    expect(pods[2]).toMatchObject({ ip: '10.213.0.254', labels: { 'k8s-app': 'kube-dns' } });
    expect(kubeDnsAddress('10.0.0.0/16')).toBe('10.0.255.254');
  });
});

describe('the domain-names example', () => {
  it('allows www.example.com by name, blocks the rest, and blocks everything once DNS is denied', () => {
    const s = loadScenario(EXAMPLE);
    const verdicts = s.steps.map((step) =>
      expectStep(s, step)
        .cells.filter((c) => c.cell.from === 'shop/web')
        .map((c) => `${c.cell.to} ${c.computed}`),
    );
    expect(verdicts).toEqual([
      ['external:www true', 'external:other false'],
      ['external:www false', 'external:other false'],
    ]);
    const www = expectStep(s, s.steps[1]!).cells.find((c) => c.cell.to === 'external:www')!;
    expect(www.chain!.egress).toBe(
      'Admin cnp/allow-www egress rule 0 (www-by-name) Accept -> DNS blocked: shop/web -> kube-system/kube-dns:53/UDP (egress: Admin cnp/no-lookups egress rule 0 (deny-dns) Deny)',
    );
    const r = scenario(['check', EXAMPLE]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('external:www 203.0.113.10 (www.example.com) serving 80/TCP');
  });

  it('is "not run" on packets for every cell to a named external, never a pass: the run serves no DNS yet', () => {
    const s = loadScenario(EXAMPLE);
    for (const step of s.steps) {
      const notRun = notRunCells(expectStep(s, step), true);
      expect(notRun.get('shop/web>external:www@80/TCP')).toBe('not run: external:www is reached by name (www.example.com), and this run serves no DNS yet');
      expect(notRun.get('shop/web>external:other@80/TCP')).toContain('not run: external:other is reached by name');
    }
  });
});
