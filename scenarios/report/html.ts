// The HTML report (`scenario run --report-html FILE`): one self-contained page rendered from the
// JSON report's data (pure: report in, HTML string out). Per step the three truth tables
// (intended, computed, observed), the mismatches with their reasons, kept apart by kind as the
// other reports do (intended != computed: a policy-writing mistake; computed != observed: an
// enforcement fault), each cell's convergence time and the graph (report-graph.ts). A set gets
// one page with an index at the top and a section per scenario.
// Self-contained: inline CSS, one small inline script and inline SVG, no fonts, images or
// requests, and a Content-Security-Policy that forbids fetching anything. Every string from the
// report (names, descriptions, reasons, which come from scenario files and manifests) is escaped.
// Size: each cell's reasons are stored once per distinct text in a dictionary; a table cell holds
// the index and the script builds its tooltip on hover; mismatching cells carry theirs inline.
import { esc, graphSvg } from './graph.ts';
import { intentsHtml, rulesHtml } from './intents-html.ts';
import { failureLine, noPositiveControl, summaryLine } from './results.ts';
import { evidenceText } from './evidence.ts';
import type { CellResultDoc, CellStatusName, ScenarioReportDoc, SetReportDoc, StepResultDoc } from './schema.ts';
import { portGroups, type PortGroup } from './truth-table.ts';
import { plural } from '../../shared/plural.ts';

export interface HtmlOptions {
  /** Mismatches listed per kind and step; the rest are counted (the JSON report has them all). */
  maxMismatches?: number;
}

type Pod = ScenarioReportDoc['pods'][number];
type TableKind = 'intended' | 'computed' | 'observed';

/** Distinct strings, each stored once in the page. */
class Dictionary {
  readonly list: string[] = [];
  readonly #index = new Map<string, number>();
  id(text: string): number {
    let i = this.#index.get(text);
    if (i === undefined) {
      i = this.list.length;
      this.list.push(text);
      this.#index.set(text, i);
    }
    return i;
  }
}

const CSS = `
:root{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2329;background:#fff;line-height:1.4}
body{margin:0 auto;padding:1rem 1.5rem 4rem;max-width:110rem}
h1{font-size:1.5rem;margin:.5rem 0}h2{font-size:1.25rem;margin:0 0 .4rem}h3{font-size:1.05rem;margin:0 0 .4rem}h4{font-size:.95rem;margin:.8rem 0 .3rem}
a{color:#1a5fb4}code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.85rem}
.muted{color:#5e6770}.note{background:#fff7e0;border-left:3px solid #e0a800;padding:.3rem .6rem;margin:.3rem 0}
.badge{display:inline-block;padding:0 .45rem;border-radius:.3rem;font-weight:600;font-size:.85rem;vertical-align:middle}
.o-pass{background:#d7f0dc;color:#1e6b32}.o-fail{background:#f8d6d6;color:#9b1c1c}.o-not-run{background:#e4e8ee;color:#44505c}.o-computed-only{background:#fbe7c0;color:#7a4b00}
.legend span{margin-right:1rem;white-space:nowrap}
nav table,.index{border-collapse:collapse;margin:.5rem 0}nav td,nav th{border-bottom:1px solid #e3e6ea;padding:.15rem .6rem;text-align:left;font-size:.9rem}
.scenario{border-top:3px solid #c9d1da;margin-top:2rem;padding-top:.8rem}
.step{border:1px solid #e3e6ea;border-radius:.4rem;padding:.7rem .9rem;margin:.8rem 0;content-visibility:auto;contain-intrinsic-size:auto 700px}
.grid{display:flex;flex-wrap:wrap;gap:1.2rem;align-items:flex-start}
table.tt{border-collapse:collapse;font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.78rem}
table.tt caption{font-weight:600;text-align:left;font-family:system-ui,sans-serif;font-size:.85rem}
table.tt th{font-weight:500;padding:.05rem .3rem;color:#44505c;white-space:nowrap}
table.tt td{width:1.5rem;height:1.25rem;text-align:center;border:1px solid #fff;padding:0}
td.a{background:#d7f0dc}td.b{background:#f6d5d5}td.n{background:#f3f4f6;color:#9aa3ad}td.q{background:#fff1c2}td.r{background:#e1ebf7;color:#52657a}td.x{background:transparent}
td.m1{outline:2px solid #d97706;outline-offset:-2px;font-weight:700}td.m2{outline:2px solid #c1121f;outline-offset:-2px;font-weight:700}td.nv{outline:2px dashed #a16207;outline-offset:-2px}
table.conv td{width:auto;min-width:2.2rem;padding:0 .2rem;background:#f7f8fa}table.conv td.flip{background:#e7e0fa;font-weight:700}
.why{white-space:pre-wrap;background:#f3f6fa;border-radius:.3rem;padding:.3rem .6rem;color:#44505c}
.rules li.dead b,.assertion[data-outcome=fail] b{color:#b3261e}.mm{margin:.3rem 0 .3rem 1.2rem;padding:0}.mm li{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.78rem;margin:.15rem 0;white-space:pre-wrap;word-break:break-word}
.k1{color:#9a4b00}.k2{color:#9b1c1c}.k3{color:#7a5a00}
svg.graph{max-width:100%;height:auto;border:1px solid #eef0f3;border-radius:.4rem;background:#fcfcfd}
.g-pod circle{fill:#eaf1fb;stroke:#3f6ea8;stroke-width:1.5}.g-pod text{font:12px ui-monospace,"DejaVu Sans Mono",monospace;fill:#1d2329}
.g-e{fill:none;stroke-width:1.4}.g-ok{stroke:#5a7;opacity:.75}.g-m1{stroke:#d97706;stroke-width:3}.g-m2{stroke:#c1121f;stroke-width:3}.g-nv{stroke:#a16207;stroke-width:2.5}.g-missing{stroke-dasharray:6 4}
.g-e:hover{stroke-width:4;opacity:1}
`;

// Builds a cell's tooltip from the dictionary when it is first hovered (titles of every cell
// inline would make a 48-scenario page several times larger); a click or tap on a cell or an arrow
// also writes its reasons under the step's tables, for touch screens.
const SCRIPT = `(()=>{const R=JSON.parse(document.getElementById('starmap-reasons').textContent);
const W={a:'allowed',b:'blocked',n:'not judged',q:'no value',r:'not run'};
const tip=(td)=>{if(td.title||!td.dataset.r)return;
const t=td.closest('table'),row=td.parentElement.firstElementChild,col=t.tHead.rows[0].cells[td.cellIndex],g=t.dataset.g;
const v=Object.keys(W).find((k)=>td.classList.contains(k));
const lines=[(row.title||row.textContent)+' -> '+(col.title||col.textContent)+(g?' '+g:'')+': '+t.dataset.kind+' '+(W[v]||''),'policies: '+R[+td.dataset.r]];
if(td.dataset.o)lines.push('packets: '+R[+td.dataset.o]);td.title=lines.join('\\n');};
const cell=(e)=>e.target instanceof Element?e.target.closest('table.tt td[data-r],table.tt td[title]'):null;
document.addEventListener('mouseover',(e)=>{const td=cell(e);if(td)tip(td);});
document.addEventListener('click',(e)=>{const td=cell(e),edge=e.target instanceof Element?e.target.closest('path.g-e'):null;if(!td&&!edge)return;
if(td)tip(td);const why=(td||edge).closest('section.step').querySelector('.why');
if(why)why.textContent=td?td.title:edge.querySelector('title').textContent;});})();`;

const GLYPH = { a: '✓', b: '✗', n: '–', q: '?', r: '~', x: '' } as const;
type Mark = keyof typeof GLYPH;
const markOf = (v: boolean | null | undefined): Mark => (v === true ? 'a' : v === false ? 'b' : v === null ? 'q' : 'n');

const MISMATCH: { status: CellStatusName; cls: string; title: string; what: string }[] = [
  {
    status: 'intended != computed',
    cls: 'k1',
    title: 'Policy-writing mistakes: intended != computed',
    what: 'the policies do not say what the author intended',
  },
  { status: 'computed != observed', cls: 'k2', title: 'Enforcement faults: computed != observed', what: 'the packets did not do what the policies say' },
  {
    status: 'dropped by another rule',
    cls: 'k2',
    title: 'Enforcement faults: dropped by another rule',
    what: 'blocked, but the drop counted was not the rule the policies say decides it',
  },
  { status: 'not enforced', cls: 'k2', title: 'Enforcement faults: not enforced', what: 'the policies block it, and no drop of it was counted' },
  { status: 'no value', cls: 'k3', title: 'No value', what: 'judged, but nothing was observed in time' },
];

const outcomeBadge = (o: ScenarioReportDoc['outcome']) =>
  `<span class="badge o-${o.replace(' ', '-')}">${o === 'pass' ? 'PASS' : o === 'fail' ? 'FAIL' : o === 'computed only' ? 'COMPUTED ONLY' : 'NOT RUN'}</span>`;
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

export function reportHtml(doc: ScenarioReportDoc | SetReportDoc, opts: HtmlOptions = {}): string {
  const dict = new Dictionary();
  const max = opts.maxMismatches ?? 100;
  const scenarios = 'set' in doc ? doc.scenarios : [doc];
  const title = 'set' in doc ? `Starmap set ${doc.set}` : `Starmap scenario ${doc.scenario}`;
  const body: string[] = [];
  if ('set' in doc) {
    const failed = doc.scenarios.filter((r) => r.outcome === 'fail').length;
    const passed = doc.scenarios.filter((r) => r.outcome === 'pass').length;
    body.push(
      `<header><h1>${esc(doc.set)} ${outcomeBadge(failed > 0 ? 'fail' : passed > 0 ? 'pass' : 'not run')}</h1>`,
      `<p class="muted">${plural(doc.scenarios.length, 'scenario')}: ${passed} passed, ${failed} failed, ${doc.scenarios.length - passed - failed} not run · ${esc(doc.startedAt)} – ${esc(doc.finishedAt)}</p>`,
      legend(),
      '</header>',
      indexTable(doc.scenarios),
    );
  } else body.push(`<header>${legend()}</header>`);
  scenarios.forEach((r, i) => body.push(scenarioSection(r, i, 'set' in doc, dict, max)));
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    // Nothing may be fetched: the page is everything.
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">`,
    `<title>${esc(title)}</title>`,
    `<style>${CSS}</style>`,
    '</head><body>',
    ...body,
    `<script type="application/json" id="starmap-reasons">${jsonForScript(dict.list)}</script>`,
    `<script>${SCRIPT}</script>`,
    '</body></html>',
    '',
  ].join('\n');
}

/** JSON inside a <script> element: no "</script>", no "<!--", whatever the strings hold. */
function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function legend(): string {
  const item = (m: Mark, text: string) => `<span><code class="mono">${GLYPH[m]}</code> ${text}</span>`;
  return `<p class="legend muted">${item('a', 'allowed')}${item('b', 'blocked')}${item('n', 'not judged')}${item('q', 'no value')}${item('r', 'not run')}<span style="outline:2px solid #d97706;padding:0 .2rem">intended != computed (a policy-writing mistake)</span> <span style="outline:2px solid #c1121f;padding:0 .2rem">computed != observed (an enforcement fault)</span> Hover, click or tap a cell or an arrow for its reasons.</p>`;
}

function indexTable(reports: readonly ScenarioReportDoc[]): string {
  const rows = reports.map((r, i) => {
    const steps = r.steps.length;
    const passed = r.steps.filter((s) => s.outcome === 'pass').length;
    const sum = (k: 'intendedNotComputed' | 'computedNotObserved') => r.steps.reduce((a, s) => a + s.counts[k], 0);
    return `<tr><td>${i + 1}</td><td><a href="#sc${i}">${esc(r.scenario)}</a></td><td>${outcomeBadge(r.outcome)}</td><td>${passed} of ${steps} steps</td><td>${sum('intendedNotComputed') || ''}</td><td>${sum('computedNotObserved') || ''}</td><td>${esc(r.error ?? r.failure ?? '')}</td></tr>`;
  });
  return `<nav id="index" aria-label="scenarios"><h2>Scenarios</h2><table class="index"><thead><tr><th>#</th><th>scenario</th><th>outcome</th><th>steps as expected</th><th>intended != computed</th><th>computed != observed</th><th>failure</th></tr></thead><tbody>${rows.join('')}</tbody></table></nav>`;
}

function podsOf(r: ScenarioReportDoc): Pod[] {
  if (r.pods.length > 0) return r.pods;
  // A report without pods (a run that stopped early): the cells name them.
  const ids = [...new Set(r.steps.flatMap((s) => s.cells.flatMap((c) => [c.from, c.to])))];
  return ids.map((id) => ({ id, short: id, namespace: id.split('/')[0] ?? '', name: id.split('/')[1] ?? id, kind: 'probe', ip: null }));
}

function scenarioSection(r: ScenarioReportDoc, i: number, inSet: boolean, dict: Dictionary, max: number): string {
  const pods = podsOf(r);
  const out = [
    `<section class="scenario" id="sc${i}">`,
    `<h2>${esc(r.scenario)} ${outcomeBadge(r.outcome)}${inSet ? ' <a class="muted" href="#index" style="font-size:.8rem">index</a>' : ''}</h2>`,
    r.description ? `<p>${esc(r.description)}</p>` : '',
    `<p class="muted">${r.isolated ? 'isolated (network namespaces)' : 'loopback, no isolation'} · policies ${r.enforced ? 'enforced' : 'not enforced: cells they block are not run'} · ${plural(r.steps.length, 'step')}${r.failure ? ` · first failure: ${esc(r.failure)}` : ''} · ${esc(r.startedAt)}</p>`,
    ...r.notices.map((n) => `<p class="note">${esc(n)}</p>`),
    r.error ? `<p class="note">error: ${esc(r.error)}</p>` : '',
    pods.length > 0
      ? `<p class="muted mono">pods: ${pods.map((p) => `${esc(p.short)}${p.short !== p.id ? ` (${esc(p.id)})` : ''}${p.ip ? ` ${esc(p.ip)}` : ''}`).join(' · ')}</p>`
      : '',
    ...r.steps.map((s) => stepSection(s, r, i, pods, dict, max)),
    '</section>',
  ];
  return out.filter(Boolean).join('\n');
}

function stepHeadline(s: StepResultDoc, total: number): string {
  const verdict =
    s.outcome === 'pass'
      ? outcomeBadge('pass')
      : s.outcome === 'computed only'
        ? `${outcomeBadge('computed only')} <span class="muted">${plural(s.counts.notProven, 'cell')} the policies block not proven: ${s.observed ? 'policies are not enforced here (a run as root with nftables would prove them)' : 'nothing was run'}</span>`
        : s.outcome === 'not run'
          ? `${outcomeBadge('not run')} <span class="muted">${s.observed ? 'nothing it judges could be observed here' : 'not observed'}</span>`
          : `${outcomeBadge('fail')} ${esc(s.failure ?? '')}${s.failure === 'intended != computed' ? ' (a policy-writing mistake)' : s.failure === 'computed != observed' ? ' (an enforcement fault)' : ''}`;
  return `<h3>step ${s.index + 1}/${total} ${esc(s.name)} ${verdict}</h3>`;
}

function timing(s: StepResultDoc, r: ScenarioReportDoc): string {
  if (!s.observed)
    return s.failure === 'intended != computed' || r.failure === 'intended != computed'
      ? 'not observed: the run stopped at a policy-writing mistake before applying any of its policies'
      : 'not observed';
  const parts = [s.settled ? `settled after ${secs(s.durationMs ?? 0)}` : `not settled within ${secs(s.durationMs ?? 0)}`, `budget ${secs(s.budgetMs)}`];
  if (s.applyMs !== null && r.enforced) parts.push(`change applied in ${s.applyMs} ms`);
  if (s.lastFlipMs !== null) parts.push(`last flip shown ${secs(s.lastFlipMs)} after writing the policies`);
  return parts.join(' · ');
}

function stepSection(s: StepResultDoc, r: ScenarioReportDoc, i: number, pods: readonly Pod[], dict: Dictionary, max: number): string {
  const id = `sc${i}-st${s.index}`;
  const all = portGroups(s.cells, (c) => c);
  const judged = all.filter((g) => [...g.cells.values()].some((c) => c.expected !== null));
  const shown = all.length > 1 && judged.length > 0 ? judged : all;
  const hidden = all.filter((g) => !shown.includes(g)).map((g) => g.title);
  const kinds: TableKind[] = [...(s.expectation === 'intended' ? (['intended'] as const) : []), 'computed', ...(s.observed ? (['observed'] as const) : [])];
  const timed = (c: CellResultDoc) => typeof c.convergedAfterMs === 'number' || c.changedAfterMs !== null;
  // Convergence tables for the groups shown that have a time in them (none for SCTP: not run).
  const converged = s.observed ? shown.filter((g) => [...g.cells.values()].some(timed)) : [];
  const out = [
    `<section class="step" id="${id}">`,
    stepHeadline(s, r.steps.length),
    s.description ? `<p>${esc(s.description)}</p>` : '',
    `<p class="muted">policies in force: <span class="mono">${s.policies.map(esc).join(', ') || 'none'}</span> · expectation: ${s.expectation === 'intended' ? 'hand-written (intended)' : 'computed'}</p>`,
    `<p class="muted">${esc(summaryLine(s))} · ${esc(timing(s, r))}</p>`,
    '<h4>Truth tables</h4>',
    hidden.length > 0 ? `<p class="muted">not judged, not shown: ${hidden.map(esc).join(', ')}</p>` : '',
    ...shown.map(
      (g) => `${g.title ? `<h4 class="mono">${esc(g.title)}</h4>` : ''}<div class="grid">${kinds.map((k) => truthTable(g, k, pods, dict)).join('')}</div>`,
    ),
    '<p class="why mono" aria-live="polite">Click or tap a cell or an arrow to read its reasons here.</p>',
    mismatches(s, max),
    noPositiveControl(s).length > 0
      ? `<p class="muted">no positive control: <span class="mono">${noPositiveControl(s).map(esc).join(', ')}</span> (nothing reached them in this step; a dead server looks exactly like a policy drop)</p>`
      : '',
    intentsHtml(s),
    rulesHtml(s),
    converged.length > 0
      ? `<h4>Convergence</h4><p class="muted">seconds from the step's policies applying to each cell's last flip to the value it ended with (0: it already had it); highlighted: the cells that changed from the previous step</p><div class="grid">${converged.map((g) => convergenceTable(g, pods)).join('')}</div>`
      : '',
    `<h4>Graph</h4><p class="muted">${s.observed ? 'arrows: observed allowed on some port' : 'arrows: computed allowed on some port (nothing observed)'}; coloured: mismatching pairs (dashed: no traffic where some was expected); hover an arrow for its cells and reasons</p>`,
    graphSvg(pods, s.cells, { id: `g-${id}`, observed: s.observed }),
    '</section>',
  ];
  return out.filter(Boolean).join('\n');
}

function axes(g: PortGroup<CellResultDoc>, pods: readonly Pod[]): { sources: Pod[]; targets: Pod[] } {
  const cells = [...g.cells.values()];
  const known = new Map(pods.map((p) => [p.id, p]));
  const order = (ids: Set<string>) => [
    ...pods.filter((p) => ids.has(p.id)),
    ...[...ids].filter((x) => !known.has(x)).map((x) => ({ id: x, short: x, namespace: '', name: x, kind: 'probe', ip: null })),
  ];
  return { sources: order(new Set(cells.map((c) => c.from))), targets: order(new Set(cells.map((c) => c.to))) };
}

const head = (p: Pod) => `<th${p.short !== p.id ? ` title="${esc(p.id)}"` : ''}>${esc(p.short)}</th>`;

function observedText(c: CellResultDoc): string {
  const side = c.droppedBy === 'both' ? 'both sides' : c.droppedBy === 'egress' ? `${c.from}'s egress` : c.droppedBy === 'ingress' ? `${c.to}'s ingress` : null;
  const conv = typeof c.convergedAfterMs === 'number' ? `converged after ${secs(c.convergedAfterMs)}` : null;
  return (
    [c.observedReason, side ? `dropped by ${side}` : null, c.evidence ? evidenceText(c.evidence, c.observed) : null, conv].filter(Boolean).join('; ') ||
    'nothing observed'
  );
}

function truthTable(g: PortGroup<CellResultDoc>, kind: TableKind, pods: readonly Pod[], dict: Dictionary): string {
  const { sources, targets } = axes(g, pods);
  const rows = sources.map((f) => {
    const tds = targets.map((t) => {
      const c = g.cells.get(`${f.id}>${t.id}`);
      if (!c) return '<td class="x"></td>';
      let m: Mark;
      let bad = '';
      if (kind === 'intended') {
        m = c.intended === null ? 'n' : markOf(c.intended);
        if (c.status === 'intended != computed') bad = 'm1';
      } else if (kind === 'computed') {
        m = markOf(c.computed);
        if (c.status === 'intended != computed') bad = 'm1';
      } else {
        m = c.status === 'not run' ? 'r' : c.expected === null && c.observed === null ? 'n' : markOf(c.observed);
        if (c.status === 'computed != observed' || c.status === 'dropped by another rule' || c.status === 'not enforced') bad = 'm2';
        else if (c.status === 'no value') bad = 'nv';
      }
      // A mismatching cell carries its whole story inline; the others get theirs on hover.
      const title = bad
        ? ` title="${esc(`${failureLine(c)}${kind === 'observed' && typeof c.convergedAfterMs === 'number' ? `; converged after ${secs(c.convergedAfterMs)}` : ''}`)}"`
        : '';
      const data = bad ? '' : ` data-r="${dict.id(c.reason)}"${kind === 'observed' ? ` data-o="${dict.id(observedText(c))}"` : ''}`;
      return `<td class="${m}${bad ? ` ${bad}` : ''}"${title}${data}>${GLYPH[m]}</td>`;
    });
    return `<tr>${head(f)}${tds.join('')}</tr>`;
  });
  return `<table class="tt" data-kind="${kind}"${g.title ? ` data-g="${esc(g.title)}"` : ''}><caption>${kind}</caption><thead><tr><th></th>${targets.map(head).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function convergenceTable(g: PortGroup<CellResultDoc>, pods: readonly Pod[]): string {
  const { sources, targets } = axes(g, pods);
  const rows = sources.map((f) => {
    const tds = targets.map((t) => {
      const c = g.cells.get(`${f.id}>${t.id}`);
      const ms = c ? (typeof c.convergedAfterMs === 'number' ? c.convergedAfterMs : c.changedAfterMs) : null;
      if (!c || ms === null) return '<td></td>';
      return `<td${c.changedAfterMs !== null ? ' class="flip"' : ''}>${ms === 0 ? '0' : (ms / 1000).toFixed(2)}</td>`;
    });
    return `<tr>${head(f)}${tds.join('')}</tr>`;
  });
  return `<table class="tt conv" data-kind="convergence"${g.title ? ` data-g="${esc(g.title)}"` : ''}><caption>${g.title ? `${esc(g.title)} ` : ''}convergence (s)</caption><thead><tr><th></th>${targets.map(head).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function mismatches(s: StepResultDoc, max: number): string {
  const lists = MISMATCH.map(({ status, cls, title, what }) => {
    const bad = s.cells.filter((c) => c.status === status);
    if (bad.length === 0) return '';
    const items = bad.slice(0, max).map((c) => `<li>${esc(failureLine(c))}</li>`);
    if (bad.length > max) items.push(`<li class="muted">… and ${bad.length - max} more (the JSON report has every cell)</li>`);
    return `<div class="mismatch" data-kind="${esc(status)}"><h4 class="${cls}">${title} (${bad.length}): ${what}</h4><ul class="mm">${items.join('')}</ul></div>`;
  }).filter(Boolean);
  return lists.length > 0 ? `<h4>Mismatches</h4>${lists.join('')}` : '<h4>Mismatches</h4><p class="muted">none</p>';
}
