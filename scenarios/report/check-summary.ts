// `scenario check` at cluster scale: every verdict of a manifest set, summarised by workload from
// the class matrix (shared/netpol/matrix.ts) without going cell by cell, so that a 10,000-pod set
// reports in a few MB: per workload the cells from and to its pods by verdict, per workload pair
// and port the cells by verdict with their reason (up to a bound, the rest counted), a sample of
// the undecided cells. Reasons are written once per distinct verdict (the matrix interns them).
// With admin tiers the matrix is shared/netpol/tier-matrix.ts's and a reason is the two sides'
// chains (tiers.ts chainText, as the per-cell check writes them), naming the workloads of a pair.
// The full cell list is NDJSON, one cellLine per cell, which the command streams (cli/check-scale.ts).
// Pure: a matrix and its pods in, the summary (report/summary-schema.ts) and its text out.
import type { Verdict } from '../../shared/netpol/evaluate.ts';
import { reasonLine } from '../../shared/netpol/explain.ts';
import type { PortCell, VerdictMatrix } from '../../shared/netpol/matrix.ts';
import type { TierMatrix } from '../../shared/netpol/tier-matrix.ts';
import { chainText, type TieredVerdict } from '../../shared/netpol/tiers.ts';
import type { PodInfo } from '../../shared/netpol/types.ts';
import { plural } from '../../shared/plural.ts';
import type { SummaryPairDoc, SummaryReportDoc, SummaryWorkloadDoc, TallyDoc } from './summary-schema.ts';

/** How much a summary lists, whatever the input: what keeps its JSON and HTML to a few MB. */
export const SUMMARY_BOUNDS = { workloads: 2000, pairs: 5000, undecided: 100, reasonChars: 300 };
export type SummaryBounds = typeof SUMMARY_BOUNDS;

/** A pod of the matrix' cluster, in the same order: its id and the workload that made it. */
export interface SummaryPod {
  id: string;
  namespace: string;
  /** `Kind namespace/name`; absent: the pod is a workload of its own. */
  workload?: string;
}

/** The parts of a summary the matrix decides. */
export type MatrixSummary = Pick<SummaryReportDoc, 'workloads' | 'workloadsOmitted' | 'pairs' | 'cellsNotInPairs' | 'undecided' | 'undecidedOmitted'> & {
  counts: Omit<SummaryReportDoc['counts'], 'policies'>;
};

const PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const;
/** A cell's verdict: the NetworkPolicy matrix' or, with admin tiers, the tier matrix'. */
type AnyVerdict = Verdict | TieredVerdict;
/** 0 allowed, 1 denied, 2 undecided: the index into a tally. */
const verdictIndex = (v: AnyVerdict) => (v.allowed === true ? 0 : v.allowed === false ? 1 : 2);
const tally = (t: ArrayLike<number>, at = 0): TallyDoc => ({ allowed: t[at]!, denied: t[at + 1]!, undecided: t[at + 2]! });

interface PairTally {
  from: number;
  to: number;
  cell: PortCell;
  tally: [number, number, number];
  verdict: AnyVerdict;
  mixed: boolean;
}

/** A verdict's reason in one line, cut to `max` characters; each distinct verdict once. */
export function reasonCache(max: number): (v: Verdict) => string {
  const cache = new Map<Verdict, string>();
  return (v) => {
    let text = cache.get(v);
    if (text === undefined) {
      const full = reasonLine(v);
      cache.set(v, (text = full.length > max ? `${full.slice(0, max - 1)}…` : full));
    }
    return text;
  };
}

/**
 * A verdict's reason in one line, cut to `max` characters: reasonLine for a NetworkPolicy verdict
 * (each distinct verdict once), the two chains for a tiered one (they name the source and the
 * destination: a pod, or a workload for a pair).
 */
export function anyReason(max: number): (v: AnyVerdict, from: PodInfo, to: PodInfo) => string {
  const plain = reasonCache(max);
  return (v, from, to) => {
    if (!('decidedBy' in v.egress) || !('decidedBy' in v.ingress)) return plain(v as Verdict);
    const full = `egress: ${chainText('egress', from, v.egress)}; ingress: ${chainText('ingress', to, v.ingress)}`;
    return full.length > max ? `${full.slice(0, max - 1)}…` : full;
  };
}

/** Every cell of `matrix` counted by workload, workload pair and port; `pods` are the matrix' pods, in order. */
export function summariseMatrix(matrix: VerdictMatrix | TierMatrix, pods: readonly SummaryPod[], bounds: SummaryBounds = SUMMARY_BOUNDS): MatrixSummary {
  if (pods.length !== matrix.pods.length) throw new Error(`summariseMatrix: ${pods.length} pods for a matrix of ${matrix.pods.length}`);
  const names: string[] = [];
  const namespaces: string[] = [];
  const sizes: number[] = [];
  const index = new Map<string, number>();
  const workloadOf = new Int32Array(pods.length);
  pods.forEach((p, i) => {
    const key = p.workload ?? p.id;
    let w = index.get(key);
    if (w === undefined) {
      index.set(key, (w = names.push(key) - 1));
      namespaces.push(p.namespace);
      sizes.push(0);
    }
    sizes[w]!++;
    workloadOf[i] = w;
  });
  const W = names.length;
  const out = new Float64Array(W * 3);
  const into = new Float64Array(W * 3);
  const totals = [0, 0, 0];
  // A block's pods by workload, as [workload, count, …]: the matrix hands the same list for a class each time.
  const histograms = new WeakMap<readonly number[], Int32Array>();
  const histogram = (list: readonly number[]): Int32Array => {
    let h = histograms.get(list);
    if (!h) {
      const counts = new Map<number, number>();
      for (const p of list) counts.set(workloadOf[p]!, (counts.get(workloadOf[p]!) ?? 0) + 1);
      h = Int32Array.from([...counts].flat());
      histograms.set(list, h);
    }
    return h;
  };
  // Pods in both lists (of one class: loopback, not cells) of one workload.
  const common = (from: readonly number[], to: readonly number[], w: number): number => {
    if (from === to) return from.reduce((n, p) => n + (workloadOf[p] === w ? 1 : 0), 0);
    const there = new Set(to);
    return from.reduce((n, p) => n + (workloadOf[p] === w && there.has(p) ? 1 : 0), 0);
  };
  const pairs = new Map<number, PairTally>();
  let cellsNotInPairs = 0;
  const undecided: { from: number; to: number; cell: PortCell; verdict: AnyVerdict }[] = [];
  const blocks: (visit: (from: readonly number[], to: readonly number[], cell: PortCell, verdict: AnyVerdict, sameClass: boolean) => void) => void =
    matrix.blocks.bind(matrix);
  blocks((from, to, cell, verdict, sameClass) => {
    const hf = histogram(from);
    const ht = histogram(to);
    const k = verdictIndex(verdict);
    const portKey = cell.port * 4 + PROTOCOLS.indexOf(cell.protocol);
    let cells = 0;
    for (let a = 0; a < hf.length; a += 2) {
      const wf = hf[a]!;
      for (let b = 0; b < ht.length; b += 2) {
        const wt = ht[b]!;
        let n = hf[a + 1]! * ht[b + 1]!;
        if (sameClass && wf === wt) n -= common(from, to, wf);
        if (n === 0) continue;
        cells += n;
        out[wf * 3 + k]! += n;
        into[wt * 3 + k]! += n;
        const key = (wf * W + wt) * 262_144 + portKey;
        let pair = pairs.get(key);
        if (!pair) {
          if (pairs.size >= bounds.pairs) {
            cellsNotInPairs += n;
            continue;
          }
          pairs.set(key, (pair = { from: wf, to: wt, cell, tally: [0, 0, 0], verdict, mixed: false }));
        }
        pair.tally[k] += n;
        if (pair.verdict !== verdict) pair.mixed = true;
      }
    }
    totals[k]! += cells;
    // The first undecided cells met, pod by pod, up to the bound.
    if (k === 2)
      for (let a = 0; a < from.length && undecided.length < bounds.undecided; a++)
        for (let b = 0; b < to.length && undecided.length < bounds.undecided; b++)
          if (from[a] !== to[b]) undecided.push({ from: from[a]!, to: to[b]!, cell, verdict });
  });

  const reason = anyReason(bounds.reasonChars);
  // A workload as the subject a chain names: its namespace and name (`Kind namespace/name` or a pod's id).
  const workloadPod = (w: number): PodInfo => ({ namespace: namespaces[w]!, name: names[w]!.slice(names[w]!.lastIndexOf('/') + 1), labels: {}, ports: [] });
  const byName = (a: number, b: number) => (names[a]! < names[b]! ? -1 : names[a]! > names[b]! ? 1 : 0);
  const rows = Array.from({ length: W }, (_, w) => w).sort(byName);
  const workloads = rows
    .slice(0, bounds.workloads)
    .map((w): SummaryWorkloadDoc => ({ workload: names[w]!, namespace: namespaces[w]!, pods: sizes[w]!, out: tally(out, w * 3), in: tally(into, w * 3) }));
  const listed = [...pairs.values()].sort(
    (a, b) => byName(a.from, b.from) || byName(a.to, b.to) || a.cell.port - b.cell.port || (a.cell.protocol < b.cell.protocol ? -1 : 1),
  );
  const word = ['allowed', 'denied', 'undecided'] as const;
  return {
    counts: {
      pods: pods.length,
      workloads: W,
      classes: matrix.stats().classes,
      cells: totals[0]! + totals[1]! + totals[2]!,
      ...tally(totals),
    },
    workloads,
    workloadsOmitted: W - workloads.length,
    pairs: listed.map((p): SummaryPairDoc => ({
      from: names[p.from]!,
      to: names[p.to]!,
      port: p.cell.port,
      protocol: p.cell.protocol,
      verdict: p.mixed && p.tally.filter((n) => n > 0).length > 1 ? 'mixed' : word[verdictIndex(p.verdict)]!,
      cells: tally(p.tally),
      reason: p.mixed ? null : reason(p.verdict, workloadPod(p.from), workloadPod(p.to)),
    })),
    cellsNotInPairs,
    undecided: undecided.map((u) => ({
      from: pods[u.from]!.id,
      to: pods[u.to]!.id,
      port: u.cell.port,
      protocol: u.cell.protocol,
      why: reason(u.verdict, matrix.pods[u.from]!, matrix.pods[u.to]!),
    })),
    undecidedOmitted: totals[2]! - undecided.length,
  };
}

/**
 * One cell of the full list (--report-cells): one JSON object on one line. Its reason is a number:
 * the line `{"reason":N,"text":"…"}` (reasonLine) that came before it, written once per distinct
 * verdict, so that the file is not its reasons hundreds of millions of times over.
 */
export function cellLine(from: string, to: string, cell: PortCell, allowed: boolean | null, reason: number): string {
  return JSON.stringify({ from, to, port: cell.port, protocol: cell.protocol, allowed, reason });
}

/** The line that says what reason N of the cell lines is. */
export const reasonDefinition = (reason: number, text: string): string => JSON.stringify({ reason, text });

const n = (x: number) => x.toLocaleString('en');
const tallyText = (t: TallyDoc) => `${n(t.allowed)} allowed, ${n(t.denied)} denied${t.undecided > 0 ? `, ${n(t.undecided)} undecided` : ''}`;

/** The summary for the terminal: the totals, the first `rows` workloads, the undecided sample. */
export function summaryText(doc: SummaryReportDoc, rows = 30): string {
  const c = doc.counts;
  const shown = doc.workloads.slice(0, rows);
  const width = Math.min(60, Math.max(8, ...shown.map((w) => w.workload.length)));
  const more = c.workloads - shown.length;
  return [
    ...doc.manifests,
    ...doc.notices,
    `addresses used for ipBlocks: ${doc.addresses}`,
    '',
    `summary by workload: ${plural(c.pods, 'pod')} in ${plural(c.workloads, 'workload')}, computed over ${plural(c.classes, 'class', 'classes')} of identical pods, ${plural(c.policies, 'NetworkPolicy', 'NetworkPolicies')}`,
    `cells: ${n(c.cells)} (${tallyText(c)})`,
    '',
    `${'workload'.padEnd(width)}  ${'pods'.padStart(6)}  from its pods / to its pods`,
    ...shown.map(
      (w) =>
        `${w.workload.length > width ? `${w.workload.slice(0, width - 1)}…` : w.workload.padEnd(width)}  ${String(w.pods).padStart(6)}  ${tallyText(w.out)} / ${tallyText(w.in)}`,
    ),
    ...(more > 0
      ? [`… and ${plural(more, 'more workload')} (--report-json, --report-html list up to ${n(doc.workloads.length)}; --report-cells every cell)`]
      : []),
    ...(doc.undecided.length > 0
      ? [
          '',
          `undecided (depend on addresses not known), ${doc.undecided.length > 10 ? 'the first 10' : 'every one'} of ${n(c.undecided)}:`,
          ...doc.undecided.slice(0, 10).map((u) => `  ${u.from} -> ${u.to} ${u.port}/${u.protocol}: ${u.why}`),
        ]
      : []),
    ...(doc.cellsFile ? [`every cell: ${doc.cellsFile} (NDJSON)`] : []),
    '',
    c.undecided > 0
      ? `${doc.scenario}: UNDECIDED: ${plural(c.undecided, 'cell')} depend on addresses not known (give them with --ip ns/pod=address, or accept them with --allow-undecided)`
      : `${doc.scenario}: computed (${n(c.cells)} cells; nothing is intended, so nothing can disagree)`,
  ].join('\n');
}
