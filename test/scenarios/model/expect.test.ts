// Intended, computed and observed: the pure parts of a run. The evaluator's verdicts per step, the
// policy-writing mistakes found before deploying, the per-cell statuses of the report (kept apart
// and named), the tables, JUnit, and `scenario check` / `scenario explain`.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { checkScenario } from '../../../scenarios/cli/check.ts';
import { explainConnection } from '../../../scenarios/cli/explain.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import type { Observation } from '../../../scenarios/run/observe.ts';
import { Report, ScenarioReport } from '../../../scenarios/report/schema.ts';
import { cellResults, stepResult, stepText, type ScenarioReportDoc } from '../../../scenarios/report/results.ts';
import { toJunit } from '../../../scenarios/report/junit.ts';
import { cellKey } from '../../../scenarios/model/resolve.ts';
import { desiredState, notRunCells, policyMistakes } from '../../../scenarios/run/steps.ts';
import { ROOT, tempDir } from '../../helpers/process.ts';

/** A report of an isolated, enforced run made now, with what a test sets. */
function scenarioReport(over: Pick<ScenarioReportDoc, 'scenario' | 'outcome' | 'passed' | 'failure' | 'steps'>): ScenarioReportDoc {
  const now = new Date().toISOString();
  return { isolated: true, enforced: true, startedAt: now, finishedAt: now, notices: [], pods: [], ...over };
}

function scenarioFile(text: string): string {
  const path = join(tempDir('starmap-expect-'), 'e.yaml');
  writeFileSync(path, text);
  return path;
}

/** stars with a wrong intended cell at backend-policy: B → F allowed (the policies block it). */
function wrongStars(): string {
  const path = scenarioFile(
    loadScenarioText('stars')
      .replace(/file: \.\.\/\.\.\/deploy/g, `file: ${join(ROOT, 'deploy')}`)
      .replace(
        '        F  . . X\n        B  X . X\n        C  X X -\n        UI . . .\n  - name: frontend-policy',
        '        F  . . X\n        B  . . X\n        C  X X -\n        UI . . .\n  - name: frontend-policy',
      ),
  );
  return path;
}

function loadScenarioText(name: string): string {
  return readFileSync(join(ROOT, 'scenarios', 'builtin', `${name}.yaml`), 'utf8');
}

const obs = (allowed: boolean | null, reason = allowed ? 'ok' : 'timeout'): Observation => ({
  allowed,
  reason,
  checkedAt: new Date(Date.now() + 60_000).toISOString(),
  changedAt: null,
});

describe('intended != computed, before anything runs', () => {
  it('the stars scenario says what its policies say', () => {
    const s = loadScenario('stars');
    for (const step of s.steps) expect(expectStep(s, step).mistakes).toEqual([]);
    expect(
      policyMistakes(
        s,
        s.steps.map((st) => expectStep(s, st)),
        true,
      ),
    ).toBeUndefined();
  });

  it('finds a wrong intended cell and names the policy that decides it', () => {
    const s = loadScenario(wrongStars());
    const exps = s.steps.map((st) => expectStep(s, st));
    expect(exps.map((e) => e.mistakes.length)).toEqual([0, 0, 0, 1, 0]);
    const m = exps[3]!.mistakes[0]!;
    expect(m.cell.key).toBe(cellKey('stars/backend', 'stars/frontend', 80, 'TCP'));
    expect(m).toMatchObject({ intended: true, computed: false, reason: 'ingress isolated by stars/default-deny, stars/allow-ui, no rule allows it' });
    const refused = policyMistakes(s, exps, true)!;
    expect(refused.map((r) => [r.name, r.failure, r.observed])).toEqual([
      ['allow-all', null, false],
      ['default-deny', null, false],
      ['allow-ui', null, false],
      ['backend-policy', 'intended != computed', false],
      ['frontend-policy', null, false],
    ]);
    const text = stepText(refused[3]!, 5);
    expect(text).toContain('step 4/5 backend-policy: FAIL: intended != computed (a policy-writing mistake) (not run)');
    // intended | computed side by side, the differing computed cell marked.
    expect(text).toMatch(/B {2}\. {2}\. {2}X {3}B {2}X! \. {2}X/);
    expect(text).toContain(
      'intended != computed: stars/backend -> stars/frontend 80/TCP: intended allowed, the policies say blocked (ingress isolated by stars/default-deny, stars/allow-ui, no rule allows it)',
    );
  });

  it('`scenario check` shows every step and fails on a mistake', () => {
    expect(checkScenario(loadScenario('stars')).ok).toBe(true);
    const r = checkScenario(loadScenario(wrongStars()));
    expect(r.ok).toBe(false);
    expect(r.text).toContain('step 4/5 backend-policy: FAIL: intended != computed at 1 cell (a policy-writing mistake)');
    expect(r.text).toContain('step 1/5 allow-all: intended = computed (11 judged cells)');
  });
});

describe('the report keeps the kinds of failure apart', () => {
  const s = loadScenario(
    scenarioFile(`name: r
model: { namespaces: [x, y], pods: [a], ports: [80], protocols: [TCP, UDP, SCTP] }
policies:
  - { apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: { name: allow-y, namespace: x }, spec: { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { kubernetes.io/metadata.name: y } } }], ports: [{ port: 80, protocol: TCP }] }] } }
steps:
  - { name: s, policies: [x/allow-y] }
`),
  );
  const exp = expectStep(s, s.steps[0]!);
  const k = (from: string, to: string, proto: 'TCP' | 'UDP' | 'SCTP') => cellKey(from, to, 80, proto);

  it('pass, computed != observed (with the measured side and the rule), no value, not run', () => {
    const observed = new Map([
      [k('y/a', 'x/a', 'TCP'), obs(false, 'timeout')], // allowed by x/allow-y, observed blocked: an enforcement fault
      [k('y/a', 'x/a', 'UDP'), obs(false)], // blocked as computed
      [k('x/a', 'y/a', 'TCP'), obs(true)],
    ]);
    const fresh = new Set(observed.keys());
    const notRun = notRunCells(exp, true);
    const cells = cellResults(exp, notRun, { observed, fresh, changedAfterMs: new Map(), droppedBy: new Map([[k('y/a', 'x/a', 'TCP'), 'ingress' as const]]) });
    const byKey = new Map(cells.map((c) => [cellKey(c.from, c.to, c.port, c.protocol), c]));
    expect(byKey.get(k('y/a', 'x/a', 'TCP'))).toMatchObject({
      status: 'computed != observed',
      expected: true,
      observed: false,
      droppedBy: 'ingress',
      reason: 'egress not isolated; ingress allowed by x/allow-y ingress rule 0 peer 0 port 0',
    });
    expect(byKey.get(k('y/a', 'x/a', 'UDP'))).toMatchObject({ status: 'pass', expected: false, observed: false });
    expect(byKey.get(k('x/a', 'y/a', 'TCP'))).toMatchObject({ status: 'pass' });
    expect(byKey.get(k('x/a', 'y/a', 'UDP'))).toMatchObject({ status: 'no value', observed: null });
    expect(byKey.get(k('x/a', 'y/a', 'SCTP'))).toMatchObject({ status: 'not run', observed: null, observedReason: expect.stringContaining('SCTP') });
    const step = stepResult(exp, s.pods, cells, { settled: false, durationMs: 10_000, budgetMs: 2500, lastFlipMs: null, observed: true });
    expect(step).toMatchObject({
      passed: false,
      failure: 'computed != observed',
      counts: { cells: 6, pass: 2, computedNotObserved: 1, noValue: 1, notRun: 2, intendedNotComputed: 0, notJudged: 0, notProven: 0 },
    });
    const text = stepText(step, 1);
    expect(text).toContain('step 1/1 s: FAIL: computed != observed (an enforcement fault) (not settled within 10.0 s)');
    expect(text).toContain(
      "computed != observed: y/a -> x/a 80/TCP: expected allowed, observed blocked (timeout; dropped by x/a's ingress); egress not isolated; ingress allowed by x/allow-y ingress rule 0 peer 0 port 0",
    );
    const report = scenarioReport({ scenario: 'r', outcome: 'fail', passed: false, failure: 'computed != observed', steps: [step] });
    expect([...Value.Errors(ScenarioReport, JSON.parse(JSON.stringify(report)))]).toEqual([]);
    const junit = toJunit(report);
    expect(junit).toContain('<testcase classname="starmap.scenario.r" name="s: observed = expected"');
    expect(junit).toContain('<failure message="computed != observed at 2 cells (an enforcement fault)" type="computed != observed">');
  });

  it('a step whose judged cells cannot be observed here is not run: neither passed nor failed', () => {
    const sctp = loadScenario(
      scenarioFile('name: s\nmodel: { namespaces: [x], pods: [a, b], ports: [80], protocols: [SCTP] }\nsteps:\n  - { name: only-sctp }\n'),
    );
    const e = expectStep(sctp, sctp.steps[0]!);
    const step = stepResult(
      e,
      sctp.pods,
      cellResults(e, notRunCells(e, true), { observed: new Map(), fresh: new Set(), changedAfterMs: new Map(), droppedBy: new Map() }),
      { settled: true, durationMs: 0, budgetMs: 2500, lastFlipMs: null, observed: true },
    );
    expect(step).toMatchObject({ outcome: 'not run', passed: false, failure: null, counts: { cells: 2, notRun: 2, pass: 0 } });
    expect(stepText(step, 1)).toContain('step 1/1 only-sctp: NOT RUN: nothing it judges could be observed here');
    const junit = toJunit(scenarioReport({ scenario: 's', outcome: 'not run', passed: false, failure: null, steps: [step] }));
    expect(junit).toContain('<skipped message="not run: the probe cannot check SCTP (Node.js has no SCTP sockets)"/>');
    expect(junit).toMatch(/failures="0" errors="0" skipped="1"/);
  });

  it('without enforcement, cells the policies block are not run rather than waited for', () => {
    const notRun = notRunCells(exp, false);
    expect(notRun.get(k('y/a', 'x/a', 'UDP'))).toMatch(/policies are not enforced here/);
    expect(notRun.has(k('y/a', 'x/a', 'TCP'))).toBe(false);
  });

  it('JUnit puts a policy-writing mistake in its own test case and skips the observation', () => {
    const w = loadScenario(wrongStars());
    const refused = policyMistakes(
      w,
      w.steps.map((st) => expectStep(w, st)),
      true,
    )!;
    const junit = toJunit(scenarioReport({ scenario: 'stars', outcome: 'fail', passed: false, failure: 'intended != computed', steps: refused }));
    expect(junit).toContain(
      'name="backend-policy: intended = computed" time="0">\n      <failure message="intended != computed at 1 cell (a policy-writing mistake)" type="intended != computed">',
    );
    expect(junit).toContain(
      'name="backend-policy: observed = expected" time="0">\n      <skipped message="not run: the policies do not say what was intended"/>',
    );
    expect(junit).toMatch(/tests="10" failures="1" errors="0" skipped="5"/);
  });
});

describe('what a step asks the orchestrator for', () => {
  it('fills addresses into policies and sends only changed pod labels', () => {
    const s = loadScenario(
      scenarioFile(`name: d
model: { namespaces: [x], pods: [a, b], ports: [80], protocols: [TCP] }
policies:
  - { apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: { name: t, namespace: x }, spec: { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: "{{ip x/b}}/32" } }] }] } }
steps:
  - { name: s, policies: [x/t], labels: { pods: { x/a: { pod: a, role: db } } } }
`),
    );
    const d = desiredState(s, s.steps[0]!, new Map([['x/b', '10.213.0.7']]));
    expect(d.policies[0]!.spec.ingress![0]!.from![0]!.ipBlock!.cidr).toBe('10.213.0.7/32');
    expect(d.podLabels).toEqual({ 'x/a': { pod: 'a', role: 'db' }, 'x/b': null });
    expect(d.namespaces).toEqual({ x: { 'kubernetes.io/metadata.name': 'x' } });
    expect(() => desiredState(s, s.steps[0]!, new Map())).toThrow(/the address of x\/b is not known/);
  });
});

describe('scenario explain', () => {
  it('says why, both sides, naming the rule', () => {
    expect(explainConnection(loadScenario('stars'), { step: 'frontend-policy', from: 'C', to: 'stars/frontend:80/TCP' })).toBe(
      [
        'step 5 frontend-policy: policies in force: stars/default-deny, client/default-deny, stars/allow-ui, client/allow-ui, stars/backend-policy, stars/frontend-policy',
        'client/client -> stars/frontend 80/TCP: allowed',
        '  egress of client/client: not isolated (no policy selects it for egress)',
        '  ingress of stars/frontend: isolated by stars/default-deny, stars/allow-ui, stars/frontend-policy; allowed by stars/frontend-policy ingress rule 0 (peer 0: all pods in namespaces {role=client}; port 0: 80/TCP)',
      ].join('\n'),
    );
  });

  it('refuses unknown steps and pods with the flag at fault', () => {
    expect(() => explainConnection(loadScenario('stars'), { step: 'nope', from: 'C', to: 'F' })).toThrow(/--step: no step "nope"/);
    expect(() => explainConnection(loadScenario('stars'), { step: '1', from: 'zz', to: 'F' })).toThrow(/--from: unknown pod "zz"/);
  });

  it('says an unknown pod is unknown and names the nearest pods, for --to, --from and --ip', () => {
    const stars = loadScenario('stars');
    const explain = (o: { from?: string; to?: string; ips?: string[] }) => () => explainConnection(stars, { step: '1', from: 'C', to: 'F', ...o });
    expect(explain({ to: 'stars/frontnd' })).toThrow(/^--to: unknown pod "stars\/frontnd" \(nearest: stars\/frontend\)$/);
    expect(explain({ to: 'stars/backnd:6379/TCP' })).toThrow(/^--to: unknown pod "stars\/backnd" \(nearest: stars\/backend\)$/);
    expect(explain({ from: 'client/clint' })).toThrow(/^--from: unknown pod "client\/clint" \(nearest: client\/client\)$/);
    expect(explain({ ips: ['stars/frontend=10.0.0.1', 'stars/bakend=10.0.0.2'] })).toThrow(
      /^--ip stars\/bakend=10\.0\.0\.2: unknown pod "stars\/bakend" \(nearest: stars\/backend\)$/,
    );
    // Nothing near: the pods there are.
    expect(explain({ to: 'shop/web' })).toThrow(
      /^--to: unknown pod "shop\/web" \(known: stars\/frontend, stars\/backend, client\/client, management-ui\/management-ui\)$/,
    );
    expect(() => explainConnection(stars, { step: 'frontend-polcy', from: 'C', to: 'F' })).toThrow(
      /^--step: no step "frontend-polcy" \(nearest: frontend-policy\)$/,
    );
  });

  it('names the nearest pods for an unknown pod in a scenario file too', () => {
    const at = (probes: string) => {
      try {
        loadScenario(
          scenarioFile(
            `name: e\napps:\n  - { name: web, namespace: shop, kind: probe, probes: [${probes}] }\n  - { name: db, namespace: shop, kind: probe, probes: [] }\nsteps:\n  - name: s\n`,
          ),
        );
      } catch (err) {
        return (err as Error).message;
      }
      return 'accepted';
    };
    expect(at('shop/wbe')).toContain('/apps/0/probes/0 (line 3): unknown pod "shop/wbe" (nearest: shop/web)');
    expect(at('dbb:80')).toContain('unknown pod "dbb" (nearest: db)');
  });
});

describe('published report schema', () => {
  it('scenarios/report/report.schema.json is the schema the reports are written to', () => {
    const published = JSON.parse(readFileSync(join(ROOT, 'scenarios', 'report', 'report.schema.json'), 'utf8')) as unknown;
    expect(published).toEqual(JSON.parse(JSON.stringify(Report)));
  });
});
