// The JUnit XML report (`--report-junit`): per step, policy-writing mistakes and enforcement
// faults as separate test cases, one test suite per scenario.
import { plural } from '../../shared/plural.ts';
import { FAILING, failureLine, summaryLine } from './results.ts';
import { scenariosOf, type CellStatusName, type ReportDoc, type ScenarioReportDoc } from './schema.ts';
import { LEGEND } from './truth-table.ts';

/** Text safe in an XML attribute or element (JUnit reports). */
export const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/**
 * JUnit XML: per step one test case "<step>: observed = expected" and, when the step is
 * hand-written, one "<step>: intended = computed" before it, so CI shows a policy-writing mistake
 * and an enforcement fault as different failures. One test suite per scenario (a set has several).
 */
export function toJunit(doc: ReportDoc): string {
  const all = scenariosOf(doc);
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
    // Each intent is a test case of its own: a reviewer's statement passes or fails by name.
    for (const a of s.assertions ?? []) {
      const bad = a.cells.filter((c) => FAILING.includes(c.status as CellStatusName));
      if (bad.length > 0) failures++;
      const failure =
        bad.length > 0
          ? `\n      <failure message="${xml(`${a.statement}: ${plural(bad.length, 'cell')} failing`)}" type="${xml(bad[0]!.status)}">${xml(bad.map((c) => `${c.status}: ${c.from} -> ${c.to} ${c.port}/${c.protocol}`).join('\n'))}</failure>`
          : '';
      cases.push(`    <testcase classname="${cls}" name="${xml(`${s.name}: assert ${a.statement}`)}" time="0">${failure}\n    </testcase>`);
    }
    if (!s.observed || s.outcome === 'not run' || s.outcome === 'computed only') {
      skipped++;
      const why =
        s.outcome === 'computed only'
          ? `computed only: ${plural(s.counts.notProven, 'cell')} the policies block not proven (policies are not enforced here)`
          : !s.observed
            ? report.failure === 'intended != computed'
              ? 'the policies do not say what was intended'
              : (report.error ?? 'the run stopped')
            : (s.cells.find((c) => c.expected !== null && c.status === 'not run')?.observedReason ?? 'nothing judged could be observed').replace(
                /^not run: /,
                '',
              );
      cases.push(
        `    <testcase classname="${cls}" name="${xml(s.name)}: observed = expected" time="0">\n      <skipped message="${s.outcome === 'computed only' ? '' : 'not run: '}${xml(why)}"/>\n    </testcase>`,
      );
      continue;
    }
    const observedKinds: CellStatusName[] = ['computed != observed', 'dropped by another rule', 'not enforced', 'no value'];
    const bad = failing(observedKinds);
    if (bad.length > 0) failures++;
    const kind = observedKinds.find((k) => bad.some((c) => c.status === k)) ?? 'no value';
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
