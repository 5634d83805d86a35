// Scenario run results and their reports: JSON (everything) and JUnit XML (one test case per step,
// for CI systems), plus the text shown on the terminal.
import type { Comparison, Tables, Verdict } from './matrix.ts';

export interface EdgeResult {
  from: string;
  to: string;
  expected: Verdict | null;
  observed: Verdict | 'unknown';
  reason: string | null;
  /** Milliseconds from the step's policies being applied to this edge showing its final value; null if it never changed or never settled. */
  changedAfterMs: number | null;
}

export interface StepResult {
  name: string;
  description?: string;
  passed: boolean;
  /** Milliseconds until the observed matrix matched (or until the deadline when it never did). */
  durationMs: number;
  settled: boolean;
  comparison: Comparison;
  tables: Tables;
  edges: EdgeResult[];
}

export interface ScenarioResult {
  scenario: string;
  description?: string;
  isolated: boolean;
  startedAt: string;
  finishedAt: string;
  passed: boolean;
  steps: StepResult[];
  /** Set when the run could not be completed (deployment failed, orchestrator unreachable …). */
  error?: string;
}

export function toJson(result: ScenarioResult): string {
  return `${JSON.stringify(result, null, 2)}\n`;
}

/** One mismatching edge as text: `a -> b: expected allow, observed deny (refused)`. */
function mismatchLine(m: Comparison['mismatches'][number]): string {
  return `${m.from} -> ${m.to}: expected ${m.expected}, observed ${m.observed}${m.reason ? ` (${m.reason})` : ''}`;
}

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export function toJunit(result: ScenarioResult): string {
  const failures = result.steps.filter((s) => !s.passed).length + (result.error ? 1 : 0);
  const seconds = (ms: number) => (ms / 1000).toFixed(3);
  const total = (Date.parse(result.finishedAt) - Date.parse(result.startedAt)) || 0;
  const cases = result.steps.map((s) => {
    const body = [`${s.tables.summary}`, '', 'expected:', s.tables.expected, '', 'observed:', s.tables.observed, '', 'mismatches:', s.tables.mismatches].join('\n');
    const failure = s.passed
      ? ''
      : `\n      <failure message="${xml(s.tables.summary)}" type="mismatch">${xml(
          `${s.comparison.mismatches.map(mismatchLine).join('\n')}\n\n${body}`,
        )}</failure>`;
    return `    <testcase classname="starmap.scenario.${xml(result.scenario)}" name="${xml(s.name)}" time="${seconds(s.durationMs)}">${failure}\n      <system-out>${xml(body)}</system-out>\n    </testcase>`;
  });
  if (result.error) cases.push(`    <testcase classname="starmap.scenario.${xml(result.scenario)}" name="run" time="0"><error message="${xml(result.error)}"/></testcase>`);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="starmap" tests="${cases.length}" failures="${failures}" time="${seconds(total)}">`,
    `  <testsuite name="${xml(result.scenario)}" tests="${cases.length}" failures="${failures}" errors="0" skipped="0" timestamp="${result.startedAt}" time="${seconds(total)}">`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}

/** The terminal text for one finished step. */
export function stepText(index: number, step: StepResult): string {
  const side = (a: string, b: string, c: string) => {
    const la = a.split('\n');
    const lb = b.split('\n');
    const lc = c.split('\n');
    const wa = Math.max(...la.map((l) => l.length), 8);
    const wb = Math.max(...lb.map((l) => l.length), 8);
    const rows = Math.max(la.length, lb.length, lc.length);
    const out = [`${'expected'.padEnd(wa)}   ${'observed'.padEnd(wb)}   mismatches`];
    for (let i = 0; i < rows; i++) out.push(`${(la[i] ?? '').padEnd(wa)}   ${(lb[i] ?? '').padEnd(wb)}   ${lc[i] ?? ''}`.trimEnd());
    return out.join('\n');
  };
  const head = `step ${index + 1} ${step.name}: ${step.passed ? 'PASS' : 'FAIL'} (${step.settled ? `settled after ${(step.durationMs / 1000).toFixed(1)} s` : `not settled within ${(step.durationMs / 1000).toFixed(1)} s`})`;
  const mism = step.comparison.mismatches.map((m) => `  ${mismatchLine(m)}`);
  const timing = step.edges
    .filter((e) => e.changedAfterMs !== null)
    .map((e) => `${e.from}->${e.to} ${(e.changedAfterMs! / 1000).toFixed(1)}s`)
    .join(', ');
  return [head, side(step.tables.expected, step.tables.observed, step.tables.mismatches), step.tables.summary, ...mism, ...(timing ? [`changes showed after: ${timing}`] : [])].join('\n');
}
