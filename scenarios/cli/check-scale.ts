// `scenario check` of manifests past the per-cell bound (model/limits.ts): the verdicts come from
// the class matrix (shared/netpol/matrix.ts, the same answers as the evaluator cell by cell) and
// the reports are the summary by workload (report/check-summary.ts), so 10,000 pods and 1,000
// policies are checked in seconds and reported in a few MB. Every cell only on request
// (--report-cells FILE): NDJSON streamed row by row, never held whole. A set within the bound is
// checked cell by cell as before (cli/check.ts) unless --summary asks for this form.
// Admin-tier policies (ClusterNetworkPolicy): the tier matrix (shared/netpol/tier-matrix.ts) gives
// the verdicts, and the reasons are the tiers' chains. Not here yet: every cell (--report-cells)
// with admin tiers, externals and intents (--assert); a set with them is refused past the bound
// with a message saying so.
import { closeSync, openSync, readdirSync, readFileSync, statSync, writeSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Cluster, Verdict } from '../../shared/netpol/evaluate.ts';
import { reasonLine } from '../../shared/netpol/explain.ts';
import { VerdictMatrix } from '../../shared/netpol/matrix.ts';
import { TierMatrix } from '../../shared/netpol/tier-matrix.ts';
import { objectId, type PodInfo } from '../../shared/netpol/types.ts';
import { plannedAddresses, RUN_SUBNET } from '../model/addresses.ts';
import { BUILTIN } from '../model/builtin.ts';
import { MAX_CELLS_COMPUTED, MAX_PODS_COMPUTED, SCALE_CHECK_LIMITS } from '../model/limits.ts';
import { isScenarioText, manifestSetName } from '../model/load.ts';
import { ManifestError, manifestSummary, type ManifestSet } from '../model/manifests.ts';
import { PodNames } from '../model/matrix.ts';
import type { PodSpec } from '../model/resolve.ts';
import { manifestModel } from '../model/scenario-manifests.ts';
import { isManifestDir, readManifestSources, readStdin } from '../model/sources.ts';
import { cellLine, reasonDefinition, summariseMatrix, summaryText } from '../report/check-summary.ts';
import type { SummaryReportDoc } from '../report/summary-schema.ts';
import { ScenarioError } from '../errors.ts';
import { parseIps } from './explain.ts';

export interface ScaleCheckOptions {
  namespace?: string;
  replicas?: boolean;
  addresses: 'run' | 'unknown';
  subnet?: string;
  ips?: readonly string[];
  /** --summary: this form whatever the size. */
  summary?: boolean;
  /** --report-cells: where every cell goes, one JSON object a line. */
  cellsFile?: string;
}

export interface ScaleCheck {
  doc: SummaryReportDoc;
  text: string;
}

const MANIFEST_FILE = /\.(ya?ml|json)$/;

/** isScenarioText, parsing only a text that has a `steps` key somewhere (manifests seldom do; a 10,000-pod set is 500 files). */
const scenarioText = (text: string) => text.includes('steps') && isScenarioText(text);

/** Whether `ref` is manifests with no scenario file (a directory without scenario files, or a manifest file), as loadTargets reads it. */
export function isManifestRef(ref: string): boolean {
  if (BUILTIN[ref]) return false;
  try {
    if (ref === '-') return !scenarioText(readStdin());
    if (isManifestDir(ref))
      return !readdirSync(ref).some((f) => MANIFEST_FILE.test(f) && statSync(join(ref, f)).isFile() && scenarioText(readFileSync(join(ref, f), 'utf8')));
    return statSync(ref).isFile() && !scenarioText(readFileSync(ref, 'utf8'));
  } catch {
    return false; // the per-cell path says what is wrong with it
  }
}

/** The cells a pod list makes (each pod to every other, on each port the destination declares). */
export const cellCount = (pods: readonly Pick<PodSpec, 'ports'>[]): number => pods.reduce((n, p) => n + p.ports.length, 0) * Math.max(0, pods.length - 1);

/** Whether a set goes the summary way: past the per-cell bound, or asked for. */
export const wantsSummary = (pods: number, cells: number, asked: boolean): boolean => asked || pods > MAX_PODS_COMPUTED || cells > MAX_CELLS_COMPUTED;

/**
 * Class cells of the matrix (classes × the port cells of all classes, 4 bytes each): what its
 * memory grows with, bounded before it is built. Classes as the matrix makes them: namespace, labels, ports.
 */
export function classCells(pods: readonly Pick<PodInfo, 'namespace' | 'labels' | 'ports'>[]): { classes: number; cells: number } {
  const ports = new Map<string, number>();
  for (const p of pods) {
    const labels = JSON.stringify(Object.entries(p.labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const key = `${p.namespace}\0${labels}\0${JSON.stringify(p.ports.map((x) => [x.name, x.port, x.protocol]).sort())}`;
    if (!ports.has(key)) ports.set(key, new Set(p.ports.map((x) => `${x.port}/${x.protocol}`)).size);
  }
  let row = 0;
  for (const n of ports.values()) row += n;
  return { classes: ports.size, cells: ports.size * row };
}

/** Namespaces with their labels: declared ones, then those of pods and policies (the name label only). */
function namespacesOf(set: ManifestSet, pods: readonly PodSpec[]): Cluster['namespaces'] {
  const out = new Map(set.namespaces);
  for (const ns of [...pods.map((p) => p.namespace), ...set.policies.map((p) => p.policy.metadata.namespace)])
    if (!out.has(ns)) out.set(ns, { 'kubernetes.io/metadata.name': ns });
  return [...out].map(([name, labels]) => ({ name, labels }));
}

/**
 * The summary check of the manifests at `ref`, or null when the set is within the per-cell bound
 * and --summary is not given (the per-cell check takes it). Throws ScenarioError on bad input.
 */
export function scaleCheck(ref: string, opts: ScaleCheckOptions): ScaleCheck | null {
  const startedAt = new Date().toISOString();
  const file = ref.replace(/\/+$/, '');
  const io = {
    readFile: (p: string) => readFileSync(p, 'utf8'),
    manifests: (p: string) => readManifestSources(p),
    ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}),
    ...(opts.replicas ? { replicas: true } : {}),
  };
  let model: ReturnType<typeof manifestModel>;
  try {
    model = manifestModel([file === '-' ? '-' : basename(file)], file, io, SCALE_CHECK_LIMITS);
  } catch (err) {
    // The manifests' own messages, as they are (as model/load.ts's manifestScenario says them).
    if (err instanceof ManifestError) throw new ScenarioError(err.message);
    throw err;
  }
  const { set, pods } = model;
  if (!wantsSummary(pods.length, cellCount(pods), opts.summary === true || opts.cellsFile !== undefined)) return null;
  if (pods.length === 0) throw new ScenarioError(`${file}: the manifests make no pods`);
  const tiers = set.clusterPolicies.map((c) => c.policy);
  if (tiers.length > 0 && opts.cellsFile !== undefined)
    throw new ScenarioError(
      `${file}: --report-cells: ${tiers.length} admin-tier policies (${tiers
        .slice(0, 3)
        .map((c) => c.id)
        .join(', ')}): every cell is written for NetworkPolicies only yet; the summary (without --report-cells) has the tiers`,
    );

  let ips: Map<string, string>;
  try {
    ips = opts.addresses === 'run' ? plannedAddresses(pods, opts.subnet ?? RUN_SUBNET) : new Map<string, string>();
    for (const [id, ip] of parseIps(opts.ips ?? [], new PodNames(pods))) ips.set(id, ip);
  } catch (err) {
    throw new ScenarioError(
      `${file}: ${(err as Error).message}${opts.addresses === 'run' ? ' (give a larger --netns-subnet, such as 10.213.0.0/16, or --addresses=unknown)' : ''}`,
    );
  }
  const cluster: Cluster = {
    namespaces: namespacesOf(set, pods),
    pods: pods.map((p): PodInfo => ({
      namespace: p.namespace,
      name: p.name,
      labels: p.labels,
      ports: p.ports,
      ...(ips.has(p.id) ? { ip: ips.get(p.id)! } : {}),
    })),
  };
  const bound = classCells(cluster.pods);
  if (bound.cells > SCALE_CHECK_LIMITS.maxClassCells)
    throw new ScenarioError(
      `${file}: ${bound.classes} classes of identical pods (namespace, labels, ports) make ${bound.cells} class cells; at most ${SCALE_CHECK_LIMITS.maxClassCells} ${SCALE_CHECK_LIMITS.why.classCells}`,
    );

  const policies = set.policies.map((p) => p.policy);
  const matrix = tiers.length > 0 ? new TierMatrix(cluster, policies, tiers) : new VerdictMatrix(cluster, policies);
  if (opts.cellsFile !== undefined && matrix instanceof VerdictMatrix) writeCells(opts.cellsFile, matrix);
  const parts = summariseMatrix(matrix, pods);
  const doc: SummaryReportDoc = {
    scenario: manifestSetName(file),
    form: 'summary',
    startedAt,
    finishedAt: new Date().toISOString(),
    outcome: parts.counts.undecided > 0 ? 'undecided' : 'computed only',
    notices: [
      'computed only: scenario check deploys nothing, so nothing was observed',
      ...(tiers.length > 0
        ? [`admin tiers: ${tiers.length} admin-tier policies (Admin and Baseline) computed with the NetworkPolicies; a reason is each side's chain of tiers`]
        : []),
      `summarised by workload: ${pods.length > MAX_PODS_COMPUTED || cellCount(pods) > MAX_CELLS_COMPUTED ? `past the per-cell bound (${MAX_PODS_COMPUTED} pods, ${MAX_CELLS_COMPUTED} cells)` : 'asked for'}; every cell with --report-cells FILE`,
    ],
    manifests: manifestSummary(set, pods),
    addresses:
      ips.size === 0
        ? 'none (cells that depend on one are undecided)'
        : opts.addresses === 'run'
          ? `those an isolated run gives the pods (${opts.subnet ?? RUN_SUBNET}, in pod order)${(opts.ips ?? []).length > 0 ? ', with --ip' : ''}`
          : 'those given with --ip',
    counts: { ...parts.counts, policies: set.policies.length },
    workloads: parts.workloads,
    workloadsOmitted: parts.workloadsOmitted,
    pairs: parts.pairs,
    cellsNotInPairs: parts.cellsNotInPairs,
    undecided: parts.undecided,
    undecidedOmitted: parts.undecidedOmitted,
    cellsFile: opts.cellsFile ?? null,
  };
  return { doc, text: summaryText(doc) };
}

/** Every cell to `file` as NDJSON (report/check-summary.ts's cellLine, each reason defined once before its first cell), a pod's row at a time through a 1 MiB buffer: never the whole list in memory. */
export function writeCells(file: string, matrix: VerdictMatrix): void {
  let fd: number;
  try {
    fd = openSync(file, 'w');
  } catch (err) {
    throw new ScenarioError(`--report-cells: ${(err as Error).message}`);
  }
  const reasons = new Map<Verdict, number>();
  const ids = new Map(matrix.pods.map((p) => [p, objectId(p)]));
  let chunk: string[] = [];
  let size = 0;
  const flush = () => {
    writeSync(fd, chunk.join(''));
    chunk = [];
    size = 0;
  };
  try {
    for (const from of matrix.pods) {
      const id = ids.get(from)!;
      matrix.row(from, (to, cell, verdict) => {
        let reason = reasons.get(verdict);
        let line = '';
        if (reason === undefined) {
          reasons.set(verdict, (reason = reasons.size));
          line = `${reasonDefinition(reason, reasonLine(verdict))}\n`;
        }
        line += `${cellLine(id, ids.get(to)!, cell, verdict.allowed, reason)}\n`;
        chunk.push(line);
        size += line.length;
        if (size >= 1 << 20) flush();
      });
    }
    flush();
  } finally {
    closeSync(fd);
  }
}
