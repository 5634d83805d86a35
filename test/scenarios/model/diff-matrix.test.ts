// `scenario diff` through the verdict matrices (model/diff-side.ts, diff-rules.ts) gives the diff
// the per-cell path gave (test/helpers/diff-per-cell.ts: every cell evaluated with its reason, rule
// coverage over every cell): the same flips with the same reasons and causes, cells of one side,
// undecided cells and dead rules, on every pair of steps of every built-in scenario (labels
// relabelled between steps, policies applied and removed, admin tiers, ipBlocks, externals) and on
// generated clusters changed as a pull request would (policies edited, removed and added,
// namespaces and Deployments relabelled, a Deployment removed).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { changedCluster } from '../../../bench/lib/cluster-change.ts';
import { clusterYaml, generateCluster } from '../../../bench/lib/cluster-gen.ts';
import { plannedAddresses } from '../../../scenarios/model/addresses.ts';
import { BUILTIN } from '../../../scenarios/model/builtin.ts';
import { diffSides } from '../../../scenarios/model/diff.ts';
import { diffOf } from '../../../scenarios/model/diff-scale.ts';
import { diffSideAt } from '../../../scenarios/model/diff-side.ts';
import { DIFF_LIMITS } from '../../../scenarios/model/limits.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import type { ResolvedScenario, ResolvedStep } from '../../../scenarios/model/resolve.ts';
import { diffSidesPerCell } from '../../helpers/diff-per-cell.ts';
import { removeTempDirs, tempDir } from '../../helpers/process.ts';

afterAll(removeTempDirs);

const sideAt = (label: string, s: ResolvedScenario, step: ResolvedStep, addresses = true) =>
  diffSideAt(label, s, step, addresses ? plannedAddresses(s.pods) : new Map());

/** Both paths on fresh sides (so neither reads what the other computed), and the diff. */
function bothWays(a: () => ReturnType<typeof sideAt>, b: () => ReturnType<typeof sideAt>) {
  const matrix = diffSides(a(), b());
  const perCell = diffSidesPerCell(a(), b());
  return { matrix, perCell };
}

describe('scenario diff by verdict matrices: the per-cell diff, exactly', () => {
  // Without addresses, ipBlock cells are undecided and the rules they wait on are pending (not dead).
  it.each([true, false])('on every pair of consecutive steps (and first against last) of every built-in scenario (addresses known: %s)', (addresses) => {
    let pairs = 0;
    let flips = 0;
    let dead = 0;
    let undecided = 0;
    for (const name of Object.keys(BUILTIN).sort()) {
      const s = loadScenario(name);
      const steps = s.steps.map((step, i) => [step, s.steps[i + 1]] as const).filter(([, next]) => next !== undefined);
      if (s.steps.length > 2) steps.push([s.steps[0]!, s.steps[s.steps.length - 1]!]);
      for (const [x, y] of steps) {
        const { matrix, perCell } = bothWays(
          () => sideAt(name, s, x, addresses),
          () => sideAt(name, s, y!, addresses),
        );
        expect(matrix, `${name}: ${x.name} -> ${y!.name}`).toEqual(perCell);
        pairs++;
        flips += matrix.counts.flips;
        dead += matrix.deadRules.length;
        undecided += matrix.counts.undecided;
      }
    }
    // The inputs exercise what is compared: many pairs, flips and dead rules among them.
    expect(pairs).toBeGreaterThan(50);
    expect(flips).toBeGreaterThan(100);
    expect(dead).toBeGreaterThan(0);
    if (!addresses) expect(undecided).toBeGreaterThan(0);
  });

  it('on generated clusters changed as a pull request would, a Deployment removed too', () => {
    for (const seed of [1, 2, 3]) {
      const base = generateCluster(seed, { namespaces: 8, pods: 60, policies: 24 });
      const { head } = changedCluster(base, seed);
      head.deployments = head.deployments.slice(1);
      const dirs = [base, head].map((c) => {
        const dir = tempDir('starmap-diff-matrix-');
        writeFileSync(join(dir, 'all.yaml'), clusterYaml(c));
        return dir;
      });
      const load = (dir: string) => {
        const s = loadScenario(dir, { replicas: true, computedOnly: true, limits: DIFF_LIMITS });
        return () => sideAt(dir, s, s.steps[s.steps.length - 1]!);
      };
      const { matrix, perCell } = bothWays(load(dirs[0]!), load(dirs[1]!));
      expect(matrix, `seed ${seed}`).toEqual(perCell);
      expect(matrix.counts.flips, `seed ${seed}: the change flips cells`).toBeGreaterThan(0);
      expect(matrix.counts.removed, `seed ${seed}: the removed Deployment's cells`).toBeGreaterThan(0);
    }
  });
});

describe('scenario diff without cell objects (deferred manifest cells, model/diff-scale.ts): the per-cell diff, exactly', () => {
  const dirsOf = (seed: number, change: (head: ReturnType<typeof generateCluster>) => void) => {
    const base = generateCluster(seed, { namespaces: 8, pods: 60, policies: 24 });
    const { head } = changedCluster(base, seed);
    change(head);
    return [base, head].map((c) => {
      const dir = tempDir('starmap-diff-matrix-');
      writeFileSync(join(dir, 'all.yaml'), clusterYaml(c));
      return dir;
    });
  };
  const deferred = (dir: string) => {
    const s = loadScenario(dir, { replicas: true, computedOnly: true, limits: DIFF_LIMITS, deferManifestCells: true });
    return sideAt(dir, s, s.steps[s.steps.length - 1]!);
  };
  const perCell = (dir: string) => {
    const s = loadScenario(dir, { replicas: true, computedOnly: true, limits: DIFF_LIMITS });
    return sideAt(dir, s, s.steps[s.steps.length - 1]!);
  };

  it('on generated clusters changed as a pull request would (same pods: no cell made but those shown)', () => {
    for (const seed of [1, 2, 3]) {
      const [a, b] = dirsOf(seed, () => {});
      const base = deferred(a!);
      const head = deferred(b!);
      const diff = diffOf(base, head);
      // The walk without cells was taken: the cells were never put in.
      expect(base.scenario.deferredCells, `seed ${seed}`).toBeDefined();
      expect(head.scenario.cells.length, `seed ${seed}`).toBeLessThan(diff.counts.cells);
      expect(diff, `seed ${seed}`).toEqual(diffSidesPerCell(perCell(a!), perCell(b!)));
      expect(diff.counts.flips, `seed ${seed}: the change flips cells`).toBeGreaterThan(0);
      expect(diff.deadRules.length + diff.counts.undecided, `seed ${seed}`).toBeGreaterThan(0);
    }
  });

  it('a Deployment removed (cells of one side): the cells are put in and the diff is the per-cell one', () => {
    const [a, b] = dirsOf(5, (head) => (head.deployments = head.deployments.slice(1)));
    const base = deferred(a!);
    const diff = diffOf(base, deferred(b!));
    expect(base.scenario.deferredCells).toBeUndefined();
    expect(diff).toEqual(diffSidesPerCell(perCell(a!), perCell(b!)));
    expect(diff.counts.removed).toBeGreaterThan(0);
  });

  it('a deferred set past the diff bound on cells is refused as the full one is', () => {
    const dir = tempDir('starmap-diff-matrix-');
    const deployments = Array.from(
      { length: 60 },
      (_, i) =>
        `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: w${i}, namespace: big }\nspec:\n  selector: { matchLabels: { app: w${i} } }\n  template:\n    metadata: { labels: { app: w${i} } }\n    spec:\n      containers: [{ name: c, ports: [{ containerPort: 8080 }] }]\n`,
    );
    writeFileSync(join(dir, 'all.yaml'), deployments.join('---\n'));
    const limits = { ...DIFF_LIMITS, maxCells: 1000 };
    const full = () => loadScenario(dir, { computedOnly: true, limits });
    const lazy = () => loadScenario(dir, { computedOnly: true, limits, deferManifestCells: true });
    expect(full).toThrow(/3540 cells .*; at most 1000/);
    expect(lazy).toThrow(/3540 cells .*; at most 1000/);
  });
});

describe('large manifest sets', () => {
  it('a set of more cells than one call takes arguments (151,710, within scenario check’s bound) loads', () => {
    const dir = tempDir('starmap-diff-matrix-');
    const deployments = Array.from(
      { length: 390 },
      (_, i) =>
        `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: w${i}, namespace: big }\nspec:\n  selector: { matchLabels: { app: w${i} } }\n  template:\n    metadata: { labels: { app: w${i} } }\n    spec:\n      containers: [{ name: c, ports: [{ containerPort: 8080 }] }]\n`,
    );
    writeFileSync(join(dir, 'all.yaml'), deployments.join('---\n'));
    const s = loadScenario(dir, { computedOnly: true });
    expect(s.cells).toHaveLength(390 * 389);
  });
});
