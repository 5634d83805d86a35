// The pure parts of `scenario diff --isolation=netns` (scenarios/run/diff-run.ts): the two sides as
// one scenario applied in place, and the comparison of a run's observations with the computed flips.
// The run's reports here are made from the real cellResults/stepResult with the observations given,
// so each kind of fault is shown on exactly the cells it names (the packets: diff-netns.test.ts).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffSides, type DiffSide } from '../../../scenarios/model/diff.ts';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import type { PodSpec, ResolvedScenario } from '../../../scenarios/model/resolve.ts';
import { cellResults, stepResult, type ScenarioReportDoc } from '../../../scenarios/report/results.ts';
import { inPlaceScenario, withIntents, withObservation, type InPlaceSide } from '../../../scenarios/run/diff-run.ts';
import { emptyReport, scenarioOutcome } from '../../../scenarios/run/steps.ts';
import { ScenarioError } from '../../../scenarios/errors.ts';
import { ROOT } from '../../helpers/process.ts';

const side = (file: string): InPlaceSide => {
  const scenario = loadScenario(join(ROOT, 'test', 'fixtures', 'diff-netns', file));
  return { label: file, scenario, step: scenario.steps[scenario.steps.length - 1]! };
};

/** A copy of a side with one more pod (probing and probed by a on 8080/TCP). */
function withPod(s: InPlaceSide, name: string, labels: Record<string, string>): InPlaceSide {
  const a = s.scenario.pods[0]!;
  const pod: PodSpec = { ...a, id: `default/${name}`, name, short: name, labels };
  const cells = [a.id, pod.id].flatMap((from) =>
    [a.id, pod.id].filter((to) => to !== from).map((to) => ({ ...s.scenario.cells[0]!, key: `${from}>${to}@8080/TCP`, from, to })),
  );
  return { ...s, scenario: { ...s.scenario, pods: [...s.scenario.pods, pod], cells: [...s.scenario.cells, ...cells] } };
}

function computed(base: InPlaceSide, head: InPlaceSide) {
  const s = inPlaceScenario(base, head);
  const [b, h] = [base, head].map((x): DiffSide => ({ ...x, expectation: expectStep(x.scenario, x.step) }));
  return { scenario: withIntents(s, b!.expectation, h!.expectation), diff: diffSides(b!, h!) };
}

/**
 * The report of a run of `s` whose packets did what the policies say, except `observed` (per step,
 * cell key → allowed) and the cells in `notRun` (not observable here).
 */
function report(s: ResolvedScenario, observed: [Record<string, boolean>, Record<string, boolean>], notRun = new Map<string, string>()): ScenarioReportDoc {
  const r = emptyReport(s, true, true);
  r.steps = s.steps.map((st, i) => {
    const exp = expectStep(s, st);
    const keys = s.cells.map((c) => c.key);
    const values = new Map(exp.cells.map((c) => [c.cell.key, observed[i]![c.cell.key] ?? c.computed]));
    const cells = cellResults(exp, notRun, {
      observed: new Map(keys.map((k) => [k, { allowed: values.get(k)!, reason: 'ok', checkedAt: null, changedAt: null }])),
      fresh: new Set(keys),
      changedAfterMs: new Map(),
      convergedAfterMs: new Map(keys.map((k) => [k, 700])),
      droppedBy: new Map(),
    });
    return stepResult(exp, s.pods, cells, { settled: true, durationMs: 1000, budgetMs: 2500, lastFlipMs: null, observed: true });
  });
  r.outcome = scenarioOutcome(r);
  return r;
}

const AB = 'default/a>default/b@8080/TCP';
const AC = 'default/a>default/c@8080/TCP';
const BA = 'default/b>default/a@8080/TCP';

describe('inPlaceScenario: BASE then HEAD in place, as one scenario', () => {
  it("keeps the pods running: both sides' pods (HEAD's own from step 2 on), each step with its side's labels, judging its side's cells only", () => {
    const base = withPod(side('base.yaml'), 'x', { pod: 'x' });
    const head = withPod(side('head.yaml'), 'y', { pod: 'y' });
    const { scenario: s } = computed(base, head);
    expect(s.pods.map((p) => [p.id, p.fromStep ?? 0])).toEqual([
      ['default/a', 0],
      ['default/b', 0],
      ['default/c', 0],
      ['default/x', 0],
      ['default/y', 1],
    ]);
    expect(s.steps.map((st) => st.name)).toEqual(['base', 'head']);
    expect(s.steps.map((st) => st.podLabels['default/b'])).toEqual([{ pod: 'b', role: 'open' }, { pod: 'b' }]);
    expect(s.steps.map((st) => st.podLabels['default/c'])).toEqual([{ pod: 'c' }, { pod: 'c', role: 'open' }]);
    const [first, second] = s.steps.map((st) => expectStep(s, st));
    const judged = (e: typeof first) => new Set(e!.cells.filter((c) => c.expected !== null).map((c) => c.cell.key));
    expect(judged(first).has('default/a>default/x@8080/TCP')).toBe(true);
    expect(judged(first).has('default/a>default/y@8080/TCP')).toBe(false);
    expect(judged(second).has('default/a>default/x@8080/TCP')).toBe(false);
    expect(judged(second).has('default/a>default/y@8080/TCP')).toBe(true);
    // Each step judges its side's cells at that side's computed verdicts, and the combined scenario agrees.
    expect(first!.cells.find((c) => c.cell.key === AB)).toMatchObject({ intended: true, computed: true });
    expect(second!.cells.find((c) => c.cell.key === AB)).toMatchObject({ intended: false, computed: false });
    expect([...first!.mistakes, ...second!.mistakes]).toEqual([]);
  });

  it("relabels namespaces in place: each step has its side's namespace labels; a namespace of HEAD only is added", () => {
    const base = side('base.yaml');
    const head = side('head.yaml');
    const relabelled: InPlaceSide = {
      ...head,
      scenario: { ...head.scenario, namespaces: [...head.scenario.namespaces, { name: 'extra', labels: { 'kubernetes.io/metadata.name': 'extra' } }] },
      step: { ...head.step, namespaceLabels: { default: { 'kubernetes.io/metadata.name': 'default', team: 'web' } } },
    };
    const s = inPlaceScenario(base, relabelled);
    expect(s.namespaces.map((n) => n.name)).toEqual(['default', 'extra']);
    expect(s.steps.map((st) => st.namespaceLabels)).toEqual([
      { default: { 'kubernetes.io/metadata.name': 'default' } },
      { default: { 'kubernetes.io/metadata.name': 'default', team: 'web' }, extra: { 'kubernetes.io/metadata.name': 'extra' } },
    ]);
  });

  it('adds the ports HEAD adds to a pod; a pod that is another workload on HEAD, or a renamed port, is refused (bad input)', () => {
    const base = side('base.yaml');
    const head = side('head.yaml');
    const b = head.scenario.pods[1]!;
    const extra = { name: 'metrics', port: 9090, protocol: 'TCP' as const };
    const withPort = { ...head, scenario: { ...head.scenario, pods: head.scenario.pods.map((p) => (p === b ? { ...p, ports: [...p.ports, extra] } : p)) } };
    expect(inPlaceScenario(base, withPort).pods[1]!.ports).toEqual([...base.scenario.pods[1]!.ports, extra]);
    const other = { ...head, scenario: { ...head.scenario, pods: head.scenario.pods.map((p) => (p === b ? { ...p, kind: 'collector' as const } : p)) } };
    expect(() => inPlaceScenario(base, other)).toThrow(ScenarioError);
    expect(() => inPlaceScenario(base, other)).toThrow(
      /pod default\/b has kind "probe" on BASE and "collector" on HEAD: a different workload, which cannot be applied in place/,
    );
    const renamed = {
      ...head,
      scenario: { ...head.scenario, pods: head.scenario.pods.map((p) => (p === b ? { ...p, ports: p.ports.map((q) => ({ ...q, name: 'renamed' })) } : p)) },
    };
    expect(() => inPlaceScenario(base, renamed)).toThrow(/pod default\/b names port 8080\/TCP .* on BASE and "renamed" on HEAD/);
  });
});

describe('withObservation: the computed flips beside what the packets did', () => {
  it('packets as the policies say: each flip observed as computed with its convergence time; pass', () => {
    const { scenario: s, diff } = computed(side('base.yaml'), side('head.yaml'));
    const d = withObservation(diff, s, report(s, [{}, {}]));
    expect(d.observation).toMatchObject({ outcome: 'pass', counts: { flips: 2, asComputed: 2, notObserved: 0, faults: 0 }, faults: [] });
    expect(d.flips.map((f) => [f.key, f.observed])).toEqual([
      [AB, { before: true, after: false, status: 'as computed', convergedAfterMs: 700 }],
      [AC, { before: false, after: true, status: 'as computed', convergedAfterMs: 700 }],
    ]);
  });

  it('a flip the packets did not make, and a flip they made that the policies do not: one fault each, naming the cell; fail', () => {
    const { scenario: s, diff } = computed(side('base.yaml'), side('head.yaml'));
    const d = withObservation(diff, s, report(s, [{}, { [AB]: true, [BA]: true }]));
    expect(d.observation!.outcome).toBe('fail');
    expect(d.observation!.faults.map((f) => [f.key, f.kind, f.side])).toEqual([
      [AB, 'flip not made', 'both'],
      [BA, 'flip not computed', 'both'],
    ]);
    expect(d.flips.find((f) => f.key === AB)!.observed!.status).toBe('not made');
    const [ab, ba] = d.observation!.faults;
    expect(ab!.text).toMatch(
      /^flip not made: default\/a -> default\/b 8080\/TCP: the policies say allowed -> blocked, the packets were allowed at BASE and allowed at HEAD; at HEAD: computed != observed/,
    );
    expect(ba).toMatchObject({ computed: { before: false, after: false }, observed: { before: false, after: true } });
    expect(ba!.text).toMatch(
      /^flip not computed: default\/b -> default\/a 8080\/TCP: the packets were blocked at BASE and allowed at HEAD, the policies say blocked on both sides/,
    );
  });

  it('a cell observed otherwise at one side without flipping: not as computed at that side', () => {
    const { scenario: s, diff } = computed(side('base.yaml'), side('noop.yaml'));
    const d = withObservation(diff, s, report(s, [{ [BA]: true }, { [BA]: true }]));
    expect(d.observation!.faults.map((f) => [f.key, f.kind, f.side])).toEqual([[BA, 'not as computed', 'both']]);
    const only = withObservation(diff, s, report(s, [{}, { [AB]: false, [AC]: true }]));
    expect(only.observation!.faults.map((f) => [f.key, f.kind])).toEqual([
      [AB, 'flip not computed'],
      [AC, 'flip not computed'],
    ]);
  });

  it('a flip that cannot be observed here is not proven, never passed, and no fault', () => {
    const { scenario: s, diff } = computed(side('base.yaml'), side('head.yaml'));
    const d = withObservation(diff, s, report(s, [{}, {}], new Map([[AC, 'not run: the probe cannot check SCTP']])));
    expect(d.observation).toMatchObject({ outcome: 'not proven', counts: { asComputed: 1, notObserved: 1, faults: 0 } });
    expect(d.flips.find((f) => f.key === AC)!.observed).toMatchObject({ before: null, after: null, status: 'not observed' });
  });

  it('a run that observed nothing (refused, or an error) fails with the reason', () => {
    const { scenario: s, diff } = computed(side('base.yaml'), side('head.yaml'));
    const r = { ...emptyReport(s, true, true), outcome: 'fail' as const, error: 'deploy: no such image' };
    expect(withObservation(diff, s, r).observation).toMatchObject({
      outcome: 'fail',
      error: 'BASE and HEAD were not both observed: deploy: no such image',
      faults: [],
    });
  });
});
