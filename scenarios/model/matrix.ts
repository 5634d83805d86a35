// Hand-written expectations, cyclonus / Kubernetes-e2e style truth tables: rows are sources,
// columns destinations, '.' allowed, 'X' blocked, '-' not judged. A step gives them per port and
// protocol ("80/TCP": matrix) and/or for every port of a pair (matrix, edges, default). Pure.
import type { Protocol } from '../../shared/netpol/types.ts';
import type { Cell, PodSpec } from './resolve.ts';
import { nearest, nearestText } from './nearest.ts';
import { plural } from '../../shared/plural.ts';
import { PORT_KEY, type ExpectationDoc } from './schema.ts';

/** Resolves the names a file uses for pods: `ns/pod`, a pod name (same namespace first, else unique), or a short label. */
export class PodNames {
  readonly #ids = new Set<string>();
  readonly #byShort = new Map<string, string>();
  readonly #byName = new Map<string, string[]>();
  constructor(pods: readonly PodSpec[]) {
    for (const p of pods) {
      this.#ids.add(p.id);
      this.#byShort.set(p.short, p.id);
      this.#byName.set(p.name, [...(this.#byName.get(p.name) ?? []), p.id]);
    }
  }
  resolve(name: string, fromNamespace?: string): string | undefined {
    if (this.#ids.has(name)) return name;
    if (fromNamespace && this.#ids.has(`${fromNamespace}/${name}`)) return `${fromNamespace}/${name}`;
    const short = this.#byShort.get(name);
    if (short) return short;
    const named = this.#byName.get(name);
    return named?.length === 1 ? named[0] : undefined;
  }
  /** resolve(), or an error that says why not. */
  must(name: string, where: string): string {
    const id = this.resolve(name);
    if (id) return id;
    const named = this.#byName.get(name);
    throw new Error(named ? `${where}: "${name}" is ambiguous (${named.join(', ')}); write namespace/pod` : `${where}: ${this.unknown(name)}`);
  }
  /** 'unknown pod "shop/wbe" (nearest: shop/web)': the pods a typo may have meant, else the pods there are. */
  unknown(name: string): string {
    const near = nearest(name, [...this.#ids, ...this.#byShort.keys(), ...this.#byName.keys()]);
    return `unknown pod ${JSON.stringify(name)}${near.length > 0 ? ` (nearest: ${near.join(', ')})` : nearestText(name, [...this.#ids])}`;
  }
}

interface MatrixCell {
  from: string;
  to: string;
  /** true allowed, false blocked, null not judged ('-'). */
  value: boolean | null;
}

/** Reads one truth table; names are resolved, cells checked. */
export function parseMatrix(text: string, names: PodNames, where: string): MatrixCell[] {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines.length < 2) throw new Error(`${where}: needs a header row and at least one row`);
  const rows = lines.slice(1).map((l) => l.split(/\s+/));
  const width = rows[0]!.length - 1;
  const header = lines[0]!.split(/\s+/);
  // The header may start with a corner token ('.', '-', or anything), as the e2e tests print it.
  if (header.length < width || header.length > width + 1) throw new Error(`${where}: the header has ${header.length} names for ${width} columns`);
  const columns = header.slice(header.length - width).map((c) => names.must(c, `${where} header`));
  const out: MatrixCell[] = [];
  rows.forEach((cells, r) => {
    if (cells.length !== width + 1) throw new Error(`${where} row ${r + 1}: ${plural(cells.length - 1, 'cell')}, expected ${width}`);
    const from = names.must(cells[0]!, `${where} row ${r + 1}`);
    cells.slice(1).forEach((cell, c) => {
      if (cell !== '.' && cell !== 'X' && cell !== '-') throw new Error(`${where} row ${r + 1}: cell "${cell}" is not '.', 'X' or '-'`);
      out.push({ from, to: columns[c]!, value: cell === '-' ? null : cell === '.' });
    });
  });
  return out;
}

const pairKey = (from: string, to: string) => `${from}>${to}`;

/**
 * The intended verdict of every cell a hand-written expectation judges (cell key → allowed).
 * Precedence: default < matrix < "port/PROTOCOL" matrices < edges. A pod-to-itself entry that no
 * cell has is ignored (loopback, as upstream ignores it); any other entry without a cell is an error.
 */
export function intendedVerdicts(expect: Exclude<ExpectationDoc, 'computed'>, cells: readonly Cell[], names: PodNames): Map<string, boolean> {
  const out = new Map<string, boolean>();
  const byPair = new Map<string, Cell[]>();
  for (const c of cells) byPair.set(pairKey(c.from, c.to), [...(byPair.get(pairKey(c.from, c.to)) ?? []), c]);
  const set = (targets: Cell[] | undefined, from: string, to: string, value: boolean | null, what: string) => {
    if (!targets || targets.length === 0) {
      // '-' judges nothing, so it may stand where nothing is checked (a full table has such cells).
      if (from === to || value === null) return;
      throw new Error(`${what}: nothing checks ${from} -> ${to} in this scenario (write '-' there)`);
    }
    for (const c of targets) {
      if (value === null) out.delete(c.key);
      else out.set(c.key, value);
    }
  };
  if (expect.default) for (const c of cells) out.set(c.key, expect.default === 'allow');
  if (expect.matrix !== undefined)
    for (const m of parseMatrix(expect.matrix, names, 'matrix')) set(byPair.get(pairKey(m.from, m.to)), m.from, m.to, m.value, 'matrix');
  const perPort = Object.entries(expect).filter(([k]) => new RegExp(PORT_KEY).test(k)) as [string, string][];
  for (const [key, text] of perPort) {
    const [port, protocol] = [Number(key.split('/')[0]), key.split('/')[1] as Protocol];
    for (const m of parseMatrix(text, names, JSON.stringify(key))) {
      set(
        byPair.get(pairKey(m.from, m.to))?.filter((c) => c.port === port && c.protocol === protocol),
        m.from,
        m.to,
        m.value,
        `${JSON.stringify(key)}: ${m.from} -> ${m.to}`,
      );
    }
  }
  expect.edges?.forEach((e, i) => {
    const what = `edges/${i}`;
    const from = names.must(e.from, `${what}/from`);
    const to = names.must(e.to, `${what}/to`);
    const [port, protocol] = e.port ? [Number(e.port.split('/')[0]), e.port.split('/')[1]] : [undefined, undefined];
    const targets = byPair.get(pairKey(from, to))?.filter((c) => port === undefined || (c.port === port && c.protocol === protocol));
    if (!targets?.length) throw new Error(`${what}: nothing checks ${from} -> ${to}${e.port ? ` ${e.port}` : ''} in this scenario`);
    set(targets, from, to, e.expect === 'allow', what);
  });
  return out;
}
