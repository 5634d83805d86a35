// The cells of a manifest set left out of a resolved scenario (ResolveIo.deferManifestCells):
// 1,000 pods make 1.8 M cell objects a side, most of `scenario diff`'s time at scale (their keys
// and the garbage collector). model/diff-scale.ts reads them as (pod, pod, port) without making
// them; whatever needs the list (expectStep, the HTML page, --approve) has them put in first.
import type { ResolvedScenario } from './resolved.ts';
import { manifestCells } from './scenario-manifests.ts';

/** Puts a scenario's deferred cells into `cells`, where the resolver would have (no-op when none are). */
export function materializeCells(scenario: ResolvedScenario): ResolvedScenario {
  const d = scenario.deferredCells;
  if (!d) return scenario;
  const made = manifestCells(d.pods);
  const cells = scenario.cells;
  scenario.cells = [...cells.slice(0, d.at), ...made, ...cells.slice(d.at)];
  delete scenario.deferredCells;
  return scenario;
}
