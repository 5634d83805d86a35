// Reachability truth tables, cyclonus/Kubernetes-e2e style: rows are sources, columns are
// destinations, '.' allowed, 'X' blocked, '?' no value, '-' not checked. Expected tables come from
// a scenario step; observed ones from the probes; comparing them gives the mismatch table.
import { shortName, type ScenarioDoc, type StepDoc } from './model.ts';

export type Verdict = 'allow' | 'deny';
export type Cell = '.' | 'X' | '?' | '-';

export interface Edge {
  from: string;
  to: string;
}

export const edgeKey = (from: string, to: string): string => `${from}->${to}`;

/** Every edge the scenario observes: probe → each of its targets, collector → each probe. */
export function scenarioEdges(s: ScenarioDoc): Edge[] {
  const edges: Edge[] = [];
  for (const a of s.apps) {
    const targets = a.kind === 'probe' ? a.probes : a.kind === 'collector' ? a.collects : [];
    for (const t of targets) edges.push({ from: a.name, to: t });
  }
  return edges;
}

/** Resolves a name as written in a table (app name or short label) to the app name. */
function resolver(s: ScenarioDoc): (name: string, where: string) => string {
  const byLabel = new Map<string, string>();
  for (const a of s.apps) {
    byLabel.set(a.name, a.name);
    byLabel.set(shortName(a), a.name);
  }
  return (name, where) => {
    const found = byLabel.get(name);
    if (!found) throw new Error(`${where}: unknown app "${name}" (known: ${[...new Set(byLabel.keys())].join(', ')})`);
    return found;
  };
}

/**
 * The expected verdict of every scenario edge in a step: from the matrix, then the edge list, then
 * the default. An edge with no expectation (a '-' cell, or not mentioned and no default) is left out.
 */
export function expectedVerdicts(s: ScenarioDoc, step: StepDoc, stepIndex: number): Map<string, Verdict> {
  const resolve = resolver(s);
  const edges = scenarioEdges(s);
  const known = new Set(edges.map((e) => edgeKey(e.from, e.to)));
  const out = new Map<string, Verdict>();
  if (step.expect.default) for (const k of known) out.set(k, step.expect.default);
  if (step.expect.matrix) {
    const lines = step.expect.matrix.split('\n').map((l) => l.trim()).filter(Boolean);
    if (lines.length < 2) throw new Error(`steps/${stepIndex}/expect/matrix: needs a header row and at least one row`);
    const rows = lines.slice(1).map((l) => l.split(/\s+/));
    const width = rows[0]!.length - 1;
    const header = lines[0]!.split(/\s+/);
    const columns = header.slice(header.length - width);
    if (header.length < width || header.length > width + 1) throw new Error(`steps/${stepIndex}/expect/matrix: the header has ${header.length} names for ${width} columns`);
    const colApps = columns.map((c) => resolve(c, `steps/${stepIndex}/expect/matrix header`));
    rows.forEach((cells, r) => {
      if (cells.length !== width + 1) throw new Error(`steps/${stepIndex}/expect/matrix row ${r + 1}: ${cells.length - 1} cells, expected ${width}`);
      const from = resolve(cells[0]!, `steps/${stepIndex}/expect/matrix row ${r + 1}`);
      cells.slice(1).forEach((cell, c) => {
        const key = edgeKey(from, colApps[c]!);
        if (cell === '-') {
          out.delete(key);
          return;
        }
        if (cell !== '.' && cell !== 'X') throw new Error(`steps/${stepIndex}/expect/matrix row ${r + 1}: cell "${cell}" is not '.', 'X' or '-'`);
        if (!known.has(key)) throw new Error(`steps/${stepIndex}/expect/matrix: ${cells[0]} → ${columns[c]} is not an edge of this scenario (use '-')`);
        out.set(key, cell === '.' ? 'allow' : 'deny');
      });
    });
  }
  step.expect.edges?.forEach((e, i) => {
    const key = edgeKey(resolve(e.from, `steps/${stepIndex}/expect/edges/${i}/from`), resolve(e.to, `steps/${stepIndex}/expect/edges/${i}/to`));
    if (!known.has(key)) throw new Error(`steps/${stepIndex}/expect/edges/${i}: ${e.from} → ${e.to} is not an edge of this scenario`);
    out.set(key, e.expect);
  });
  return out;
}

export interface Observation {
  verdict: Verdict | 'unknown';
  reason: string | null;
  /** When the observed value last changed (ISO), as reported by the probe. */
  changedAt: string | null;
}

export interface Comparison {
  correct: number;
  wrong: number;
  noValue: number;
  ignored: number;
  total: number;
  mismatches: { from: string; to: string; expected: Verdict; observed: Verdict | 'unknown'; reason: string | null }[];
}

export function compare(edges: Edge[], expected: Map<string, Verdict>, observed: Map<string, Observation>): Comparison {
  const result: Comparison = { correct: 0, wrong: 0, noValue: 0, ignored: 0, total: edges.length, mismatches: [] };
  for (const e of edges) {
    const key = edgeKey(e.from, e.to);
    const want = expected.get(key);
    const got = observed.get(key);
    if (!want) result.ignored++;
    else if (!got || got.verdict === 'unknown') {
      result.noValue++;
      result.mismatches.push({ ...e, expected: want, observed: 'unknown', reason: got?.reason ?? null });
    } else if (got.verdict === want) result.correct++;
    else {
      result.wrong++;
      result.mismatches.push({ ...e, expected: want, observed: got.verdict, reason: got.reason });
    }
  }
  return result;
}

const cellOf = (v: Verdict | 'unknown' | undefined): Cell => (v === 'allow' ? '.' : v === 'deny' ? 'X' : v === 'unknown' ? '?' : '-');

export interface Tables {
  expected: string;
  observed: string;
  mismatches: string;
  summary: string;
}

/** Renders the expected, observed and mismatch tables of a step as monospace text. */
export function renderTables(s: ScenarioDoc, expected: Map<string, Verdict>, observed: Map<string, Observation>, cmp: Comparison): Tables {
  const edges = scenarioEdges(s);
  const sources = s.apps.filter((a) => edges.some((e) => e.from === a.name));
  const targets = s.apps.filter((a) => edges.some((e) => e.to === a.name));
  const isEdge = new Set(edges.map((e) => edgeKey(e.from, e.to)));
  const table = (cell: (from: string, to: string) => string) => {
    // At least 2 wide, so that a mismatch mark ('.!') keeps the columns aligned.
    const width = Math.max(...s.apps.map((a) => shortName(a).length), 2);
    const pad = (x: string) => x.padEnd(width);
    const head = [pad(''), ...targets.map((t) => pad(shortName(t)))].join(' ');
    const rows = sources.map((f) => [pad(shortName(f)), ...targets.map((t) => pad(isEdge.has(edgeKey(f.name, t.name)) ? cell(f.name, t.name) : '-'))].join(' '));
    return [head, ...rows].map((l) => l.trimEnd()).join('\n');
  };
  const wrong = new Set(cmp.mismatches.map((m) => edgeKey(m.from, m.to)));
  return {
    expected: table((f, t) => cellOf(expected.get(edgeKey(f, t)))),
    observed: table((f, t) => cellOf(observed.get(edgeKey(f, t))?.verdict)),
    // Like cyclonus' "actual vs expected": '.' where they agree, the observed mark where they do not.
    mismatches: table((f, t) => {
      const key = edgeKey(f, t);
      if (!expected.has(key)) return '-';
      return wrong.has(key) ? `${cellOf(observed.get(key)?.verdict)}!` : '.';
    }),
    summary: `${cmp.wrong} wrong, ${cmp.noValue} no value, ${cmp.correct} correct, ${cmp.ignored} ignored out of ${cmp.total}`,
  };
}
