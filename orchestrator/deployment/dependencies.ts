// The dependency graph of a target state (Marathon's RootGroup.dependencyGraph): an app depends on
// its own `dependencies` and on those of every group above it; a dependency on a group means every
// app beneath that group. Plans order their steps by the longest dependency path, and a state
// whose graph has a cycle is refused.
import type { AppDefinition } from '../state/app-definition.ts';
import { ancestorsOf, isWithin, type GroupRecord } from '../state/group.ts';
import { InvalidObject } from '../errors.ts';

export class DependencyGraph {
  readonly #edges = new Map<string, string[]>();

  constructor(apps: ReadonlyMap<string, AppDefinition>, groups: ReadonlyMap<string, GroupRecord>) {
    let ids: string[] | undefined;
    const expand = (dep: string): string[] => (apps.has(dep) ? [dep] : (ids ??= [...apps.keys()]).filter((id) => isWithin(id, dep)));
    // Built for every change: with 1,000 apps and no group dependencies (the common case), walking
    // every app's ancestors was most of this and its garbage.
    const groupsDepend = [...groups.values()].some((g) => g.dependencies.length > 0);
    for (const app of apps.values()) {
      if (!groupsDepend && app.dependencies.length === 0) continue;
      const declared = [...app.dependencies, ...ancestorsOf(app.id).flatMap((g) => groups.get(g)?.dependencies ?? [])];
      // An app never waits for itself (a group may depend on a group that holds some of its apps).
      const edges = new Set(declared.flatMap(expand).filter((d) => d !== app.id));
      if (edges.size > 0) this.#edges.set(app.id, [...edges]);
    }
  }

  dependenciesOf(appId: string): string[] {
    return this.#edges.get(appId) ?? [];
  }

  /** Length of the longest dependency path from each app (1 = no dependencies); throws 422 on a cycle. */
  depths(): Map<string, number> {
    const depth = new Map<string, number>();
    const visiting = new Set<string>();
    const visit = (id: string): number => {
      const known = depth.get(id);
      if (known !== undefined) return known;
      if (visiting.has(id)) throw new InvalidObject([{ path: '/', errors: ['Dependency graph has cyclic dependencies.'] }]);
      visiting.add(id);
      let d = 1;
      for (const dep of this.dependenciesOf(id)) d = Math.max(d, 1 + visit(dep));
      visiting.delete(id);
      depth.set(id, d);
      return d;
    };
    for (const id of this.#edges.keys()) visit(id);
    return depth;
  }
}
