// How many pods and cells a scenario may make: a run on packets is bounded by this machine (each
// pod a process, each cell a check every probe interval), a computed-only check by evaluation
// time. Both are said before anything is made, with the count, the limit and why.
/** Bounds of a run on packets: each pod is a process on this machine, each cell a check every probe interval. */
export const MAX_PODS = 100;
export const MAX_CELLS = 10_000;
/** Bounds of a computed-only check (`scenario check`): nothing runs, every cell is evaluated per step. */
export const MAX_PODS_COMPUTED = 1000;
export const MAX_CELLS_COMPUTED = 200_000;

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
  why: { pods: 'for scenario check: every pod is evaluated at every step', cells: 'for scenario check: every cell is evaluated at every step' },
};
/**
 * Bounds of `scenario diff` (computed only): each side is a verdict matrix over classes of identical
 * pods, and only the cells the diff shows get reasons, so a 1,000-pod set (and its automatic
 * externals) is within them; what bounds it is the memory of the cells themselves (about 400 bytes
 * each while they are read, on both sides).
 */
export const DIFF_LIMITS: Limits = {
  maxPods: 1_200,
  maxCells: 2_500_000,
  why: {
    pods: 'for scenario diff: each side holds every cell of its pods in memory',
    cells: 'for scenario diff: each side holds every cell in memory (about 400 bytes each)',
  },
};
