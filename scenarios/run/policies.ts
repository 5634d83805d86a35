// Applying a step: the NetworkPolicies in force, the namespaces' labels and the pods' labels. On
// Starmap's orchestrator that is one atomic POST /v2/starmap/changes per step (orchestrator/isolation/cluster-routes.ts),
// enforced with nftables in the task namespaces. Anywhere else (a real Marathon on DC/OS with
// Calico, say) the runner cannot apply them itself: a hook command given with --policy-hook
// receives a JSON file with the step's state and applies it there.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { POLICY_PATH } from '../../orchestrator/isolation/policy-routes.ts';
import type { ClusterPolicy } from '../../shared/netpol/cluster-policy.ts';
import { clusterPolicyDoc } from '../../shared/netpol/cluster-policy-doc.ts';
import { objectId, type NetworkPolicyObject } from '../../shared/netpol/types.ts';
import type { OrchestratorClient } from './orchestrator-client.ts';
import type { DialectPolicyDoc } from '../model/schema.ts';

export { POLICY_PATH };
export const CHANGES_PATH = '/v2/starmap/changes';
export const DROPS_PATH = '/v2/starmap/drops';
export const NAMESPACES_PATH = '/v2/starmap/namespaces';

/** The label that marks the policies a scenario put, so that a later run can find its leftovers. */
export const SCENARIO_LABEL = 'starmap.scenario';

export interface DesiredState {
  step: string;
  /** Policies in force, addresses filled in. */
  policies: NetworkPolicyObject[];
  /** Admin-tier policies in force (ClusterNetworkPolicy and the v1alpha1 kinds), addresses filled in. */
  clusterPolicies?: ClusterPolicy[];
  /** Every scenario namespace with its labels in force. */
  namespaces: Record<string, Record<string, string>>;
  /** `ns/pod` → labels in force, or null: the app's own labels. */
  podLabels: Record<string, Record<string, string> | null>;
  /** The dialect policies in force as the file wrote them (for hooks written for the dialect). */
  dialect?: Record<string, DialectPolicyDoc>;
}

export interface ApplyResult {
  applied: number;
  unchanged: number;
  failed: unknown[];
}

export interface PolicyApplier {
  readonly description: string;
  /** Whether policies are really enforced (false: loopback, nothing can block a packet). */
  readonly enforces: boolean;
  /** Makes exactly `state` the state in force. */
  apply(state: DesiredState): Promise<ApplyResult>;
  /** Removes what this scenario put (policies, namespace labels), including a previous run's leftovers. */
  clear(): Promise<void>;
}

const marked = (p: NetworkPolicyObject, scenario: string): NetworkPolicyObject => ({
  ...p,
  metadata: { ...p.metadata, labels: { ...(p.metadata.labels ?? {}), [SCENARIO_LABEL]: scenario } },
});

/** The admin-tier resources (orchestrator/isolation/cluster-policy-routes.ts), for finding a run's leftovers. */
const CLUSTER_POLICY_LISTS = ['clusternetworkpolicies', 'adminnetworkpolicies', 'baselineadminnetworkpolicies'].map((r) => `/v2/starmap/${r}`);
const SHORT: Record<string, string> = { ClusterNetworkPolicy: 'cnp', AdminNetworkPolicy: 'anp', BaselineAdminNetworkPolicy: 'banp' };

/** Starmap's orchestrator: one POST /v2/starmap/changes per step. */
export class ChangesEndpoint implements PolicyApplier {
  readonly description = `the orchestrator's ${CHANGES_PATH} endpoint`;
  readonly enforces = true;
  readonly #client: OrchestratorClient;
  readonly #scenario: string;
  readonly #namespaces: readonly string[];
  /** Policy ids in force that this run put. */
  #mine = new Set<string>();
  /** Admin-tier policy ids (`cnp/<name>`) in force that this run put. */
  #mineCluster = new Set<string>();

  constructor(client: OrchestratorClient, scenario: string, namespaces: readonly string[]) {
    this.#client = client;
    this.#scenario = scenario;
    this.#namespaces = namespaces;
  }

  /** Ids of NetworkPolicies that carry this scenario's label (this run's and earlier runs'). */
  async #ours(): Promise<string[]> {
    const res = (await this.#client.call('GET', POLICY_PATH)) as {
      policies: { kind?: string; metadata?: { name: string; namespace: string; labels?: Record<string, string> } }[];
    };
    return res.policies.filter((p) => p.kind === 'NetworkPolicy' && p.metadata?.labels?.[SCENARIO_LABEL] === this.#scenario).map((p) => objectId(p.metadata!));
  }

  /** Ids of admin-tier policies that carry this scenario's label (an orchestrator without them: none). */
  async #oursCluster(): Promise<string[]> {
    const out: string[] = [];
    for (const path of CLUSTER_POLICY_LISTS) {
      let res: { items?: { kind?: string; metadata?: { name?: string; labels?: Record<string, string> } }[] };
      try {
        res = (await this.#client.call('GET', path)) as typeof res;
      } catch {
        continue; // an orchestrator that predates them has none of ours
      }
      for (const d of res.items ?? [])
        if (d.metadata?.labels?.[SCENARIO_LABEL] === this.#scenario && d.kind && SHORT[d.kind]) out.push(`${SHORT[d.kind]}/${d.metadata.name}`);
    }
    return out;
  }

  async apply(state: DesiredState): Promise<ApplyResult> {
    const put = state.policies.map((p) => marked(p, this.#scenario));
    const wanted = new Set(put.map((p) => objectId(p.metadata)));
    const cluster = state.clusterPolicies ?? [];
    const wantedCluster = new Set(cluster.map((p) => p.id));
    const deleteCluster = [...this.#mineCluster].filter((id) => !wantedCluster.has(id));
    const body = {
      policies: { put, delete: [...this.#mine].filter((id) => !wanted.has(id)) },
      // Only when there are any: an orchestrator that predates them still takes every other change.
      ...(cluster.length > 0 || deleteCluster.length > 0
        ? { clusterPolicies: { put: cluster.map((p) => clusterPolicyDoc(p, { [SCENARIO_LABEL]: this.#scenario })), delete: deleteCluster } }
        : {}),
      namespaces: Object.fromEntries(Object.entries(state.namespaces).map(([n, labels]) => [n, { labels }])),
      podLabels: Object.fromEntries(Object.entries(state.podLabels).map(([p, labels]) => [p, labels === null ? null : { labels }])),
    };
    const res = (await this.#client.call('POST', CHANGES_PATH, body)) as Partial<ApplyResult>;
    this.#mine = wanted;
    this.#mineCluster = wantedCluster;
    return { applied: res.applied ?? 0, unchanged: res.unchanged ?? 0, failed: res.failed ?? [] };
  }

  async clear(): Promise<void> {
    const ids = new Set([...this.#mine, ...(await this.#ours())]);
    const clusterIds = new Set([...this.#mineCluster, ...(await this.#oursCluster())]);
    await this.#client.call('POST', CHANGES_PATH, {
      policies: { put: [], delete: [...ids] },
      ...(clusterIds.size > 0 ? { clusterPolicies: { put: [], delete: [...clusterIds] } } : {}),
      namespaces: Object.fromEntries(this.#namespaces.map((n) => [n, null])),
    });
    this.#mine.clear();
    this.#mineCluster.clear();
  }
}

/** Runs `<hook> <file>` where the file holds the step's state; the hook applies it. */
export class HookPolicies implements PolicyApplier {
  readonly description: string;
  readonly enforces = true;
  readonly #hook: string;
  readonly #workDir: string;
  readonly #scenario: string;
  readonly #group: string;
  constructor(hook: string, workDir: string, scenario: string, group: string) {
    this.#hook = hook;
    this.#workDir = workDir;
    this.#scenario = scenario;
    this.#group = group;
    this.description = `the hook command ${JSON.stringify(hook)}`;
  }

  async apply(state: DesiredState): Promise<ApplyResult> {
    const file = join(this.#workDir, `policies-${state.step.replace(/[^A-Za-z0-9_.-]/g, '_')}.json`);
    const doc = {
      scenario: this.#scenario,
      group: this.#group,
      step: state.step,
      // The dialect as the file wrote it (hooks written before NetworkPolicy support read this).
      policies: state.dialect ?? {},
      networkPolicies: state.policies.map((p) => marked(p, this.#scenario)),
      // Admin-tier policies as upstream documents of their kind (ClusterNetworkPolicy, AdminNetworkPolicy, BaselineAdminNetworkPolicy).
      clusterPolicies: (state.clusterPolicies ?? []).map((p) => clusterPolicyDoc(p, { [SCENARIO_LABEL]: this.#scenario })),
      namespaces: state.namespaces,
      podLabels: state.podLabels,
    };
    writeFileSync(file, JSON.stringify(doc, null, 2));
    await promisify(execFile)('/bin/sh', ['-c', `${this.#hook} "$1"`, 'hook', file], { timeout: 120_000 });
    return { applied: state.policies.length, unchanged: 0, failed: [] };
  }

  async clear(): Promise<void> {
    await this.apply({ step: 'cleanup', policies: [], namespaces: {}, podLabels: {} });
  }
}

/** When nothing can apply policies (loopback layout). */
export class NoPolicies implements PolicyApplier {
  readonly description = 'no isolation';
  readonly enforces = false;
  async apply(): Promise<ApplyResult> {
    return { applied: 0, unchanged: 0, failed: [] };
  }
  async clear(): Promise<void> {}
}
