/* global URLSearchParams, AbortSignal */
// Starmap collector UI: polls /responses every second and draws what the probes see as a graph
// (canvas) and a reachability matrix (an HTML table, the accessible view). No framework, no CDN.
// Test hook: window.__starmap holds the current model (nodes, edges, matrix, state).

const params = new URLSearchParams(window.location.search);
const EXAMPLE = params.get('example') === 'true';
const POLL_MS = 1000;
const SOURCE = EXAMPLE ? '/responses/example' : '/responses';
// star's Mesosphere palette plus Calico's two additions, brightened a little for a dark screen.
const PALETTE = ['#8e7cc3', '#4fb3d9', '#e06c9f', '#f0a14a', '#5cc9a7', '#e3d26f', '#7aa6ff', '#c678dd', '#56d4dd'];
const COLOR_BAD = '#ff6b6b';
const COLOR_UNKNOWN = '#8b949e';
const BG = '#0d1117';

const $ = (id) => document.getElementById(id);
/** Resource ids in natural order (A2 before A10); the same order as localeCompare with these options. */
const ID_ORDER = new Intl.Collator(undefined, { numeric: true });
/** Escapes text for HTML content and attribute values. */
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const canvas = $('graph');
const ctx = canvas.getContext('2d', { alpha: false });
const tooltip = $('tooltip');

const state = {
  example: EXAMPLE,
  showUnreachable: true,
  showMarkers: true,
  connected: false,
  error: null, // message when the last poll failed
  stale: false,
  staleWhy: '',
  asOf: null, // server time of the data (generatedAt)
  lastPollOk: null, // browser time of the last successful poll
  intervalSeconds: 5,
  empty: false,
  polls: 0,
  builds: 0, // polls whose document was new (not the same ETag as the last), so the model was rebuilt
  frames: 0,
};
const model = { nodes: [], edges: [], matrix: { ids: [], rows: {} }, unmatched: [] };
/** Last known targets per resource id, kept while its resource fails (shown as unknown). */
const lastTargets = new Map();
let layoutDirty = true;
let geometryDirty = true;
let graphSig = '';
let hover = null; // {kind:'node'|'edge', item}
let pinned = null;

window.__starmap = { state, model, normalise: (u) => normalise(u), get nodes() { return model.nodes; }, get edges() { return model.edges; }, get matrix() { return model.matrix; } };

// ---------- URLs ----------

/** Normalises a URL or host:port into {scheme, host, port, key}; undefined when unparsable. */
export function normalise(raw) {
  if (typeof raw !== 'string' || raw.trim() === '') return undefined;
  let s = raw.trim();
  if (/\s/.test(s)) return undefined;
  let scheme = 'tcp';
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(s);
  if (m) scheme = m[1].toLowerCase();
  else s = `tcp://${s}`;
  let u;
  try {
    u = new URL(scheme === 'tcp' ? s.replace(/^tcp:/i, 'http:') : s);
  } catch {
    return undefined;
  }
  let host = u.hostname.toLowerCase();
  if (host.endsWith('.')) host = host.slice(0, -1);
  let port = u.port;
  if (!port) port = scheme === 'https' ? '443' : scheme === 'http' ? '80' : scheme === 'tcp' ? '80' : '';
  return { scheme, host, port, path: m ? u.pathname : '', key: `${scheme}://${host}:${port}`, hostPort: `${host}:${port}` };
}

// ---------- model ----------

function isFailing(entry) {
  if (entry === null || entry === undefined) return { failing: true, reason: 'no response', message: 'the collector has no response for this resource' };
  if (entry.pending) return { failing: false, pending: true };
  if (entry.error) return { failing: true, reason: entry.error.reason ?? 'error', message: entry.error.message ?? '' };
  if (typeof entry.statusCode === 'number' && (entry.statusCode < 200 || entry.statusCode > 299)) return { failing: true, reason: 'http-status', message: `HTTP ${entry.statusCode}` };
  const targets = entry.json?.status?.targets;
  if (!Array.isArray(targets)) return { failing: true, reason: 'not-a-probe', message: 'the response is not a probe status document ({"status":{"targets":[…]}})' };
  return { failing: false };
}

/**
 * One entry per resource id: star's `{url, statusCode, json}` (null when there is nothing to show)
 * merged with Starmap's detail from the sibling `details` map. A document without `details` (star's
 * collector) gives the entries as they are.
 */
function entriesOf(doc) {
  const obj = (x) => (x && typeof x === 'object' ? x : null);
  const responses = obj(doc?.responses) ?? {};
  const details = obj(doc?.details);
  if (!details) return responses;
  const entries = {};
  for (const id of new Set([...Object.keys(responses), ...Object.keys(details)])) {
    const r = obj(responses[id]);
    const d = obj(details[id]);
    entries[id] = d ? { ...d, url: d.url ?? r?.url ?? null, statusCode: d.statusCode ?? r?.statusCode ?? null, json: r ? r.json : null } : r;
  }
  return entries;
}

function buildModel(doc) {
  const responses = entriesOf(doc);
  const ids = Object.keys(responses).sort(ID_ORDER.compare);
  const oldIds = model.nodes.map((n) => n.id).join('\u0000');
  const prevPos = new Map(model.nodes.map((n) => [n.id, n]));
  const prevGeo = new Map(model.edges.map((e) => [e.id, e.geo]));
  const nodes = ids.map((id, i) => {
    const entry = responses[id];
    const f = isFailing(entry);
    const prev = prevPos.get(id);
    const n = {
      id,
      color: PALETTE[i % PALETTE.length],
      url: entry?.url ?? null,
      norm: normalise(entry?.url ?? ''),
      statusCode: entry?.statusCode ?? null,
      error: entry?.error ?? null,
      fetchedAt: entry?.fetchedAt ?? null,
      latencyMs: entry?.latencyMs ?? null,
      lastSuccessAt: entry?.lastSuccessAt ?? null,
      pending: Boolean(f.pending),
      failing: f.failing,
      reason: f.reason ?? null,
      message: f.message ?? null,
      x: prev?.x, y: prev?.y, tx: prev?.tx ?? 0, ty: prev?.ty ?? 0,
    };
    return n;
  });
  // Index by scheme+host+port, and by host+port for bare host:port targets.
  // Several resources may share a host and port (different paths): then the path decides.
  const byKey = new Map();
  const byHostPort = new Map();
  const add = (map, k, n) => { const l = map.get(k); if (l) l.push(n); else map.set(k, [n]); };
  for (const n of nodes) {
    if (!n.norm) continue;
    add(byKey, n.norm.key, n);
    add(byHostPort, n.norm.hostPort, n);
  }
  const pick = (list, path) => (list ? (list.length === 1 || !path ? list[0] : (list.find((n) => n.norm.path === path) ?? list[0])) : undefined);
  const edges = [];
  const unmatched = [];
  const seen = new Set();
  for (const n of nodes) {
    const entry = responses[n.id];
    let targets = null;
    let unknown = false;
    if (!n.failing && !n.pending) {
      targets = entry.json.status.targets;
      lastTargets.set(n.id, targets);
    } else if (lastTargets.has(n.id)) {
      targets = lastTargets.get(n.id);
      unknown = true;
    }
    if (!targets) continue;
    targets.forEach((t, i) => {
      if (t === null || typeof t !== 'object') return; // star's old shape: null for a failure
      const norm = normalise(t.url);
      let to = norm ? pick(byKey.get(norm.key), norm.path) : undefined;
      if (!to && norm && norm.scheme === 'tcp') to = pick(byHostPort.get(norm.hostPort), '');
      if (!to) {
        if (!unknown) unmatched.push({ from: n.id, url: t.url, reachable: t.reachable === true });
        return;
      }
      const id = `${n.id}->${to.id}`;
      if (seen.has(id)) return;
      seen.add(id);
      const status = unknown ? 'unknown' : t.reachable === true ? 'reachable' : 'unreachable';
      edges.push({
        id, from: n.id, to: to.id, index: i, status,
        reachable: unknown ? null : t.reachable === true,
        reason: unknown ? 'no data' : (t.reason ?? (t.reachable ? 'ok' : 'unreachable')),
        message: unknown ? `${n.id}'s probe is not reporting (${n.reason ?? 'pending'}); last known: ${t.reachable ? 'reachable' : 'unreachable'}` : (t.message ?? null),
        latencyMs: t.latencyMs ?? null,
        statusCode: t.statusCode ?? null,
        checkedAt: t.checkedAt ?? null,
        changedAt: t.changedAt ?? null,
        url: t.url,
      });
    });
  }
  for (const id of [...lastTargets.keys()]) if (!responses[id]) lastTargets.delete(id);

  const edgeByPair = new Map(edges.map((e) => [e.id, e]));
  const rows = {};
  for (const a of nodes) {
    rows[a.id] = {};
    for (const b of nodes) {
      const e = edgeByPair.get(`${a.id}->${b.id}`);
      let mark = '-';
      if (e) mark = e.status === 'reachable' ? '.' : e.status === 'unreachable' ? 'X' : '?';
      else if (a.failing || a.pending) mark = '?';
      rows[a.id][b.id] = mark;
    }
  }
  model.nodes = nodes;
  model.edges = edges;
  model.unmatched = unmatched;
  model.matrix = { ids, rows };
  model.byId = new Map(nodes.map((n) => [n.id, n]));
  if (ids.join('\u0000') !== oldIds) layoutDirty = true;
  // Redraw the graph only when what it shows changed (not on every poll).
  let sig = '';
  for (const n of nodes) sig += `${n.id}|${n.failing}|${n.pending}|${n.reason}\n`;
  for (const e of edges) sig += `${e.id}|${e.status}|${e.reason}\n`;
  if (sig !== graphSig || layoutDirty) {
    graphSig = sig;
    geometryDirty = true;
  } else {
    // Same picture: keep the geometry already computed for these edges.
    for (const e of edges) e.geo = prevGeo.get(e.id);
  }
  if (hover) hover = refind(hover);
  if (pinned) pinned = refind(pinned);
}

function refind(h) {
  const item = h.kind === 'node' ? model.nodes.find((n) => n.id === h.item.id) : model.edges.find((e) => e.id === h.item.id);
  return item ? { kind: h.kind, item } : null;
}

// ---------- time ----------

function ago(iso, now = serverNow()) {
  if (!iso) return 'never';
  const s = Math.max(0, (now - Date.parse(iso)) / 1000);
  if (s < 1) return 'just now';
  if (s < 90) return `${Math.round(s)} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  return `${(s / 3600).toFixed(1)} h ago`;
}
let clockSkew = 0; // server time − browser time
const serverNow = () => Date.now() + clockSkew;
const fmtTime = (ms) => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const fmtMs = (v) => (typeof v === 'number' ? `${v < 10 ? v.toFixed(1) : Math.round(v)} ms` : '—');

// ---------- polling ----------

let polling = false;
/**
 * The ETag and generatedAt of the document the model was last built from. With `cache: 'no-cache'`
 * the browser revalidates, and on a 304 hands back its cached copy of that very document (same
 * ETag, same generatedAt), so parsing it and rebuilding the model again would change nothing.
 */
let built = { etag: null, generatedAt: '' };
async function poll() {
  if (polling) return;
  polling = true;
  try {
    const res = await fetch(SOURCE, { cache: 'no-cache', headers: { accept: 'application/json' }, signal: AbortSignal.timeout(4000) });
    if (!res.ok) throw new Error(`GET ${SOURCE} answered HTTP ${res.status}`);
    const etag = res.headers.get('etag');
    const same = etag !== null && etag === built.etag;
    if (same) res.body?.cancel().catch(() => {}); // not needed: let the browser drop it
    const doc = same ? null : await res.json();
    state.polls++;
    state.connected = true;
    state.error = null;
    state.lastPollOk = Date.now();
    const generatedAt = same ? built.generatedAt : doc.generatedAt;
    const gen = Date.parse(generatedAt ?? '');
    if (!Number.isNaN(gen)) clockSkew = gen - Date.now();
    state.asOf = Number.isNaN(gen) ? Date.now() : gen;
    if (!same) {
      const t0 = performance.now();
      buildModel(doc);
      state.builds++;
      state.buildMs = performance.now() - t0;
      state.empty = model.nodes.length === 0;
      built = { etag, generatedAt };
    }
  } catch (err) {
    state.connected = false;
    state.error = `${err instanceof Error ? err.message : String(err)} (${SOURCE})`;
  }
  polling = false;
  updateStaleness();
  renderChrome();
}

async function healthz() {
  if (EXAMPLE) return;
  try {
    const res = await fetch('/healthz', { cache: 'no-store' });
    const h = await res.json();
    if (typeof h.intervalSeconds === 'number' && h.intervalSeconds > 0) state.intervalSeconds = h.intervalSeconds;
  } catch {
    /* polling reports the error */
  }
}

function updateStaleness() {
  const limit = 3 * state.intervalSeconds * 1000 + 2000;
  if (state.error) {
    state.stale = model.nodes.length > 0 || state.polls > 0;
    state.staleWhy = 'collector unreachable';
    return;
  }
  // The freshest fetch among the resources, on the server's clock.
  let newest = 0;
  for (const n of model.nodes) if (n.fetchedAt) newest = Math.max(newest, Date.parse(n.fetchedAt));
  const someFetched = model.nodes.some((n) => n.fetchedAt);
  if (!EXAMPLE && someFetched && serverNow() - newest > limit) {
    state.stale = true;
    state.staleWhy = `no fetch for ${Math.round((serverNow() - newest) / 1000)} s`;
  } else {
    state.stale = false;
    state.staleWhy = '';
  }
}

// ---------- chrome: badge, overlays, matrix, lists ----------

/** Everything on screen: after each poll. */
function renderChrome() {
  renderClock();
  $('banner').hidden = !EXAMPLE;
  $('empty').hidden = !(state.empty && !state.error);
  $('error').hidden = !state.error;
  if (state.error) $('error-text').textContent = state.error;
  renderMatrix();
  renderResources();
}

/**
 * The parts that change with the clock alone: the badge (staleness), "as of … · last contact …"
 * and the details' "… s ago". Also every second between polls; the rest changes only with a poll.
 */
function renderClock() {
  const badge = $('badge');
  let cls = 'badge-live';
  let text = 'live';
  if (state.error && state.polls === 0) { cls = 'badge-error'; text = 'collector unreachable'; }
  else if (state.stale) { cls = 'badge-stale'; text = `stale: ${state.staleWhy}`; }
  else if (EXAMPLE) { cls = 'badge-example'; text = 'sample data'; }
  badge.className = `badge ${cls}`;
  badge.textContent = text;
  badge.dataset.state = state.error && state.polls === 0 ? 'error' : state.stale ? 'stale' : EXAMPLE ? 'example' : 'live';
  $('asof').textContent = state.asOf ? `as of ${fmtTime(state.asOf - clockSkew)}${state.error ? ` · last contact ${ago(new Date(state.lastPollOk ?? 0).toISOString(), Date.now())}` : ''}` : '';
  renderDetails();
}

let matrixSig = '';
function renderMatrix() {
  const { ids, rows } = model.matrix;
  const byId = model.byId ?? new Map();
  const sig = JSON.stringify([ids, rows, model.nodes.map((n) => n.failing), model.edges.map((e) => [e.id, e.reason, e.latencyMs, e.changedAt])]);
  if (sig === matrixSig) return;
  matrixSig = sig;
  const wrap = $('matrix');
  if (ids.length === 0) {
    wrap.innerHTML = '<p class="hint">No data yet.</p>';
    $('summary').textContent = '';
    return;
  }
  const edgeBy = new Map(model.edges.map((e) => [e.id, e]));
  let html = '<table class="matrix' + (ids.length > 16 ? ' dense' : '') + (ids.some((id) => id.length > 3) ? ' long' : '') + '" aria-labelledby="matrix-title"><thead><tr><th class="corner" scope="col" title="rows: from, columns: to">from \\ to</th>';
  for (const b of ids) html += `<th scope="col" class="${byId.get(b)?.failing ? 'failing' : ''}" title="${esc(b)}: ${esc(byId.get(b)?.url ?? '')}">${esc(b.length > 18 ? `${b.slice(0, 17)}…` : b)}</th>`;
  html += '</tr></thead><tbody>';
  let allowed = 0, blocked = 0, unknown = 0;
  for (const a of ids) {
    const an = byId.get(a);
    html += `<tr><th scope="row" class="${an?.failing ? 'failing' : ''}" title="${esc(an?.url ?? a)}${an?.failing ? ` — failing: ${esc(an.reason)}` : ''}">${esc(a)}</th>`;
    for (const b of ids) {
      const mark = rows[a][b];
      const e = edgeBy.get(`${a}->${b}`);
      const cls = mark === '.' ? 'cell-ok' : mark === 'X' ? 'cell-bad' : mark === '?' ? 'cell-unknown' : 'cell-none';
      const word = mark === '.' ? 'allowed' : mark === 'X' ? 'blocked' : mark === '?' ? 'unknown' : 'not probed';
      if (mark === '.') allowed++; else if (mark === 'X') blocked++; else if (mark === '?') unknown++;
      let title = `${a} → ${b}: ${word}`;
      if (e) title += `${e.status === 'unreachable' ? ` (${e.reason}${e.message ? `: ${e.message}` : ''})` : ''}${e.latencyMs != null ? `, ${fmtMs(e.latencyMs)}` : ''}${e.changedAt ? `, changed ${ago(e.changedAt)}` : ''}`;
      else if (mark === '?') title += ` (${an?.reason ?? 'pending'})`;
      html += `<td class="${cls}" data-testid="cell-${esc(a)}-${esc(b)}" data-state="${word}" data-from="${esc(a)}" data-to="${esc(b)}" title="${esc(title)}" aria-label="${esc(title)}" tabindex="0">${mark}</td>`;
    }
    html += '</tr>';
  }
  html += '</tbody></table>';
  wrap.innerHTML = html;
  $('summary').textContent = `${allowed} allowed, ${blocked} blocked, ${unknown} unknown · ${model.nodes.filter((n) => n.failing).length} of ${ids.length} resources failing${model.unmatched.length ? ` · ${model.unmatched.length} target(s) that are no resource` : ''}`;
}

let resourcesHtml = null; // what renderResources last wrote
function renderResources() {
  const ul = $('resources');
  const html = model.nodes.map((n) => {
    const st = n.pending ? '<span class="unknown">pending</span>' : n.failing ? `<span class="bad">failing: ${esc(n.reason)}</span>` : '<span class="ok">ok</span>';
    return `<li data-testid="resource-${esc(n.id)}"><span class="dot" style="background:${n.failing ? COLOR_BAD : n.color}"></span><b>${esc(n.id)}</b> ${st} <span class="url">${esc(n.url ?? '')}</span></li>`;
  }).join('');
  // Compared with the last string written, not ul.innerHTML (which re-serialises the DOM, and
  // never matches once an id or url holds & ' or ").
  if (html !== resourcesHtml) ul.innerHTML = resourcesHtml = html;
}

function detailsHtml(h) {
  const show = (s) => esc(s ?? '—'); // a missing value shows as a dash
  const kv = (pairs) => `<dl class="kv">${pairs.map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join('')}</dl>`;
  if (h.kind === 'node') {
    const n = h.item;
    const st = n.pending ? '<span class="unknown">pending (not fetched yet)</span>' : n.failing ? `<span class="bad">failing: ${show(n.reason)}</span>` : '<span class="ok">ok</span>';
    return `<div class="title">${show(n.id)}</div>${kv([
      ['state', st], ['url', show(n.url)], ['statusCode', show(n.statusCode)],
      ['error', n.error ? `<span class="bad">${show(n.error.reason)}: ${show(n.error.message)}</span>` : n.failing ? show(n.message) : 'none'],
      ['fetched', n.fetchedAt ? `${show(ago(n.fetchedAt))}` : 'never'], ['latency', fmtMs(n.latencyMs)],
      ['last success', n.lastSuccessAt ? show(ago(n.lastSuccessAt)) : 'never'],
    ])}`;
  }
  const e = h.item;
  const st = e.status === 'reachable' ? '<span class="ok">reachable</span>' : e.status === 'unreachable' ? `<span class="bad">unreachable: ${show(e.reason)}</span>` : '<span class="unknown">unknown (no data)</span>';
  return `<div class="title">${show(e.from)} → ${show(e.to)}</div>${kv([
    ['state', st], ['target', show(e.url)], ['reason', show(e.reason)], ['message', show(e.message)],
    ['latency', fmtMs(e.latencyMs)], ['statusCode', show(e.statusCode)],
    ['changed', e.changedAt ? show(ago(e.changedAt)) : '—'], ['checked', e.checkedAt ? show(ago(e.checkedAt)) : '—'],
  ])}`;
}

let shownDetailsHtml = null; // what renderDetails last wrote (see renderResources)
function renderDetails() {
  const h = pinned ?? hover;
  const el = $('details');
  const html = h ? detailsHtml(h) : '<p class="hint">Hover or tap a node, an edge or a matrix cell.</p>';
  if (html !== shownDetailsHtml) el.innerHTML = shownDetailsHtml = html;
}

// ---------- layout and geometry ----------

let W = 0, H = 0, DPR = 1;
let nodeR = 30;

function layout() {
  const n = model.nodes.length;
  const cx = W / 2, cy = H / 2;
  const margin = Math.max(34, Math.min(70, Math.min(W, H) * 0.12));
  const R = Math.max(10, Math.min(W, H) / 2 - margin);
  nodeR = Math.max(9, Math.min(34, R * 0.17, (Math.PI * R) / Math.max(n, 1) * 0.55));
  model.nodes.forEach((node, i) => {
    const a = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(n, 1);
    node.tx = n === 1 ? cx : cx + R * Math.cos(a);
    node.ty = n === 1 ? cy : cy + R * Math.sin(a);
    if (node.x === undefined || Number.isNaN(node.x)) { node.x = node.tx; node.y = node.ty; }
  });
  layoutDirty = false;
  geometryDirty = true;
}

/** Geometry per edge: a quadratic curve bent to the left of its direction (A→B and B→A are two arcs). */
function edgeGeometry(e) {
  if (e.from === e.to) return selfGeometry(model.byId.get(e.from));
  const a = model.byId.get(e.from), b = model.byId.get(e.to);
  const dx = b.x - a.x, dy = b.y - a.y;
  const len = Math.hypot(dx, dy) || 1;
  const nx = -dy / len, ny = dx / len;
  const bend = Math.min(60, len * 0.16);
  const c = { x: (a.x + b.x) / 2 + nx * bend, y: (a.y + b.y) / 2 + ny * bend };
  const pt = (t) => ({ x: (1 - t) * (1 - t) * a.x + 2 * (1 - t) * t * c.x + t * t * b.x, y: (1 - t) * (1 - t) * a.y + 2 * (1 - t) * t * c.y + t * t * b.y });
  // Where the curve leaves the source circle and enters the target circle.
  const r = nodeR + 3;
  let t0 = Math.min(0.45, r / len), t1 = Math.max(0.55, 1 - (r + 2) / len);
  for (let k = 0; k < 3; k++) {
    const p0 = pt(t0), p1 = pt(t1);
    t0 *= r / (Math.hypot(p0.x - a.x, p0.y - a.y) || r);
    t1 = 1 - (1 - t1) * ((r + 2) / (Math.hypot(p1.x - b.x, p1.y - b.y) || r));
  }
  t0 = Math.min(0.45, Math.max(0, t0)); t1 = Math.max(0.55, Math.min(1, t1));
  const end = pt(t1), before = pt(t1 - 0.04);
  const samples = [];
  for (let i = 0; i <= 12; i++) samples.push(pt(t0 + ((t1 - t0) * i) / 12));
  return { a, b, c, pt, t0, t1, end, angle: Math.atan2(end.y - before.y, end.x - before.x), mid: pt(0.5), samples, self: e.from === e.to };
}

/** A probe that checks itself: a small loop on the outer side of its node. */
function selfGeometry(n) {
  let dx = n.x - W / 2, dy = n.y - H / 2;
  const d = Math.hypot(dx, dy);
  if (d < 1) { dx = 0; dy = -1; } else { dx /= d; dy /= d; }
  const base = Math.atan2(dy, dx);
  const r = nodeR + 2;
  const a = { x: n.x + r * Math.cos(base - 0.55), y: n.y + r * Math.sin(base - 0.55) };
  const b = { x: n.x + r * Math.cos(base + 0.55), y: n.y + r * Math.sin(base + 0.55) };
  const c = { x: n.x + dx * nodeR * 3.4, y: n.y + dy * nodeR * 3.4 };
  const pt = (t) => ({ x: (1 - t) * (1 - t) * a.x + 2 * (1 - t) * t * c.x + t * t * b.x, y: (1 - t) * (1 - t) * a.y + 2 * (1 - t) * t * c.y + t * t * b.y });
  const end = pt(1), before = pt(0.95);
  const samples = [];
  for (let i = 0; i <= 12; i++) samples.push(pt(i / 12));
  return { a, b, c, pt, t0: 0, t1: 1, end, angle: Math.atan2(end.y - before.y, end.x - before.x), mid: pt(0.5), samples, self: true };
}

let groups = null; // edges sorted by drawing style, with their curve and arrowhead points

function rebuildGeometry() {
  const lineW = Math.max(1.2, Math.min(4, nodeR / 9));
  const byStyle = new Map();
  const hl = Math.max(9, lineW * 4);
  for (const e of model.edges) {
    const g = edgeGeometry(e);
    e.geo = g;
    const color = e.status === 'reachable' ? model.byId.get(e.from).color : e.status === 'unreachable' ? COLOR_BAD : COLOR_UNKNOWN;
    const key = `${e.status}|${color}`;
    let grp = byStyle.get(key);
    if (!grp) { grp = { status: e.status, color, items: [] }; byStyle.set(key, grp); }
    // Sub-curve from t0 to t1 of the quadratic (split), and the arrowhead at its end.
    const q = subQuad(g.a, g.c, g.b, g.t0, g.t1);
    const { x, y } = g.end;
    grp.items.push({ q, head: [x, y, x - hl * Math.cos(g.angle - 0.38), y - hl * Math.sin(g.angle - 0.38), x - hl * Math.cos(g.angle + 0.38), y - hl * Math.sin(g.angle + 0.38)] });
  }
  // Unreachable and unknown first, reachable on top.
  const order = { unknown: 0, unreachable: 1, reachable: 2 };
  groups = { list: [...byStyle.values()].sort((a, b) => order[a.status] - order[b.status]), lineW, reachableCount: model.edges.filter((e) => e.status === 'reachable').length };
  geometryDirty = false;
  layersDirty = true;
}

function subQuad(p0, p1, p2, t0, t1) {
  const at = (t) => ({ x: (1 - t) * (1 - t) * p0.x + 2 * (1 - t) * t * p1.x + t * t * p2.x, y: (1 - t) * (1 - t) * p0.y + 2 * (1 - t) * t * p1.y + t * t * p2.y });
  const d = (t) => ({ x: 2 * (1 - t) * (p1.x - p0.x) + 2 * t * (p2.x - p1.x), y: 2 * (1 - t) * (p1.y - p0.y) + 2 * t * (p2.y - p1.y) });
  const s = at(t0), e = at(t1), ds = d(t0), h = (t1 - t0) / 2;
  return { s, e, c: { x: s.x + ds.x * h, y: s.y + ds.y * h } };
}

// ---------- drawing ----------
// What does not move (edges, labels, nodes) is drawn into an opaque off-screen layer, redrawn
// only when the data, the layout, the toggles or the hover change; each frame copies the layer
// and draws the markers on top. That keeps 2,500 edges smooth.

const under = document.createElement('canvas'); // background, edges, labels and nodes
let layersDirty = true;

function resize() {
  const rect = canvas.getBoundingClientRect();
  DPR = window.devicePixelRatio || 1;
  W = Math.max(1, rect.width); H = Math.max(1, rect.height);
  for (const c of [canvas, under]) { c.width = Math.round(W * DPR); c.height = Math.round(H * DPR); }
  for (const n of model.nodes) { n.x = undefined; }
  layoutDirty = true;
  layersDirty = true;
}

/** The marker: a small glowing white ball, drawn once per size and copied for every edge. */
let sprite = null;
function ballSprite(r) {
  const key = `${r}|${DPR}`;
  if (sprite?.key === key) return sprite.canvas;
  const c = document.createElement('canvas');
  const R = Math.ceil(r * 2 * DPR);
  c.width = c.height = R * 2;
  const g = c.getContext('2d');
  const grad = g.createRadialGradient(R, R, 0, R, R, R);
  grad.addColorStop(0, 'rgba(255,255,255,1)');
  grad.addColorStop(0.45, 'rgba(255,255,255,0.95)');
  grad.addColorStop(0.6, 'rgba(255,255,255,0.35)');
  grad.addColorStop(1, 'rgba(255,255,255,0)');
  g.fillStyle = grad;
  g.fillRect(0, 0, R * 2, R * 2);
  sprite = { key, canvas: c };
  return c;
}

let phase = 0;
function frame() {
  state.frames++;
  if (layoutDirty) layout();
  // Ease nodes towards their places (no jumps when resources come and go); big graphs jump.
  const ease = model.edges.length > 600 ? 1 : 0.25;
  let moving = false;
  for (const n of model.nodes) {
    const dx = n.tx - n.x, dy = n.ty - n.y;
    if (Math.abs(dx) > 0.3 || Math.abs(dy) > 0.3) { n.x += dx * ease; n.y += dy * ease; moving = true; }
    else if (n.x !== n.tx || n.y !== n.ty) { n.x = n.tx; n.y = n.ty; moving = true; }
  }
  if (moving || geometryDirty) rebuildGeometry();
  if (layersDirty) drawLayers();
  draw();
  requestAnimationFrame(frame);
}

let drawnKey = '';
function drawLayers() {
  layersDirty = false;
  const h = pinned ?? hover;
  drawnKey = `${state.showUnreachable}|${state.stale}|${h ? h.kind + h.item.id : ''}`;
  const c1 = under.getContext('2d', { alpha: false }), c2 = c1;
  c1.setTransform(DPR, 0, 0, DPR, 0, 0);
  c1.fillStyle = BG;
  c1.fillRect(0, 0, W, H);
  if (!groups) return;
  const lw = groups.lineW;
  const faded = state.stale ? 0.55 : 1;
  c1.lineCap = 'round';
  for (const g of groups.list) {
    if (g.status !== 'reachable' && !state.showUnreachable) continue;
    c1.globalAlpha = (g.status === 'reachable' ? 0.9 : 0.75) * faded;
    c1.strokeStyle = g.color; c1.fillStyle = g.color;
    c1.lineWidth = g.status === 'reachable' ? lw * 1.5 : lw;
    c1.setLineDash(g.status === 'reachable' ? [] : g.status === 'unreachable' ? [lw * 4, lw * 3] : [lw, lw * 3]);
    for (const { q } of g.items) {
      c1.beginPath(); c1.moveTo(q.s.x, q.s.y); c1.quadraticCurveTo(q.c.x, q.c.y, q.e.x, q.e.y); c1.stroke();
    }
    c1.setLineDash([]);
    c1.beginPath();
    for (const { head: p } of g.items) { c1.moveTo(p[0], p[1]); c1.lineTo(p[2], p[3]); c1.lineTo(p[4], p[5]); c1.closePath(); }
    c1.fill();
  }
  c1.globalAlpha = 1;
  // Reasons on failing edges (only when few enough to read; otherwise on hover).
  if (state.showUnreachable) {
    const bad = model.edges.filter((e) => e.status !== 'reachable' && e.geo);
    const fontPx = Math.max(10, Math.min(13, nodeR / 2.4));
    c1.font = `600 ${fontPx}px system-ui, sans-serif`;
    c1.textAlign = 'center'; c1.textBaseline = 'middle';
    const list = bad.length <= 120 ? bad : h?.kind === 'edge' && h.item.geo && h.item.status !== 'reachable' ? [h.item] : [];
    for (const e of list) {
      const text = e.reason ?? 'unreachable';
      const m = e.geo.mid;
      const w = c1.measureText(text).width + 8;
      c1.fillStyle = 'rgba(13,17,23,0.85)';
      c1.fillRect(m.x - w / 2, m.y - fontPx * 0.7, w, fontPx * 1.4);
      c1.fillStyle = e.status === 'unreachable' ? '#ffb3b3' : '#c9d1d9';
      c1.fillText(text, m.x, m.y);
    }
  }
  if (h?.kind === 'edge' && h.item.geo) {
    const g = h.item.geo;
    c1.strokeStyle = '#ffffff'; c1.lineWidth = lw + 2; c1.globalAlpha = 0.5;
    c1.beginPath(); g.samples.forEach((p, i) => (i ? c1.lineTo(p.x, p.y) : c1.moveTo(p.x, p.y))); c1.stroke();
    c1.globalAlpha = 1;
  }
  // Nodes, above the edges.
  const labelPx = Math.max(11, Math.min(30, nodeR * 0.85));
  for (const n of model.nodes) {
    c2.globalAlpha = faded;
    c2.beginPath(); c2.arc(n.x, n.y, nodeR, 0, Math.PI * 2);
    c2.fillStyle = n.failing || n.pending ? '#30363d' : n.color;
    c2.fill();
    if (n.failing || n.pending) {
      c2.lineWidth = Math.max(2, nodeR / 8);
      c2.strokeStyle = n.failing ? COLOR_BAD : COLOR_UNKNOWN;
      c2.setLineDash(n.pending ? [4, 4] : []);
      c2.stroke(); c2.setLineDash([]);
    }
    if (h?.kind === 'node' && h.item.id === n.id) { c2.lineWidth = 3; c2.strokeStyle = '#ffffff'; c2.stroke(); }
    // The id inside the node when it fits (shrunk down to 60 %), else in a tag beside it.
    c2.textAlign = 'center'; c2.textBaseline = 'middle';
    c2.font = `700 ${labelPx}px system-ui, sans-serif`;
    const fit = (nodeR * 1.7) / c2.measureText(n.id).width;
    const below = n.y > H / 2 ? -1 : 1;
    let offset = nodeR;
    if (fit >= 0.6) {
      c2.font = `700 ${labelPx * Math.min(1, fit)}px system-ui, sans-serif`;
      c2.fillStyle = n.failing || n.pending ? '#e6edf3' : '#0d1117';
      c2.fillText(n.id, n.x, n.y + 1);
    } else {
      tag(c2, n.id, n.x, n.y + below * (offset + 12), 13, '#e6edf3', 700);
      offset += 24;
    }
    if (n.failing || n.pending) {
      const px = Math.max(10, Math.min(14, nodeR / 2.2));
      tag(c2, n.failing ? `✕ ${n.reason}` : 'pending', n.x, n.y + below * (offset + px), px, n.failing ? '#ffb3b3' : '#c9d1d9', 600);
    }
  }
  c2.globalAlpha = 1;
}

/** Text on a dark pill, centred at x, y. */
function tag(c, text, x, y, px, color, weight) {
  c.font = `${weight} ${px}px system-ui, sans-serif`;
  c.textAlign = 'center'; c.textBaseline = 'middle';
  const w = c.measureText(text).width + 10;
  c.fillStyle = 'rgba(13,17,23,0.9)';
  c.fillRect(x - w / 2, y - px * 0.75, w, px * 1.5);
  c.fillStyle = color;
  c.fillText(text, x, y);
}

function draw() {
  const h = pinned ?? hover;
  if (`${state.showUnreachable}|${state.stale}|${h ? h.kind + h.item.id : ''}` !== drawnKey) drawLayers();
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.drawImage(under, 0, 0);
  // Markers: a light ball travelling source → target on every reachable edge (star's 140-frame loop).
  if (state.showMarkers && groups) {
    ctx.setTransform(DPR, 0, 0, DPR, 0, 0);
    phase = (phase + 1) % 140;
    const t = phase / 140;
    const br = Math.max(2.5, groups.lineW * 1.5);
    ctx.globalAlpha = state.stale ? 0.5 : 1;
    // Few edges: a glowing ball sprite each; many: one path of small squares (cheapest to fill
    // in software rendering: 55 fps with 2,500 edges at 2x, where balls give 15).
    const reachable = groups.reachableCount;
    if (reachable <= 300) {
      const sprite = ballSprite(br);
      const size = sprite.width / DPR, half = size / 2;
      for (const e of model.edges) {
        if (e.status !== 'reachable' || !e.geo) continue;
        const p = e.geo.pt(e.geo.t0 + (e.geo.t1 - e.geo.t0) * t);
        ctx.drawImage(sprite, p.x - half, p.y - half, size, size);
      }
    } else {
      ctx.fillStyle = '#ffffff';
      ctx.beginPath();
      for (const e of model.edges) {
        if (e.status !== 'reachable' || !e.geo) continue;
        const p = e.geo.pt(e.geo.t0 + (e.geo.t1 - e.geo.t0) * t);
        ctx.rect(p.x - br * 0.75, p.y - br * 0.75, br * 1.5, br * 1.5);
      }
      ctx.fill();
    }
    ctx.globalAlpha = 1;
  }
}

// ---------- interaction ----------

function hitTest(x, y) {
  for (const n of model.nodes) if (Math.hypot(n.x - x, n.y - y) <= nodeR + 2) return { kind: 'node', item: n };
  let best = null, bestD = 8;
  for (const e of model.edges) {
    if (!e.geo || (e.status !== 'reachable' && !state.showUnreachable)) continue;
    const s = e.geo.samples;
    for (let i = 1; i < s.length; i++) {
      const d = segDist(x, y, s[i - 1], s[i]);
      if (d < bestD) { bestD = d; best = e; }
    }
  }
  return best ? { kind: 'edge', item: best } : null;
}

function segDist(px, py, a, b) {
  const dx = b.x - a.x, dy = b.y - a.y;
  const l2 = dx * dx + dy * dy || 1;
  const t = Math.max(0, Math.min(1, ((px - a.x) * dx + (py - a.y) * dy) / l2));
  return Math.hypot(px - (a.x + t * dx), py - (a.y + t * dy));
}

function showTooltip(h, x, y) {
  if (!h) { tooltip.hidden = true; return; }
  tooltip.innerHTML = detailsHtml(h);
  tooltip.hidden = false;
  const tw = tooltip.offsetWidth, th = tooltip.offsetHeight;
  tooltip.style.left = `${Math.min(W - tw - 6, x + 14)}px`;
  tooltip.style.top = `${Math.max(6, Math.min(H - th - 6, y + 14))}px`;
}

canvas.addEventListener('pointermove', (ev) => {
  const r = canvas.getBoundingClientRect();
  const x = ev.clientX - r.left, y = ev.clientY - r.top;
  hover = hitTest(x, y);
  canvas.style.cursor = hover ? 'pointer' : 'default';
  showTooltip(hover, x, y);
  renderDetails();
});
canvas.addEventListener('pointerleave', () => { hover = null; tooltip.hidden = true; renderDetails(); });
canvas.addEventListener('click', (ev) => {
  const r = canvas.getBoundingClientRect();
  pinned = hitTest(ev.clientX - r.left, ev.clientY - r.top);
  renderDetails();
});
$('matrix').addEventListener('mouseover', (ev) => cellDetails(ev.target));
$('matrix').addEventListener('focusin', (ev) => cellDetails(ev.target));
function cellDetails(td) {
  if (!(td instanceof window.HTMLElement) || !td.dataset.from) return;
  const e = model.edges.find((x) => x.from === td.dataset.from && x.to === td.dataset.to);
  if (e) { pinned = { kind: 'edge', item: e }; renderDetails(); }
}

function toggle(button, key) {
  state[key] = !state[key];
  button.setAttribute('aria-pressed', String(state[key]));
}
$('toggle-unreachable').addEventListener('click', (ev) => toggle(ev.currentTarget, 'showUnreachable'));
$('toggle-markers').addEventListener('click', (ev) => toggle(ev.currentTarget, 'showMarkers'));

// ---------- start ----------

$('empty-example').textContent = `curl -X POST ${window.location.origin}/resources \\\n  -H 'content-type: application/json' \\\n  -d '{"id":"A","url":"http://probe-a:9000/status"}'`;
new window.ResizeObserver(() => resize()).observe(canvas);
resize();
renderChrome();
requestAnimationFrame(frame);
await healthz();
await poll();
setInterval(poll, POLL_MS);
setInterval(healthz, 30_000);
setInterval(() => { updateStaleness(); renderClock(); }, 1000);
