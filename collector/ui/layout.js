// Where things go on the canvas: nodes on an ellipse that fills the canvas (evenly spaced along
// it), each label outside its circle on the outer side, each edge a curve, each self-loop beside
// its node along the ring (so it never meets the canvas edge or the label). Pure geometry: text
// widths come from a `measure(text, px, weight)` the caller passes (canvas measureText in the page,
// an estimate in unit tests), so this loads in Node and is unit tested there.

/** Space kept free along the canvas edges (px). */
export const PAD = 8;
/** Between a circle and its label (px). */
const GAP = 5;
/** How far a self-loop reaches from its node's centre, in node radii (the curve's extent, see selfGeometry). */
export const LOOP_REACH = 2.3;

/** Font sizes of labels for a graph of n nodes. */
export function labelFont(n) {
  const px = n <= 16 ? 14 : n <= 30 ? 12 : 11;
  return { px, reasonPx: px - 2, line: Math.round(px * 1.35) };
}

/** The text lines of a node's label: its id, and why it fails when it does. */
export function labelLines(node) {
  const lines = [{ text: node.id, weight: 700 }];
  if (node.failing) lines.push({ text: `✕ ${node.reason}`, weight: 600, reason: true });
  else if (node.pending) lines.push({ text: 'pending', weight: 600, reason: true });
  return lines;
}

/** `text` cut down (with an ellipsis) to at most `max` px wide. */
function fitText(text, px, weight, max, measure) {
  if (measure(text, px, weight) <= max) return text;
  let lo = 0,
    hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (measure(`${text.slice(0, mid)}…`, px, weight) <= max) lo = mid;
    else hi = mid - 1;
  }
  return `${text.slice(0, Math.max(1, lo))}…`;
}

/**
 * Width and height of a node's label box (text on a dark pill, 4 px padding each side); lines
 * wider than `maxW` are shortened with an ellipsis (the details and the matrix give the whole id).
 */
export function labelSize(node, font, measure, maxW = Infinity) {
  const lines = labelLines(node).map((l) => {
    const px = l.reason ? font.reasonPx : font.px;
    return { ...l, text: fitText(l.text, px, l.weight, maxW - 8, measure) };
  });
  const w = Math.max(...lines.map((l) => measure(l.text, l.reason ? font.reasonPx : font.px, l.weight))) + 8;
  return { w, h: lines.length * font.line + 2, lines };
}

/** Points along an ellipse at equal arc length, starting at the top and going clockwise. */
function ellipsePoints(cx, cy, rx, ry, n) {
  const steps = 720;
  const pts = [];
  let total = 0;
  for (let i = 0; i <= steps; i++) {
    const t = -Math.PI / 2 + (2 * Math.PI * i) / steps;
    const p = { x: cx + rx * Math.cos(t), y: cy + ry * Math.sin(t), s: 0 };
    if (i > 0) total += Math.hypot(p.x - pts[i - 1].x, p.y - pts[i - 1].y);
    p.s = total;
    pts.push(p);
  }
  const out = [];
  let j = 0;
  for (let k = 0; k < n; k++) {
    const want = (total * k) / n;
    while (j < steps && pts[j + 1].s < want) j++;
    out.push(pts[j]);
  }
  return { points: out, perimeter: total };
}

/**
 * Places the nodes (sets tx, ty, and x, y for new ones) and returns the sizes everything else
 * is drawn with: {nodeR, font, cx, cy}. The ellipse leaves room on each side for the widest
 * label, a self-loop and PAD, and otherwise fills the canvas.
 */
export function layoutNodes(nodes, W, H, measure) {
  const n = nodes.length;
  const cx = W / 2,
    cy = H / 2;
  const font = labelFont(n);
  // Side nodes carry their label beside them, top and bottom ones above or below; a label may
  // take a fifth of the canvas's width at most (a phone's canvas is narrow).
  const sizes = nodes.map((node) => labelSize(node, font, measure, Math.max(56, W * 0.2)));
  const maxW = Math.max(0, ...sizes.map((s) => s.w));
  const maxH = Math.max(0, ...sizes.map((s) => s.h));
  let nodeR = 30;
  let placed = { points: [], perimeter: 0 };
  let rx = 0,
    ry = 0;
  for (let pass = 0; pass < 3; pass++) {
    const mx = PAD + Math.max(nodeR + GAP + maxW, LOOP_REACH * nodeR);
    const my = PAD + Math.max(nodeR + GAP + maxH, LOOP_REACH * nodeR);
    rx = Math.max(4, W / 2 - mx);
    ry = Math.max(4, H / 2 - my);
    placed = ellipsePoints(cx, cy, rx, ry, Math.max(n, 1));
    const spacing = placed.perimeter / Math.max(n, 2);
    nodeR = Math.max(6, Math.min(30, spacing * 0.22, Math.min(rx, ry) * 0.3));
  }
  // Few nodes leave the ellipse's box partly empty (a triangle spans three quarters of its
  // height): stretch the points to fill the box.
  const pts = placed.points.slice(0, n);
  if (n > 1) {
    const xs = pts.map((p) => p.x),
      ys = pts.map((p) => p.y);
    const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
    const sx = x1 - x0 > 1 ? (2 * rx) / (x1 - x0) : 1,
      sy = y1 - y0 > 1 ? (2 * ry) / (y1 - y0) : 1;
    for (let i = 0; i < n; i++) pts[i] = { x: x1 - x0 > 1 ? cx - rx + (pts[i].x - x0) * sx : cx, y: y1 - y0 > 1 ? cy - ry + (pts[i].y - y0) * sy : cy };
  }
  nodes.forEach((node, i) => {
    const p = n === 1 ? { x: cx, y: cy } : pts[i];
    node.tx = p.x;
    node.ty = p.y;
    if (node.x === undefined || Number.isNaN(node.x)) {
      node.x = node.tx;
      node.y = node.ty;
    }
    node.labelSize = sizes[i];
  });
  return { nodeR, font, cx, cy, rx, ry };
}

/** The outward direction of a node (from the centre of the ring through it); straight up at the centre. */
export function outward(node, cx, cy) {
  const dx = node.x - cx,
    dy = node.y - cy;
  const d = Math.hypot(dx, dy);
  return d < 1 ? { x: 0, y: -1 } : { x: dx / d, y: dy / d };
}

const clamp1 = (v) => Math.max(-1, Math.min(1, v));

/**
 * A node's label box {x, y, w, h} (canvas px): just outside the circle on the outer side; beside
 * the node on the left and right of the ring, above or below it at the top and bottom, and at a
 * corner between, so the box never covers its circle.
 */
export function labelBox(node, nodeR, g) {
  const { w, h } = node.labelSize;
  const u = outward(node, g.cx, g.cy);
  const ax = node.x + u.x * (nodeR + GAP),
    ay = node.y + u.y * (nodeR + GAP);
  const fx = clamp1(u.x * 2.5),
    fy = clamp1(u.y * 2.5);
  return { x: ax - (w * (1 - fx)) / 2, y: ay - (h * (1 - fy)) / 2, w, h };
}

/**
 * Which labels to draw when there are too many to fit (a phone, 50 nodes): a label that would
 * overlap one already kept is hidden, and shown only while its node is hovered or tapped. Failing
 * nodes' labels (they say why) are kept first, then the rest in the collector's order. Returns the
 * set of node ids whose labels are hidden; `boxes` holds each node's label box by id.
 */
export function hiddenLabels(nodes, boxes) {
  const kept = [];
  const hidden = new Set();
  const order = [...nodes.filter((n) => n.failing), ...nodes.filter((n) => !n.failing)];
  for (const n of order) {
    const b = boxes.get(n.id);
    if (!b) continue;
    if (kept.some((k) => overlaps(k, b))) hidden.add(n.id);
    else kept.push(b);
  }
  return hidden;
}

/** Whether two boxes overlap (touching edges do not count). */
export function overlaps(a, b) {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

const quad = (a, c, b) => (t) => ({
  x: (1 - t) * (1 - t) * a.x + 2 * (1 - t) * t * c.x + t * t * b.x,
  y: (1 - t) * (1 - t) * a.y + 2 * (1 - t) * t * c.y + t * t * b.y,
});

/** Geometry per edge: a quadratic curve bent to the left of its direction (A→B and B→A are two arcs). */
export function edgeGeometry(e, byId, nodeR, g) {
  if (e.from === e.to) return selfGeometry(byId.get(e.from), nodeR, g);
  const a = byId.get(e.from),
    b = byId.get(e.to);
  const dx = b.x - a.x,
    dy = b.y - a.y;
  const len = Math.hypot(dx, dy) || 1;
  const nx = -dy / len,
    ny = dx / len;
  const bend = Math.min(60, len * 0.16);
  const c = { x: (a.x + b.x) / 2 + nx * bend, y: (a.y + b.y) / 2 + ny * bend };
  const pt = quad(a, c, b);
  // Where the curve leaves the source circle and enters the target circle.
  const r = nodeR + 3;
  let t0 = Math.min(0.45, r / len),
    t1 = Math.max(0.55, 1 - (r + 2) / len);
  for (let k = 0; k < 3; k++) {
    const p0 = pt(t0),
      p1 = pt(t1);
    t0 *= r / (Math.hypot(p0.x - a.x, p0.y - a.y) || r);
    t1 = 1 - (1 - t1) * ((r + 2) / (Math.hypot(p1.x - b.x, p1.y - b.y) || r));
  }
  t0 = Math.min(0.45, Math.max(0, t0));
  t1 = Math.max(0.55, Math.min(1, t1));
  const end = pt(t1),
    before = pt(t1 - 0.04);
  const samples = [];
  for (let i = 0; i <= 12; i++) samples.push(pt(t0 + ((t1 - t0) * i) / 12));
  return { a, b, c, pt, t0, t1, end, angle: Math.atan2(end.y - before.y, end.x - before.x), mid: pt(0.5), samples, self: false };
}

/**
 * A probe that checks itself: a small loop beside its node, along the ring (clockwise), so it
 * stays clear of the label (outside) and of the canvas edge. It reaches LOOP_REACH radii.
 */
export function selfGeometry(n, nodeR, g) {
  const u = outward(n, g.cx, g.cy);
  // Along the ring, tilted a little outwards, away from the edges in the middle.
  const dir = { x: -u.y * 0.94 + u.x * 0.34, y: u.x * 0.94 + u.y * 0.34 };
  const base = Math.atan2(dir.y, dir.x);
  const r = nodeR + 2;
  const a = { x: n.x + r * Math.cos(base - 0.55), y: n.y + r * Math.sin(base - 0.55) };
  const b = { x: n.x + r * Math.cos(base + 0.55), y: n.y + r * Math.sin(base + 0.55) };
  const reach = (2 * LOOP_REACH - 0.8) * nodeR; // the curve's apex is half-way to its control point
  const c = { x: n.x + dir.x * reach, y: n.y + dir.y * reach };
  const pt = quad(a, c, b);
  const end = pt(1),
    before = pt(0.95);
  const samples = [];
  for (let i = 0; i <= 12; i++) samples.push(pt(i / 12));
  return { a, b, c, pt, t0: 0, t1: 1, end, angle: Math.atan2(end.y - before.y, end.x - before.x), mid: pt(0.5), samples, self: true };
}

/** The part of a quadratic curve between t0 and t1, as a quadratic curve of its own. */
export function subQuad(p0, p1, p2, t0, t1) {
  const at = quad(p0, p1, p2);
  const d = (t) => ({ x: 2 * (1 - t) * (p1.x - p0.x) + 2 * t * (p2.x - p1.x), y: 2 * (1 - t) * (p1.y - p0.y) + 2 * t * (p2.y - p1.y) });
  const s = at(t0),
    e = at(t1),
    ds = d(t0),
    h = (t1 - t0) / 2;
  return { s, e, c: { x: s.x + ds.x * h, y: s.y + ds.y * h } };
}

/** Distance from a point to a segment. */
export function segDist(px, py, a, b) {
  const dx = b.x - a.x,
    dy = b.y - a.y;
  const l2 = dx * dx + dy * dy || 1;
  const t = Math.max(0, Math.min(1, ((px - a.x) * dx + (py - a.y) * dy) / l2));
  return Math.hypot(px - (a.x + t * dx), py - (a.y + t * dy));
}

/** What is under the pointer: a node (or its label), else the nearest edge within 8 px; null for nothing. */
export function hitTest(model, x, y, nodeR, showUnreachable) {
  for (const n of model.nodes) {
    const b = n.labelBox;
    if (Math.hypot(n.x - x, n.y - y) <= nodeR + 2 || (b && x >= b.x && x <= b.x + b.w && y >= b.y && y <= b.y + b.h)) return { kind: 'node', item: n };
  }
  let best = null,
    bestD = 8;
  for (const e of model.edges) {
    if (!e.geo || (e.status !== 'reachable' && !showUnreachable)) continue;
    const s = e.geo.samples;
    for (let i = 1; i < s.length; i++) {
      const d = segDist(x, y, s[i - 1], s[i]);
      if (d < bestD) {
        bestD = d;
        best = e;
      }
    }
  }
  return best ? { kind: 'edge', item: best } : null;
}

/** The extent of a sampled curve (for checks that nothing leaves the canvas). */
export function curveBounds(samples) {
  const xs = samples.map((p) => p.x),
    ys = samples.map((p) => p.y);
  return { x: Math.min(...xs), y: Math.min(...ys), w: Math.max(...xs) - Math.min(...xs), h: Math.max(...ys) - Math.min(...ys) };
}
