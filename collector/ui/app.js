/* global URLSearchParams, AbortSignal */
// Starmap collector UI, the page's wiring: polls /responses every second (and
// /starmap/expectations, which a scenario runner fills), builds the model (model.js), draws it
// (draw.js on a canvas) and writes the side panels (panels.js: the matrix, the accessible view).
// No framework, no CDN. Test hook: window.__starmap holds the current model (nodes, edges,
// matrix, state, expectations) and where everything is drawn (geometry()).
import { SELF, buildModel, compareExpectations, emptyModel, graphSignature, normalise, parseResponses } from './model.js';
import { GraphView } from './draw.js';
import { ago, detailsHtml, matrixHtml, resourcesHtml, stepHtml, summaryText } from './panels.js';

const params = new URLSearchParams(window.location.search);
const EXAMPLE = params.get('example') === 'true';
const POLL_MS = 1000;
const SOURCE = EXAMPLE ? '/responses/example' : '/responses';
const EXPECTATIONS = '/starmap/expectations';

const $ = (id) => document.getElementById(id);
const canvas = $('graph');
const tooltip = $('tooltip');
const view = new GraphView(canvas);

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
  settled: false, // no node moving (tests take screenshots then)
  expectationPolls: 0,
};
let model = emptyModel();
/** The published expectations as fetched, and compared with the model (null: none published). */
let expectationsDoc = null;
let expectations = null;
/** Last known targets per resource id, kept while its resource fails (shown as unknown). */
const lastTargets = new Map();
let graphSig = '';
let hover = null; // {kind:'node'|'edge'|'self', item}
let pinned = null;

window.__starmap = {
  state,
  normalise: (u) => normalise(u),
  get model() {
    return model;
  },
  get nodes() {
    return model.nodes;
  },
  get edges() {
    return model.edges;
  },
  get matrix() {
    return model.matrix;
  },
  get expectations() {
    return expectations;
  },
  geometry: () => view.geometry(model),
};

function rebuild(doc) {
  const oldIds = model.nodes.map((n) => n.id).join('\u0000');
  const prevGeo = new Map(model.edges.map((e) => [e.id, e.geo]));
  const prevNodes = model.byId;
  if (doc) model = buildModel(doc, model, lastTargets);
  expectations = compareExpectations(model, expectationsDoc);
  if (model.nodes.map((n) => n.id).join('\u0000') !== oldIds) view.layoutDirty = true;
  // Redraw the graph only when what it shows changed (not on every poll).
  const sig = graphSignature(model);
  if (sig !== graphSig || view.layoutDirty) {
    // Labels may have changed size (a failing node shows why): lay out again (nodes ease, not jump).
    graphSig = sig;
    view.layoutDirty = true;
  } else {
    // Same picture: keep the geometry and the labels already computed.
    for (const e of model.edges) e.geo = prevGeo.get(e.id);
    for (const n of model.nodes) {
      const p = prevNodes.get(n.id);
      if (p) {
        n.labelSize = p.labelSize;
        n.labelBox = p.labelBox;
        n.hiddenLabelBox = p.hiddenLabelBox;
      }
    }
  }
  if (hover) hover = refind(hover);
  if (pinned) pinned = refind(pinned);
}

function refind(h) {
  if (h.kind === 'self') {
    const node = model.byId.get(h.item.node.id);
    return node ? { kind: 'self', item: { ...h.item, node, expect: expectations?.cells.get(`${SELF}->${node.id}`) } } : null;
  }
  const item = h.kind === 'node' ? model.byId.get(h.item.id) : model.edges.find((e) => e.id === h.item.id);
  return item ? { kind: h.kind, item } : null;
}

// ---------- time ----------

let clockSkew = 0; // server time − browser time
const serverNow = () => Date.now() + clockSkew;
const fmtTime = (ms) => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });

// ---------- polling ----------

let polling = false;
/**
 * The ETag and generatedAt of the document the model was last built from. With `cache: 'no-cache'`
 * the browser revalidates, and on a 304 hands back its cached copy of that very document (same
 * ETag, same generatedAt), so parsing it and rebuilding the model again would change nothing.
 */
let built = { etag: null, generatedAt: '' };
let expectationsEtag = null;
async function poll() {
  if (polling) return;
  polling = true;
  try {
    const res = await fetch(SOURCE, { cache: 'no-cache', headers: { accept: 'application/json' }, signal: AbortSignal.timeout(4000) });
    if (!res.ok) throw new Error(`GET ${SOURCE} answered HTTP ${res.status}`);
    const etag = res.headers.get('etag');
    const same = etag !== null && etag === built.etag;
    if (same) res.body?.cancel().catch(() => {}); // not needed: let the browser drop it
    // Parsed from the text: JSON.parse alone would put integer-like ids first (model.js, ORDER).
    const doc = same ? null : parseResponses(await res.text());
    const expChanged = EXAMPLE ? false : await pollExpectations();
    state.polls++;
    state.connected = true;
    state.error = null;
    state.lastPollOk = Date.now();
    const generatedAt = same ? built.generatedAt : doc.generatedAt;
    const gen = Date.parse(generatedAt ?? '');
    if (!Number.isNaN(gen)) clockSkew = gen - Date.now();
    state.asOf = Number.isNaN(gen) ? Date.now() : gen;
    if (!same || expChanged) {
      const t0 = performance.now();
      rebuild(doc);
      if (!same) state.builds++;
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

/** Fetches the published expectations; true when they changed. A collector without them (404, star's) means none. */
async function pollExpectations() {
  try {
    const res = await fetch(EXPECTATIONS, { cache: 'no-cache', headers: { accept: 'application/json' }, signal: AbortSignal.timeout(4000) });
    state.expectationPolls++;
    const etag = res.headers.get('etag');
    if (res.ok && etag !== null && etag === expectationsEtag) {
      res.body?.cancel().catch(() => {});
      return false;
    }
    const doc = res.ok ? await res.json() : null;
    expectationsEtag = res.ok ? etag : null;
    const changed = JSON.stringify(doc) !== JSON.stringify(expectationsDoc);
    expectationsDoc = doc;
    return changed;
  } catch {
    return false; // the next poll tries again; /responses reports a collector that is gone
  }
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

// ---------- chrome: badge, overlays, step, matrix, lists ----------

/** Everything on screen: after each poll. */
function renderChrome() {
  renderClock();
  $('banner').hidden = !EXAMPLE;
  $('empty').hidden = !(state.empty && !state.error);
  $('error').hidden = !state.error;
  if (state.error) $('error-text').textContent = state.error;
  const step = $('step');
  step.hidden = !expectations;
  document.body.classList.toggle('has-expectations', expectations !== null);
  writeOnce(step, stepHtml(expectations));
  renderMatrix();
  writeOnce($('resources'), resourcesHtml(model));
}

/**
 * Writes HTML into an element unless it is what was written there last (compared with the last
 * string written, not innerHTML, which re-serialises the DOM and never matches once text holds & ' or ").
 */
const written = new WeakMap();
function writeOnce(el, html) {
  if (written.get(el) === html) return;
  written.set(el, html);
  el.innerHTML = html;
}

/**
 * The parts that change with the clock alone: the badge (staleness), "as of … · last contact …"
 * and the details' "… s ago". Also every second between polls; the rest changes only with a poll.
 */
function renderClock() {
  const badge = $('badge');
  let cls = 'badge-live';
  let text = 'live';
  if (state.error && state.polls === 0) {
    cls = 'badge-error';
    text = 'collector unreachable';
  } else if (state.stale) {
    cls = 'badge-stale';
    text = `stale: ${state.staleWhy}`;
  } else if (EXAMPLE) {
    cls = 'badge-example';
    text = 'sample data';
  }
  badge.className = `badge ${cls}`;
  badge.textContent = text;
  badge.dataset.state = state.error && state.polls === 0 ? 'error' : state.stale ? 'stale' : EXAMPLE ? 'example' : 'live';
  $('asof').textContent = state.asOf
    ? `as of ${fmtTime(state.asOf - clockSkew)}${state.error ? ` · last contact ${ago(new Date(state.lastPollOk ?? 0).toISOString(), Date.now())}` : ''}`
    : '';
  renderDetails();
}

let matrixSig = '';
function renderMatrix() {
  const sig = JSON.stringify([
    model.matrix,
    model.nodes.map((n) => n.failing),
    model.edges.map((e) => [e.id, e.reason, e.latencyMs, e.changedAt]),
    expectationsDoc,
  ]);
  if (sig === matrixSig) return;
  matrixSig = sig;
  $('matrix').innerHTML = matrixHtml(model, expectations, serverNow());
  $('summary').textContent = model.matrix.ids.length === 0 ? '' : summaryText(model, expectations);
}

function renderDetails() {
  const h = pinned ?? hover;
  writeOnce($('details'), h ? detailsHtml(h, serverNow()) : '<p class="hint">Hover or tap a node, an edge or a matrix cell.</p>');
}

// ---------- interaction ----------

function showTooltip(h, x, y) {
  if (!h) {
    tooltip.hidden = true;
    return;
  }
  tooltip.innerHTML = detailsHtml(h, serverNow());
  tooltip.hidden = false;
  const tw = tooltip.offsetWidth,
    th = tooltip.offsetHeight;
  tooltip.style.left = `${Math.max(6, Math.min(view.W - tw - 6, x + 14))}px`;
  tooltip.style.top = `${Math.max(6, Math.min(view.H - th - 6, y + 14))}px`;
}

const at = (ev) => {
  const r = canvas.getBoundingClientRect();
  return { x: ev.clientX - r.left, y: ev.clientY - r.top };
};
canvas.addEventListener('pointermove', (ev) => {
  const { x, y } = at(ev);
  hover = view.hitTest(model, x, y, state.showUnreachable);
  canvas.style.cursor = hover ? 'pointer' : 'default';
  showTooltip(hover, x, y);
  renderDetails();
});
canvas.addEventListener('pointerleave', () => {
  hover = null;
  tooltip.hidden = true;
  renderDetails();
});
// A tap (or click) pins what is under it: its details stay, with the reasons of its expectation.
canvas.addEventListener('click', (ev) => {
  const { x, y } = at(ev);
  pinned = view.hitTest(model, x, y, state.showUnreachable);
  showTooltip(pinned, x, y);
  renderDetails();
});
$('matrix').addEventListener('mouseover', (ev) => cellDetails(ev.target));
$('matrix').addEventListener('focusin', (ev) => cellDetails(ev.target));
$('matrix').addEventListener('click', (ev) => cellDetails(ev.target));
function cellDetails(target) {
  const td = target instanceof window.HTMLElement ? target.closest('td') : null;
  if (!td || !td.dataset.to) return;
  if (td.dataset.self) {
    const node = model.byId.get(td.dataset.to);
    if (node) pinned = { kind: 'self', item: { node, label: expectations?.selfLabel ?? 'UI', expect: expectations?.cells.get(`${SELF}->${node.id}`) } };
  } else {
    const e = model.edges.find((x) => x.from === td.dataset.from && x.to === td.dataset.to);
    if (e) pinned = { kind: 'edge', item: e };
  }
  renderDetails();
}

function toggle(button, key) {
  state[key] = !state[key];
  button.setAttribute('aria-pressed', String(state[key]));
}
$('toggle-unreachable').addEventListener('click', (ev) => toggle(ev.currentTarget, 'showUnreachable'));
$('toggle-markers').addEventListener('click', (ev) => toggle(ev.currentTarget, 'showMarkers'));

// ---------- start ----------

function frame() {
  state.frames++;
  view.frame(model, state, pinned ?? hover);
  requestAnimationFrame(frame);
}

$('empty-example').textContent =
  `curl -X POST ${window.location.origin}/resources \\\n  -H 'content-type: application/json' \\\n  -d '{"id":"A","url":"http://probe-a:9000/status"}'`;
new window.ResizeObserver(() => view.resize(model)).observe(canvas);
view.resize(model);
renderChrome();
requestAnimationFrame(frame);
await healthz();
await poll();
setInterval(poll, POLL_MS);
setInterval(healthz, 30_000);
setInterval(() => {
  updateStaleness();
  renderClock();
}, 1000);
