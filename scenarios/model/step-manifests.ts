// A step's `manifests: { apply: [...], delete: [...] }`, as `kubectl apply -f` and `kubectl delete
// -f` would change the cluster between two steps: a NetworkPolicy is added, replaced (same
// namespace and name) or deleted, and so is an admin-tier policy (same kind and name); a workload
// applied again with other pod-template labels is a rollout (its pods get the new labels); a
// Namespace applied again gets its new labels. A new workload's pods were made before the cells
// (step-workloads.ts) and are judged from this step on. The pods are deployed once for the whole
// scenario, so a step cannot delete a workload or change
// its ports: that is refused, saying so. Pure but for reading the texts (ManifestIo). The state
// given is changed in place; problems are returned.
import type { ClusterPolicy } from '../../shared/netpol/cluster-policy.ts';
import { objectId, type NetworkPolicyObject } from '../../shared/netpol/types.ts';
import type { PodSpec } from './resolve.ts';
import { ManifestError, readManifestSet, type ManifestSet } from './manifests.ts';
import { manifestPath, type ManifestIo } from './scenario-manifests.ts';

export interface StepManifestsDoc {
  apply?: string[];
  delete?: string[];
}

export interface ClusterState {
  /** The policies in force, by namespace/name. */
  policies: Map<string, NetworkPolicyObject>;
  /** The admin-tier policies in force, by id (cnp/<name>). */
  clusterPolicies: Map<string, ClusterPolicy>;
  pods: readonly PodSpec[];
  podLabels: Record<string, Record<string, string>>;
  namespaceLabels: Record<string, Record<string, string>>;
}

function readAll(entries: readonly string[], scenarioFile: string, io: ManifestIo): ManifestSet {
  if (!io.manifests) throw new ManifestError('this scenario cannot read manifest files');
  const sources = entries.flatMap((e) => io.manifests!(manifestPath(e, scenarioFile)));
  return readManifestSet(sources, io.namespace !== undefined ? { namespace: io.namespace } : {});
}

const samePorts = (a: PodSpec['ports'], b: PodSpec['ports']) =>
  a.length === b.length && a.every((p) => b.some((q) => q.name === p.name && q.port === p.port && q.protocol === p.protocol));

/** Applies then deletes; returns `[pointer suffix, message]` problems. */
export function applyStepManifests(change: StepManifestsDoc, scenarioFile: string, io: ManifestIo, state: ClusterState): [string, string][] {
  const problems: [string, string][] = [];
  for (const op of ['apply', 'delete'] as const) {
    const entries = change[op];
    if (!entries) continue;
    let set: ManifestSet;
    try {
      set = readAll(entries, scenarioFile, io);
    } catch (err) {
      if (!(err instanceof ManifestError)) throw err;
      problems.push([`/${op}`, err.message]);
      continue;
    }
    for (const w of set.workloads) {
      const id = `${w.kind} ${w.namespace}/${w.name}`;
      const pods = state.pods.filter((p) => p.workload === id);
      if (pods.length === 0) {
        problems.push([
          `/${op}`,
          `${w.origin}: ${id} is not one of the scenario's workloads: the pods are deployed once, so a step can change a workload's labels but not ${op === 'apply' ? 'add' : 'delete'} one (give it in the scenario's manifests)`,
        ]);
      } else if (op === 'delete') {
        problems.push([`/${op}`, `${w.origin}: ${id}: a step cannot delete a workload (the pods are deployed once); give it other labels instead`]);
      } else if (!samePorts(pods[0]!.ports, w.ports)) {
        problems.push([
          `/${op}`,
          `${w.origin}: ${id}: its container ports change; a step can change a workload's labels, not its ports (the pods are deployed once)`,
        ]);
      } else for (const p of pods) state.podLabels[p.id] = { ...w.labels };
    }
    for (const lp of set.policies) {
      const id = objectId(lp.policy.metadata);
      if (op === 'apply') state.policies.set(id, lp.policy);
      else if (!state.policies.delete(id)) problems.push([`/${op}`, `${lp.origin}: NetworkPolicy ${id} is not in force at this step (nothing to delete)`]);
    }
    for (const lc of set.clusterPolicies) {
      const id = lc.policy.id;
      if (op === 'apply') state.clusterPolicies.set(id, lc.policy);
      else if (!state.clusterPolicies.delete(id))
        problems.push([`/${op}`, `${lc.origin}: ${lc.policy.kind} ${lc.policy.name} is not in force at this step (nothing to delete)`]);
    }
    for (const [name, labels] of set.namespaces) {
      if (!state.namespaceLabels[name]) problems.push([`/${op}`, `Namespace ${name} is not one of the scenario's namespaces`]);
      else if (op === 'apply') state.namespaceLabels[name] = labels;
      else problems.push([`/${op}`, `Namespace ${name}: a step cannot delete a namespace (its pods are deployed once)`]);
    }
  }
  return problems;
}
