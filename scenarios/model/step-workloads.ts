// Workloads a step's `manifests: apply:` adds (a Deployment the scenario's manifests do not have):
// their pods exist from that step on. The pods are deployed once for the whole scenario, so such a
// pod runs from the start, but no cell involving it is judged before the step that applies it
// (expect.ts, assertions.ts). Read before the cells are made; a file that cannot be read is left
// to step-manifests.ts, which says why.
import { ManifestError, manifestPods, readManifestSet } from './manifests.ts';
import type { PodSpec } from './resolve.ts';
import { manifestPath, type ManifestIo } from './scenario-manifests.ts';
import type { StepDoc } from './schema.ts';

export function stepWorkloadPods(
  steps: readonly StepDoc[],
  scenarioFile: string,
  io: ManifestIo,
  known: ReadonlySet<string>,
  limits: { maxPods: number; maxCells: number; why?: { pods: string; cells: string } },
): PodSpec[] {
  if (!io.manifests) return [];
  const seen = new Set(known);
  const out: PodSpec[] = [];
  steps.forEach((step, i) => {
    for (const entry of step.manifests?.apply ?? []) {
      let set;
      try {
        set = readManifestSet(io.manifests!(manifestPath(entry, scenarioFile)), io.namespace !== undefined ? { namespace: io.namespace } : {});
      } catch (err) {
        if (err instanceof ManifestError || (err as NodeJS.ErrnoException).code) continue;
        throw err;
      }
      const added = set.workloads.filter((w) => !seen.has(`${w.kind} ${w.namespace}/${w.name}`));
      for (const w of added) seen.add(`${w.kind} ${w.namespace}/${w.name}`);
      if (added.length === 0) continue;
      out.push(...manifestPods({ ...set, workloads: added }, { replicas: io.replicas ?? false, ...limits }).map((p) => ({ ...p, fromStep: i })));
    }
  });
  return out;
}

/** Pods not there yet at step `index` (added by a later step's manifests). */
export const absentAt = (pods: readonly PodSpec[], index: number): Set<string> => new Set(pods.filter((p) => (p.fromStep ?? 0) > index).map((p) => p.id));
