// Scenario results: the per-cell verdicts (pure) and the lines the terminal and every report say
// about them. The formats (json.ts, junit.ts, html.ts) render these results behind one signature
// (formats.ts). The two kinds of failure are
// kept apart and named everywhere: "intended != computed" (the policies do not say what the
// author meant) and "computed != observed" (the packets did not do what the policies say).
import type { CellExpectation, StepExpectation } from '../model/expect.ts';
import type { CellResultDoc, CellStatusName, EvidenceDoc, ScenarioReportDoc, StepResultDoc } from './schema.ts';
import { evidenceText, judgedStatus } from './evidence.ts';
import type { PodSpec } from '../model/resolve.ts';
import { renderTables, type TableCell } from './truth-table.ts';
import { plural } from '../../shared/plural.ts';
import { ruleCoverage } from '../model/coverage.ts';
import { assertionLines, assertionResults, ruleResults } from './intents.ts';

export type { CellResultDoc, ScenarioReportDoc, StepResultDoc };

/** What the packets did for one cell, as the agents reported it (run/observe.ts reads it). */
export interface Observation {
  /** null: no value yet (not checked, or the agent could not be read). */
  allowed: boolean | null;
  /** The agent's reason (ok, timeout, refused …) or why there is no value. */
  reason: string | null;
  /** When the check that gave this value started (ISO); a value counts for a step only when it started after the step applied. */
  checkedAt: string | null;
  /** When the value last flipped, as the probe saw it (ISO). */
  changedAt: string | null;
}

export interface StepObservation {
  observed: ReadonlyMap<string, Observation>;
  /** Cells checked since the step's policies applied. */
  fresh: ReadonlySet<string>;
  changedAfterMs: ReadonlyMap<string, number>;
  /** Cell key → ms from the step applying to its last flip to its final value (settle.ts). */
  convergedAfterMs?: ReadonlyMap<string, number>;
  droppedBy: ReadonlyMap<string, 'egress' | 'ingress' | 'both'>;
  /** Cell key → the evidence of a cell judged blocked (run/evidence.ts); absent: no counters were read. */
  evidence?: ReadonlyMap<string, EvidenceDoc>;
}

/**
 * Why a judged cell the policies block is 'not proven' on a run that cannot enforce them: the one
 * reason in `notRun` (run/steps.ts notRunCells) that makes the status 'not proven' instead of
 * 'not run', so that no such cell is ever shown as passed (issue 32).
 */
export const NOT_PROVEN_REASON =
  'not proven: the policies are not enforced here (no isolation), so nothing can be blocked; a run as root with nftables would prove it';

/** Every cell's verdicts; `notRun` says why a cell cannot be observed; no `obs`: the step was not run. */
export function cellResults(exp: StepExpectation, notRun: ReadonlyMap<string, string>, obs?: StepObservation): CellResultDoc[] {
  return exp.cells.map((c: CellExpectation): CellResultDoc => {
    const k = c.cell.key;
    const o = obs?.observed.get(k);
    const fresh = obs?.fresh.has(k) ?? false;
    const observed = notRun.has(k) || !fresh ? null : (o?.allowed ?? null);
    let status: CellStatusName;
    if (c.intended !== null && c.computed !== null && c.intended !== c.computed) status = 'intended != computed';
    else if (notRun.get(k) === NOT_PROVEN_REASON) status = 'not proven';
    else if (notRun.has(k) || !obs) status = 'not run';
    else if (c.expected === null) status = 'not judged';
    else if (observed === null) status = 'no value';
    else status = judgedStatus(c.expected, observed, obs?.evidence?.get(k));
    const evidence = obs?.evidence?.get(k);
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
      ...(c.chain ? { chain: c.chain } : {}),
      ...(c.orderDependsOn ? { orderDependsOn: c.orderDependsOn } : {}),
      observedReason:
        notRun.get(k) ??
        (!obs
          ? 'not run: the policies do not say what was intended'
          : !fresh && o
            ? `no check since the step applied (last: ${o.reason ?? 'none'})`
            : evidence?.verdict === 'counters unreadable'
              ? `${o?.reason ?? 'blocked'}; the drop counters could not be read, so nothing proves who dropped it`
              : (o?.reason ?? null)),
      droppedBy: observed === false ? (obs?.droppedBy.get(k) ?? null) : null,
      ...(evidence ? { evidence } : {}),
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
    otherRule: count('dropped by another rule'),
    notEnforced: count('not enforced'),
    noValue: count('no value'),
    notRun: count('not run'),
    notJudged: count('not judged'),
    notProven: count('not proven'),
  };
  const failure =
    counts.intendedNotComputed > 0
      ? 'intended != computed'
      : counts.computedNotObserved > 0
        ? 'computed != observed'
        : counts.otherRule > 0
          ? 'dropped by another rule'
          : counts.notEnforced > 0
            ? 'not enforced'
            : counts.noValue > 0
              ? 'no value'
              : null;
  // Nothing failed but nothing judged could be observed (or the step judges no cell at all, as the
  // cnp-conformance node-peer scenarios, whose checks are not modelled): neither passed nor failed.
  const judged = cells.filter((c) => c.expected !== null);
  // A judged cell that is not proven keeps the step from passing: its verdict is only computed.
  const outcome =
    failure !== null
      ? 'fail'
      : counts.notProven > 0 && run.observed
        ? 'computed only'
        : !run.observed || judged.every((c) => c.status === 'not run')
          ? 'not run'
          : 'pass';
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
    policies: [...exp.step.policies.map((p) => `${p.metadata.namespace}/${p.metadata.name}`), ...(exp.step.clusterPolicies ?? []).map((p) => p.id)],
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
    ...(exp.step.assertions?.length ? { assertions: assertionResults(exp.step.assertions, cells) } : {}),
    rules: ruleResults(ruleCoverage(exp)),
  };
}

/** The statuses that fail a step, in the order their failure kinds are named. */
export const FAILING: readonly CellStatusName[] = ['intended != computed', 'computed != observed', 'dropped by another rule', 'not enforced', 'no value'];

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
  if ((c.status === 'dropped by another rule' || c.status === 'not enforced') && c.evidence)
    return `${c.status}: ${cellName(c)}: ${evidenceText(c.evidence, c.observed)}`;
  return `no value: ${cellName(c)}: expected ${word(c.expected)}, nothing observed (${c.observedReason ?? 'no check'})`;
}

/** The destinations and ports a step judges blocked that no cell of the step was observed reaching ("pod port/PROTO"). */
export function noPositiveControl(s: StepResultDoc): string[] {
  return [...new Set(s.cells.filter((c) => c.evidence && c.evidence.positiveControl === null).map((c) => `${c.to} ${c.port}/${c.protocol}`))].sort();
}

export function summaryLine(s: StepResultDoc): string {
  const n = s.counts;
  const parts = [`${n.pass} as expected`];
  if (n.intendedNotComputed) parts.push(`${n.intendedNotComputed} intended != computed`);
  if (n.computedNotObserved) parts.push(`${n.computedNotObserved} computed != observed`);
  if (n.otherRule) parts.push(`${n.otherRule} dropped by another rule`);
  if (n.notEnforced) parts.push(`${n.notEnforced} not enforced`);
  if (n.noValue) parts.push(`${n.noValue} no value`);
  if (n.notRun) parts.push(`${n.notRun} not run`);
  if (n.notJudged) parts.push(`${n.notJudged} not judged`);
  if (n.notProven) parts.push(`${n.notProven} not proven (blocked by the policies, not enforced here)`);
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
      : s.outcome === 'computed only'
        ? `COMPUTED ONLY: ${plural(s.counts.notProven, 'cell')} the policies block not proven (not enforced here)`
        : s.outcome === 'not run'
          ? 'NOT RUN: nothing it judges could be observed here'
          : `FAIL: ${s.failure}${s.failure === 'intended != computed' ? ' (a policy-writing mistake)' : s.failure === 'computed != observed' || s.failure === 'dropped by another rule' || s.failure === 'not enforced' ? ' (an enforcement fault)' : ''}`;
  const failing = s.cells.filter((c) => FAILING.includes(c.status));
  const lines = failing.slice(0, maxLines).map((c) => `  ${failureLine(c)}`);
  if (failing.length > maxLines) lines.push(`  … and ${failing.length - maxLines} more (see the JSON report)`);
  const flips = s.cells.filter((c) => c.changedAfterMs !== null);
  const flipText =
    flips.length > 0
      ? `changes showed after: ${flips.length <= 6 ? flips.map((c) => `${c.from}->${c.to} ${c.port}/${c.protocol} ${secs(c.changedAfterMs!)}`).join(', ') : `${plural(flips.length, 'cell')}, the last after ${secs(Math.max(...flips.map((c) => c.changedAfterMs!)))}`}`
      : '';
  const uncontrolled = noPositiveControl(s);
  if (uncontrolled.length > 0)
    lines.push(
      `no positive control: ${uncontrolled.join(', ')} (nothing reached ${uncontrolled.length === 1 ? 'it' : 'them'} in this step; a dead server looks exactly like a policy drop)`,
    );
  return [
    `step ${s.index + 1}/${total} ${s.name}: ${verdict} (${timing})`,
    s.tables,
    summaryLine(s),
    ...lines,
    ...(flipText ? [flipText] : []),
    ...assertionLines(s.assertions ?? [], s.observed),
  ].join('\n');
}

/** A scenario's one-line summary: its outcome, how many steps went as expected, and why not. */
export function scenarioSummaryLine(r: ScenarioReportDoc, total: number): string {
  const passed = r.failure === 'intended != computed' ? 0 : r.steps.filter((s) => s.passed).length;
  // A stopped run is no failure of what it checks: say how far it got (and a failure it saw).
  if (r.error?.startsWith('stopped ')) {
    const ran = r.steps.length;
    if (r.outcome === 'fail') return `${r.scenario}: FAIL: ${passed} of ${ran} steps run as expected (${r.failure}); then ${r.error}`;
    return `${r.scenario}: ${r.error}${ran === 0 ? '' : passed === ran ? ` (${ran === 1 ? 'it' : 'all'} as expected)` : ` (${passed} as expected)`}`;
  }
  if (r.error?.startsWith('not run: stopped ')) return `${r.scenario}: ${r.error.replace(/^not run: /, '')}, not run`;
  const notRun = r.steps.filter((s) => s.observed && s.outcome === 'not run').length;
  const why =
    r.failure === 'intended != computed'
      ? ' (intended != computed: a policy-writing mistake, nothing observed)'
      : r.failure === 'computed != observed' || r.failure === 'dropped by another rule' || r.failure === 'not enforced'
        ? ` (${r.failure}: an enforcement fault)`
        : '';
  const word = r.outcome === 'pass' ? 'PASS' : r.outcome === 'not run' ? 'NOT RUN' : r.outcome === 'computed only' ? 'COMPUTED ONLY' : 'FAIL';
  const notProven = r.steps.reduce((n, st) => n + st.counts.notProven, 0);
  const computedOnly = r.steps.filter((st) => st.outcome === 'computed only').length;
  return `${r.scenario}: ${word}: ${passed} of ${total} steps as expected${computedOnly ? `, ${computedOnly} computed only` : ''}${notRun ? `, ${notRun} not run (nothing they judge could be observed here)` : ''}${why}${r.error ? ` (${r.error})` : ''}${notProven ? `; ${plural(notProven, 'cell')} the policies block not proven: policies are not enforced here (no isolation); a run as root with nftables would prove them` : ''}`;
}
