// The truth tables of a step as monospace text: intended (when hand-written), computed and
// observed side by side, one set per port and protocol (or a single set when every pair has one
// cell, as in the stars demo). '.' allowed, 'X' blocked, '-' not judged or not checked, '?' no
// value, '~' not run; a '!' after a cell marks where it differs from the table before it.
import type { Cell, PodSpec } from '../model/resolve.ts';

export interface TableCell {
  cell: Cell;
  /** undefined: the step has no intended table. */
  intended?: boolean | null;
  computed: boolean | null;
  /** undefined: nothing observed yet (planning); 'not-run': cannot be observed here. */
  observed?: boolean | null | 'not-run';
  /** What the observation is judged against; null: not judged. */
  expected: boolean | null;
}

export const LEGEND = '. allowed  X blocked  - not judged  ? no value  ~ not run  ! differs from the table before';

const mark = (v: boolean | null | 'not-run' | undefined): string => (v === true ? '.' : v === false ? 'X' : v === null ? '?' : v === 'not-run' ? '~' : '-');

/** The cells of one port/protocol (title '80/TCP'), or of every port (title '') by `from>to`. */
export interface PortGroup<T> {
  title: string;
  cells: Map<string, T>;
}

type Where = Pick<Cell, 'from' | 'to' | 'port' | 'protocol'>;

/**
 * One group per port/protocol, ordered by port then TCP, UDP, SCTP, or one group when every
 * (source, destination) pair has a single cell (as in the stars demo).
 */
export function portGroups<T>(rows: readonly T[], where: (r: T) => Where): PortGroup<T>[] {
  const pair = (r: T) => `${where(r).from}>${where(r).to}`;
  const pairs = new Map<string, number>();
  for (const r of rows) pairs.set(pair(r), (pairs.get(pair(r)) ?? 0) + 1);
  if ([...pairs.values()].every((n) => n === 1)) return [{ title: '', cells: new Map(rows.map((r) => [pair(r), r])) }];
  const order = ['TCP', 'UDP', 'SCTP'];
  const title = (r: T) => `${where(r).port}/${where(r).protocol}`;
  const keys = [...new Set(rows.map(title))].sort((a, b) => {
    const [pa, xa] = a.split('/');
    const [pb, xb] = b.split('/');
    return Number(pa) - Number(pb) || order.indexOf(xa!) - order.indexOf(xb!);
  });
  return keys.map((k) => ({ title: k, cells: new Map(rows.filter((r) => title(r) === k).map((r) => [pair(r), r])) }));
}

function sideBySide(blocks: string[][], gap = 3): string[] {
  const widths = blocks.map((b) => Math.max(...b.map((l) => l.length)));
  const height = Math.max(...blocks.map((b) => b.length));
  const out: string[] = [];
  for (let i = 0; i < height; i++)
    out.push(
      blocks
        .map((b, j) => (b[i] ?? '').padEnd(j < blocks.length - 1 ? widths[j]! + gap : 0))
        .join('')
        .trimEnd(),
    );
  return out;
}

export function renderTables(pods: readonly PodSpec[], rows: readonly TableCell[]): string {
  if (rows.length === 0) return '(no cells)';
  const withIntended = rows.some((r) => r.intended !== undefined);
  const withObserved = rows.some((r) => r.observed !== undefined);
  const width = Math.max(2, ...pods.map((p) => p.short.length));
  const pad = (x: string) => x.padEnd(width);
  const out: string[] = [];
  // Ports and protocols a step does not judge at all only add noise (a k8s-e2e step judges one or two of four).
  const all = portGroups(rows, (r) => r.cell);
  const judged = all.filter((g) => [...g.cells.values()].some((r) => r.expected !== null));
  const shown = all.length > 1 && judged.length > 0 ? judged : all;
  if (shown.length < all.length)
    out.push(
      `(not judged, not shown: ${all
        .filter((g) => !shown.includes(g))
        .map((g) => g.title)
        .join(', ')})`,
    );
  for (const g of shown) {
    const sources = pods.filter((p) => [...g.cells.values()].some((r) => r.cell.from === p.id));
    const targets = pods.filter((p) => [...g.cells.values()].some((r) => r.cell.to === p.id));
    const table = (name: string, cell: (r: TableCell) => string): string[] => [
      name,
      [pad(''), ...targets.map((t) => pad(t.short))].join(' ').trimEnd(),
      ...sources.map((f) => [pad(f.short), ...targets.map((t) => pad(((r) => (r ? cell(r) : '-'))(g.cells.get(`${f.id}>${t.id}`))))].join(' ').trimEnd()),
    ];
    const blocks: string[][] = [];
    // In the intended table null means the step does not judge the cell.
    if (withIntended) blocks.push(table('intended', (r) => mark(r.intended ?? undefined)));
    blocks.push(
      table('computed', (r) => `${mark(r.computed)}${withIntended && r.intended != null && r.computed !== null && r.intended !== r.computed ? '!' : ''}`),
    );
    if (withObserved) {
      blocks.push(
        table('observed', (r) => {
          const differs = r.expected !== null && r.observed !== 'not-run' && r.observed !== r.expected;
          return `${mark(r.observed)}${differs ? '!' : ''}`;
        }),
      );
    }
    if (g.title) out.push(g.title);
    out.push(...sideBySide(blocks));
  }
  return out.join('\n');
}
