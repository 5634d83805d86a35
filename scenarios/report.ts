// Scenario results and their reports: the per-cell verdicts (pure), the JSON report (everything,
// schema in report-schema.ts), the JUnit XML report (per step, policy-writing mistakes and
// enforcement faults as separate test cases) and the terminal text. The two kinds of failure are
// kept apart and named everywhere: "intended != computed" (the policies do not say what the
// author meant) and "computed != observed" (the packets did not do what the policies say).
import type { CellExpectation, StepExpectation } from './expect.ts';
import type { Observation } from './observe.ts';
import type { CellResultDoc, CellStatusName, ScenarioReportDoc, SetReportDoc, StepResultDoc } from './report-schema.ts';
import type { PodSpec } from './resolve.ts';
import { LEGEND, renderTables, type TableCell } from './tables.ts';
import { plural } from './plural.ts';

export type { CellResultDoc, ScenarioReportDoc, StepResultDoc };

export interface StepObservation {
  observed: ReadonlyMap<string, Observation>;
  /** Cells checked since the step's policies applied. */
  fresh: ReadonlySet<string>;
  changedAfterMs: ReadonlyMap<string, number>;
  /** Cell key → ms from the step applying to its last flip to its final value (settle.ts). */
  convergedAfterMs?: ReadonlyMap<string, number>;
  droppedBy: ReadonlyMap<string, 'egress' | 'ingress' | 'both'>;
}

/** Every cell's verdicts; `notRun` says why a cell cannot be observed; no `obs`: the step was not run. */
export function cellResults(exp: StepExpectation, notRun: ReadonlyMap<string, string>, obs?: StepObservation): CellResultDoc[] {
  return exp.cells.map((c: CellExpectation): CellResultDoc => {
    const k = c.cell.key;
    const o = obs?.observed.get(k);
    const fresh = obs?.fresh.has(k) ?? false;
    const observed = notRun.has(k) || !fresh ? null : (o?.allowed ?? null);
    let status: CellStatusName;
    if (c.intended !== null && c.computed !== null && c.intended !== c.computed) status = 'intended != computed';
    else if (notRun.has(k) || !obs) status = 'not run';
    else if (c.expected === null) status = 'not judged';
    else if (observed === null) status = 'no value';
    else status = observed === c.expected ? 'pass' : 'computed != observed';
    return {
      from: c.cell.from,
      to: c.cell.to,
      port: c.cell.port,
      protocol: c.cell.protocol,
      expected: c.expected,
      observed,
      reason: c.reason,
      intended: c.intended,
      computed: c.computed,
      status,
      evaluation: { egress: c.verdict.egress, ingress: c.verdict.ingress },
      observedReason:
        notRun.get(k) ??
        (!obs
          ? 'not run: the policies do not say what was intended'
          : !fresh && o
            ? `no check since the step applied (last: ${o.reason ?? 'none'})`
            : (o?.reason ?? null)),
      droppedBy: observed === false ? (obs?.droppedBy.get(k) ?? null) : null,
      changedAfterMs: obs?.changedAfterMs.get(k) ?? null,
      ...(obs?.convergedAfterMs ? { convergedAfterMs: observed === null ? null : (obs.convergedAfterMs.get(k) ?? null) } : {}),
    };
  });
}

export function stepResult(
  exp: StepExpectation,
  pods: readonly PodSpec[],
  cells: CellResultDoc[],
  run: { settled: boolean | null; durationMs: number | null; budgetMs: number; applyMs?: number; lastFlipMs: number | null; observed: boolean },
): StepResultDoc {
  const count = (s: CellStatusName) => cells.filter((c) => c.status === s).length;
  const counts = {
    cells: cells.length,
    pass: count('pass'),
    intendedNotComputed: count('intended != computed'),
    computedNotObserved: count('computed != observed'),
    noValue: count('no value'),
    notRun: count('not run'),
    notJudged: count('not judged'),
  };
  const failure =
    counts.intendedNotComputed > 0 ? 'intended != computed' : counts.computedNotObserved > 0 ? 'computed != observed' : counts.noValue > 0 ? 'no value' : null;
  // Nothing failed but nothing judged could be observed: neither passed nor failed.
  const judged = cells.filter((c) => c.expected !== null);
  const outcome = failure !== null ? 'fail' : !run.observed || (judged.length > 0 && judged.every((c) => c.status === 'not run')) ? 'not run' : 'pass';
  const hand = exp.step.intended !== null;
  const table = exp.cells.map((c, i): TableCell => {
    const r = cells[i]!;
    return {
      cell: c.cell,
      ...(hand ? { intended: c.intended } : {}),
      computed: c.computed,
      ...(run.observed ? { observed: r.status === 'not run' ? ('not-run' as const) : r.observed } : {}),
      expected: c.expected,
    };
  });
  return {
    index: exp.step.index,
    name: exp.step.name,
    ...(exp.step.description ? { description: exp.step.description } : {}),
    policies: exp.step.policies.map((p) => `${p.metadata.namespace}/${p.metadata.name}`),
    expectation: hand ? 'intended' : 'computed',
    outcome,
    passed: outcome === 'pass',
    failure,
    observed: run.observed,
    settled: run.settled,
    durationMs: run.durationMs,
    budgetMs: run.budgetMs,
    applyMs: run.applyMs ?? null,
    lastFlipMs: run.lastFlipMs,
    counts,
    cells,
    tables: renderTables(pods, table),
  };
}

const word = (v: boolean | null) => (v === true ? 'allowed' : v === false ? 'blocked' : 'no value');
const cellName = (c: CellResultDoc) => `${c.from} -> ${c.to} ${c.port}/${c.protocol}`;

/** One failing cell in words, naming the kind of failure and the evaluator's reason (the rule). */
export function failureLine(c: CellResultDoc): string {
  if (c.status === 'intended != computed')
    return `intended != computed: ${cellName(c)}: intended ${word(c.intended)}, the policies say ${word(c.computed)} (${c.reason})`;
  if (c.status === 'computed != observed') {
    const why = [
      c.observedReason,
      c.droppedBy ? `dropped by ${c.droppedBy === 'both' ? 'both sides' : c.droppedBy === 'egress' ? `${c.from}'s egress` : `${c.to}'s ingress`}` : null,
    ]
      .filter(Boolean)
      .join('; ');
    return `computed != observed: ${cellName(c)}: expected ${word(c.expected)}, observed ${word(c.observed)}${why ? ` (${why})` : ''}; ${c.reason}`;
  }
  return `no value: ${cellName(c)}: expected ${word(c.expected)}, nothing observed (${c.observedReason ?? 'no check'})`;
}

export function summaryLine(s: StepResultDoc): string {
  const n = s.counts;
  const parts = [`${n.pass} as expected`];
  if (n.intendedNotComputed) parts.push(`${n.intendedNotComputed} intended != computed`);
  if (n.computedNotObserved) parts.push(`${n.computedNotObserved} computed != observed`);
  if (n.noValue) parts.push(`${n.noValue} no value`);
  if (n.notRun) parts.push(`${n.notRun} not run`);
  if (n.notJudged) parts.push(`${n.notJudged} not judged`);
  return `${plural(n.cells, 'cell')}: ${parts.join(', ')}`;
}

/** The terminal text for one finished (or refused) step. */
export function stepText(s: StepResultDoc, total: number, maxLines = 20): string {
  const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const timing = !s.observed
    ? 'not run'
    : s.settled
      ? `settled after ${secs(s.durationMs ?? 0)}${(s.durationMs ?? 0) > s.budgetMs ? `, over the ${secs(s.budgetMs)} budget` : ''}`
      : `not settled within ${secs(s.durationMs ?? 0)}`;
  const verdict =
    s.outcome === 'pass'
      ? 'PASS'
      : s.outcome === 'not run'
        ? 'NOT RUN: nothing it judges could be observed here'
        : `FAIL: ${s.failure}${s.failure === 'intended != computed' ? ' (a policy-writing mistake)' : s.failure === 'computed != observed' ? ' (an enforcement fault)' : ''}`;
  const failing = s.cells.filter((c) => c.status === 'intended != computed' || c.status === 'computed != observed' || c.status === 'no value');
  const lines = failing.slice(0, maxLines).map((c) => `  ${failureLine(c)}`);
  if (failing.length > maxLines) lines.push(`  … and ${failing.length - maxLines} more (see the JSON report)`);
  const flips = s.cells.filter((c) => c.changedAfterMs !== null);
  const flipText =
    flips.length > 0
      ? `changes showed after: ${flips.length <= 6 ? flips.map((c) => `${c.from}->${c.to} ${c.port}/${c.protocol} ${secs(c.changedAfterMs!)}`).join(', ') : `${plural(flips.length, 'cell')}, the last after ${secs(Math.max(...flips.map((c) => c.changedAfterMs!)))}`}`
      : '';
  return [`step ${s.index + 1}/${total} ${s.name}: ${verdict} (${timing})`, s.tables, summaryLine(s), ...lines, ...(flipText ? [flipText] : [])].join('\n');
}

export function toJson(report: ScenarioReportDoc | SetReportDoc): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/**
 * JUnit XML: per step one test case "<step>: observed = expected" and, when the step is
 * hand-written, one "<step>: intended = computed" before it, so CI shows a policy-writing mistake
 * and an enforcement fault as different failures. One test suite per scenario (a set has several).
 */
export function toJunit(reports: ScenarioReportDoc | ScenarioReportDoc[]): string {
  const all = Array.isArray(reports) ? reports : [reports];
  const seconds = (ms: number) => (ms / 1000).toFixed(3);
  const suites = all.map(junitSuite);
  const tests = suites.reduce((a, x) => a + x.tests, 0);
  const failures = suites.reduce((a, x) => a + x.failures, 0);
  const total = all.reduce((a, r) => a + (Date.parse(r.finishedAt) - Date.parse(r.startedAt) || 0), 0);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="starmap" tests="${tests}" failures="${failures}" time="${seconds(total)}">`,
    ...suites.map((x) => x.xml),
    '</testsuites>',
    '',
  ].join('\n');
}

function junitSuite(report: ScenarioReportDoc): { xml: string; tests: number; failures: number } {
  const seconds = (ms: number) => (ms / 1000).toFixed(3);
  const total = Date.parse(report.finishedAt) - Date.parse(report.startedAt) || 0;
  const cls = `starmap.scenario.${xml(report.scenario)}`;
  const cases: string[] = [];
  let failures = 0;
  let skipped = 0;
  for (const s of report.steps) {
    const body = xml(`${summaryLine(s)}\n\n${LEGEND}\n${s.tables}`);
    const failing = (status: CellStatusName[]) => s.cells.filter((c) => status.includes(c.status));
    if (s.expectation === 'intended') {
      const bad = failing(['intended != computed']);
      if (bad.length > 0) failures++;
      const failure =
        bad.length > 0
          ? `\n      <failure message="intended != computed at ${plural(bad.length, 'cell')} (a policy-writing mistake)" type="intended != computed">${xml(bad.map(failureLine).join('\n'))}</failure>`
          : '';
      cases.push(`    <testcase classname="${cls}" name="${xml(s.name)}: intended = computed" time="0">${failure}\n    </testcase>`);
    }
    if (!s.observed || s.outcome === 'not run') {
      skipped++;
      const why = !s.observed
        ? report.failure === 'intended != computed'
          ? 'the policies do not say what was intended'
          : (report.error ?? 'the run stopped')
        : (s.cells.find((c) => c.expected !== null && c.status === 'not run')?.observedReason ?? 'nothing judged could be observed').replace(/^not run: /, '');
      cases.push(
        `    <testcase classname="${cls}" name="${xml(s.name)}: observed = expected" time="0">\n      <skipped message="not run: ${xml(why)}"/>\n    </testcase>`,
      );
      continue;
    }
    const bad = failing(['computed != observed', 'no value']);
    if (bad.length > 0) failures++;
    const kind = bad.some((c) => c.status === 'computed != observed') ? 'computed != observed' : 'no value';
    const failure =
      bad.length > 0
        ? `\n      <failure message="${kind} at ${plural(bad.length, 'cell')}${kind === 'computed != observed' ? ' (an enforcement fault)' : ''}" type="${kind}">${xml(bad.map(failureLine).join('\n'))}\n\n${body}</failure>`
        : '';
    cases.push(
      `    <testcase classname="${cls}" name="${xml(s.name)}: observed = expected" time="${seconds(s.durationMs ?? 0)}">${failure}\n      <system-out>${body}</system-out>\n    </testcase>`,
    );
  }
  if (report.error) {
    failures++;
    cases.push(`    <testcase classname="${cls}" name="run" time="0"><error message="${xml(report.error)}"/></testcase>`);
  }
  return {
    tests: cases.length,
    failures,
    xml: [
      `  <testsuite name="${xml(report.scenario)}" tests="${cases.length}" failures="${failures}" errors="0" skipped="${skipped}" timestamp="${report.startedAt}" time="${seconds(total)}">`,
      ...cases,
      '  </testsuite>',
    ].join('\n'),
  };
}
