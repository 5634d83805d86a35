// The admin-tier policies (ClusterNetworkPolicy v1alpha2, AdminNetworkPolicy and
// BaselineAdminNetworkPolicy v1alpha1: shared/netpol/cluster-policy.ts) where a scenario reads
// policies: in manifests, in `policies:` and in a step's `manifests:`. Cluster-scoped, so known by
// their id (`cnp/<name>`, `anp/<name>`, `banp/default`); validated against the upstream CRDs as the
// API server does, each problem naming the field (a JSON pointer) and its line. Pure.
import { checkClusterPolicy, clusterPolicyTemplates, isClusterPolicyKind, type ClusterPolicy } from '../../shared/netpol/cluster-policy.ts';
import { templateRefs } from '../../shared/netpol/ip-template.ts';

export interface LoadedClusterPolicy {
  policy: ClusterPolicy;
  /** Where it came from, for messages: `policies.yaml document 2` or `scenario.yaml /policies/0`. */
  origin: string;
}

export { isClusterPolicyKind };

/**
 * One admin-tier object, validated (`{{ip ns/pod}}` allowed in `networks` with `templates`); its
 * problems go to `report` as (pointer, message) and warnings (selectors that select nothing) to `warn`.
 */
export function readClusterPolicy(
  value: unknown,
  opts: { templates?: boolean },
  report: (pointer: string, message: string) => void,
  warn: (message: string) => void = () => {},
): ClusterPolicy | undefined {
  const r = checkClusterPolicy(value, opts.templates ? { templates: true } : {});
  if ('errors' in r) {
    for (const e of r.errors) for (const m of e.errors) report(e.path, m);
    return undefined;
  }
  r.warnings.forEach(warn);
  return r.policy;
}

/** `ClusterNetworkPolicy cnp/sensitive` */
export const clusterPolicyName = (p: ClusterPolicy): string => `${p.kind} ${p.id}`;

/**
 * For loadManifests' `other`: takes the admin-tier objects of a manifest file into `into`, their
 * problems said with the document, the field and its line.
 */
export function clusterEntry(
  file: string,
  into: LoadedClusterPolicy[],
): (value: Record<string, unknown>, at: string, line: (pointer: string) => number | undefined, problems: string[]) => boolean {
  return (value, at, line, problems) => {
    if (!isClusterPolicyKind(value.apiVersion, value.kind)) return false;
    const name = (value.metadata as { name?: unknown } | undefined)?.name;
    const subject = `${String(value.kind)} ${typeof name === 'string' ? name : '(no name)'}`;
    const cp = readClusterPolicy(value, { templates: true }, (p, m) => {
      const l = line(p);
      problems.push(`${at}: ${subject}: ${p}${l ? ` (line ${l})` : ''}: ${m}`);
    });
    if (cp) into.push({ policy: cp, origin: `${file} ${at}` });
    return true;
  };
}

/** Adds a policy to a catalog by id; the problem when the id is taken (by another one, or by a NetworkPolicy `namespace/name`). */
export function clusterCatalogAdd(catalog: Map<string, LoadedClusterPolicy>, lc: LoadedClusterPolicy, takenByNetworkPolicy: boolean): string | undefined {
  const id = lc.policy.id;
  if (takenByNetworkPolicy) return `policy ${id}: a NetworkPolicy has the same namespace/name; rename one of them`;
  const before = catalog.get(id);
  catalog.set(id, lc);
  return before ? `policy ${id} is defined twice (also ${before.origin})` : undefined;
}

/** `{{ip ns/pod}}` templates of a policy that name no pod of the scenario. */
export function clusterTemplateProblems(policy: ClusterPolicy, known: (ref: string) => boolean): string[] {
  return clusterPolicyTemplates(policy).flatMap((t) =>
    templateRefs(t.text)
      .filter((ref) => !known(ref))
      .map((ref) => `${policy.id} ${t.path}: {{ip ${ref}}} names no pod of this scenario`),
  );
}
