// Intents and rule coverage in a step's results: each assertion judged from the cells behind it
// (it fails when one of them fails), each rule with the cells it allowed, and the lines the
// terminal and `scenario check` say about them. Pure.
import type { StepAssertion } from '../model/assertions.ts';
import type { RuleCoverage } from '../model/coverage.ts';
import { plural } from '../../shared/plural.ts';
import type { AssertionResultDoc, RuleCoverageDoc } from './intent-schema.ts';
import type { CellResultDoc } from './schema.ts';

export type { AssertionResultDoc, RuleCoverageDoc };

const FAILED = new Set(['intended != computed', 'computed != observed', 'no value']);
const keyOf = (c: Pick<CellResultDoc, 'from' | 'to' | 'port' | 'protocol'>) => `${c.from}>${c.to}@${c.port}/${c.protocol}`;
const nameOf = (key: string) => {
  const m = /^(.*)>(.*)@(\d+\/[A-Z]+)$/.exec(key);
  return m ? `${m[1]} -> ${m[2]} ${m[3]}` : key;
};

export function assertionResults(assertions: readonly StepAssertion[], cells: readonly CellResultDoc[]): AssertionResultDoc[] {
  const byKey = new Map(cells.map((c) => [keyOf(c), c]));
  return assertions.map((a) => {
    const mine = a.cells.map((k) => byKey.get(k)).filter((c): c is CellResultDoc => c !== undefined);
    const outcome = mine.some((c) => FAILED.has(c.status)) ? 'fail' : mine.every((c) => c.status === 'pass') ? 'pass' : 'not run';
    return {
      statement: a.statement,
      source: a.source,
      verdict: a.verdict,
      outcome,
      policiesAgree: mine.every((c) => c.computed === null || c.computed === c.intended),
      cells: mine.map((c) => ({ from: c.from, to: c.to, port: c.port, protocol: c.protocol, status: c.status })),
    };
  });
}

export const ruleResults = (rules: readonly RuleCoverage[]): RuleCoverageDoc[] =>
  rules.map((r) => ({
    policy: r.policy,
    direction: r.direction,
    rule: r.rule,
    cells: r.cells.map(nameOf),
    pending: r.pending.map(nameOf),
    peers: r.peers.map((p) => ({ peer: p.peer, cells: p.cells.map(nameOf) })),
    ...(r.dead ? { dead: r.dead } : {}),
  }));

/**
 * One line per assertion; `observed` false (scenario check): PASS means the policies say what it
 * intends. A failing one names its failing cells (up to `maxCells`).
 */
export function assertionLines(results: readonly AssertionResultDoc[], observed: boolean, maxCells = 5): string[] {
  return results.flatMap((a) => {
    const failing = a.cells.filter((c) => FAILED.has(c.status));
    const word = failing.length > 0 ? 'FAIL' : observed ? (a.outcome === 'pass' ? 'PASS' : 'NOT RUN') : 'PASS';
    const head = `  assert ${word}: ${a.statement} (${plural(a.cells.length, 'cell')}${failing.length ? `, ${failing.length} failing` : ''}; ${a.source})`;
    const shown = failing.slice(0, maxCells).map((c) => `    ${c.status}: ${c.from} -> ${c.to} ${c.port}/${c.protocol}`);
    if (failing.length > maxCells) shown.push(`    … and ${failing.length - maxCells} more`);
    return [head, ...shown];
  });
}

/** The rules, one line each: how many cells exercise it (a few named), or why it is dead. */
export function ruleLines(rules: readonly RuleCoverageDoc[], maxNamed = 2): string[] {
  if (rules.length === 0) return [];
  const dead = rules.filter((r) => r.dead);
  const name = (r: RuleCoverageDoc) => `${r.policy} ${r.direction}[${r.rule}]`;
  const lines = rules.map((r) => {
    if (r.dead) return `  ${name(r)}: ${r.dead}`;
    const named = r.cells.slice(0, maxNamed).join(', ') + (r.cells.length > maxNamed ? ', …' : '');
    const deadPeers = r.peers.filter((p) => p.cells.length === 0).map((p) => `${r.direction === 'ingress' ? 'from' : 'to'}[${p.peer}]`);
    return `  ${name(r)}: ${plural(r.cells.length, 'cell')}${named ? ` (${named})` : ''}${r.pending.length ? `, ${r.pending.length} pending addresses` : ''}${deadPeers.length ? `; dead peer ${deadPeers.join(', ')}: matches no cell the rule allows` : ''}`;
  });
  return [`rules: ${plural(rules.length, 'rule')}${dead.length ? `, ${dead.length} dead` : ', none dead'}`, ...lines];
}
