// Drawing the graph on a canvas. What does not move (edges, reasons, labels, nodes) is drawn into
// an opaque off-screen layer, redrawn only when the data, the layout, the toggles or the hover
// change; each frame copies the layer and draws the travelling markers on top. That keeps 2,500
// edges smooth. Where things go is layout.js; what they mean is model.js.
import { curveBounds, edgeGeometry, hiddenLabels, hitTest, labelBox, layoutNodes, overlaps, subQuad } from './layout.js';

const COLOR_BAD = '#ff6b6b';
const COLOR_UNKNOWN = '#8b949e';
const COLOR_MISMATCH = '#ffd23f';
/** Edges whose expected verdict cannot be proven here (policies not enforced): a dashed orange band. */
const COLOR_UNPROVEN = '#ffb347';
const BG = '#0d1117';

export class GraphView {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d', { alpha: false });
    this.under = document.createElement('canvas'); // background, edges, labels and nodes
    this.W = 0;
    this.H = 0;
    this.DPR = 1;
    this.nodeR = 30;
    this.geo = { cx: 0, cy: 0, font: { px: 14, reasonPx: 12, line: 19 } };
    this.groups = null; // edges sorted by drawing style, with their curve and arrowhead points
    this.layoutDirty = true;
    this.geometryDirty = true;
    this.layersDirty = true;
    this.drawnKey = '';
    this.phase = 0;
    this.sprite = null;
  }

  /** Text width on this canvas (layout.js measures labels with it). */
  measure = (text, px, weight) => {
    this.ctx.font = `${weight} ${px}px system-ui, sans-serif`;
    return this.ctx.measureText(text).width;
  };

  resize(model) {
    const rect = this.canvas.getBoundingClientRect();
    this.DPR = window.devicePixelRatio || 1;
    this.W = Math.max(1, rect.width);
    this.H = Math.max(1, rect.height);
    for (const c of [this.canvas, this.under]) {
      c.width = Math.round(this.W * this.DPR);
      c.height = Math.round(this.H * this.DPR);
    }
    for (const n of model.nodes) n.x = undefined;
    this.layoutDirty = true;
    this.layersDirty = true;
  }

  layout(model) {
    const g = layoutNodes(model.nodes, this.W, this.H, this.measure);
    this.nodeR = g.nodeR;
    this.geo = g;
    this.layoutDirty = false;
    this.geometryDirty = true;
  }

  rebuildGeometry(model) {
    const lineW = Math.max(1.2, Math.min(4, this.nodeR / 9));
    const byStyle = new Map();
    const hl = Math.max(9, lineW * 4);
    for (const n of model.nodes) n.labelBox = labelBox(n, this.nodeR, this.geo);
    // Labels that would overlap others are not drawn (labelBox null) unless hovered or tapped.
    const hidden = hiddenLabels(model.nodes, new Map(model.nodes.map((n) => [n.id, n.labelBox])));
    for (const n of model.nodes) {
      n.hiddenLabelBox = hidden.has(n.id) ? n.labelBox : null;
      if (hidden.has(n.id)) n.labelBox = null;
    }
    for (const e of model.edges) {
      const g = edgeGeometry(e, model.byId, this.nodeR, this.geo);
      e.geo = g;
      const color = e.status === 'reachable' ? model.byId.get(e.from).color : e.status === 'unreachable' ? COLOR_BAD : COLOR_UNKNOWN;
      const key = `${e.status}|${color}`;
      let grp = byStyle.get(key);
      if (!grp) {
        grp = { status: e.status, color, items: [] };
        byStyle.set(key, grp);
      }
      // Sub-curve from t0 to t1 of the quadratic (split), and the arrowhead at its end.
      const q = subQuad(g.a, g.c, g.b, g.t0, g.t1);
      const { x, y } = g.end;
      grp.items.push({
        e,
        q,
        head: [
          x,
          y,
          x - hl * Math.cos(g.angle - 0.38),
          y - hl * Math.sin(g.angle - 0.38),
          x - hl * Math.cos(g.angle + 0.38),
          y - hl * Math.sin(g.angle + 0.38),
        ],
      });
    }
    // Unreachable and unknown first, reachable on top.
    const order = { unknown: 0, unreachable: 1, reachable: 2 };
    this.groups = {
      list: [...byStyle.values()].sort((a, b) => order[a.status] - order[b.status]),
      lineW,
      reachableCount: model.edges.filter((e) => e.status === 'reachable').length,
    };
    this.geometryDirty = false;
    this.layersDirty = true;
  }

  /** One animation frame: layout when needed, ease nodes to their places, draw. */
  frame(model, state, focus) {
    if (this.layoutDirty) this.layout(model);
    // Ease nodes towards their places (no jumps when resources come and go); big graphs jump.
    const ease = model.edges.length > 600 ? 1 : 0.25;
    let moving = false;
    for (const n of model.nodes) {
      const dx = n.tx - n.x,
        dy = n.ty - n.y;
      if (Math.abs(dx) > 0.3 || Math.abs(dy) > 0.3) {
        n.x += dx * ease;
        n.y += dy * ease;
        moving = true;
      } else if (n.x !== n.tx || n.y !== n.ty) {
        n.x = n.tx;
        n.y = n.ty;
        moving = true;
      }
    }
    if (moving || this.geometryDirty) this.rebuildGeometry(model);
    const key = `${state.showUnreachable}|${state.stale}|${focus ? focus.kind + (focus.item.id ?? '') : ''}`;
    if (this.layersDirty || key !== this.drawnKey) this.drawLayers(model, state, focus, key);
    this.draw(model, state);
    state.settled = !moving;
  }

  /**
   * Text on a dark pill centred at x, y, kept inside the canvas; not drawn where it would cover a
   * pill already in `taken` (edges crossing at the centre would stack their reasons unreadably).
   */
  tag(c, text, x, y, px, color, weight, border, taken) {
    c.font = `${weight} ${px}px system-ui, sans-serif`;
    c.textAlign = 'center';
    c.textBaseline = 'middle';
    const w = c.measureText(text).width + 10;
    const h = px * 1.5;
    const cx = Math.max(w / 2 + 1, Math.min(this.W - w / 2 - 1, x));
    const cy = Math.max(h / 2 + 1, Math.min(this.H - h / 2 - 1, y));
    const box = { x: cx - w / 2, y: cy - h / 2, w, h };
    if (taken) {
      if (taken.some((b) => overlaps(b, box))) return;
      taken.push(box);
    }
    c.fillStyle = 'rgba(13,17,23,0.9)';
    c.fillRect(cx - w / 2, cy - h / 2, w, h);
    if (border) {
      c.strokeStyle = border;
      c.lineWidth = 1.5;
      c.strokeRect(cx - w / 2, cy - h / 2, w, h);
    }
    c.fillStyle = color;
    c.fillText(text, cx, cy);
  }

  drawLayers(model, state, focus, key) {
    this.layersDirty = false;
    this.drawnKey = key;
    const { W, H, DPR, nodeR, groups } = this;
    const c = this.under.getContext('2d', { alpha: false });
    c.setTransform(DPR, 0, 0, DPR, 0, 0);
    c.fillStyle = BG;
    c.fillRect(0, 0, W, H);
    if (!groups) return;
    const lw = groups.lineW;
    const faded = state.stale ? 0.55 : 1;
    c.lineCap = 'round';
    // Mismatching edges (observed != expected) first: a wide yellow band under the edge.
    const mismatched = model.edges.filter((e) => e.expect?.mismatch && e.geo && (e.status === 'reachable' || state.showUnreachable));
    c.strokeStyle = COLOR_MISMATCH;
    c.globalAlpha = 0.45 * faded;
    c.lineWidth = lw * 4 + 4;
    c.setLineDash([]);
    for (const e of mismatched) {
      c.beginPath();
      e.geo.samples.forEach((p, i) => (i ? c.lineTo(p.x, p.y) : c.moveTo(p.x, p.y)));
      c.stroke();
    }
    const unproven = model.edges.filter((e) => e.expect?.unproven && e.geo && (e.status === 'reachable' || state.showUnreachable));
    c.strokeStyle = COLOR_UNPROVEN;
    c.lineWidth = lw * 3 + 2;
    c.setLineDash([lw * 3, lw * 3]);
    for (const e of unproven) {
      c.beginPath();
      e.geo.samples.forEach((p, i) => (i ? c.lineTo(p.x, p.y) : c.moveTo(p.x, p.y)));
      c.stroke();
    }
    c.setLineDash([]);
    for (const g of groups.list) {
      if (g.status !== 'reachable' && !state.showUnreachable) continue;
      c.globalAlpha = (g.status === 'reachable' ? 0.9 : 0.75) * faded;
      c.strokeStyle = g.color;
      c.fillStyle = g.color;
      c.lineWidth = g.status === 'reachable' ? lw * 1.5 : lw;
      c.setLineDash(g.status === 'reachable' ? [] : g.status === 'unreachable' ? [lw * 4, lw * 3] : [lw, lw * 3]);
      for (const { q } of g.items) {
        c.beginPath();
        c.moveTo(q.s.x, q.s.y);
        c.quadraticCurveTo(q.c.x, q.c.y, q.e.x, q.e.y);
        c.stroke();
      }
      c.setLineDash([]);
      c.beginPath();
      for (const { head: p } of g.items) {
        c.moveTo(p[0], p[1]);
        c.lineTo(p[2], p[3]);
        c.lineTo(p[4], p[5]);
        c.closePath();
      }
      c.fill();
    }
    c.globalAlpha = 1;
    // Reasons on failing edges (only when few enough to read; otherwise on hover), and on
    // mismatching edges what was expected.
    const fontPx = Math.max(10, Math.min(13, nodeR / 2.4));
    const h = focus;
    const taken = [];
    // As many as the canvas has room for (about one per 12,000 px²), else only the hovered one;
    // what is not as expected first.
    const room = Math.min(120, (W * H) / 12_000);
    const marked = mismatched.length <= room ? mismatched : h?.kind === 'edge' && h.item.expect?.mismatch ? [h.item] : [];
    for (const e of marked)
      this.tag(c, `≠ expected ${e.expect.expected ? 'allowed' : 'blocked'}`, e.geo.mid.x, e.geo.mid.y, fontPx, COLOR_MISMATCH, 700, COLOR_MISMATCH, taken);
    if (unproven.length <= room)
      for (const e of unproven) this.tag(c, 'not proven', e.geo.mid.x, e.geo.mid.y, fontPx, COLOR_UNPROVEN, 650, COLOR_UNPROVEN, taken);
    if (state.showUnreachable) {
      const bad = model.edges.filter((e) => e.status !== 'reachable' && e.geo && !e.expect?.mismatch);
      const list = bad.length <= room ? bad : h?.kind === 'edge' && h.item.geo && h.item.status !== 'reachable' ? [h.item] : [];
      for (const e of list)
        this.tag(c, e.reason ?? 'unreachable', e.geo.mid.x, e.geo.mid.y, fontPx, e.status === 'unreachable' ? '#ffb3b3' : '#c9d1d9', 600, undefined, taken);
    }
    if (h?.kind === 'edge' && h.item.geo) {
      const g = h.item.geo;
      c.strokeStyle = '#ffffff';
      c.lineWidth = lw + 2;
      c.globalAlpha = 0.5;
      c.beginPath();
      g.samples.forEach((p, i) => (i ? c.lineTo(p.x, p.y) : c.moveTo(p.x, p.y)));
      c.stroke();
      c.globalAlpha = 1;
    }
    // Nodes, above the edges; labels outside their circles (layout.js labelBox).
    const font = this.geo.font;
    for (const n of model.nodes) {
      c.globalAlpha = faded;
      c.beginPath();
      c.arc(n.x, n.y, nodeR, 0, Math.PI * 2);
      c.fillStyle = n.failing || n.pending ? '#30363d' : n.color;
      c.fill();
      if (n.failing || n.pending) {
        c.lineWidth = Math.max(2, nodeR / 8);
        c.strokeStyle = n.failing ? COLOR_BAD : COLOR_UNKNOWN;
        c.setLineDash(n.pending ? [4, 4] : []);
        c.stroke();
        c.setLineDash([]);
      }
      if (h?.kind === 'node' && h.item.id === n.id) {
        c.lineWidth = 3;
        c.strokeStyle = '#ffffff';
        c.stroke();
      }
      if (n.labelBox) this.label(c, n, n.labelBox, font);
    }
    // A label hidden for lack of room is shown, on top, while its node is hovered or tapped.
    this.raisedLabel = null;
    if (h?.kind === 'node' && h.item.hiddenLabelBox) {
      c.globalAlpha = 1;
      this.label(c, h.item, h.item.hiddenLabelBox, font, '#e6edf3');
      this.raisedLabel = h.item.id;
    }
    c.globalAlpha = 1;
  }

  /** A node's label: its lines on a dark pill (with a border when drawn over other labels). */
  label(c, n, b, font, border) {
    c.fillStyle = border ? 'rgb(13,17,23)' : 'rgba(13,17,23,0.85)';
    c.fillRect(b.x, b.y, b.w, b.h);
    if (border) {
      c.strokeStyle = border;
      c.lineWidth = 1;
      c.strokeRect(b.x, b.y, b.w, b.h);
    }
    c.textAlign = 'center';
    c.textBaseline = 'middle';
    n.labelSize.lines.forEach((l, i) => {
      c.font = `${l.weight} ${l.reason ? font.reasonPx : font.px}px system-ui, sans-serif`;
      c.fillStyle = l.reason ? (n.failing ? '#ffb3b3' : '#c9d1d9') : '#e6edf3';
      c.fillText(l.text, b.x + b.w / 2, b.y + 1 + font.line * (i + 0.5));
    });
  }

  draw(model, state) {
    const { ctx, DPR, groups } = this;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(this.under, 0, 0);
    // Markers: a light ball travelling source → target on every reachable edge (star's 140-frame loop).
    if (!state.showMarkers || !groups) return;
    ctx.setTransform(DPR, 0, 0, DPR, 0, 0);
    this.phase = (this.phase + 1) % 140;
    const t = this.phase / 140;
    const br = Math.max(2.5, groups.lineW * 1.5);
    ctx.globalAlpha = state.stale ? 0.5 : 1;
    // Few edges: a glowing ball sprite each; many: one path of small squares (cheapest to fill
    // in software rendering: 55 fps with 2,500 edges at 2x, where balls give 15).
    if (groups.reachableCount <= 300) {
      const sprite = this.ballSprite(br);
      const size = sprite.width / DPR,
        half = size / 2;
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

  /** The marker: a small glowing white ball, drawn once per size and copied for every edge. */
  ballSprite(r) {
    const key = `${r}|${this.DPR}`;
    if (this.sprite?.key === key) return this.sprite.canvas;
    const c = document.createElement('canvas');
    const R = Math.ceil(r * 2 * this.DPR);
    c.width = c.height = R * 2;
    const g = c.getContext('2d');
    const grad = g.createRadialGradient(R, R, 0, R, R, R);
    grad.addColorStop(0, 'rgba(255,255,255,1)');
    grad.addColorStop(0.45, 'rgba(255,255,255,0.95)');
    grad.addColorStop(0.6, 'rgba(255,255,255,0.35)');
    grad.addColorStop(1, 'rgba(255,255,255,0)');
    g.fillStyle = grad;
    g.fillRect(0, 0, R * 2, R * 2);
    this.sprite = { key, canvas: c };
    return c;
  }

  hitTest(model, x, y, showUnreachable) {
    return hitTest(model, x, y, this.nodeR, showUnreachable);
  }

  /**
   * Where everything is drawn, for tests: the canvas size, node circles, label boxes (`label` when
   * drawn, `hiddenLabel` when hidden for lack of room), self-loops, and the node whose hidden label
   * is shown because it is hovered or tapped (`raisedLabel`).
   */
  geometry(model) {
    return {
      width: this.W,
      height: this.H,
      nodeR: this.nodeR,
      raisedLabel: this.raisedLabel ?? null,
      nodes: model.nodes.map((n) => ({ id: n.id, x: n.x, y: n.y, r: this.nodeR, label: n.labelBox ?? null, hiddenLabel: n.hiddenLabelBox ?? null })),
      loops: model.edges.filter((e) => e.from === e.to && e.geo).map((e) => ({ id: e.id, ...curveBounds(e.geo.samples) })),
    };
  }
}
