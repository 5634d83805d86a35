// The policies a scenario's steps may name: the manifests of `policies:` (a list) and of
// `manifests:` by `namespace/name` (admin-tier ones by id), or dialect policies by name (a map),
// with the checks that need the whole scenario: an id defined twice, `{{ip ns/pod}}` naming no pod.
import { cidrTexts, templateRefs } from '../../shared/netpol/ip-template.ts';
import type { LoadedPolicy } from '../../shared/netpol/manifests.ts';
import { objectId, type NetworkPolicyObject } from '../../shared/netpol/types.ts';
import { clusterCatalogAdd, clusterTemplateProblems, type LoadedClusterPolicy } from './cluster-policies.ts';
import { dialectToNetworkPolicies } from './dialect.ts';
import { manifestsOf } from './policy-entries.ts';
import type { Problems } from './problems.ts';
import type { ResolveIo } from './resolved.ts';
import type { ParsedScenario } from './scenario-file.ts';
import type { ManifestModel } from './scenario-manifests.ts';
import type { ScenarioNamespaces } from './scenario-namespaces.ts';
import type { DialectPolicyDoc } from './schema.ts';

export interface PolicyCatalog {
  catalog: Map<string, LoadedPolicy>;
  clusterCatalog: Map<string, LoadedClusterPolicy>;
  /** The file's dialect policies by name (`policies:` as a map), else undefined. */
  dialect: Record<string, DialectPolicyDoc> | undefined;
  /** The namespaces known once the policies are read (a dialect policy's rules name all of them). */
  nsNames: string[];
  fromDialect(name: string): NetworkPolicyObject[];
  checkTemplates(lp: LoadedPolicy, at: string): void;
  checkClusterTemplates(lc: LoadedClusterPolicy, at: string): void;
}

/** `isPod`: whether `ns/pod` names a pod of the scenario (for `{{ip ns/pod}}`). */
export function policyCatalog(
  parsed: ParsedScenario,
  io: ResolveIo,
  problems: Problems,
  fromManifests: ManifestModel | undefined,
  isPod: (ref: string) => boolean,
  namespaces: ScenarioNamespaces,
): PolicyCatalog {
  const { doc } = parsed;
  const { declared } = namespaces;
  const ensureNs = namespaces.ensure;
  const catalog = new Map<string, LoadedPolicy>();
  const clusterCatalog = new Map<string, LoadedClusterPolicy>();
  const checkClusterTemplates = (lc: LoadedClusterPolicy, at: string) => {
    for (const m of clusterTemplateProblems(lc.policy, (ref) => isPod(ref))) problems.add(at, m);
  };
  const dialect = doc.policies && !Array.isArray(doc.policies) ? doc.policies : undefined;
  const checkTemplates = (lp: LoadedPolicy, at: string) => {
    for (const c of cidrTexts(lp.policy))
      for (const ref of templateRefs(c.text))
        if (!isPod(ref)) problems.add(at, `${objectId(lp.policy.metadata)} ${c.path}: {{ip ${ref}}} names no pod of this scenario`);
  };
  if (Array.isArray(doc.policies)) {
    doc.policies.forEach((entry, i) => {
      const cluster: LoadedClusterPolicy[] = [];
      const nps = manifestsOf(entry, `/policies/${i}`, parsed, io, problems, cluster);
      for (const lc of cluster) {
        const dup = clusterCatalogAdd(clusterCatalog, lc, catalog.has(lc.policy.id));
        if (dup) problems.add(`/policies/${i}`, dup);
        checkClusterTemplates(lc, `/policies/${i}`);
      }
      for (const lp of nps) {
        const id = objectId(lp.policy.metadata);
        if (catalog.has(id)) problems.add(`/policies/${i}`, `policy ${id} is defined twice (also ${catalog.get(id)!.origin})`);
        catalog.set(id, lp);
        checkTemplates(lp, `/policies/${i}`);
        ensureNs(lp.policy.metadata.namespace);
      }
    });
  }
  for (const lc of fromManifests?.set.clusterPolicies ?? []) {
    const dup = clusterCatalogAdd(clusterCatalog, lc, catalog.has(lc.policy.id));
    if (dup) problems.add('/manifests', dup);
  }
  for (const lp of fromManifests?.policies ?? []) {
    const id = objectId(lp.policy.metadata);
    if (catalog.has(id)) problems.add('/manifests', `policy ${id} is defined twice (${lp.origin} and ${catalog.get(id)!.origin})`);
    catalog.set(id, lp);
    ensureNs(lp.policy.metadata.namespace);
  }
  if (dialect) for (const p of Object.values(dialect)) if (p.selector.group) ensureNs(p.selector.group);
  const nsNames = [...declared.keys()];
  const fromDialect = (name: string) => dialectToNetworkPolicies(name, dialect![name]!, nsNames);
  return { catalog, clusterCatalog, dialect, nsNames, fromDialect, checkTemplates, checkClusterTemplates };
}
