// The graph of one step as an inline SVG string (pure, no canvas, no DOM): the pods on a circle,
// grouped by namespace, and one arrow per (source, destination) pair that was observed allowed on
// some port (computed allowed when the step was not observed). A pair with a mismatching cell is
// drawn in the colour of its kind whether or not it carries traffic: a policy-writing mistake
// (intended != computed), an enforcement fault (computed != observed, dashed when the packets were
// blocked where the policies allow them), or no value; its <title> lists the cells and reasons.
import type { CellResultDoc, ScenarioReportDoc } from './schema.ts';
import { plural } from '../../shared/plural.ts';

export type GraphPod = Pick<ScenarioReportDoc['pods'][number], 'id' | 'short' | 'namespace'>;

export type EdgeKind = 'allowed' | 'intended != computed' | 'computed != observed' | 'no value';

export interface GraphEdge {
  from: string;
  to: string;
  kind: EdgeKind;
  /** Drawn dashed: the packets were blocked (or nothing was seen) where an arrow was expected. */
  missing: boolean;
  title: string;
}

/** Escapes text for HTML/SVG text and attribute values. */
export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;'));
}

const where = (c: CellResultDoc) => `${c.port}/${c.protocol}`;
const word = (v: boolean | null) => (v === true ? 'allowed' : v === false ? 'blocked' : 'no value');

/** The edges of a step: its cells folded per (source, destination) pair. */
export function graphEdges(cells: readonly CellResultDoc[], observed: boolean): GraphEdge[] {
  const pairs = new Map<string, CellResultDoc[]>();
  for (const c of cells) if (c.from !== c.to) pairs.set(`${c.from}>${c.to}`, [...(pairs.get(`${c.from}>${c.to}`) ?? []), c]);
  const out: GraphEdge[] = [];
  for (const list of pairs.values()) {
    const { from, to } = list[0]!;
    const allowed = list.filter((c) => (observed ? c.observed : c.computed) === true);
    const mismatch = (['intended != computed', 'computed != observed', 'no value'] as const).find((k) => list.some((c) => c.status === k));
    const kind: EdgeKind | undefined = mismatch ?? (allowed.length > 0 ? 'allowed' : undefined);
    if (!kind) continue;
    const bad = mismatch ? list.filter((c) => c.status === mismatch) : [];
    const missing = kind !== 'allowed' && allowed.length === 0;
    const conv = list.map((c) => c.convergedAfterMs).filter((v): v is number => typeof v === 'number');
    const lines = [
      `${from} -> ${to}: ${allowed.length > 0 ? `${observed ? 'observed' : 'computed'} allowed on ${allowed.map(where).join(', ')}` : `nothing ${observed ? 'observed' : 'computed'} allowed`}`,
      ...bad.map(
        (c) =>
          `${kind} at ${where(c)}: ${kind === 'intended != computed' ? `intended ${word(c.intended)}, the policies say ${word(c.computed)}` : `expected ${word(c.expected)}, observed ${word(c.observed)}${c.observedReason ? ` (${c.observedReason})` : ''}`}; ${c.reason}`,
      ),
      ...(conv.length > 0 ? [`converged after ${(Math.max(...conv) / 1000).toFixed(2)} s (the slowest of its cells)`] : []),
    ];
    out.push({ from, to, kind, missing, title: lines.join('\n') });
  }
  return out;
}

const KIND_CLASS: Record<EdgeKind, string> = { allowed: 'g-ok', 'intended != computed': 'g-m1', 'computed != observed': 'g-m2', 'no value': 'g-nv' };

/**
 * The SVG of a step. `id` makes the arrow markers' ids unique in a page with many graphs; the
 * colours come from the page's CSS classes (g-ok, g-m1, g-m2, g-nv), with plain fallbacks.
 */
export function graphSvg(pods: readonly GraphPod[], cells: readonly CellResultDoc[], opts: { id: string; observed: boolean }): string {
  const ids = new Set(cells.flatMap((c) => [c.from, c.to]));
  const shown = [...pods.filter((p) => ids.has(p.id))].sort((a, b) => a.namespace.localeCompare(b.namespace) || a.id.localeCompare(b.id));
  for (const id of ids) if (!shown.some((p) => p.id === id)) shown.push({ id, short: id, namespace: id.split('/')[0] ?? '' });
  const n = shown.length;
  const r = Math.max(90, n * 16);
  const node = 14;
  const margin = 30 + Math.min(140, 7 * Math.max(0, ...shown.map((p) => p.short.length)));
  const size = 2 * (r + margin);
  const c = size / 2;
  const pos = new Map(
    shown.map((p, i) => {
      const a = (2 * Math.PI * i) / Math.max(1, n) - Math.PI / 2;
      return [p.id, { x: c + r * Math.cos(a), y: c + r * Math.sin(a), a }] as const;
    }),
  );
  const f = (v: number) => v.toFixed(1);
  // Mismatches last, so they are drawn on top.
  const edges = graphEdges(cells, opts.observed)
    .sort((a, b) => Number(b.kind === 'allowed') - Number(a.kind === 'allowed'))
    .map((e) => {
      const p = pos.get(e.from)!;
      const q = pos.get(e.to)!;
      const dx = q.x - p.x;
      const dy = q.y - p.y;
      const len = Math.hypot(dx, dy) || 1;
      // Bend to the right of the direction of travel, so a -> b and b -> a do not overlap.
      const bend = 0.12 * len;
      const mx = (p.x + q.x) / 2 + (dy / len) * bend;
      const my = (p.y + q.y) / 2 - (dx / len) * bend;
      const cut = (from: { x: number; y: number }, toward: { x: number; y: number }, by: number) => {
        const d = Math.hypot(toward.x - from.x, toward.y - from.y) || 1;
        return { x: from.x + ((toward.x - from.x) / d) * by, y: from.y + ((toward.y - from.y) / d) * by };
      };
      const s = cut(p, { x: mx, y: my }, node + 1);
      const t = cut(q, { x: mx, y: my }, node + 4);
      const cls = `g-e ${KIND_CLASS[e.kind]}${e.missing ? ' g-missing' : ''}`;
      const marker = KIND_CLASS[e.kind];
      return `<path class="${cls}" d="M${f(s.x)},${f(s.y)} Q${f(mx)},${f(my)} ${f(t.x)},${f(t.y)}" marker-end="url(#${esc(opts.id)}-${marker})" data-from="${esc(e.from)}" data-to="${esc(e.to)}" data-kind="${esc(e.kind)}"><title>${esc(e.title)}</title></path>`;
    });
  const nodes = shown.map((p) => {
    const { x, y, a } = pos.get(p.id)!;
    const lx = c + (r + node + 6) * Math.cos(a);
    const ly = c + (r + node + 6) * Math.sin(a);
    const anchor = Math.abs(Math.cos(a)) < 0.3 ? 'middle' : Math.cos(a) > 0 ? 'start' : 'end';
    const dy = Math.sin(a) > 0.7 ? 10 : Math.sin(a) < -0.7 ? -2 : 4;
    return `<g class="g-pod"><title>${esc(p.id)}</title><circle cx="${f(x)}" cy="${f(y)}" r="${node}"/><text x="${f(lx)}" y="${f(ly + dy)}" text-anchor="${anchor}">${esc(p.short)}</text></g>`;
  });
  const marker = (name: string, fill: string) =>
    `<marker id="${esc(opts.id)}-${name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="${fill}"/></marker>`;
  return [
    `<svg class="graph" viewBox="0 0 ${f(size)} ${f(size)}" width="${f(size)}" height="${f(size)}" role="img" aria-label="${esc(`${opts.observed ? 'observed' : 'computed'} connections between ${plural(n, 'pod')}`)}">`,
    `<defs>${marker('g-ok', '#5a7')}${marker('g-m1', '#d97706')}${marker('g-m2', '#c1121f')}${marker('g-nv', '#a16207')}</defs>`,
    ...edges,
    ...nodes,
    '</svg>',
  ].join('');
}
