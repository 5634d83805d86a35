// The collector UI's pure modules (collector/ui/model.js, layout.js, panels.js: plain browser ES
// modules with no DOM) imported and tested directly in Node: how /responses documents become
// nodes, edges and the matrix (the collector's order, its own row), how published expectations are
// compared with what is observed, and where the layout puts nodes, labels and self-loops.
import { describe, expect, it } from 'vitest';

/* eslint-disable @typescript-eslint/no-explicit-any -- the modules are untyped browser JavaScript */
// Imported by URL so that TypeScript does not look for declarations of the browser files.
const load = (name: string): Promise<any> => import(new URL(`../collector/ui/${name}`, import.meta.url).href);
const model = await load('model.js');
const layout = await load('layout.js');
const panels = await load('panels.js');

const status = (targets: unknown[]) => ({ status: { targets } });
const at = '2026-01-01T00:00:00.000Z';
const detail = (url: string, error: unknown = null, pending = false) => ({
  url,
  statusCode: error ? null : 200,
  error,
  fetchedAt: pending ? null : at,
  latencyMs: 1,
  lastSuccessAt: null,
  pending,
});

/** A /responses document: C, A, B in that (collector) order; B failing; C→A blocked. */
function doc() {
  return {
    responses: {
      C: {
        url: 'http://c:9000/status',
        statusCode: 200,
        json: status([
          { url: 'http://a:9000/status', reachable: false, reason: 'timeout' },
          { url: 'b:9000', reachable: true, reason: 'ok' },
          { url: 'http://elsewhere:1/', reachable: false },
        ]),
      },
      A: {
        url: 'http://a:9000/status',
        statusCode: 200,
        json: status([
          { url: 'http://C:9000/status', reachable: true },
          { url: 'http://a:9000/status', reachable: true },
        ]),
      },
      B: null,
    },
    details: {
      C: detail('http://c:9000/status'),
      A: detail('http://a:9000/status'),
      B: detail('http://b:9000/status', { reason: 'refused', message: 'ECONNREFUSED' }),
    },
    generatedAt: at,
  };
}

describe('model.js', () => {
  it("keeps the collector's order, matches targets, and gives the collector its own matrix row", () => {
    const m = model.buildModel(doc());
    expect(m.nodes.map((n: any) => n.id)).toEqual(['C', 'A', 'B']);
    expect(m.nodes.map((n: any) => [n.id, n.failing, n.reason])).toEqual([
      ['C', false, null],
      ['A', false, null],
      ['B', true, 'refused'],
    ]);
    expect(m.edges.map((e: any) => `${e.id}:${e.status}`)).toEqual(['C->A:unreachable', 'C->B:reachable', 'A->C:reachable', 'A->A:reachable']);
    expect(m.unmatched).toEqual([{ from: 'C', url: 'http://elsewhere:1/', reachable: false }]);
    expect(m.matrix.ids).toEqual(['C', 'A', 'B']);
    expect(m.matrix.rows).toEqual({ C: { C: '-', A: 'X', B: '.' }, A: { C: '.', A: '.', B: '-' }, B: { C: '?', A: '?', B: '?' } });
    // The collector reached C and A, not B (its fetch failed): as the runner reads the UI's cells.
    expect(m.matrix.self).toEqual({ C: '.', A: '.', B: 'X' });
    expect(model.summaryOf(m)).toEqual({ allowed: 3, blocked: 1, unknown: 3, failing: 1, resources: 3, unmatched: 1 });
  });

  it('keeps the collector\'s order for ids that look like integers ("10", "2", "1"), which JSON.parse would sort', () => {
    const ids = ['10', 'b', '2', '1', '007', 'a'];
    const text = JSON.stringify({
      responses: Object.fromEntries(
        ids.map((id) => [id, { url: `http://h${id}:9000/status`, statusCode: 200, json: status([{ url: `http://h${ids[0]}:9000/status`, reachable: true }]) }]),
      ),
      details: Object.fromEntries(ids.map((id) => [id, detail(`http://h${id}:9000/status`)])),
      generatedAt: at,
    });
    // What the collector sends, key by key (JSON.stringify of a literal would already reorder).
    const ordered = `{"responses":{${ids.map((id) => `${JSON.stringify(id)}:${JSON.stringify(JSON.parse(text).responses[id])}`).join(',')}},"details":{${ids.map((id) => `${JSON.stringify(id)}:${JSON.stringify(detail(`http://h${id}:9000/status`))}`).join(',')}},"generatedAt":"${at}"}`;
    expect(Object.keys(JSON.parse(ordered).responses)).not.toEqual(ids); // why the model reads the text
    expect(model.keyOrder(ordered, 'responses')).toEqual(ids);
    expect(model.keyOrder(' { "x" : [1, {"}": "\\"{"}], "responses" : { "2" : {"a": [{}]}, "1" : null } } ', 'responses')).toEqual(['2', '1']);
    expect(model.keyOrder('{"responses":{}}', 'responses')).toEqual([]);
    expect(model.keyOrder('{"other":{"1":2}}', 'responses')).toBeNull();
    const m = model.buildModel(model.parseResponses(ordered));
    expect(m.nodes.map((n: any) => n.id)).toEqual(ids);
    expect(m.matrix.ids).toEqual(ids);
    expect(m.edges.map((e: any) => e.id)).toEqual(ids.map((id) => `${id}->10`));
    // Ids only in `details` (pending) come after, in the text's order too.
    const pending = `{"responses":{"3":null},"details":{"3":${JSON.stringify(detail('http://h3:1/', null, true))},"20":${JSON.stringify(detail('http://h20:1/', null, true))},"4":${JSON.stringify(detail('http://h4:1/', null, true))}}}`;
    expect(model.buildModel(model.parseResponses(pending)).matrix.ids).toEqual(['3', '20', '4']);
  });

  it("keeps a failing probe's last targets as unknown, and reads star's documents without details", () => {
    const last = new Map();
    const first = model.buildModel(doc(), model.emptyModel(), last);
    const d = doc();
    d.responses.C = null as never;
    d.details.C = detail('http://c:9000/status', { reason: 'timeout', message: '' });
    const second = model.buildModel(d, first, last);
    expect(second.edges.filter((e: any) => e.from === 'C').map((e: any) => e.status)).toEqual(['unknown', 'unknown']);
    const star = model.buildModel({ responses: { A: { url: 'http://a:1/', statusCode: 200, json: status([]) }, B: null } });
    expect(star.matrix.self).toEqual({ A: '.', B: 'X' });
    expect(model.buildModel({ responses: {}, details: { P: detail('http://p:1/', null, true) } }).matrix.self).toEqual({ P: '?' });
  });

  it("compares expectations with what is observed: mismatches, not-run cells, unknown ids, the collector's row", () => {
    const m = model.buildModel(doc());
    const x = model.compareExpectations(m, {
      scenario: 's',
      step: { index: 2, name: 'deny', total: 4 },
      phase: 'judged',
      outcome: 'fail',
      collector: { id: 'ui', label: 'UI' },
      labels: { C: 'c' },
      cells: [
        { from: 'C', to: 'A', expected: true, reason: 'allowed', reasons: ['egress of C: not isolated', 'ingress of A: not isolated'] },
        { from: 'C', to: 'B', expected: true, reason: 'allowed' },
        { from: 'A', to: 'C', expected: false, reason: 'blocked', status: 'not run' },
        { from: 'B', to: 'C', expected: false, reason: 'blocked' },
        { from: 'ui', to: 'A', expected: false, reason: 'ingress of A denied' },
        { from: 'ui', to: 'B', expected: false, reason: 'ok' },
        { from: 'nobody', to: 'A', expected: true, reason: '' },
      ],
    });
    expect(x.mismatches).toBe(2);
    expect([...x.cells.values()].filter((c: any) => c.mismatch).map((c: any) => `${c.from}->${c.to}`)).toEqual(['C->A', '@self->A']);
    // Not observable here (not run), or nothing observed ('?'): shown, not judged.
    expect(x.cells.get('A->C')).toMatchObject({ judged: false, mismatch: false, expectedMark: 'X' });
    expect(x.cells.get('B->C')).toMatchObject({ judged: false, observedMark: '?' });
    expect(x.cells.has('nobody->A')).toBe(false);
    expect(m.edges.find((e: any) => e.id === 'C->A').expect.reasons).toEqual(['egress of C: not isolated', 'ingress of A: not isolated']);
    expect(model.stepLine(x)).toBe('s: step 3/4 deny (judged: fail)');
    const html = panels.matrixHtml(m, x, Date.parse(at));
    expect(html).toContain('data-testid="cell-C-A" data-state="blocked" data-from="C" data-to="A" data-expected="." data-mismatch="true"');
    expect(html).toContain('<th scope="row" class="" title="http://c:9000/status">c</th>');
    expect(html).toContain('ingress of A: not isolated');
    expect(panels.summaryText(m, x)).toContain('2 cell(s) not as expected');
    // Without expectations nothing is marked and the edges carry none.
    expect(model.compareExpectations(m, null)).toBeNull();
    expect(m.edges.every((e: any) => e.expect === undefined)).toBe(true);
    expect(panels.matrixHtml(m, null, 0)).not.toContain('data-mismatch');
  });
});

describe('layout.js', () => {
  /** A text width estimate: 0.62 em per character. */
  const measure = (text: string, px: number) => text.length * px * 0.62;
  const nodes = (ids: string[], failing: string[] = []) =>
    ids.map((id) => ({ id, failing: failing.includes(id), reason: failing.includes(id) ? 'http-status' : null, pending: false }) as any);
  const inside = (b: { x: number; y: number; w: number; h: number }, W: number, H: number) => b.x >= 0 && b.y >= 0 && b.x + b.w <= W && b.y + b.h <= H;

  for (const [W, H] of [
    [950, 800],
    [1300, 980],
    [390, 470],
  ] as const) {
    for (const count of [1, 2, 3, 12, 50]) {
      it(`${count} nodes on ${W}x${H}: circles, labels and self-loops inside; labels apart and off every circle`, () => {
        const ids = Array.from({ length: count }, (_, i) =>
          count <= 12 ? ['frontend', 'backend', 'client', 'a.x', 'b.x', 'c.x', 'a.y', 'b.y', 'c.y', 'a.z', 'b.z', 'c.z'][i]! : `p${i + 1}`,
        );
        const ns = nodes(ids, ids.slice(-1));
        const g = layout.layoutNodes(ns, W, H, measure);
        for (const n of ns) {
          n.x = n.tx;
          n.y = n.ty;
        }
        const boxes = ns.map((n: any) => layout.labelBox(n, g.nodeR, g));
        for (const [i, n] of ns.entries()) {
          expect(inside({ x: n.x - g.nodeR, y: n.y - g.nodeR, w: 2 * g.nodeR, h: 2 * g.nodeR }, W, H)).toBe(true);
          expect(inside(boxes[i], W, H), `label ${n.id} ${JSON.stringify(boxes[i])}`).toBe(true);
          const loop = layout.curveBounds(layout.selfGeometry(n, g.nodeR, g).samples);
          expect(inside(loop, W, H), `loop of ${n.id}`).toBe(true);
          for (const m of ns) {
            const b = boxes[i];
            const nx = Math.max(b.x, Math.min(m.x, b.x + b.w)),
              ny = Math.max(b.y, Math.min(m.y, b.y + b.h));
            expect(Math.hypot(nx - m.x, ny - m.y) >= g.nodeR, `label ${n.id} over ${m.id}`).toBe(true);
          }
        }
        if (count <= 12)
          for (let i = 0; i < boxes.length; i++)
            for (let j = i + 1; j < boxes.length; j++) expect(layout.overlaps(boxes[i], boxes[j]), `${ids[i]} / ${ids[j]}`).toBe(false);
        // Where labels would crowd (50 on a phone), the ones drawn never overlap; the failing one is drawn.
        const hidden: Set<string> = layout.hiddenLabels(ns, new Map(ns.map((n: any, i: number) => [n.id, boxes[i]])));
        if (count <= 12) expect([...hidden]).toEqual([]);
        const shown = boxes.filter((_: unknown, i: number) => !hidden.has(ids[i]!));
        for (let i = 0; i < shown.length; i++) for (let j = i + 1; j < shown.length; j++) expect(layout.overlaps(shown[i], shown[j])).toBe(false);
        expect(hidden.has(ids.at(-1)!)).toBe(false);
      });
    }
  }

  it('shortens labels that would take more than a fifth of a narrow canvas, with an ellipsis', () => {
    const [n] = nodes(['a-very-long-resource-name.in-a-namespace']);
    layout.layoutNodes([n], 390, 470, measure);
    expect(n.labelSize.lines[0].text).toMatch(/^a-very.*…$/);
    expect(n.labelSize.w).toBeLessThanOrEqual(390 * 0.2);
  });

  it('hit-tests nodes, labels and edges', () => {
    const ns = nodes(['A', 'B']);
    const g = layout.layoutNodes(ns, 800, 600, measure);
    for (const n of ns) {
      n.x = n.tx;
      n.y = n.ty;
      n.labelBox = layout.labelBox(n, g.nodeR, g);
    }
    const byId = new Map(ns.map((n: any) => [n.id, n]));
    const e: any = { id: 'A->B', from: 'A', to: 'B', status: 'reachable' };
    e.geo = layout.edgeGeometry(e, byId, g.nodeR, g);
    const m = { nodes: ns, edges: [e] };
    expect(layout.hitTest(m, ns[0].x, ns[0].y, g.nodeR, true)).toMatchObject({ kind: 'node', item: { id: 'A' } });
    const lb = ns[1].labelBox;
    expect(layout.hitTest(m, lb.x + 2, lb.y + 2, g.nodeR, true)).toMatchObject({ kind: 'node', item: { id: 'B' } });
    expect(layout.hitTest(m, e.geo.mid.x, e.geo.mid.y, g.nodeR, true)).toMatchObject({ kind: 'edge', item: { id: 'A->B' } });
    expect(layout.hitTest(m, 1, 1, g.nodeR, true)).toBeNull();
  });
});
