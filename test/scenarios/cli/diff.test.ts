// `scenario diff BASE HEAD`: each cause of a flip (a policy added, removed or edited naming the
// rule, pod and namespace labels, workloads and ports added or removed), no-op changes (reordered
// YAML, a renamed identical policy) that flip nothing, the deciding rules on both sides, the
// reports (a bounded, escaped pull-request comment, JSON to its schema, JUnit), the exit codes, and
// `git:REF:PATH` sides read from a repository's history.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { afterAll, describe, expect, it } from 'vitest';
import { diffCommand, diffView } from '../../../scenarios/cli/diff.ts';
import { diffHtml } from '../../../scenarios/report/diff-html.ts';
import { ScenarioDiffSchema } from '../../../scenarios/model/diff-schema.ts';
import { flipsByCause } from '../../../scenarios/model/diff.ts';
import { diffMarkdown } from '../../../scenarios/report/diff-markdown.ts';
import { diffJunit } from '../../../scenarios/report/diff-junit.ts';
import { NODE, removeTempDirs, ROOT, tempDir } from '../../helpers/process.ts';

afterAll(removeTempDirs);

const ns = (name: string, labels: Record<string, string> = {}) =>
  `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${name}\n  labels: ${JSON.stringify(labels)}\n`;
const deploy = (name: string, labels: Record<string, string>, ports: number[], namespace = 'shop') =>
  `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: ${name}, namespace: ${namespace} }\nspec:\n  selector: { matchLabels: ${JSON.stringify(labels)} }\n  template:\n    metadata: { labels: ${JSON.stringify(labels)} }\n    spec:\n      containers:\n        - name: c\n          ports: [${ports.map((p) => `{ containerPort: ${p} }`).join(', ')}]\n`;
const DENY =
  'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: { name: default-deny, namespace: shop }\nspec: { podSelector: {}, policyTypes: [Ingress] }\n';
const allowWeb = (name = 'allow-web', port = 8080, fromApp = 'web') =>
  `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: { name: ${name}, namespace: shop }\nspec:\n  podSelector: { matchLabels: { app: api } }\n  ingress:\n    - from: [{ podSelector: { matchLabels: { app: ${fromApp} } } }]\n      ports: [{ port: ${port} }]\n`;

/** A folder of manifests, one document per file, as a chart renders them. */
function side(docs: string[]): string {
  const dir = tempDir('starmap-diff-');
  docs.forEach((d, i) => writeFileSync(join(dir, `${String(i).padStart(2, '0')}.yaml`), d));
  return dir;
}

const BASE_DOCS = [ns('shop'), deploy('web', { app: 'web' }, [80]), deploy('api', { app: 'api' }, [8080]), DENY, allowWeb()];
const base = () => side(BASE_DOCS);
const diff = (a: string, b: string) => diffCommand({ base: a, head: b });

function scenario(args: string[], cwd = ROOT): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(NODE, [join(ROOT, 'scenarios/main.ts'), ...args], { cwd, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('scenario diff: the cause of each flip', () => {
  it('a policy edited: names the rule, and the deciding rules before and after', () => {
    const d = diff(base(), side([...BASE_DOCS.slice(0, 4), allowWeb('allow-web', 9090)]));
    expect(d.causes).toEqual([{ kind: 'policy edited', subject: 'shop/allow-web', detail: ['ingress rule 0'] }]);
    expect(d.flips.map((f) => [f.key, f.before.allowed, f.after.allowed])).toEqual([['shop/web>shop/api@8080/TCP', true, false]]);
    const [f] = d.flips;
    expect(f!.before.reason).toBe('egress not isolated; ingress allowed by shop/allow-web ingress rule 0 peer 0 port 0');
    expect(f!.after.reason).toBe('ingress isolated by shop/default-deny, shop/allow-web, no rule allows it');
    expect(d.counts).toMatchObject({ flips: 1, opened: 0, closed: 1, added: 0, removed: 0 });
  });

  it('a policy added and a policy removed', () => {
    const added = diff(side([ns('shop'), deploy('web', { app: 'web' }, [80]), deploy('api', { app: 'api' }, [8080])]), base());
    // Both new policies are named; web -> api stays allowed (allow-web): api -> web is the one flip.
    expect(flipsByCause(added).map((g) => [g.cause.kind, g.cause.subject, g.flips.map((f) => f.key)])).toEqual([
      ['policy added', 'shop/default-deny', ['shop/api>shop/web@80/TCP']],
    ]);
    expect(added.causes.map((c) => `${c.kind} ${c.subject}`)).toEqual(['policy added shop/default-deny', 'policy added shop/allow-web']);
    const removed = diff(base(), side(BASE_DOCS.slice(0, 4)));
    expect(removed.flips.map((f) => [f.key, f.after.allowed, removed.causes[f.causes[0]!]!.kind])).toEqual([
      ['shop/web>shop/api@8080/TCP', false, 'policy removed'],
    ]);
  });

  it('pod labels and namespace labels changed', () => {
    const relabelled = diff(base(), side([BASE_DOCS[0]!, deploy('web', { app: 'frontend' }, [80]), ...BASE_DOCS.slice(2)]));
    expect(relabelled.causes).toEqual([{ kind: 'pod labels changed', subject: 'shop/web', detail: ['app'] }]);
    expect(relabelled.flips.map((f) => f.key)).toEqual(['shop/web>shop/api@8080/TCP']);

    const nsPolicy = `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: { name: from-team, namespace: shop }\nspec:\n  podSelector: {}\n  ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: a } } }] }]\n`;
    const docs = (team: string) => [
      ns('shop'),
      ns('ops', { team }),
      deploy('web', { app: 'web' }, [80]),
      deploy('mon', { app: 'mon' }, [9100], 'ops'),
      nsPolicy,
    ];
    const d = diff(side(docs('a')), side(docs('b')));
    expect(d.causes).toEqual([{ kind: 'namespace labels changed', subject: 'ops', detail: ['team'] }]);
    expect(d.flips.map((f) => [f.key, f.after.allowed])).toEqual([['ops/mon>shop/web@80/TCP', false]]);
  });

  it('a workload and a port added: cells of one side only, apart from the flips', () => {
    const d = diff(
      base(),
      side([...BASE_DOCS.slice(0, 2), deploy('api', { app: 'api' }, [8080, 9090]), ...BASE_DOCS.slice(3), deploy('cache', { app: 'cache' }, [6379])]),
    );
    expect(d.flips).toEqual([]);
    expect(d.causes.map((c) => `${c.kind} ${c.subject}`)).toEqual(['workload added shop/cache', 'port added shop/api:9090/TCP']);
    const byCause = (i: number) => d.added.filter((c) => c.cause === i).map((c) => `${c.key} ${c.side.allowed}`);
    expect(byCause(0).sort()).toEqual([
      'shop/api>shop/cache@6379/TCP false',
      'shop/cache>shop/api@8080/TCP false',
      'shop/cache>shop/api@9090/TCP false',
      'shop/cache>shop/web@80/TCP false',
      'shop/web>shop/cache@6379/TCP false',
    ]);
    expect(byCause(1)).toEqual(['shop/web>shop/api@9090/TCP false']);
    const gone = diff(side([...BASE_DOCS, deploy('cache', { app: 'cache' }, [6379])]), base());
    expect(gone.causes.map((c) => `${c.kind} ${c.subject}`)).toEqual(['workload removed shop/cache']);
    expect(gone.removed.map((c) => c.key).sort()).toEqual([
      'shop/api>shop/cache@6379/TCP',
      'shop/cache>shop/api@8080/TCP',
      'shop/cache>shop/web@80/TCP',
      'shop/web>shop/cache@6379/TCP',
    ]);
  });

  it('an admin-tier policy added and edited: named by id, with the chain before and after', () => {
    const denyWeb = (priority: number) =>
      `apiVersion: policy.networking.k8s.io/v1alpha2\nkind: ClusterNetworkPolicy\nmetadata: { name: no-web }\nspec:\n  tier: Admin\n  priority: ${priority}\n  subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: api } } } }\n  ingress:\n    - { name: web, action: Deny, from: [{ pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: web } } } }] }\n`;
    const added = diff(base(), side([...BASE_DOCS, denyWeb(10)]));
    expect(added.causes).toEqual([{ kind: 'policy added', subject: 'cnp/no-web', detail: [] }]);
    expect(added.flips.map((f) => [f.key, f.after.allowed])).toEqual([['shop/web>shop/api@8080/TCP', false]]);
    expect(added.flips[0]!.after.reason).toContain('cnp/no-web');
    const edited = diff(side([...BASE_DOCS, denyWeb(10)]), side([...BASE_DOCS, denyWeb(20)]));
    expect(edited.causes).toEqual([{ kind: 'policy edited', subject: 'cnp/no-web', detail: ['priority'] }]);
    expect(edited.flips).toEqual([]);
  });

  it('a change that flips nothing but leaves a rule dead says so', () => {
    const allowAll =
      'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: { name: all-to-api, namespace: shop }\nspec:\n  podSelector: { matchLabels: { app: api } }\n  ingress: [{ ports: [{ port: 8080 }] }]\n';
    const d = diff(side([...BASE_DOCS, allowAll]), side([BASE_DOCS[0]!, deploy('web', { app: 'frontend' }, [80]), ...BASE_DOCS.slice(2), allowAll]));
    expect(d.flips).toEqual([]);
    expect(d.causes).toEqual([{ kind: 'pod labels changed', subject: 'shop/web', detail: ['app'] }]);
    expect(d.deadRules).toEqual([{ rule: 'shop/allow-web ingress[0]', why: 'dead: no pod or external matches its peers' }]);
    expect(diffMarkdown(d)).toContain('- rule left dead: shop/allow-web ingress\\[0\\]: dead: no pod or external matches its peers');
  });

  it('an external added: its cells are of HEAD only, under the external added', () => {
    const withExternal = side([...BASE_DOCS]);
    const scenarioFile = join(tempDir('starmap-diff-ext-'), 's.yaml');
    writeFileSync(
      scenarioFile,
      `name: ext\nmanifests: [${withExternal}]\nexternals: [{ name: internet, address: 203.0.113.10 }]\nsteps: [{ name: s, expect: computed }]\n`,
    );
    const d = diff(base(), scenarioFile);
    expect(d.causes.map((c) => `${c.kind} ${c.subject}`)).toEqual(['workload added external:internet']);
    expect(d.added.length).toBeGreaterThan(0);
    expect(d.added.every((c) => c.cause === 0)).toBe(true);
    expect([...Value.Errors(ScenarioDiffSchema, d)]).toEqual([]);
  });

  it('no-op changes flip nothing: reordered YAML, one file split in two, a renamed identical policy', () => {
    const reordered = `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nspec:\n  ingress:\n    - ports: [{ port: 8080 }]\n      from: [{ podSelector: { matchLabels: { app: web } } }]\n  podSelector: { matchLabels: { app: api } }\nmetadata: { namespace: shop, name: allow-web }\n`;
    expect(diff(base(), side([...BASE_DOCS.slice(0, 4), reordered])).causes).toEqual([]);
    expect(diff(base(), side([BASE_DOCS.join('---\n')])).causes).toEqual([]);
    const renamed = diff(base(), side([...BASE_DOCS.slice(0, 4), allowWeb('allow-web-to-api')]));
    expect(renamed.flips).toEqual([]);
    expect(renamed.causes.map((c) => `${c.kind} ${c.subject}`)).toEqual(['policy removed shop/allow-web', 'policy added shop/allow-web-to-api']);
  });
});

describe('scenario diff: reports and exit codes', () => {
  it('exit 0 with no flips, 1 with flips, 2 on bad input naming the file', () => {
    const a = base();
    expect(scenario(['diff', a, a]).code).toBe(0);
    const edited = side([...BASE_DOCS.slice(0, 4), allowWeb('allow-web', 9090)]);
    const out = tempDir('starmap-diff-out-');
    const r = scenario(['diff', a, edited, '--report-md', join(out, 'd.md'), '--report-json', join(out, 'd.json'), '--report-junit', join(out, 'd.xml')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('1 flip (0 opened, 1 closed), of 2 cells');
    expect(r.stdout).toContain('policy edited shop/allow-web (ingress rule 0): 1 flip\n  shop/web -> shop/api 8080/TCP  allowed -> blocked');
    const doc = JSON.parse(readFileSync(join(out, 'd.json'), 'utf8')) as unknown;
    expect([...Value.Errors(ScenarioDiffSchema, doc)].map((e) => `${e.path}: ${e.message}`)).toEqual([]);
    expect(readFileSync(join(out, 'd.xml'), 'utf8')).toContain(
      '<testcase classname="starmap.diff" name="shop/web -&gt; shop/api 8080/TCP: allowed -&gt; blocked" time="0"><failure message="flip"',
    );
    expect(readFileSync(join(out, 'd.md'), 'utf8')).toMatch(/^### Starmap: 1 flow change\n/);
    const bad = side([`${BASE_DOCS[1]}  replicas: many\n`]);
    const b = scenario(['diff', a, bad]);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(new RegExp(`^scenario: error: .*${bad}/00\\.yaml: document 1 \\(line 1\\): Deployment shop/web`));
    expect(scenario(['diff', '-', '-']).stderr).toBe('scenario: error: only one side can be read from stdin (-)\n');
  });

  it('the pull-request comment stays under GitHub’s limit whatever the input, and escapes what the manifests say', () => {
    const many = (n: number, port: number) => [ns('shop'), ...Array.from({ length: n }, (_, i) => deploy(`w${i}`, { app: `w${i}`, tier: 'x' }, [port])), DENY];
    const d = diff(side(many(60, 80)), side(many(60, 80).slice(0, -1)));
    expect(d.counts.flips).toBe(60 * 59);
    const md = diffMarkdown(d);
    expect(md.length).toBeLessThan(65_536);
    expect(md).toContain('<details><summary>3520 more flips</summary>');
    expect(md).toMatch(/… \d+ more lines left out to keep this comment under 60000 characters/);
    const tiny = diffMarkdown(d, { maxChars: 2000 });
    expect(tiny.length).toBeLessThan(2000);
    // Names are RFC 1123 by validation; whatever reaches the comment is still shown as text.
    const text = diffMarkdown({ ...d, flips: d.flips.slice(0, 1), causes: [{ kind: 'other', subject: '<script>|x', detail: ['**b**'] }] });
    expect(text).not.toContain('<script>');
    expect(text).toContain('other &lt;script&gt;\\|x (\\*\\*b\\*\\*)');
    expect(diffJunit(d)).toContain(`tests="${60 * 59}" failures="${60 * 59}"`);
  });
});

it('the HTML page: both matrices per port, the flips outlined with their reasons on hover, one-sided cells hatched; lists only past the bound', () => {
  const view = diffView({ base: base(), head: side([...BASE_DOCS.slice(0, 4), allowWeb('allow-web', 9090), deploy('cache', { app: 'cache' }, [6379])]) });
  const html = diffHtml(view);
  expect(html.match(/<table class="tt">/g)).toHaveLength(2); // every pair has one port: one pair of tables
  expect(html).toContain(
    '<td class="b close" title="shop/web -&gt; shop/api 8080/TCP: blocked\ningress isolated by shop/default-deny, shop/allow-web, no rule allows it">✗</td>',
  );
  expect(html).toContain('<td class="one" title="not on this side"></td>');
  expect(html).toContain('<h2>policy edited shop/allow-web (ingress rule 0): 1</h2>');
  const listed = diffHtml(view, 1);
  expect(listed).not.toContain('<table');
  expect(listed).toContain('too many to draw; the flips are listed below');
});

it('scenarios/model/diff.schema.json is the schema the diff is written to (scenario diff-schema)', () => {
  expect(JSON.parse(readFileSync(join(ROOT, 'scenarios', 'model', 'diff.schema.json'), 'utf8'))).toEqual(JSON.parse(scenario(['diff-schema']).stdout));
});

describe('scenario diff --approve', () => {
  it('passes when the flips are exactly the approved ones; names the unapproved and the missing ones; bad statements are bad input', () => {
    const a = base();
    const b = side([...BASE_DOCS.slice(0, 4), allowWeb('allow-web', 9090)]);
    const file = (text: string) => {
      const f = join(tempDir('starmap-approve-'), 'approved-flips.yaml');
      writeFileSync(f, text);
      return f;
    };
    const exact = scenario(['diff', a, b, '--approve', file('- deny: shop/web -> shop/api:8080\n')]);
    expect(exact.stderr).toBe('');
    expect(exact.code).toBe(0);
    expect(exact.stdout).toMatch(/approved: the flips are exactly those of .*approved-flips\.yaml$/m);
    // A statement over several cells approves the flips among them that went its way.
    expect(diffCommand({ base: a, head: b, approve: file('- deny: "* -> shop/*"\n') }).approval).toMatchObject({ passed: true });
    const wrong = scenario(['diff', a, b, '--approve', file('- allow: shop/web -> shop/api:8080\n')]);
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toContain(
      '  unapproved flip: shop/web -> shop/api 8080/TCP  allowed -> blocked\n  approved but no such flip: allow: shop/web -> shop/api:8080',
    );
    const d = diffCommand({ base: a, head: b, approve: file('- deny: shop/web -> shop/api\n- deny: shop/api -> shop/web\n') });
    expect(d.approval).toMatchObject({ passed: false, unapproved: [], missing: ['deny: shop/api -> shop/web'] });
    const bad = scenario(['diff', a, b, '--approve', file('- deny: shop/nope -> shop/api\n')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^scenario: error: .*approved-flips\.yaml: #1 \(line 1\): .*shop\/nope/);
  });
});

describe('scenario diff git:REF:PATH', () => {
  it('reads each side from the repository’s history, without a checkout, and names git paths in errors', () => {
    const repo = tempDir('starmap-diff-git-');
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], { cwd: repo, encoding: 'utf8' });
    git('init', '-q', '-b', 'main');
    mkdirSync(join(repo, 'deploy', 'policies'), { recursive: true });
    writeFileSync(join(repo, 'deploy', 'apps.yaml'), BASE_DOCS.slice(0, 3).join('---\n'));
    writeFileSync(join(repo, 'deploy', 'policies', 'p.yaml'), BASE_DOCS.slice(3).join('---\n'));
    writeFileSync(join(repo, 'README.md'), 'not a manifest');
    git('add', '.');
    git('commit', '-q', '-m', 'base');
    writeFileSync(join(repo, 'deploy', 'policies', 'p.yaml'), DENY);
    git('commit', '-q', '-am', 'drop allow-web');
    // The work tree changes afterwards: the git sides must not read it.
    writeFileSync(join(repo, 'deploy', 'policies', 'p.yaml'), 'garbage: [');
    const r = scenario(['diff', 'git:main~1:deploy/', 'git:main:deploy/'], repo);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('scenario diff git:main~1:deploy/ (as-written) -> git:main:deploy/ (as-written): 1 flip (0 opened, 1 closed), of 2 cells');
    expect(r.stdout).toContain('policy removed shop/allow-web: 1 flip');
    // From a subfolder, PATH is still the repository's (as in `git show REF:PATH`).
    expect(scenario(['diff', 'git:main:deploy', 'git:main:deploy'], join(repo, 'deploy')).code).toBe(0);
    git('checkout', '-q', '--', 'deploy/policies/p.yaml');
    writeFileSync(join(repo, 'deploy', 'apps.yaml'), `${BASE_DOCS[1]}  replicas: many\n`);
    git('commit', '-q', '-am', 'bad');
    const bad = scenario(['diff', 'git:main~1:deploy/', 'git:main:deploy/'], repo);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^scenario: error: git:main:deploy\/apps\.yaml: document 1 \(line 1\): Deployment shop\/web: \/spec\/replicas \(line 12\)/);
    expect(bad.stderr).not.toContain('starmap-git-');
    expect(scenario(['diff', 'git:nope:deploy/', 'git:main:deploy/'], repo).stderr).toMatch(/^scenario: error: git:nope:deploy\/: no commit "nope"/);
    expect(scenario(['diff', 'git:--output=x:deploy/', 'git:main:deploy/'], repo).stderr).toBe(
      'scenario: error: git:--output=x:deploy/: "--output=x" is not a git revision\n',
    );
    expect(scenario(['diff', 'git:main:nothing/', 'git:main:deploy/'], repo).stderr).toMatch(/no such file or folder with YAML or JSON files at main/);
  }, 60_000); // seven runs of the command
});

describe('the CI recipe of docs/scenarios.md', () => {
  it('its diff command line, as written, in a pull request’s clone with an origin: the comment written, the approved flips passing', () => {
    const text = readFileSync(join(ROOT, 'docs', 'scenarios.md'), 'utf8');
    const recipe = /### In CI[\s\S]*?```yaml\n([\s\S]*?)```/.exec(text)![1]!;
    const line = /run: (\.\/scenario diff .*)$/m.exec(recipe)![1]!;
    expect(line).toBe('./scenario diff git:origin/main:deploy/ git:HEAD:deploy/ --report-md diff.md --approve approved-flips.yaml');
    const origin = tempDir('starmap-ci-origin-');
    const clone = tempDir('starmap-ci-clone-');
    const git = (cwd: string, ...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args], { cwd, encoding: 'utf8' });
    git(origin, 'init', '-q', '--bare', '-b', 'main');
    git(clone, 'init', '-q', '-b', 'main');
    mkdirSync(join(clone, 'deploy'));
    writeFileSync(join(clone, 'deploy', 'all.yaml'), BASE_DOCS.join('---\n'));
    git(clone, 'add', '.');
    git(clone, 'commit', '-q', '-m', 'base');
    git(clone, 'remote', 'add', 'origin', origin);
    git(clone, 'push', '-q', 'origin', 'main');
    // The pull request: allow-web moves to 9090, and the author approves the one flip it makes.
    git(clone, 'checkout', '-q', '-b', 'pr');
    writeFileSync(join(clone, 'deploy', 'all.yaml'), [...BASE_DOCS.slice(0, 4), allowWeb('allow-web', 9090)].join('---\n'));
    writeFileSync(join(clone, 'approved-flips.yaml'), '- deny: shop/web -> shop/api:8080\n');
    git(clone, 'add', '.');
    git(clone, 'commit', '-q', '-m', 'move allow-web');
    const [, ...args] = line.split(' ');
    const r = scenario(args, clone);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(readFileSync(join(clone, 'diff.md'), 'utf8')).toContain('✅ the flips are exactly those approved in `approved-flips.yaml`');
  });
});
