// What a scenario file means, worked out once: the namespaces, the pods (the model shorthand
// expanded) with their labels and named ports, every cell the probes observe (source, destination,
// port, protocol), the policies (manifests read from their files, dialect policies read as
// NetworkPolicies) and, per step, the policies in force, the labels in force and the intended
// verdicts. Pods and policies may also come from Kubernetes manifests (`manifests:`, model/).
// Pure but for reading the manifest files, which the caller supplies (so built-in
// scenarios read theirs from the executable). Every problem is reported with its path and line.
// This is the order of one pass (pods before cells, namespaces before steps); each part is its
// own module: scenario-pods.ts, probe-cells.ts, scenario-externals.ts, scenario-namespaces.ts,
// policy-catalog.ts (with policy-entries.ts), step-loop.ts; the shapes are in resolved.ts.
import { ManifestError } from '../../shared/netpol/manifests.ts';
import { manifestCellCount, manifestCells, manifestModel, type ManifestModel } from './scenario-manifests.ts';
import { POD_KINDS } from './workloads.ts';
import { externalCells } from './externals.ts';
import { stepWorkloadPods } from './step-workloads.ts';
import { PodNames } from './matrix.ts';
import type { ParsedScenario } from './scenario-file.ts';
import { applyAssertions } from './assertions.ts';
import { RUN_LIMITS } from './limits.ts';
import { Problems } from './problems.ts';
import type { PodSpec, ResolvedScenario, ResolveIo } from './resolved.ts';
import { appPod, checkOf, checkPods, modelPods } from './scenario-pods.ts';
import { cellsOf } from './probe-cells.ts';
import { addAutomaticExternals, addDeclaredExternals } from './scenario-externals.ts';
import { scenarioNamespaces } from './scenario-namespaces.ts';
import { scenarioNodes } from './scenario-nodes.ts';
import { policyCatalog } from './policy-catalog.ts';
import { resolveSteps } from './step-loop.ts';
export { CHECK_LIMITS, MAX_CELLS, MAX_CELLS_COMPUTED, MAX_PODS, MAX_PODS_COMPUTED, RUN_LIMITS, type Limits } from './limits.ts';
export { cellKey, type Cell, type CheckKind, type PodSpec, type ResolvedScenario, type ResolvedStep, type ResolveIo } from './resolved.ts';
export { checkOf } from './scenario-pods.ts';

export function resolveScenario(parsed: ParsedScenario, io: ResolveIo): ResolvedScenario {
  const { doc } = parsed;
  const problems = new Problems(parsed);
  const apps = doc.apps ?? [];
  const limits = io.limits ?? RUN_LIMITS;
  if (!doc.model && apps.length === 0 && !doc.manifests) problems.add('/', 'give apps, a model or both (or manifests)');
  let fromManifests: ManifestModel | undefined;
  if (doc.manifests) {
    try {
      fromManifests = manifestModel(doc.manifests, parsed.file, io, limits);
    } catch (err) {
      if (!(err instanceof ManifestError)) throw err;
      problems.add('/manifests', err.message);
    }
  }

  // Pods: the model's, then the apps, then the manifests'.
  const modelCount = doc.model ? modelPods(doc.model).length : 0;
  const pods = [...(doc.model ? modelPods(doc.model) : []), ...apps.map(appPod), ...(fromManifests?.pods ?? [])];
  // Workloads a step's manifests add: deployed with the rest, judged from that step on.
  let stepPods: PodSpec[] = [];
  try {
    stepPods = stepWorkloadPods(doc.steps, parsed.file, io, new Set(pods.flatMap((p) => (p.workload ? [p.workload] : []))), limits);
  } catch (err) {
    if (!(err instanceof ManifestError)) throw err;
    problems.add('/steps', err.message);
  }
  pods.push(...stepPods);
  if (fromManifests && pods.length === 0)
    problems.add(
      '/manifests',
      `the manifests (${doc.manifests!.join(', ')}) make no pods (${fromManifests.summary.slice(0, 2).join('; ')}); pods come from ${Object.keys(POD_KINDS).join(', ')}`,
    );
  const seen = checkPods(pods, modelCount, apps, problems);
  const nodes = scenarioNodes(doc.nodes, apps, pods, problems);
  // Externals: the declared ones now (expectations may name them), automatic ones once the steps' policies are known.
  const externals = addDeclaredExternals(doc, io, pods, problems);
  if (pods.length > limits.maxPods) problems.add('/', `${pods.length} pods; at most ${limits.maxPods} ${limits.why.pods}`);
  problems.throwIfAny();
  const names = new PodNames(pods);
  const cells = cellsOf(pods, apps, doc.model, names, problems);
  const made = [...(fromManifests?.pods ?? []), ...stepPods];
  // Deferred (io.deferManifestCells): counted, not made; model/deferred-cells.ts makes them when asked.
  const deferred = io.deferManifestCells && made.length > 0 ? { pods: made, at: cells.length } : undefined;
  if (!deferred) for (const c of manifestCells(made)) cells.push(c); // not push(...): a large set has more cells than call arguments may be
  cells.push(...externalCells(pods, externals.declaredPods, checkOf));
  const deferredCount = deferred ? manifestCellCount(made) : 0;
  if (cells.length + deferredCount > limits.maxCells)
    problems.add('/', `${cells.length + deferredCount} cells; at most ${limits.maxCells} ${limits.why.cells}`);

  const namespaces = scenarioNamespaces(doc, fromManifests, pods, problems);
  const policies = policyCatalog(parsed, io, problems, fromManifests, (ref) => seen.has(ref), namespaces);
  const steps = resolveSteps({ parsed, io, problems, pods, cells, names, namespaces, policies, fromManifests });
  addAutomaticExternals({ doc, problems, limits, pods, cells, names, steps, externals, deferredCount });
  // Intents last: they may name the automatic externals, and the matrices above were read again with their cells.
  doc.steps.forEach((s, i) => {
    const statements = (s.assert ?? []).map((doc, j) => ({ doc, where: `/steps/${i}/assert/${j}`, source: `steps/${i}/assert/${j}` }));
    for (const p of applyAssertions({ pods, cells }, steps[i]!, statements).problems) problems.add(p.input.where, p.message);
  });
  const stepNames = new Set<string>();
  steps.forEach((s) => {
    if (stepNames.has(s.name)) problems.add(`/steps/${s.index}/name`, `duplicate step name "${s.name}"`);
    stepNames.add(s.name);
  });
  problems.throwIfAny();
  return {
    name: doc.name,
    ...(doc.description ? { description: doc.description } : {}),
    file: parsed.file,
    probeSeconds: doc.probeSeconds ?? 1,
    timeoutSeconds: doc.timeoutSeconds ?? 0.5,
    namespaces: [...namespaces.declared].map(([name, labels]) => ({ name, labels })),
    pods,
    nodes,
    cells,
    steps,
    ...(fromManifests || problems.notes.length ? { manifests: [...(fromManifests?.summary ?? []), ...problems.notes] } : {}),
    ...(deferred ? { deferredCells: deferred } : {}),
  };
}
