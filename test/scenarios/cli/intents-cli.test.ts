// Intents and dead rules through the real command: `scenario check --assert FILE` (pass, a failing
// intent named with its cells: exit 1, one that matches no cell: exit 2), `assert:` in a step
// beside its matrix (both judged, a conflict named), and dead rules in check's output.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkScenario } from '../../../scenarios/cli/check.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { applyAssertFile, parseAssertFile } from '../../../scenarios/model/assert-file.ts';
import { computedReport } from '../../../scenarios/run/steps.ts';
import { toJunit } from '../../../scenarios/report/junit.ts';
import { reportHtml } from '../../../scenarios/report/html.ts';
import { NODE, removeTempDirs, ROOT, tempDir } from '../../helpers/process.ts';

afterAll(removeTempDirs);

function scenario(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(NODE, ['scenarios/main.ts', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
const file = (name: string, text: string) => {
  const path = join(tempDir('starmap-intents-'), name);
  writeFileSync(path, text);
  return path;
};

describe('scenario check --assert', () => {
  it('examples/shop-asserts.yaml: every intent passes with its cells; the dead rules are named', () => {
    const r = scenario(['check', 'examples/shop', '--assert', 'examples/shop-asserts.yaml']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('  assert PASS: allow: shop/web -> shop/api:http (1 cell; examples/shop-asserts.yaml #1)');
    expect(r.stdout).toContain('  assert PASS: deny: * -> shop-data/postgres:postgres except shop/api (3 cells; examples/shop-asserts.yaml #2)');
    expect(r.stdout).toContain('rules: 7 rules, 1 dead');
    expect(r.stdout).toContain('  shop/api ingress[0]: 1 cell (shop/web -> shop/api 8080/TCP)');
    // DNS to kube-system (no pod there) and the payment range (no external here).
    expect(r.stdout).toContain('  shop/api egress[1]: dead: no pod or external matches its peers');
    // The egress to 203.0.113.0/24 is exercised by its automatic external.
    expect(r.stdout).toContain('  shop/api egress[2]: 1 cell (shop/api -> external:api-e2p0 443/TCP)');
  });

  it('a failing intent: exit 1, named with its failing cells and the reason', () => {
    const asserts = file('a.yaml', '- allow: shop/web -> shop-data/postgres\n- deny: "* -> shop/api:http"\n');
    const r = scenario(['check', 'examples/shop', '--assert', asserts]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`  assert FAIL: allow: shop/web -> shop-data/postgres (2 cells, 2 failing; ${asserts} #1)`);
    expect(r.stdout).toContain('    intended != computed: shop/web -> shop-data/postgres 5432/TCP');
    expect(r.stdout).toContain(`  assert FAIL: deny: * -> shop/api:http (4 cells, 1 failing; ${asserts} #2)`);
    expect(r.stdout).toMatch(/intended != computed: shop\/web -> shop\/api 8080\/TCP: intended blocked, the policies say allowed \(.*shop\/api ingress rule 0/);
  });

  it('an intent that matches no cell, or names a pod or external that is not there: exit 2 naming the file, entry and line', () => {
    const asserts = file(
      'a.yaml',
      '- allow: shop/web -> shop/api:http\n- allow: shop-data/postgres -> shop/web:5432\n- deny: shop/* -> external:internet\n- allow: shop/wbe -> shop/api\n',
    );
    const r = scenario(['check', 'examples/shop', '--assert', asserts]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`${asserts}: #2 (line 2): "allow: shop-data/postgres -> shop/web:5432" matches no cell`);
    expect(r.stderr).toContain('an intent that checks nothing is not a pass');
    expect(r.stderr).toContain(`${asserts}: #3 (line 3): unknown external "internet" (known: api-e2p0)`);
    expect(r.stderr).toContain(`${asserts}: #4 (line 4): unknown pod "shop/wbe" (nearest: shop/web)`);
  });
});

const SCENARIO = (assert: string, expect = '') => `name: intents
manifests: [${join(ROOT, 'examples', 'shop')}]
steps:
  - name: as-rendered
${expect}    assert:
${assert}
`;

describe('assert: in a step', () => {
  it('beside a matrix: both judged; intents alone judge the rest as computed', () => {
    const s = loadScenario(
      file(
        's.yaml',
        SCENARIO('      - deny: shop/web -> shop-data/postgres', '    expect:\n      "8080/TCP": |\n        -        shop/api\n        shop/web .\n'),
      ),
    );
    const step = s.steps[0]!;
    expect(step.intended).toEqual(
      new Map([
        ['shop/web>shop/api@8080/TCP', true],
        ['shop/web>shop-data/postgres@5432/TCP', false],
        ['shop/web>shop-data/postgres@9187/TCP', false],
      ]),
    );
    expect(step.assertions).toEqual([
      {
        statement: 'deny: shop/web -> shop-data/postgres',
        source: 'steps/0/assert/0',
        verdict: 'deny',
        cells: ['shop/web>shop-data/postgres@5432/TCP', 'shop/web>shop-data/postgres@9187/TCP'],
      },
    ]);
    expect(checkScenario(s).ok).toBe(true);
    const alone = loadScenario(file('s.yaml', SCENARIO('      - allow: shop/web -> shop-data/postgres')));
    const r = checkScenario(alone);
    expect(r.ok).toBe(false);
    // The cells no intent judges are judged against what the policies compute.
    const report = computedReport(alone);
    expect(report.steps[0]!.cells.filter((c) => c.expected === null)).toEqual([]);
    expect(report.steps[0]!.assertions).toMatchObject([{ statement: 'allow: shop/web -> shop-data/postgres', outcome: 'fail', policiesAgree: false }]);
  });

  it('a conflict with the matrix, or between two intents, is an error naming both', () => {
    const conflict = file(
      's.yaml',
      SCENARIO('      - deny: shop/web -> shop/api:http', '    expect:\n      "8080/TCP": |\n        -        shop/api\n        shop/web .\n'),
    );
    expect(() => loadScenario(conflict)).toThrow(
      /\/steps\/0\/assert\/0 \(line \d+\): "deny: shop\/web -> shop\/api:http" intends shop\/web -> shop\/api 8080\/TCP blocked, but the step's expect intends it allowed/,
    );
    const s = loadScenario(file('s.yaml', SCENARIO('      - allow: shop/* -> shop/api:http')));
    expect(() => applyAssertFile(s, parseAssertFile('as-rendered:\n  - deny: shop/web -> shop/api\n', 'a.yaml'))).toThrow(
      /a\.yaml: as-rendered #1 \(line 2\): "deny: shop\/web -> shop\/api" intends shop\/web -> shop\/api 8080\/TCP blocked, but "allow: shop\/\* -> shop\/api:http" \(steps\/0\/assert\/0\) intends it allowed/,
    );
    expect(() => applyAssertFile(s, parseAssertFile('as-rendred:\n  - deny: shop/web -> shop/api\n', 'a.yaml'))).toThrow(
      /as-rendred: no step of that name in intents \(nearest: as-rendered\)/,
    );
  });

  it('the JUnit report has a test case per intent; the HTML report shows each with its cells, and the dead rules', () => {
    const s = loadScenario(file('s.yaml', SCENARIO('      - allow: shop/web -> shop-data/postgres\n      - allow: shop/web -> shop/api:http')));
    const report = computedReport(s);
    const junit = toJunit(report);
    expect(junit).toContain('name="as-rendered: assert allow: shop/web -&gt; shop-data/postgres"');
    expect(junit).toMatch(/<failure message="allow: shop\/web -&gt; shop-data\/postgres: 2 cells failing" type="intended != computed">/);
    expect(junit).toMatch(/name="as-rendered: assert allow: shop\/web -&gt; shop\/api:http" time="0">\n {4}<\/testcase>/);
    const html = reportHtml(report);
    expect(html).toContain('<h4>Intents</h4>');
    expect(html).toContain('<b>FAIL</b> <span class="mono">allow: shop/web -&gt; shop-data/postgres</span>');
    expect(html).toContain('<li>shop/web -&gt; shop-data/postgres 5432/TCP: intended != computed</li>');
    expect(html).toContain('<h4>Rules (7, 1 dead)</h4>');
    expect(html).toContain('<span class="mono">shop/api egress[1]</span>: <b>dead: no pod or external matches its peers</b>');
  });
});
