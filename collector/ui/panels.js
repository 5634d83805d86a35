// The side panels as HTML text: the reachability matrix (the accessible view of the graph, in the
// collector's order, with the collector's own row last as in the terminal's truth tables), the
// details of what is hovered or tapped, and the resource list. Pure functions of the model (and of
// `now`, for "… s ago"); app.js writes their output into the page.
import { SELF, stepLine, summaryOf } from './model.js';

export const COLOR_BAD = '#ff6b6b';

/** Escapes text for HTML content and attribute values. */
export const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function ago(iso, now) {
  if (!iso) return 'never';
  const s = Math.max(0, (now - Date.parse(iso)) / 1000);
  if (s < 1) return 'just now';
  if (s < 90) return `${Math.round(s)} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  return `${(s / 3600).toFixed(1)} h ago`;
}

export const fmtMs = (v) => (typeof v === 'number' ? `${v < 10 ? v.toFixed(1) : Math.round(v)} ms` : '—');

const WORDS = { '.': 'allowed', X: 'blocked', '?': 'unknown', '-': 'not probed' };
const CLASSES = { '.': 'cell-ok', X: 'cell-bad', '?': 'cell-unknown', '-': 'cell-none' };

/** An expectation in words, for titles and the details panel: "expected blocked: <reasons>". */
export function expectationText(x) {
  if (!x) return '';
  const head =
    x.expected === null
      ? 'not judged by the step'
      : `expected ${x.expected ? 'allowed' : 'blocked'}${x.status === 'not run' ? ' (cannot be observed here: not judged)' : x.status === 'not proven' ? ' (not proven: policies are not enforced here)' : ''}`;
  const why = x.reasons.length > 0 ? x.reasons.join('; ') : x.reason;
  return `${x.mismatch ? 'MISMATCH: ' : ''}${head}${why ? ` (${why})` : ''}`;
}

/**
 * The matrix table. `x`: compared expectations (model.js compareExpectations) or null; with them,
 * headers use the scenario's short names and every mismatching cell is marked, its title saying
 * what was expected and why.
 */
export function matrixHtml(model, x, now) {
  const { ids, rows, self } = model.matrix;
  if (ids.length === 0) return '<p class="hint">No data yet.</p>';
  const byId = model.byId;
  const edgeBy = new Map(model.edges.map((e) => [e.id, e]));
  const name = (id) => (x?.labels?.[id] ? String(x.labels[id]) : id);
  const selfName = x?.selfLabel ?? 'UI';
  const long = ids.some((id) => name(id).length > 3);
  let html = `<table class="matrix${ids.length > 16 ? ' dense' : ''}${long ? ' long' : ''}" aria-labelledby="matrix-title"><thead><tr><th class="corner" scope="col" title="rows: from, columns: to">from \\ to</th>`;
  for (const b of ids) {
    const label = name(b);
    html += `<th scope="col" class="${byId.get(b)?.failing ? 'failing' : ''}" title="${esc(b)}: ${esc(byId.get(b)?.url ?? '')}">${esc(label.length > 18 ? `${label.slice(0, 17)}…` : label)}</th>`;
  }
  html += '</tr></thead><tbody>';
  const cell = (from, to, mark, title, key, self = false) => {
    const ex = x?.cells.get(key);
    let t = title;
    if (ex) t += ` · ${expectationText(ex)}`;
    const word = WORDS[mark];
    const cls = `${CLASSES[mark]}${ex?.mismatch ? ' cell-mismatch' : ''}`;
    const extra = ex ? ` data-expected="${ex.expectedMark}" data-mismatch="${ex.mismatch}"` : '';
    const who = self ? 'data-self="true"' : `data-from="${esc(from)}"`;
    return `<td class="${cls}" data-testid="cell-${esc(from)}-${esc(to)}" data-state="${word}" ${who} data-to="${esc(to)}"${extra} title="${esc(t)}" aria-label="${esc(t)}" tabindex="0">${mark}${ex?.mismatch ? `<span class="expected-mark" aria-hidden="true">${ex.expectedMark}</span>` : ''}</td>`;
  };
  for (const a of ids) {
    const an = byId.get(a);
    html += `<tr><th scope="row" class="${an?.failing ? 'failing' : ''}" title="${esc(an?.url ?? a)}${an?.failing ? ` — failing: ${esc(an.reason)}` : ''}">${esc(name(a))}</th>`;
    for (const b of ids) {
      const mark = rows[a][b];
      const e = edgeBy.get(`${a}->${b}`);
      let title = `${a} → ${b}: ${WORDS[mark]}`;
      if (e)
        title += `${e.status === 'unreachable' ? ` (${e.reason}${e.message ? `: ${e.message}` : ''})` : ''}${e.latencyMs != null ? `, ${fmtMs(e.latencyMs)}` : ''}${e.changedAt ? `, changed ${ago(e.changedAt, now)}` : ''}`;
      else if (mark === '?') title += ` (${an?.reason ?? 'pending'})`;
      html += cell(a, b, mark, title, `${a}->${b}`);
    }
    html += '</tr>';
  }
  // The collector's own fetches: the management UI's row of the terminal's tables.
  html += `</tbody><tfoot><tr><th scope="row" class="self" data-testid="self-row" title="this collector (the management UI): does its fetch of each resource get through">${esc(selfName)}</th>`;
  for (const b of ids) {
    const mark = self[b];
    const bn = byId.get(b);
    const title = `${selfName} (this collector) → ${b}: ${WORDS[mark]}${bn?.error ? ` (${bn.error.reason}${bn.error.message ? `: ${bn.error.message}` : ''})` : ''}`;
    html += cell('self', b, mark, title, `${SELF}->${b}`, true);
  }
  html += '</tr></tfoot></table>';
  return html;
}

export function summaryText(model, x) {
  const s = summaryOf(model);
  const base = `${s.allowed} allowed, ${s.blocked} blocked, ${s.unknown} unknown · ${s.failing} of ${s.resources} resources failing${s.unmatched ? ` · ${s.unmatched} target(s) that are no resource` : ''}`;
  if (!x) return base;
  if (x.enforced === false)
    return `${base} · policies are not enforced here${x.mismatches ? ` · ${x.mismatches} cell(s) not as expected` : ''} · ${x.notProven} cell(s) not proven`;
  return `${base} · ${x.mismatches === 0 ? 'all judged cells as expected' : `${x.mismatches} cell(s) not as expected`}`;
}

/**
 * The step banner: which step is in force and how many cells differ. A run that cannot enforce
 * policies never gets the pass line: it says so, in the warning colour, with the cells not proven.
 */
export function stepHtml(x) {
  if (!x) return '';
  const bad = `<span class="bad">${x.mismatches} cell(s) not as expected</span>`;
  const mism =
    x.enforced === false
      ? `<span class="warn" data-enforced="false">policies are not enforced here: ${x.notProven} cell(s) the policies block not proven (run as root with nftables to prove them)</span>${x.mismatches ? ` · ${bad}` : ''}`
      : x.mismatches === 0
        ? '<span class="ok">every judged cell as expected</span>'
        : bad;
  const desc = x.step.description ? ` <span class="muted">${esc(x.step.description)}</span>` : '';
  return `<b>${esc(stepLine(x))}</b>${desc} · ${mism}`;
}

export function resourcesHtml(model) {
  return model.nodes
    .map((n) => {
      const st = n.pending
        ? '<span class="unknown">pending</span>'
        : n.failing
          ? `<span class="bad">failing: ${esc(n.reason)}</span>`
          : '<span class="ok">ok</span>';
      return `<li data-testid="resource-${esc(n.id)}"><span class="dot" style="background:${n.failing ? COLOR_BAD : n.color}"></span><b>${esc(n.id)}</b> ${st} <span class="url">${esc(n.url ?? '')}</span></li>`;
    })
    .join('');
}

/** The details of a hovered or tapped node, edge or matrix cell ({kind: 'node'|'edge'|'self', item}). */
export function detailsHtml(h, now) {
  const show = (s) => esc(s ?? '—'); // a missing value shows as a dash
  const kv = (pairs) => `<dl class="kv">${pairs.map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join('')}</dl>`;
  const expectRows = (ex) =>
    ex
      ? [
          [
            'expected',
            `${ex.mismatch ? '<span class="bad">not as expected: </span>' : ''}${show(ex.expected === null ? 'not judged' : ex.expected ? 'allowed' : 'blocked')}${ex.status === 'not run' ? ' (cannot be observed here)' : ex.status === 'not proven' ? ' (not proven: policies are not enforced here)' : ''}`,
          ],
          ['why', ex.reasons.length > 0 ? ex.reasons.map((r) => `<div>${show(r)}</div>`).join('') : show(ex.reason)],
        ]
      : [];
  if (h.kind === 'node') {
    const n = h.item;
    const st = n.pending
      ? '<span class="unknown">pending (not fetched yet)</span>'
      : n.failing
        ? `<span class="bad">failing: ${show(n.reason)}</span>`
        : '<span class="ok">ok</span>';
    return `<div class="title">${show(n.id)}</div>${kv([
      ['state', st],
      ['url', show(n.url)],
      ['statusCode', show(n.statusCode)],
      ['error', n.error ? `<span class="bad">${show(n.error.reason)}: ${show(n.error.message)}</span>` : n.failing ? show(n.message) : 'none'],
      ['fetched', n.fetchedAt ? `${show(ago(n.fetchedAt, now))}` : 'never'],
      ['latency', fmtMs(n.latencyMs)],
      ['last success', n.lastSuccessAt ? show(ago(n.lastSuccessAt, now)) : 'never'],
    ])}`;
  }
  if (h.kind === 'self') {
    const { node: n, label, expect: ex } = h.item;
    const mark =
      n.fetched === null
        ? '<span class="unknown">not fetched yet</span>'
        : n.fetched
          ? '<span class="ok">fetched</span>'
          : `<span class="bad">not fetched: ${show(n.error?.reason)}</span>`;
    return `<div class="title">${show(label)} (this collector) → ${show(n.id)}</div>${kv([['state', mark], ['url', show(n.url)], ['fetched', n.fetchedAt ? show(ago(n.fetchedAt, now)) : 'never'], ...expectRows(ex)])}`;
  }
  const e = h.item;
  const st =
    e.status === 'reachable'
      ? '<span class="ok">reachable</span>'
      : e.status === 'unreachable'
        ? `<span class="bad">unreachable: ${show(e.reason)}</span>`
        : '<span class="unknown">unknown (no data)</span>';
  return `<div class="title">${show(e.from)} → ${show(e.to)}</div>${kv([
    ['state', st],
    ['target', show(e.url)],
    ['reason', show(e.reason)],
    ['message', show(e.message)],
    ['latency', fmtMs(e.latencyMs)],
    ['statusCode', show(e.statusCode)],
    ['changed', e.changedAt ? show(ago(e.changedAt, now)) : '—'],
    ['checked', e.checkedAt ? show(ago(e.checkedAt, now)) : '—'],
    ...expectRows(e.expect),
  ])}`;
}
