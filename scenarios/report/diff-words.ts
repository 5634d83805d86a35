// The words every diff format uses for a flip, a cause and a summary, so the terminal, the
// pull-request comment and JUnit say the same thing.
import { plural } from '../../shared/plural.ts';
import type { Cause, CellSide, Flip, OneSidedCell, ScenarioDiff } from '../model/diff-schema.ts';

export const verdictWord = (v: boolean | null): string => (v === true ? 'allowed' : v === false ? 'blocked' : 'undecided');

export const cellName = (c: Pick<Flip, 'from' | 'to' | 'port' | 'protocol'>): string => `${c.from} -> ${c.to} ${c.port}/${c.protocol}`;

export const flipWords = (f: Flip): string => `${verdictWord(f.before.allowed)} -> ${verdictWord(f.after.allowed)}`;

/** `policy edited shop/allow-web (ingress rule 0)` */
export function causeText(c: Cause): string {
  return `${c.kind} ${c.subject}${c.detail.length > 0 ? ` (${c.detail.join(', ')})` : ''}`;
}

export const sideText = (s: CellSide): string => `${verdictWord(s.allowed)}: ${s.reason}`;

/** The summary line: `2 flips (1 opened, 1 closed), 3 cells added, 0 removed, of 40 cells`. */
export function summaryText(d: ScenarioDiff): string {
  const c = d.counts;
  const flips = c.flips === 0 ? 'no flips' : `${plural(c.flips, 'flip')} (${c.opened} opened, ${c.closed} closed)`;
  const extra = [
    ...(c.added ? [`${plural(c.added, 'cell')} added`] : []),
    ...(c.removed ? [`${plural(c.removed, 'cell')} removed`] : []),
    ...(c.undecided ? [`${plural(c.undecided, 'cell')} undecided`] : []),
  ];
  return `${flips}${extra.length ? `, ${extra.join(', ')}` : ''}, of ${plural(c.cells, 'cell')}`;
}

/** One-sided cells grouped by their cause, in the order the causes were found. */
export function oneSidedByCause(d: ScenarioDiff, cells: readonly OneSidedCell[]): { cause: Cause; cells: OneSidedCell[] }[] {
  const groups = new Map<number, OneSidedCell[]>();
  for (const c of cells) {
    const g = groups.get(c.cause);
    if (g) g.push(c);
    else groups.set(c.cause, [c]);
  }
  return [...groups.entries()].sort(([a], [b]) => a - b).map(([i, list]) => ({ cause: d.causes[i]!, cells: list }));
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A flip on packets: `observed allowed -> blocked (as computed, converged after 1.2 s)`; undefined when not run on packets. */
export function observedWords(f: Flip): string | undefined {
  const o = f.observed;
  if (!o) return undefined;
  // A convergence time is the flip's only where the packets made it.
  const conv = o.convergedAfterMs === null || o.status !== 'as computed' ? '' : `, converged after ${secs(o.convergedAfterMs)}`;
  return `observed ${verdictWord(o.before).replace('undecided', 'nothing')} -> ${verdictWord(o.after).replace('undecided', 'nothing')} (${o.status}${conv})`;
}

/** The observation in one line: `on packets: PASS: 2 of 2 flips observed as computed, no fault`. */
export function observationText(d: ScenarioDiff): string | undefined {
  const o = d.observation;
  if (!o) return undefined;
  const c = o.counts;
  const parts = [
    `${c.asComputed} of ${plural(c.flips, 'flip')} observed as computed`,
    ...(c.notObserved ? [`${c.notObserved} not observable here`] : []),
    c.faults === 0 ? 'no enforcement fault' : plural(c.faults, 'enforcement fault'),
  ];
  return `on packets (isolation ${o.isolation}, HEAD applied in place): ${o.outcome.toUpperCase()}: ${parts.join(', ')}${o.error ? `; ${o.error}` : ''}`;
}
