// The step loop: per step, the policies in force (named from the catalog, written inline, or
// changed by the step's manifests; a step that says none keeps the previous step's), the labels in
// force per namespace and per pod, and the intended verdicts of its `expect:`. Pure but for the
// manifest files `io` reads.
import type { ClusterPolicy } from '../../shared/netpol/cluster-policy.ts';
import { NAMESPACE_NAME_LABEL, objectId, type NetworkPolicyObject } from '../../shared/netpol/types.ts';
import type { LoadedClusterPolicy } from './cluster-policies.ts';
import { intendedVerdicts, type PodNames } from './matrix.ts';
import type { PolicyCatalog } from './policy-catalog.ts';
import { manifestsOf } from './policy-entries.ts';
import type { Problems } from './problems.ts';
import type { Cell, PodSpec, ResolvedStep, ResolveIo } from './resolved.ts';
import type { ParsedScenario } from './scenario-file.ts';
import type { ManifestModel } from './scenario-manifests.ts';
import type { ScenarioNamespaces } from './scenario-namespaces.ts';
import type { DialectPolicyDoc, StepDoc } from './schema.ts';
import { applyStepManifests } from './step-manifests.ts';

export interface StepInputs {
  parsed: ParsedScenario;
  io: ResolveIo;
  problems: Problems;
  /** The scenario's pods; a step's manifests may add to them. */
  pods: PodSpec[];
  cells: readonly Cell[];
  names: PodNames;
  namespaces: ScenarioNamespaces;
  policies: PolicyCatalog;
  fromManifests: ManifestModel | undefined;
}

export function resolveSteps(inputs: StepInputs): ResolvedStep[] {
  const { parsed, io, problems, pods, cells, names, fromManifests } = inputs;
  const { doc } = parsed;
  const { declared } = inputs.namespaces;
  const ensureNs = inputs.namespaces.ensure;
  const { catalog, clusterCatalog, dialect, nsNames, fromDialect, checkTemplates, checkClusterTemplates } = inputs.policies;
  const nsLabels: Record<string, Record<string, string>> = Object.fromEntries(declared);
  const podLabels: Record<string, Record<string, string>> = Object.fromEntries(pods.map((p) => [p.id, p.labels]));
  // The manifests' policies are in force until a step says otherwise.
  let previous: { policies: NetworkPolicyObject[]; clusterPolicies: ClusterPolicy[]; dialect?: Record<string, DialectPolicyDoc> } = {
    policies: (fromManifests?.policies ?? []).map((lp) => lp.policy),
    clusterPolicies: (fromManifests?.set.clusterPolicies ?? []).map((lc) => lc.policy),
  };
  return doc.steps.map((s: StepDoc, i): ResolvedStep => {
    const at = `/steps/${i}`;
    if (s.policies) {
      const inForce = new Map<string, NetworkPolicyObject>();
      const clusterInForce = new Map<string, ClusterPolicy>();
      const putCluster = (p: ClusterPolicy, where: string) => {
        if (clusterInForce.has(p.id)) problems.add(where, `policy ${p.id} is in force twice in this step`);
        clusterInForce.set(p.id, p);
      };
      const usedDialect: Record<string, DialectPolicyDoc> = {};
      const put = (p: NetworkPolicyObject, where: string) => {
        const id = objectId(p.metadata);
        if (inForce.has(id)) problems.add(where, `policy ${id} is in force twice in this step`);
        inForce.set(id, p);
      };
      s.policies.forEach((ref, j) => {
        const where = `${at}/policies/${j}`;
        if (typeof ref !== 'string') {
          const cluster: LoadedClusterPolicy[] = [];
          const nps = manifestsOf(ref, where, parsed, io, problems, cluster);
          for (const lc of cluster) {
            checkClusterTemplates(lc, where);
            clusterInForce.delete(lc.policy.id); // a step's own manifest replaces one of the same name
            putCluster(lc.policy, where);
          }
          for (const lp of nps) {
            checkTemplates(lp, where);
            ensureNs(lp.policy.metadata.namespace);
            const id = objectId(lp.policy.metadata);
            inForce.delete(id); // a step's own manifest replaces one of the same name
            put(lp.policy, where);
          }
        } else if (dialect?.[ref]) {
          usedDialect[ref] = dialect[ref];
          for (const p of fromDialect(ref)) put(p, where);
        } else if (catalog.has(ref)) put(catalog.get(ref)!.policy, where);
        else if (clusterCatalog.has(ref)) putCluster(clusterCatalog.get(ref)!.policy, where);
        else
          problems.add(
            where,
            `unknown policy "${ref}" (known: ${[...(dialect ? Object.keys(dialect) : [...catalog.keys(), ...clusterCatalog.keys()])].join(', ') || 'none'})`,
          );
      });
      previous = { policies: [...inForce.values()], clusterPolicies: [...clusterInForce.values()], ...(dialect ? { dialect: usedDialect } : {}) };
    }
    if (s.manifests) {
      const state = {
        policies: new Map(previous.policies.map((p) => [objectId(p.metadata), p])),
        clusterPolicies: new Map(previous.clusterPolicies.map((p) => [p.id, p])),
        pods,
        podLabels,
        namespaceLabels: nsLabels,
      };
      for (const [where, message] of applyStepManifests(s.manifests, parsed.file, io, state)) problems.add(`${at}/manifests${where}`, message);
      previous = { ...previous, policies: [...state.policies.values()], clusterPolicies: [...state.clusterPolicies.values()] };
    }
    for (const [ns, labels] of Object.entries(s.labels?.namespaces ?? {})) {
      if (!declared.has(ns)) problems.add(`${at}/labels/namespaces/${ns}`, `unknown namespace "${ns}" (known: ${nsNames.join(', ')})`);
      else if (labels === null) nsLabels[ns] = declared.get(ns)!;
      else {
        problems.labels(`${at}/labels/namespaces/${ns}`, labels);
        nsLabels[ns] = { ...labels, [NAMESPACE_NAME_LABEL]: ns };
      }
    }
    for (const [ref, labels] of Object.entries(s.labels?.pods ?? {})) {
      const id = names.resolve(ref);
      const where = `${at}/labels/pods/${ref.replace(/\//g, '~1')}`;
      if (!id) problems.add(where, names.unknown(ref));
      else if (labels === null) podLabels[id] = pods.find((p) => p.id === id)!.labels;
      else {
        problems.labels(where, labels);
        podLabels[id] = { ...labels };
      }
    }
    let intended: Map<string, boolean> | null = null;
    if (s.expect !== undefined && s.expect !== 'computed') {
      if (Object.keys(s.expect).length === 0) problems.add(`${at}/expect`, 'give `computed`, a matrix, per-port matrices, edges or a default');
      else {
        try {
          intended = intendedVerdicts(s.expect, cells, names);
        } catch (err) {
          problems.add(`${at}/expect`, (err as Error).message);
        }
      }
    }
    const step: ResolvedStep = {
      index: i,
      name: s.name,
      ...(s.description ? { description: s.description } : {}),
      policies: previous.policies,
      ...(previous.clusterPolicies.length > 0 ? { clusterPolicies: previous.clusterPolicies } : {}),
      namespaceLabels: { ...nsLabels },
      podLabels: { ...podLabels },
      intended,
      ...(s.timeoutSeconds ? { timeoutSeconds: s.timeoutSeconds } : {}),
      ...(previous.dialect ? { dialect: previous.dialect } : {}),
    };
    return step;
  });
}
