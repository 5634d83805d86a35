// Observing an exported scenario on a cluster (`scenario observe`, `run --kubernetes`): the
// observer's GET /responses holds every probe's /status and every model collector's /responses
// (run/kubernetes-manifests.ts); this maps them back to cells, waits like a run does (settle.ts)
// and judges the step with the same results as `run` (report/results.ts).
// A probe's targets are matched by position: the probe lists them in the order of its --urls, which
// planApps writes in the order of the scenario's cells, whatever the addresses are (cluster names,
// or loopback ports when the same commands run locally); a probe whose list is not that long is
// not the one exported, and its cells get no value.
// No drop counters on a foreign CNI: a blocked cell is evidence only with a positive control (a
// reachable control to the same destination and port in the same step, run/evidence.ts), and each
// blocked cell says whether it has one. A failed name lookup is no answer about the policy.
import type { StepExpectation } from '../model/expect.ts';
import { expectStep } from '../model/expect.ts';
import type { ResolvedScenario } from '../model/resolve.ts';
import { cellResults, stepResult, type Observation, type StepResultDoc } from '../report/results.ts';
import type { PlannedApp } from './deploy-plan.ts';
import { positiveControls } from './evidence.ts';
import { observerId } from './kubernetes-manifests.ts';
import { settle, type Settled } from './settle.ts';
import { notRunCells, settleBudgetMs } from './steps.ts';

interface ProbeTarget {
  url?: string;
  reachable?: boolean;
  reason?: string | null;
  checkedAt?: string | null;
  changedAt?: string | null;
}
interface Detail {
  error?: { reason?: string } | null;
  fetchedAt?: string | null;
}
export interface CollectorDoc {
  responses?: Record<string, { json?: unknown } | null>;
  details?: Record<string, Detail | null>;
}

const none = (reason: string): Observation => ({ allowed: null, reason, checkedAt: null, changedAt: null });

/** The reason a failed name lookup gets: no value, since it says nothing about the policy. */
export const DNS_REASON = 'no value: the name lookup failed (dns), which proves nothing about the policy; an egress policy may block DNS (docs/kubernetes.md)';

/** One observation per cell of the plan's agents, from the observer's /responses document. Pure. */
export function observationsFrom(doc: CollectorDoc, plan: readonly PlannedApp[]): Map<string, Observation> {
  const out = new Map<string, Observation>();
  for (const app of plan) {
    if (app.targets.size === 0 || (app.pod.kind !== 'probe' && app.pod.kind !== 'collector')) continue;
    const id = observerId(app.pod);
    const json = doc.responses?.[id]?.json;
    const cells = [...app.targets.values()];
    if (json === undefined || json === null) {
      const why = doc.details?.[id]?.error?.reason ?? (doc.details?.[id] ? 'not fetched yet' : 'not among its resources');
      for (const c of cells) out.set(c.key, none(`the observer could not read ${app.pod.id} (${why})`));
      continue;
    }
    if (app.pod.kind === 'probe') {
      const targets = (json as { status?: { targets?: ProbeTarget[] } }).status?.targets ?? [];
      if (targets.length !== cells.length) {
        for (const c of cells) out.set(c.key, none(`${app.pod.id} checks ${targets.length} targets, not the ${cells.length} exported: export and apply again`));
        continue;
      }
      cells.forEach((c, i) => {
        const t = targets[i]!;
        const checkedAt = t.checkedAt ?? null;
        if (t.reason === 'dns') out.set(c.key, { ...none(DNS_REASON), checkedAt });
        else out.set(c.key, { allowed: checkedAt === null ? null : t.reachable === true, reason: t.reason ?? null, checkedAt, changedAt: t.changedAt ?? null });
      });
    } else {
      const details = (json as CollectorDoc).details ?? {};
      for (const [resource, c] of app.targets) {
        const d = details[resource];
        const fetchedAt = d?.fetchedAt ?? null;
        out.set(
          c.key,
          fetchedAt === null
            ? none('not fetched yet')
            : { allowed: !d!.error, reason: d!.error ? (d!.error.reason ?? 'error') : 'ok', checkedAt: fetchedAt, changedAt: null },
        );
      }
    }
  }
  return out;
}

/** GET <collector>/responses, mapped to cells; a collector that cannot be read gives no value for any cell. */
export async function readCollector(base: string, plan: readonly PlannedApp[], timeoutMs = 3000): Promise<Map<string, Observation>> {
  try {
    const res = await fetch(`${base.replace(/\/+$/, '')}/responses`, { signal: AbortSignal.timeout(timeoutMs) });
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    return observationsFrom((await res.json()) as CollectorDoc, plan);
  } catch (err) {
    const why = `the collector ${base} could not be read: ${(err as Error).message}`;
    return new Map(plan.flatMap((a) => [...a.targets.values()]).map((c) => [c.key, none(why)]));
  }
}

/** What a blocked cell's evidence is without drop counters: its positive control, said in its reason. */
export function positiveControlNotes(exp: StepExpectation, seen: ReadonlyMap<string, boolean | null>): Map<string, string> {
  const controls = positiveControls(exp, seen);
  const out = new Map<string, string>();
  for (const c of exp.cells) {
    if (c.expected !== false || seen.get(c.cell.key) !== false) continue;
    const control = controls.get(`${c.cell.to}@${c.cell.port}/${c.cell.protocol}`);
    out.set(
      c.cell.key,
      control
        ? `positive control: ${control} reached ${c.cell.to} on ${c.cell.port}/${c.cell.protocol} in this step (no drop counters on this CNI)`
        : `no positive control: nothing reached ${c.cell.to} on ${c.cell.port}/${c.cell.protocol} in this step, so a dead server would look the same (no drop counters on this CNI)`,
    );
  }
  return out;
}

export interface ObserveStepOptions {
  scenario: ResolvedScenario;
  stepIndex: number;
  read: () => Promise<Map<string, Observation>>;
  /** Pod addresses for {{ip ns/pod}} policies (absent: the stand-ins scenario check uses). */
  ips?: ReadonlyMap<string, string>;
  /** Values count when their check started at or after this (epoch ms). */
  since: number;
  deadlineMs: number;
  previous?: ReadonlyMap<string, Observation>;
  applyMs?: number;
  progress?: (line: string) => void;
  signal?: AbortSignal;
}

/** Waits for one step's cells on the cluster and judges them as `run` does. */
export async function observeStep(o: ObserveStepOptions): Promise<{ result: StepResultDoc; settled: Settled; blockedWithoutControl: string[] }> {
  const s = o.scenario;
  const exp = expectStep(s, s.steps[o.stepIndex]!, o.ips);
  const notRun = notRunCells(exp, true);
  const observable = exp.cells.filter((c) => !notRun.has(c.cell.key));
  const expected = new Map(observable.filter((c) => c.expected !== null).map((c) => [c.cell.key, c.expected!]));
  const settled = await settle({
    cells: observable.map((c) => c.cell.key),
    expected,
    observe: o.read,
    appliedAt: o.since,
    deadlineMs: o.deadlineMs,
    ...(o.previous ? { previous: o.previous } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
    onProgress: (st, ms) =>
      o.progress?.(`  ${(ms / 1000).toFixed(1)} s: ${st.fresh}/${observable.length} cells checked since, ${st.matching}/${st.judged} as expected`),
  });
  const seen = new Map(observable.map((c) => [c.cell.key, settled.fresh.has(c.cell.key) ? (settled.observed.get(c.cell.key)?.allowed ?? null) : null]));
  const controls = positiveControlNotes(exp, seen);
  const cells = cellResults(exp, notRun, { ...settled, droppedBy: new Map() }).map((c, i) => {
    const note = controls.get(exp.cells[i]!.cell.key);
    return note ? { ...c, observedReason: `${c.observedReason ?? 'blocked'}; ${note}` } : c;
  });
  const flips = [...settled.changedAfterMs.values()];
  const result = stepResult(exp, s.pods, cells, {
    settled: settled.settled,
    durationMs: settled.durationMs,
    budgetMs: settleBudgetMs(s),
    ...(o.applyMs !== undefined ? { applyMs: o.applyMs } : {}),
    lastFlipMs: flips.length > 0 ? Math.max(...flips) : null,
    observed: true,
  });
  const blockedWithoutControl = [...controls].filter(([, n]) => n.startsWith('no positive control')).map(([k]) => k);
  return { result, settled, blockedWithoutControl };
}

/** The notice every cluster report carries about its evidence. */
export const EVIDENCE_NOTICE =
  'observed on a Kubernetes cluster through its CNI: no drop counters there, so a blocked cell is evidence only with a positive control (another pod reached the same destination and port in the same step: the server was up); each blocked cell says whether it has one';
