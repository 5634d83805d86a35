// The collector UI's data model: what `GET /responses` (and, when a scenario runner publishes them,
// `GET /starmap/expectations`) say, turned into nodes, edges and the reachability matrix. Pure: no
// DOM, no network, no clock (callers pass `now`), so it loads in Node and is unit tested there
// (test/collector-ui-model-unit.test.ts); app.js feeds it and draws what it returns.
// About 400 lines on purpose: nodes, edges and the matrix are read from the same responses and
// expectations in one pass, and each needs the others' verdicts (an edge's state is its cells').

/** star's Mesosphere palette plus Calico's two additions, brightened a little for a dark screen. */
export const PALETTE = ['#8e7cc3', '#4fb3d9', '#e06c9f', '#f0a14a', '#5cc9a7', '#e3d26f', '#7aa6ff', '#c678dd', '#56d4dd'];

/** The matrix row of the collector itself (the management UI in a scenario), as the terminal's tables call it. */
export const SELF_LABEL = 'UI';
/** How the collector's own row is keyed (`@self->to`): '@' is in no resource id, so it cannot clash. */
export const SELF = '@self';

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

/** Why a resource's entry cannot be drawn as a probe ({failing, reason, message}), or {pending}. */
export function isFailing(entry) {
  if (entry === null || entry === undefined) return { failing: true, reason: 'no response', message: 'the collector has no response for this resource' };
  if (entry.pending) return { failing: false, pending: true };
  if (entry.error) return { failing: true, reason: entry.error.reason ?? 'error', message: entry.error.message ?? '' };
  if (typeof entry.statusCode === 'number' && (entry.statusCode < 200 || entry.statusCode > 299))
    return { failing: true, reason: 'http-status', message: `HTTP ${entry.statusCode}` };
  const targets = entry.json?.status?.targets;
  if (!Array.isArray(targets))
    return { failing: true, reason: 'not-a-probe', message: 'the response is not a probe status document ({"status":{"targets":[…]}})' };
  return { failing: false };
}

/**
 * Where a parsed `/responses` document keeps the order its text gave the ids (parseResponses).
 * JSON.parse puts integer-like keys ("1", "10", "2") first and in numeric order, whatever the text
 * says, so the collector's order has to be read from the text itself.
 */
export const ORDER = Symbol('order of the ids in the document text');

/** Parses a `/responses` document, remembering the collector's order of its ids (ORDER). */
export function parseResponses(text) {
  const doc = JSON.parse(text);
  if (doc && typeof doc === 'object' && !Array.isArray(doc))
    doc[ORDER] = [...new Set([...(keyOrder(text, 'responses') ?? []), ...(keyOrder(text, 'details') ?? [])])];
  return doc;
}

/**
 * The keys of the object at top-level member `field` of a JSON text, in the text's order; null
 * when there is none. The text must be valid JSON (parse it first); values are skipped, not built.
 */
export function keyOrder(text, field) {
  let i = 0;
  const space = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i++;
  };
  const string = () => {
    const start = i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i));
  };
  const skipValue = () => {
    space();
    if (text[i] === '"') return void string();
    if (text[i] !== '{' && text[i] !== '[') {
      while (i < text.length && !',}] \n\r\t'.includes(text[i])) i++;
      return;
    }
    let depth = 0;
    while (i < text.length) {
      const c = text[i];
      if (c === '"') {
        string();
        continue;
      }
      i++;
      if (c === '{' || c === '[') depth++;
      else if ((c === '}' || c === ']') && --depth === 0) return;
    }
  };
  /** Calls `member(key)` at each member's value of the object at `i`; false when it is no object. */
  const members = (member) => {
    space();
    if (text[i] !== '{') return false;
    i++;
    space();
    if (text[i] === '}') return (void i++, true);
    for (;;) {
      space();
      const key = string();
      space();
      i++; // ':'
      member(key);
      space();
      if (text[i++] !== ',') return true;
    }
  };
  let keys = null;
  try {
    members((key) => {
      if (
        key !== field ||
        !members((k) => {
          (keys ??= []).push(k);
          skipValue();
        })
      )
        skipValue();
      else keys ??= [];
    });
  } catch {
    return null;
  }
  return keys;
}

/**
 * One entry per resource id, in the collector's order (the order the resources were added, which
 * in a scenario is the scenario's), as a Map: star's `{url, statusCode, json}` (null when there is
 * nothing to show) merged with Starmap's detail from the sibling `details` map. A document without
 * `details` (star's collector) gives the entries as they are. The order is the text's when the
 * document came from parseResponses (ORDER), else the objects' (integer-like ids first).
 */
export function entriesOf(doc) {
  const obj = (x) => (x && typeof x === 'object' ? x : null);
  const responses = obj(doc?.responses) ?? {};
  const details = obj(doc?.details);
  const has = (o, id) => o !== null && Object.hasOwn(o, id);
  const ids = [...new Set([...(Array.isArray(doc?.[ORDER]) ? doc[ORDER] : []), ...Object.keys(responses), ...(details ? Object.keys(details) : [])])].filter(
    (id) => has(responses, id) || has(details, id),
  );
  const entries = new Map();
  for (const id of ids) {
    const r = obj(responses[id]);
    if (!details) {
      entries.set(id, responses[id]);
      continue;
    }
    const d = obj(details[id]);
    entries.set(id, d ? { ...d, url: d.url ?? r?.url ?? null, statusCode: d.statusCode ?? r?.statusCode ?? null, json: r ? r.json : null, detailed: true } : r);
  }
  return entries;
}

/** An empty model (before the first poll). */
export function emptyModel() {
  return { nodes: [], edges: [], matrix: { ids: [], rows: {}, self: {} }, unmatched: [], byId: new Map() };
}

/**
 * Builds the model from a `/responses` document. `prev` gives each node its last position (the
 * layout stays put between polls); `lastTargets` (resource id → targets) is read and updated, so a
 * probe that stops reporting keeps its edges on screen as unknown.
 */
export function buildModel(doc, prev = emptyModel(), lastTargets = new Map()) {
  const responses = entriesOf(doc);
  const ids = [...responses.keys()];
  const prevPos = new Map(prev.nodes.map((n) => [n.id, n]));
  const nodes = ids.map((id, i) => {
    const entry = responses.get(id);
    const f = isFailing(entry);
    const p = prevPos.get(id);
    return {
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
      // What the collector's own fetch says (the runner's rule for the management UI's cells).
      fetched: f.pending ? null : entry?.detailed ? !entry.error : entry !== null && entry !== undefined,
      x: p?.x,
      y: p?.y,
      tx: p?.tx ?? 0,
      ty: p?.ty ?? 0,
    };
  });
  // Index by scheme+host+port, and by host+port for bare host:port targets.
  // Several resources may share a host and port (different paths): then the path decides.
  const byKey = new Map();
  const byHostPort = new Map();
  const add = (map, k, n) => {
    const l = map.get(k);
    if (l) l.push(n);
    else map.set(k, [n]);
  };
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
    const entry = responses.get(n.id);
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
        id,
        from: n.id,
        to: to.id,
        index: i,
        status,
        reachable: unknown ? null : t.reachable === true,
        reason: unknown ? 'no data' : (t.reason ?? (t.reachable ? 'ok' : 'unreachable')),
        message: unknown
          ? `${n.id}'s probe is not reporting (${n.reason ?? 'pending'}); last known: ${t.reachable ? 'reachable' : 'unreachable'}`
          : (t.message ?? null),
        latencyMs: t.latencyMs ?? null,
        statusCode: t.statusCode ?? null,
        checkedAt: t.checkedAt ?? null,
        changedAt: t.changedAt ?? null,
        url: t.url,
      });
    });
  }
  for (const id of [...lastTargets.keys()]) if (!responses.get(id)) lastTargets.delete(id);
  return { nodes, edges, unmatched, matrix: matrixOf(nodes, edges), byId: new Map(nodes.map((n) => [n.id, n])) };
}

/** The mark of a drawn edge: '.' reachable, 'X' unreachable, '?' unknown. */
const edgeMark = (e) => (e.status === 'reachable' ? '.' : e.status === 'unreachable' ? 'X' : '?');

/**
 * The matrix: one row and one column per resource in the collector's order ('.' allowed, 'X'
 * blocked, '?' unknown, '-' not probed), and `self`, the collector's own row: whether its fetch of
 * each resource got through ('?' before the first fetch), as the terminal's "UI" row says.
 */
export function matrixOf(nodes, edges) {
  const edgeByPair = new Map(edges.map((e) => [e.id, e]));
  const ids = nodes.map((n) => n.id);
  const rows = {};
  const self = {};
  for (const a of nodes) {
    rows[a.id] = {};
    for (const b of nodes) {
      const e = edgeByPair.get(`${a.id}->${b.id}`);
      rows[a.id][b.id] = e ? edgeMark(e) : a.failing || a.pending ? '?' : '-';
    }
    self[a.id] = a.fetched === null ? '?' : a.fetched ? '.' : 'X';
  }
  return { ids, rows, self };
}

/** What the graph shows, as text: the drawing is redone only when this changes. */
export function graphSignature(model) {
  let sig = '';
  for (const n of model.nodes) sig += `${n.id}|${n.failing}|${n.pending}|${n.reason}\n`;
  for (const e of model.edges) sig += `${e.id}|${e.status}|${e.reason}|${e.expect?.mismatch ?? ''}\n`;
  return sig;
}

/** Counts for the line under the matrix. */
export function summaryOf(model) {
  let allowed = 0,
    blocked = 0,
    unknown = 0;
  for (const a of model.matrix.ids) {
    for (const b of model.matrix.ids) {
      const m = model.matrix.rows[a][b];
      if (m === '.') allowed++;
      else if (m === 'X') blocked++;
      else if (m === '?') unknown++;
    }
  }
  return {
    allowed,
    blocked,
    unknown,
    failing: model.nodes.filter((n) => n.failing).length,
    resources: model.matrix.ids.length,
    unmatched: model.unmatched.length,
  };
}

// ---------- expectations (published by a scenario runner: PUT /starmap/expectations) ----------

const boolMark = (v) => (v === true ? '.' : v === false ? 'X' : '-');

/**
 * Joins published expectations to the model: per matrix cell (edge id `from->to`, and
 * `@self->to` for the collector's own row) what is expected, what is observed here, whether they
 * differ, and why (the evaluator's reasons). A cell is judged only when the expectation says
 * true or false, the runner can observe it here, and something was observed ('.' or 'X'); a probe's edge is matched by the URL it
 * checks when the runner gave one (a pair can have several ports), else by the pair.
 * Returns null without expectations; sets `edge.expect` on every judged edge.
 */
export function compareExpectations(model, doc) {
  for (const e of model.edges) e.expect = undefined;
  if (!doc || !Array.isArray(doc.cells)) return null;
  const selfId = doc.collector?.id ?? null;
  const edgeByPair = new Map(model.edges.map((e) => [e.id, e]));
  const known = new Set(model.matrix.ids);
  const cells = new Map();
  let mismatches = 0;
  for (const c of doc.cells) {
    if (!known.has(c.to)) continue;
    const self = selfId !== null && c.from === selfId;
    if (!self && !known.has(c.from)) continue;
    const key = `${self ? SELF : c.from}->${c.to}`;
    const edge = self ? undefined : edgeByPair.get(key);
    // Several cells for one pair (ports): the one whose URL the drawn edge checks, else the first.
    if (cells.has(key) && !(edge && c.url && c.url === edge.url)) continue;
    const observedMark = self ? model.matrix.self[c.to] : model.matrix.rows[c.from][c.to];
    // Cells the runner cannot observe here ('not run': SCTP; 'not proven': blocked by policies a
    // run without isolation cannot enforce) are shown, never judged, and never counted as passed.
    const unproven = c.status === 'not proven';
    const judged = (c.expected === true || c.expected === false) && c.status !== 'not run' && !unproven && (observedMark === '.' || observedMark === 'X');
    const mismatch = judged && boolMark(c.expected) !== observedMark;
    cells.set(key, {
      from: self ? SELF : c.from,
      to: c.to,
      expected: c.expected ?? null,
      expectedMark: boolMark(c.expected ?? null),
      observedMark,
      judged,
      mismatch,
      unproven,
      reason: c.reason ?? '',
      reasons: Array.isArray(c.reasons) ? c.reasons : [],
      port: c.port ?? null,
      protocol: c.protocol ?? null,
      status: c.status ?? null,
    });
  }
  let notProven = 0;
  for (const [key, x] of cells) {
    if (x.mismatch) mismatches++;
    if (x.unproven) notProven++;
    const edge = edgeByPair.get(key);
    if (edge) edge.expect = x;
  }
  const step = doc.step ?? {};
  return {
    scenario: doc.scenario ?? '',
    step: { index: step.index ?? 0, name: step.name ?? '', total: step.total ?? null, description: step.description ?? null, policies: step.policies ?? [] },
    phase: doc.phase ?? 'applying',
    outcome: doc.outcome ?? null,
    publishedAt: doc.publishedAt ?? null,
    selfLabel: doc.collector?.label ?? SELF_LABEL,
    labels: doc.labels && typeof doc.labels === 'object' ? doc.labels : {},
    cells,
    mismatches,
    // false: the run cannot enforce policies (no isolation); the UI says so instead of a pass.
    enforced: doc.enforced !== false,
    notProven,
  };
}

/** "step 2/5 default-deny (applying)" */
export function stepLine(x) {
  const n = x.step.total ? `${x.step.index + 1}/${x.step.total}` : `${x.step.index + 1}`;
  const phase = x.phase === 'judged' ? (x.outcome ? `judged: ${x.outcome}` : 'judged') : 'applying, not judged yet';
  return `${x.scenario ? `${x.scenario}: ` : ''}step ${n} ${x.step.name} (${phase})`;
}
