// A diff as one self-contained HTML page (`scenario diff --report-html FILE`): per port and
// protocol the BASE and HEAD matrices side by side, flipped cells outlined (opened green, closed
// red), cells of one side only hatched, each cell's deciding rules on hover; then the flips grouped
// by cause. Matrices are drawn up to `maxPods` sources or destinations; past that the page lists the
// flips only (the JSON report has every cell). Everything the manifests say is escaped.
import type { DiffView } from './diff-formats.ts';
import { flipsByCause } from '../model/diff.ts';
import { esc } from './graph.ts';
import { causeText, cellName, flipWords, observationText, observedWords, summaryText, verdictWord } from './diff-words.ts';
import { portGroups } from './truth-table.ts';
import type { Protocol } from '../../shared/netpol/types.ts';

const CSS = `
:root{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2329;line-height:1.4}
body{margin:0 auto;padding:1rem 1.5rem 4rem;max-width:110rem}h1{font-size:1.4rem}h2{font-size:1.1rem;margin:1.2rem 0 .4rem}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.85rem}.muted{color:#5e6770}
.pair{display:flex;flex-wrap:wrap;gap:1.5rem;align-items:flex-start}
table.tt{border-collapse:collapse;font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.78rem}
table.tt caption{font-weight:600;text-align:left;font-family:system-ui,sans-serif}
table.tt th{font-weight:500;padding:.05rem .3rem;color:#44505c;white-space:nowrap}
table.tt td{width:1.5rem;height:1.25rem;text-align:center;border:1px solid #fff;padding:0}
td.a{background:#d7f0dc}td.b{background:#f6d5d5}td.q{background:#fff1c2}td.x{background:transparent}
td.one{background:repeating-linear-gradient(45deg,#eef0f3,#eef0f3 3px,#fff 3px,#fff 6px)}
td.open{outline:2px solid #1e6b32;outline-offset:-2px;font-weight:700}td.close{outline:2px solid #c1121f;outline-offset:-2px;font-weight:700}
td.fault{box-shadow:inset 0 0 0 3px #7a1fa2}p.fail{color:#c1121f;font-weight:600}p.pass{color:#1e6b32;font-weight:600}
ul.flips li{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.8rem;margin:.2rem 0;white-space:pre-wrap}
`;

const GLYPH = { a: '✓', b: '✗', q: '?', x: '' } as const;
const markOf = (v: boolean | null | undefined) => (v === true ? 'a' : v === false ? 'b' : v === null ? 'q' : 'x');

export function diffHtml(view: DiffView, maxPods = 60): string {
  const d = view.diff;
  const flipped = new Map(d.flips.map((f) => [f.key, f.after.allowed === true ? 'open' : 'close']));
  const body: string[] = [
    `<h1>Starmap diff: ${esc(summaryText(d))}</h1>`,
    `<p class="mono">${esc(d.base)} (${esc(d.step.base)}) → ${esc(d.head)} (${esc(d.step.head)})</p>`,
    '<p class="muted">✓ allowed ✗ blocked ? undecided; outlined: a flip (green opened, red closed); hatched: a cell of one side only. Hover a cell for the deciding rules.</p>',
  ];
  // On packets (--isolation=netns): the observation's outcome, its faults, and the faulty cells framed in purple.
  const packets = observationText(d);
  const faults = new Map((d.observation?.faults ?? []).map((f) => [f.key, f]));
  if (packets) {
    body.push(`<p class="${d.observation!.outcome === 'pass' ? 'pass' : d.observation!.outcome === 'fail' ? 'fail' : 'muted'}">${esc(packets)}</p>`);
    if (faults.size > 0) {
      body.push('<ul class="flips">');
      for (const f of [...faults.values()].slice(0, 500)) body.push(`<li>${esc(f.text)}</li>`);
      body.push('</ul>');
    }
  }
  for (const g of portGroups(view.cells, (c) => ({ ...c, protocol: c.protocol as Protocol }))) {
    const cells = [...g.cells.values()];
    const sources = [...new Set(cells.map((c) => c.from))].sort();
    const targets = [...new Set(cells.map((c) => c.to))].sort();
    body.push(`<h2>${esc(g.title || 'every port')}</h2>`);
    if (sources.length > maxPods || targets.length > maxPods) {
      body.push(`<p class="muted">${sources.length} sources and ${targets.length} destinations: too many to draw; the flips are listed below.</p>`);
      continue;
    }
    const table = (side: 'before' | 'after') => {
      const rows = sources.map((f) => {
        const tds = targets.map((t) => {
          const c = g.cells.get(`${f}>${t}`);
          const s = c?.[side];
          if (!c) return '<td class="x"></td>';
          if (!s) return '<td class="one" title="not on this side"></td>';
          const m = markOf(s.allowed);
          const flip = flipped.get(c.key);
          const fault = faults.get(c.key);
          const title = `${cellName(c)}: ${verdictWord(s.allowed)}\n${s.reason}${fault ? `\n${fault.text}` : ''}`;
          return `<td class="${m}${flip ? ` ${flip}` : ''}${fault ? ' fault' : ''}" title="${esc(title)}">${GLYPH[m]}</td>`;
        });
        return `<tr><th>${esc(f)}</th>${tds.join('')}</tr>`;
      });
      return `<table class="tt"><caption>${side === 'before' ? `BASE ${esc(d.step.base)}` : `HEAD ${esc(d.step.head)}`}</caption><thead><tr><th></th>${targets.map((t) => `<th>${esc(t)}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
    };
    body.push(`<div class="pair">${table('before')}${table('after')}</div>`);
  }
  for (const { cause, flips } of flipsByCause(d)) {
    body.push(`<h2>${esc(causeText(cause))}: ${flips.length}</h2><ul class="flips">`);
    for (const f of flips.slice(0, 500))
      body.push(
        `<li>${esc(`${cellName(f)}  ${flipWords(f)}\n  before: ${f.before.reason}\n  after:  ${f.after.reason}${observedWords(f) ? `\n  ${observedWords(f)!}` : ''}`)}</li>`,
      );
    if (flips.length > 500) body.push(`<li class="muted">… and ${flips.length - 500} more (the JSON report has every flip)</li>`);
    body.push('</ul>');
  }
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${esc(`Starmap diff ${d.base} -> ${d.head}`)}</title><style>${CSS}</style></head><body>${body.join('\n')}</body></html>\n`;
}
