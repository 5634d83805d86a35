// How many pods and cells a scenario may make: a run on packets is bounded by this machine (each
// pod a process, each cell a check every probe interval), a computed-only check by evaluation
// time and memory. Both are said before anything is made, with the count, the limit and why.
/** Bounds of a run on packets: each pod is a process on this machine, each cell a check every probe interval. */
export const MAX_PODS = 100;
export const MAX_CELLS = 10_000;
/**
 * Bounds of a computed-only check cell by cell (`scenario check` and `scenario explain` of a
 * scenario file, and of manifests up to this size): every cell is evaluated at every step.
 */
export const MAX_PODS_COMPUTED = 1000;
export const MAX_CELLS_COMPUTED = 200_000;
/**
 * Bounds of `scenario check` of manifests past those (cli/check-scale.ts): verdicts by classes of
 * identical pods (shared/netpol/matrix.ts), reports by workload. Memory grows with the class
 * matrix, 4 bytes per class cell (classes × the port cells of all classes), bounded here to
 * 100 MB; 10,000 pods of a realistic cluster make about 7 M (bench/check-scale.bench.ts).
 */
export const MAX_PODS_SUMMARY = 20_000;
export const MAX_CLASS_CELLS = 25_000_000;

export interface Limits {
  maxPods: number;
  maxCells: number;
  /** Why, after the limit: 'for a run on packets …'. */
  why: { pods: string; cells: string };
}
export const RUN_LIMITS: Limits = {
  maxPods: MAX_PODS,
  maxCells: MAX_CELLS,
  why: {
    pods: `for a run on packets: each pod is a process on this machine (scenario check computes up to ${MAX_PODS_COMPUTED})`,
    cells: `for a run on packets: each is a check every probe interval (scenario check computes up to ${MAX_CELLS_COMPUTED})`,
  },
};
export const CHECK_LIMITS: Limits = {
  maxPods: MAX_PODS_COMPUTED,
  maxCells: MAX_CELLS_COMPUTED,
  why: {
    pods: `for scenario check and explain: every pod is evaluated at every step (scenario check of manifests alone, with no scenario file, takes up to ${MAX_PODS_SUMMARY} pods, summarised by workload)`,
    cells:
      'for scenario check and explain: every cell is evaluated at every step (scenario check of manifests alone, with no scenario file, takes more, summarised by workload)',
  },
};
export const SCALE_CHECK_LIMITS: Limits & { maxClassCells: number; why: Limits['why'] & { classCells: string } } = {
  maxPods: MAX_PODS_SUMMARY,
  maxCells: Number.MAX_SAFE_INTEGER,
  maxClassCells: MAX_CLASS_CELLS,
  why: {
    pods: 'for scenario check of manifests (verdicts by classes of identical pods, reports by workload)',
    cells: 'for scenario check of manifests',
    classCells: 'for scenario check of manifests: 4 bytes each in memory (fewer distinct label sets per namespace make fewer classes)',
  },
};
