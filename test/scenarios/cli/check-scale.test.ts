// `scenario check` of manifests in the summary form (cli/check-scale.ts, report/check-summary.ts):
// the summary by workload agrees with the full cell list (--report-cells) and both with the
// per-cell check, on generated sets (bench/generate-manifests.ts); a set over the old per-cell
// bound is accepted through the real command and its reports stay bounded; the bounds of the
// summary hold whatever the input.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictMatrix } from '../../../shared/netpol/matrix.ts';
import type { Cluster } from '../../../shared/netpol/evaluate.ts';
import { cellCount, classCells, scaleCheck, wantsSummary } from '../../../scenarios/cli/check-scale.ts';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { checkAddresses } from '../../../scenarios/cli/check.ts';
import { summariseMatrix } from '../../../scenarios/report/check-summary.ts';
import { summaryHtml } from '../../../scenarios/report/summary-html.ts';
import { Report } from '../../../scenarios/report/schema.ts';
import { SummaryReport, type SummaryReportDoc } from '../../../scenarios/report/summary-schema.ts';
import { generateManifests } from '../../../bench/generate-manifests.ts';
import { NODE, removeTempDirs, ROOT, tempDir } from '../../helpers/process.ts';

afterAll(removeTempDirs);

interface CellLine {
  from: string;
  to: string;
  port: number;
  protocol: string;
  allowed: boolean | null;
  reason: string;
}

/** The cells of an NDJSON file, each reason number replaced by the text defined for it on an earlier line. */
function cellsOf(file: string): CellLine[] {
  const reasons = new Map<number, string>();
  const out: CellLine[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line === '') continue;
    const o = JSON.parse(line) as (Omit<CellLine, 'reason'> & { reason: number }) | { reason: number; text: string };
    if ('text' in o) {
      expect(reasons.has(o.reason)).toBe(false);
      reasons.set(o.reason, o.text);
    } else {
      expect(reasons.has(o.reason), line).toBe(true);
      out.push({ ...o, reason: reasons.get(o.reason)! });
    }
  }
  return out;
}

const word = (v: boolean | null) => (v === true ? 'allowed' : v === false ? 'denied' : 'undecided');

/** The summary's tallies recomputed from the full cell list, with the pods' workloads. */
function tallyFromCells(cells: readonly CellLine[], workloadOf: (pod: string) => string) {
  const pairs = new Map<string, Record<'allowed' | 'denied' | 'undecided', number>>();
  const rows = new Map<string, { out: Record<string, number>; in: Record<string, number> }>();
  const zero = () => ({ allowed: 0, denied: 0, undecided: 0 });
  for (const c of cells) {
    const [f, t] = [workloadOf(c.from), workloadOf(c.to)];
    const key = `${f}|${t}|${c.port}/${c.protocol}`;
    const p = pairs.get(key) ?? zero();
    p[word(c.allowed)]++;
    pairs.set(key, p);
    for (const [w, side] of [
      [f, 'out'],
      [t, 'in'],
    ] as const) {
      const r = rows.get(w) ?? { out: zero(), in: zero() };
      r[side][word(c.allowed)]!++;
      rows.set(w, r);
    }
  }
  return { pairs, rows };
}

describe('scenario check in the summary form', () => {
  it('the summary by workload agrees with every cell of --report-cells, and both with the per-cell check', () => {
    const dir = tempDir('starmap-scale-');
    const set = join(dir, 'set');
    generateManifests(set, 3, { pods: 80, policies: 30, namespaces: 6 });
    for (const addresses of ['run', 'unknown'] as const) {
      const cellsFile = join(dir, `cells-${addresses}.ndjson`);
      const r = scaleCheck(set, { replicas: true, addresses, summary: true, cellsFile })!;
      expect(r).not.toBeNull();
      const doc = r.doc;
      expect([...Value.Errors(SummaryReport, doc)]).toEqual([]);
      const cells = cellsOf(cellsFile);
      expect(doc.counts.cells).toBe(cells.length);
      expect(doc.cellsNotInPairs).toBe(0);
      expect(doc.workloadsOmitted).toBe(0);

      // The per-cell check of the same directory: the same verdict for every cell between pods.
      const s = loadScenario(set, { replicas: true, computedOnly: true });
      const ips = checkAddresses(s, { addresses });
      const exp = expectStep(s, s.steps[0]!, ips);
      const external = new Set(s.pods.filter((p) => p.external !== undefined).map((p) => p.id));
      const perCell = new Map(
        exp.cells
          .filter((c) => !external.has(c.cell.from) && !external.has(c.cell.to))
          .map((c) => [`${c.cell.from}>${c.cell.to}@${c.cell.port}/${c.cell.protocol}`, c]),
      );
      expect(perCell.size).toBe(cells.length);
      for (const c of cells) {
        const other = perCell.get(`${c.from}>${c.to}@${c.port}/${c.protocol}`);
        expect(other, `${c.from} -> ${c.to} ${c.port}/${c.protocol}`).toBeDefined();
        expect(c.allowed).toBe(other!.computed);
        expect(c.reason).toBe(other!.reason);
      }
      const undecided = cells.filter((c) => c.allowed === null).length;
      expect(doc.counts.undecided).toBe(undecided);
      if (addresses === 'unknown') expect(undecided).toBeGreaterThan(0); // the generated ipBlocks leave cells open without addresses
      expect(doc.counts.allowed).toBe(cells.filter((c) => c.allowed === true).length);
      expect(doc.counts.allowed).toBeGreaterThan(0);

      // Every workload pair and port of the summary has the cells of the full list, verdict by verdict.
      const workload = new Map(s.pods.map((p) => [p.id, p.workload ?? p.id]));
      const from = tallyFromCells(cells, (id) => workload.get(id)!);
      expect(doc.pairs.length).toBe(from.pairs.size);
      for (const p of doc.pairs) {
        const key = `${p.from}|${p.to}|${p.port}/${p.protocol}`;
        expect(p.cells, key).toEqual(from.pairs.get(key));
        const kinds = (['allowed', 'denied', 'undecided'] as const).filter((k) => p.cells[k] > 0);
        expect(p.verdict).toBe(kinds.length === 1 ? kinds[0] : 'mixed');
        if (p.reason !== null)
          for (const c of cells.filter((x) => workload.get(x.from) === p.from && workload.get(x.to) === p.to && x.port === p.port && x.protocol === p.protocol))
            // A reason past the summary's bound is cut, with an ellipsis.
            expect(p.reason.endsWith('…') ? c.reason.startsWith(p.reason.slice(0, -1)) : c.reason === p.reason, c.reason).toBe(true);
      }
      expect(doc.workloads.length).toBe(from.rows.size);
      for (const w of doc.workloads) expect({ out: w.out, in: w.in }, w.workload).toEqual(from.rows.get(w.workload));
      expect(doc.undecided.length).toBe(Math.min(undecided, 100));
      const open = new Set(cells.filter((c) => c.allowed === null).map((c) => `${c.from}>${c.to}@${c.port}/${c.protocol}`));
      for (const u of doc.undecided) expect(open.has(`${u.from}>${u.to}@${u.port}/${u.protocol}`)).toBe(true);
    }
  });

  it("with admin tiers: `scenario check DIR --summary` gives the per-cell check's tiered verdicts, its reasons the chains", () => {
    const dir = tempDir('starmap-scale-tiers-');
    const set = join(dir, 'set');
    const made = generateManifests(set, 3, { pods: 120, policies: 20, namespaces: 10, adminPolicies: 20 });
    expect(made.adminPolicies).toBe(20);
    for (const addresses of ['run', 'unknown'] as const) {
      const json = join(dir, `summary-${addresses}.json`);
      const r = spawnSync(NODE, ['scenarios/main.ts', 'check', set, '--replicas', '--summary', `--addresses=${addresses}`, '--report-json', json], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect([0, 3], r.stderr).toContain(r.status);
      expect(r.stdout).toContain('admin tiers: 20 admin-tier policies');
      const doc = JSON.parse(readFileSync(json, 'utf8')) as SummaryReportDoc;
      expect([...Value.Errors(SummaryReport, doc)]).toEqual([]);

      // The per-cell check of the same directory, through the tiered evaluator cell by cell.
      const s = loadScenario(set, { replicas: true, computedOnly: true });
      const exp = expectStep(s, s.steps[0]!, checkAddresses(s, { addresses }));
      expect(exp.tiered).toBeDefined();
      const workload = new Map(s.pods.map((p) => [p.id, p.workload ?? p.id]));
      // Cells with the scenario's external endpoints are the per-cell check's own (the summary has pods only).
      const external = new Set(s.pods.filter((p) => p.external !== undefined).map((p) => p.id));
      const cells = exp.cells.filter((c) => !external.has(c.cell.from) && !external.has(c.cell.to));
      const perCell = cells.map((c) => ({
        from: c.cell.from,
        to: c.cell.to,
        port: c.cell.port,
        protocol: c.cell.protocol,
        allowed: c.computed,
        reason: c.reason,
      }));
      expect(doc.counts.cells).toBe(perCell.length);
      expect(doc.counts.allowed).toBe(perCell.filter((c) => c.allowed === true).length);
      expect(doc.counts.denied).toBe(perCell.filter((c) => c.allowed === false).length);
      expect(doc.counts.undecided).toBe(perCell.filter((c) => c.allowed === null).length);
      const from = tallyFromCells(perCell, (id) => workload.get(id)!);
      expect(doc.pairs.length).toBe(from.pairs.size);
      for (const p of doc.pairs)
        expect(p.cells, `${p.from}|${p.to}|${p.port}/${p.protocol}`).toEqual(from.pairs.get(`${p.from}|${p.to}|${p.port}/${p.protocol}`));
      for (const w of doc.workloads) expect({ out: w.out, in: w.in }, w.workload).toEqual(from.rows.get(w.workload));
      // The tiers decide some cells against the NetworkPolicies alone, and the reasons say which.
      const npOnly = cells.filter((c) => c.verdict.allowed !== c.computed).length;
      expect(npOnly, 'cells the tiers decide otherwise than the NetworkPolicies').toBeGreaterThan(0);
      expect(doc.pairs.some((p) => p.reason?.includes('Admin cnp/'))).toBe(true);
      expect(doc.pairs.some((p) => p.reason?.includes('Baseline cnp/baseline-'))).toBe(true);
      // The undecided sample names pods: its reasons are the per-cell check's, word for word (cut past the bound).
      const reasons = new Map(perCell.map((c) => [`${c.from}>${c.to}@${c.port}/${c.protocol}`, c.reason]));
      for (const u of doc.undecided) {
        const want = reasons.get(`${u.from}>${u.to}@${u.port}/${u.protocol}`)!;
        expect(u.why.endsWith('…') ? want.startsWith(u.why.slice(0, -1)) : u.why === want, u.why).toBe(true);
      }
      if (addresses === 'unknown') expect(doc.undecided.length).toBeGreaterThan(0);
    }
    // Every cell with admin tiers is not written yet: refused, exit 2, saying so (and nothing written).
    const cellsFile = join(dir, 'cells.ndjson');
    const refused = spawnSync(NODE, ['scenarios/main.ts', 'check', set, '--replicas', '--report-cells', cellsFile], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('--report-cells: 20 admin-tier policies');
    expect(existsSync(cellsFile)).toBe(false);
  }, 120_000);

  it('bounded whatever the input: past its bounds a summary lists up to them and counts the rest, the totals exact', () => {
    // Every pod a workload of its own and no policy: every cell allowed, pods² pairs.
    const pods = Array.from({ length: 60 }, (_, i) => ({
      namespace: `ns${i % 3}`,
      name: `p${i}`,
      labels: { app: `a${i}` },
      ports: [{ name: 'http', port: 80, protocol: 'TCP' as const }],
    }));
    const cluster: Cluster = { namespaces: ['ns0', 'ns1', 'ns2'].map((name) => ({ name, labels: { 'kubernetes.io/metadata.name': name } })), pods };
    const m = new VerdictMatrix(cluster, []);
    const s = summariseMatrix(
      m,
      pods.map((p) => ({ id: `${p.namespace}/${p.name}`, namespace: p.namespace })),
      { workloads: 7, pairs: 11, undecided: 2, reasonChars: 20 },
    );
    expect(s.counts).toMatchObject({ pods: 60, workloads: 60, cells: 60 * 59, allowed: 60 * 59, denied: 0, undecided: 0 });
    expect(s.workloads.length).toBe(7);
    expect(s.workloadsOmitted).toBe(53);
    expect(s.pairs.length).toBe(11);
    expect(s.cellsNotInPairs).toBe(60 * 59 - 11);
    for (const p of s.pairs) expect(p.reason!.length).toBeLessThanOrEqual(20);
  });

  it('when the summary form is taken, and the memory bound it checks before the matrix is built', () => {
    expect(wantsSummary(1000, 200_000, false)).toBe(false);
    expect(wantsSummary(1001, 10, false)).toBe(true);
    expect(wantsSummary(10, 200_001, false)).toBe(true);
    expect(wantsSummary(2, 2, true)).toBe(true);
    const port = { name: 'http', port: 80, protocol: 'TCP' as const };
    expect(cellCount([{ ports: [port] }, { ports: [port, { ...port, port: 81 }] }])).toBe(3);
    // Replicas of one Deployment are one class; distinct label sets are classes of their own.
    const pod = (ns: string, app: string) => ({ namespace: ns, labels: { app }, ports: [port] });
    expect(classCells([pod('a', 'web'), pod('a', 'web'), pod('a', 'api'), pod('b', 'web')])).toEqual({ classes: 3, cells: 9 });
  });

  it('a set over the old per-cell bound (2,000 pods) is accepted by the command, its reports bounded and valid', () => {
    const dir = tempDir('starmap-scale-cli-');
    const set = join(dir, 'set');
    generateManifests(set, 1, { pods: 2000, policies: 200, namespaces: 100 });
    const json = join(dir, 'r.json');
    const html = join(dir, 'r.html');
    const r = spawnSync(
      NODE,
      ['scenarios/main.ts', 'check', set, '--replicas', '--netns-subnet', '10.213.0.0/20', '--report-json', json, '--report-html', html],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('summary by workload: 2000 pods in');
    expect(r.stdout).toMatch(/cells: [\d,]+ \([\d,]+ allowed, [\d,]+ denied\)/);
    const doc = JSON.parse(readFileSync(json, 'utf8')) as SummaryReportDoc;
    expect([...Value.Errors(Report, doc)]).toEqual([]);
    expect(doc.form).toBe('summary');
    expect(doc.counts.pods).toBe(2000);
    expect(doc.counts.cells).toBeGreaterThan(200_000);
    expect(doc.counts.allowed + doc.counts.denied + doc.counts.undecided).toBe(doc.counts.cells);
    // A few MB at most: the lists stop at the summary's bounds (5,000 pairs here, not the ~700,000 there are).
    expect(doc.pairs.length).toBe(5000);
    expect(doc.cellsNotInPairs).toBeGreaterThan(0);
    expect(statSync(json).size).toBeLessThan(4 * 2 ** 20);
    expect(statSync(html).size).toBeLessThan(4 * 2 ** 20);
    expect(readFileSync(html, 'utf8')).toContain('computed, summarised by workload');
  }, 120_000);

  it('what the summary form does not do is refused, exit 2, saying so', () => {
    const run = (args: string[]) => spawnSync(NODE, ['scenarios/main.ts', 'check', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    const file = run(['examples/shop-rollout.yaml', '--summary']);
    expect(file.status).toBe(2);
    expect(file.stderr).toContain('--summary and --report-cells are for manifests with no scenario file');
    const assert = run(['examples/shop', '--summary', '--assert', 'examples/shop-asserts.yaml']);
    expect(assert.status).toBe(2);
    expect(assert.stderr).toContain('--assert: not in the summary form of scenario check');
    expect(assert.stdout).toBe('');
  }, 120_000);

  it('the HTML page escapes what the manifests name', () => {
    const doc: SummaryReportDoc = {
      scenario: '<s>',
      form: 'summary',
      startedAt: 'now',
      finishedAt: 'now',
      outcome: 'computed only',
      notices: [],
      manifests: ['<m>'],
      addresses: 'none',
      counts: { pods: 2, workloads: 2, classes: 2, policies: 0, cells: 2, allowed: 2, denied: 0, undecided: 0 },
      workloads: [{ workload: '<w>', namespace: 'n', pods: 1, out: { allowed: 1, denied: 0, undecided: 0 }, in: { allowed: 1, denied: 0, undecided: 0 } }],
      workloadsOmitted: 1,
      pairs: [{ from: '<w>', to: '"x"', port: 80, protocol: 'TCP', verdict: 'allowed', cells: { allowed: 1, denied: 0, undecided: 0 }, reason: '<r>' }],
      cellsNotInPairs: 1,
      undecided: [],
      undecidedOmitted: 0,
      cellsFile: null,
    };
    const page = summaryHtml(doc);
    expect(page).not.toMatch(/<(s|m|w|r)>/);
    expect(page).toContain('&lt;w&gt;');
    expect(page).toContain('&quot;x&quot;');
  });
});
