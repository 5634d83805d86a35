// Live expectations for the collector UI: when a step starts and when it is judged, the runner
// PUTs the step (name, index, policies) and every cell's expected verdict with the evaluator's
// reasons to the collector it deployed (the management UI), at /starmap/expectations (see
// collector/routes-expectations.ts). The UI then marks every cell it observes differently, with
// the reasons. Cells are named as the collector names its resources (resource ids), and a probe's
// cell carries the URL it checks, so the UI tells the ports of one pair apart. Publishing never
// holds up or fails a run: each PUT has a deadline, they go out one after another, and a failure
// is said once as a note.
import type { Static } from '@sinclair/typebox';
import { request } from 'undici';
import type { ExpectationsDoc, ExpectedCell } from '../../collector/expectations.ts';
import { sideText } from '../../shared/netpol/explain.ts';
import type { SideVerdict } from '../../shared/netpol/evaluate.ts';
import type { CellExpectation, StepExpectation } from '../model/expect.ts';
import type { Located } from './observe.ts';
import { cellKey } from '../model/resolve.ts';
import type { CellResultDoc, StepResultDoc } from '../report/results.ts';

export const EXPECTATIONS_PATH = '/starmap/expectations';
const TIMEOUT_MS = 2000;

type SchemaCell = Static<typeof ExpectedCell>;

/** One cell as the collector's schema has it (collector/expectations.ts), with what the runner always sends. */
export type PublishedCell = SchemaCell & Required<Pick<SchemaCell, 'port' | 'protocol' | 'reasons'>>;

/** A step as the collector's schema has it, with what the runner always sends. */
export type PublishedStep = ExpectationsDoc &
  Required<Pick<ExpectationsDoc, 'collector' | 'labels'>> & {
    step: Required<Pick<ExpectationsDoc['step'], 'total' | 'policies'>> & ExpectationsDoc['step'];
    cells: PublishedCell[];
  };

/** How pods and cells are named for the collector: its resource ids, and the URL each probe cell checks. */
export interface CollectorNaming {
  /** The collector's base URL, as the runner reaches it. */
  base: string;
  /** The collector's own id for its row (its pod name) and label (its short name). */
  self: { podId: string; id: string; label: string };
  /** pod id (namespace/pod) → the collector's resource id for it. */
  resourceOf: Map<string, string>;
  /** cell key → the URL the source probe checks. */
  urlOf: Map<string, string>;
  /** resource id → the pod's short name (the terminal tables' headers). */
  labels: Record<string, string>;
}

/** The collector among the deployed pods and how it names everything; undefined when none was deployed. */
export function collectorNaming(located: readonly Located[]): CollectorNaming | undefined {
  const ui = located.find((l) => l.app.pod.kind === 'collector');
  if (!ui) return undefined;
  const resourceOf = new Map<string, string>();
  for (const [id, cell] of ui.app.targets) resourceOf.set(cell.to, id);
  const urlOf = new Map<string, string>();
  for (const l of located) if (l.app.pod.kind === 'probe') for (const [url, cell] of l.app.targets) urlOf.set(cell.key, url);
  const labels: Record<string, string> = {};
  for (const l of located) {
    const id = resourceOf.get(l.app.pod.id);
    if (id !== undefined) labels[id] = l.app.pod.short;
  }
  const pod = ui.app.pod;
  return { base: ui.base, self: { podId: pod.id, id: pod.name, label: pod.short }, resourceOf, urlOf, labels };
}

interface CellLike {
  from: string;
  to: string;
  key: string;
  port: number;
  protocol: 'TCP' | 'UDP' | 'SCTP';
  expected: boolean | null;
  reason: string;
  egress: SideVerdict;
  ingress: SideVerdict;
}

/** The cells the collector can show (both ends are its resources, or it is the source), named its way. */
export function publishedCells(
  naming: CollectorNaming,
  cells: readonly CellLike[],
  reasonsOf: (c: CellLike) => string[],
  extra: (c: CellLike) => Partial<PublishedCell> = () => ({}),
): PublishedCell[] {
  const out: PublishedCell[] = [];
  for (const c of cells) {
    const from = c.from === naming.self.podId ? naming.self.id : naming.resourceOf.get(c.from);
    const to = naming.resourceOf.get(c.to);
    if (from === undefined || to === undefined) continue;
    const url = naming.urlOf.get(c.key);
    out.push({
      from,
      to,
      ...(url ? { url } : {}),
      port: c.port,
      protocol: c.protocol,
      expected: c.expected,
      reason: c.reason,
      reasons: reasonsOf(c),
      ...extra(c),
    });
  }
  return out;
}

const keyOf = (c: { from: string; to: string; port: number; protocol: 'TCP' | 'UDP' | 'SCTP' }) => cellKey(c.from, c.to, c.port, c.protocol);

/** Publishes each step's expectations to the scenario's collector, in order; see the file comment. */
export class LiveExpectations {
  readonly #naming: CollectorNaming;
  readonly #log: (line: string) => void;
  #queue: Promise<void> = Promise.resolve();
  #failed = false;
  /** Reasons per cell, from the step's evaluator (richer than the report's), and the step's size. */
  #reasons = new Map<string, string[]>();
  #total = 1;
  /** What was published last (tests, and the judged phase's description). */
  last: PublishedStep | undefined;

  constructor(naming: CollectorNaming, log: (line: string) => void) {
    this.#naming = naming;
    this.#log = log;
  }

  /** A step starts: its expected cells and reasons; cells in `notRun` cannot be observed here. */
  started(scenario: string, exp: StepExpectation, total: number, notRun: ReadonlyMap<string, string>): void {
    this.#total = total;
    this.#reasons = new Map();
    const like = exp.cells.map((c: CellExpectation): CellLike => ({
      from: c.cell.from,
      to: c.cell.to,
      key: c.cell.key,
      port: c.cell.port,
      protocol: c.cell.protocol,
      expected: c.expected,
      reason: c.reason,
      egress: c.verdict.egress,
      ingress: c.verdict.ingress,
    }));
    const chains = new Map(exp.cells.flatMap((c) => (c.chain ? [[c.cell.key, c.chain] as const] : [])));
    const reasons = (c: CellLike) => {
      // With admin tiers in force, each side's chain (Admin -> NetworkPolicy -> Baseline -> default).
      const chain = chains.get(c.key);
      const r = chain
        ? [`egress of ${c.from}: ${chain.egress}`, `ingress of ${c.to}: ${chain.ingress}`]
        : [sideText('egress', c.from, c.egress, exp.evaluator), sideText('ingress', c.to, c.ingress, exp.evaluator)];
      this.#reasons.set(keyOf(c), r);
      return r;
    };
    const step = exp.step;
    this.#publish({
      scenario,
      step: {
        index: step.index,
        name: step.name,
        total,
        ...(step.description ? { description: step.description } : {}),
        policies: [...step.policies.map((p) => `${p.metadata.namespace}/${p.metadata.name}`), ...(step.clusterPolicies ?? []).map((p) => p.id)],
      },
      phase: 'applying',
      collector: { id: this.#naming.self.id, label: this.#naming.self.label },
      labels: this.#naming.labels,
      cells: publishedCells(this.#naming, like, reasons, (c) => (notRun.has(c.key) ? { status: 'not run' } : {})),
    });
  }

  /** A step is judged: the same cells with what the runner observed and each cell's status. */
  judged(scenario: string, s: StepResultDoc): void {
    const byKey = new Map(s.cells.map((c) => [keyOf(c), c]));
    const like = s.cells.map((c: CellResultDoc): CellLike => ({
      from: c.from,
      to: c.to,
      key: keyOf(c),
      port: c.port,
      protocol: c.protocol,
      expected: c.expected,
      reason: c.reason,
      egress: c.evaluation.egress,
      ingress: c.evaluation.ingress,
    }));
    this.#publish({
      scenario,
      step: { index: s.index, name: s.name, total: this.#total, ...(s.description ? { description: s.description } : {}), policies: s.policies },
      phase: 'judged',
      outcome: s.outcome,
      collector: { id: this.#naming.self.id, label: this.#naming.self.label },
      labels: this.#naming.labels,
      cells: publishedCells(
        this.#naming,
        like,
        (c) => this.#reasons.get(keyOf(c)) ?? [sideText('egress', c.from, c.egress), sideText('ingress', c.to, c.ingress)],
        (c) => {
          const r = byKey.get(keyOf(c))!;
          return { observed: r.observed, status: r.status };
        },
      ),
    });
  }

  /** Waits for what was queued (at most one deadline per PUT). */
  flush(): Promise<void> {
    return this.#queue;
  }

  #publish(doc: PublishedStep): void {
    this.last = doc;
    this.#queue = this.#queue.then(async () => {
      try {
        const res = await request(`${this.#naming.base}${EXPECTATIONS_PATH}`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(doc),
          headersTimeout: TIMEOUT_MS,
          bodyTimeout: TIMEOUT_MS,
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
        const text = await res.body.text();
        if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
      } catch (err) {
        if (!this.#failed) this.#log(`note: the collector UI will not show the expected cells: PUT ${EXPECTATIONS_PATH} failed (${(err as Error).message})`);
        this.#failed = true;
      }
    });
  }
}
