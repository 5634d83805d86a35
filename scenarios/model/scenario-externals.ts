// A scenario's externals (externals.ts) as pods: the declared ones (`externals:`, --external),
// added before the cells are made (expectations may name them), and the automatic ones, added
// once the steps' policies are known, with their cells and the hand-written matrices read again.
import type { ExternalSpec } from './externals.ts';
import { coverageExternals } from './coverage-externals.ts';
import { declaredExternals, DEFAULT_POD_SUBNET, EXTERNAL_NAMESPACE, externalCells, externalPod, externalsOf } from './externals.ts';
import type { Limits } from './limits.ts';
import { intendedVerdicts, type PodNames } from './matrix.ts';
import type { Problems } from './problems.ts';
import type { Cell, PodSpec, ResolvedStep, ResolveIo } from './resolved.ts';
import { checkOf } from './scenario-pods.ts';
import type { ScenarioDoc } from './schema.ts';

export interface ScenarioExternals {
  /** Automatic coverage is on (no `externals: {auto: false}`). */
  auto: boolean;
  podSubnet: string;
  declared: ExternalSpec[];
  /** The declared externals' pods, added to the scenario's pods. */
  declaredPods: PodSpec[];
}

/** Adds externals to `pods` as pods; a name that is also a pod of the external namespace is a problem at `at`. */
function addExternals(pods: PodSpec[], list: readonly ExternalSpec[], at: string, problems: Problems): PodSpec[] {
  const added = list.map(externalPod);
  for (const e of added)
    if (pods.some((p) => p.external === undefined && p.namespace === EXTERNAL_NAMESPACE && p.name === e.name))
      problems.add(at, `external "${e.name}" and pod ${EXTERNAL_NAMESPACE}/${e.name} would be one app: rename one`);
  pods.push(...added);
  return added;
}

/** The declared externals, checked and added to `pods`. */
export function addDeclaredExternals(doc: ScenarioDoc, io: ResolveIo, pods: PodSpec[], problems: Problems): ScenarioExternals {
  const externalDecl = externalsOf(doc.externals);
  const podSubnet = io.podSubnet ?? DEFAULT_POD_SUBNET;
  const declaredExt = declaredExternals([...externalDecl.hosts, ...(io.externals ?? []).map((d, i) => ({ doc: d, at: `--external ${i + 1}` }))], podSubnet);
  for (const p of declaredExt.problems) problems.add(p.at, p.message);
  const declaredPods = addExternals(pods, declaredExt.externals, '/externals', problems);
  return { auto: externalDecl.auto, podSubnet, declared: declaredExt.externals, declaredPods };
}

export interface AutomaticInputs {
  doc: ScenarioDoc;
  problems: Problems;
  limits: Limits;
  pods: PodSpec[];
  cells: Cell[];
  names: PodNames;
  steps: ResolvedStep[];
  externals: ScenarioExternals;
  /** Cells deferred out of `cells` (ResolveIo.deferManifestCells), counted against the bound. */
  deferredCount?: number;
}

/** Automatic coverage: externals inside the blocks in force, their cells, and the matrices read again with them. */
export function addAutomaticExternals(inputs: AutomaticInputs): void {
  const { doc, problems, limits, pods, cells, names, steps, externals } = inputs;
  const deferred = inputs.deferredCount ?? 0;
  if (!externals.auto) return;
  const inForce = [...new Set(steps.flatMap((s) => s.policies))];
  const clusterInForce = [...new Set(steps.flatMap((s) => s.clusterPolicies ?? []))];
  const auto = addExternals(pods, coverageExternals(inForce, externals.declared, externals.podSubnet, clusterInForce), '/externals', problems);
  if (auto.length > 0) {
    cells.push(...externalCells(pods, auto, checkOf));
    if (pods.length > limits.maxPods)
      problems.add(
        '/',
        `${pods.length} pods (${auto.length} of them automatic externals: externals: {auto: false} leaves them out); at most ${limits.maxPods} ${limits.why.pods}`,
      );
    // Hand-written expectations read again with the new cells (a `default` judges them too).
    doc.steps.forEach((s, i) => {
      if (steps[i]!.intended === null || s.expect === undefined || s.expect === 'computed') return;
      try {
        steps[i]!.intended = intendedVerdicts(s.expect, cells, names);
      } catch {
        /* said in the first reading */
      }
    });
    if (cells.length + deferred > limits.maxCells)
      problems.add('/', `${cells.length + deferred} cells (with the automatic externals' cells); at most ${limits.maxCells} ${limits.why.cells}`);
  }
}
