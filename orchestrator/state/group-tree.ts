// The group tree the groups resource shows: a group with its apps and subgroups, built from the
// apps and group records of a state (current, or a change's target). Pure.
import type { AppDefinition } from './app-definition.ts';
import { isWithin, parentOf, type GroupRecord, type GroupTree } from './group.ts';

/**
 * The group tree of `id`. Subgroups come from records and from the paths of apps beneath `id`
 * (apps created through /v2/apps before their group had a record still show up in their group).
 */
export function groupTree(id: string, apps: ReadonlyMap<string, AppDefinition>, groups: ReadonlyMap<string, GroupRecord>): GroupTree {
  const children = new Map<string, { apps: AppDefinition[]; groups: Set<string> }>();
  const node = (g: string) => {
    let n = children.get(g);
    if (!n) children.set(g, (n = { apps: [], groups: new Set() }));
    return n;
  };
  const link = (g: string) => {
    for (let child = g; child !== id && child !== '/'; child = parentOf(child)) node(parentOf(child)).groups.add(child);
  };
  for (const g of groups.keys()) if (g !== id && isWithin(g, id)) link(g);
  for (const app of apps.values()) {
    if (!isWithin(app.id, id) || app.id === id) continue;
    node(parentOf(app.id)).apps.push(app);
    link(parentOf(app.id));
  }
  const build = (g: string): GroupTree => {
    const rec = groups.get(g);
    const n = children.get(g);
    return {
      id: g,
      dependencies: rec?.dependencies ?? [],
      version: rec?.version ?? newestVersion(n?.apps ?? []),
      apps: (n?.apps ?? []).sort((a, b) => a.id.localeCompare(b.id)),
      groups: [...(n?.groups ?? [])].sort().map(build),
    };
  };
  return build(id);
}

function newestVersion(apps: AppDefinition[]): string {
  return apps.reduce((v, a) => (a.version > v ? a.version : v), new Date(0).toISOString());
}
