// The shapes of a resolved scenario (resolve.ts): its pods, its cells, its steps with what is in
// force at each, and what resolving reads beside the file. Types only, but for cellKey.
import type { NamedPort, NamespaceInfo, NetworkPolicyObject, NodeInfo, Protocol } from '../../shared/netpol/types.ts';
import type { ClusterPolicy } from '../../shared/netpol/cluster-policy.ts';
import type { ManifestIo } from './scenario-manifests.ts';
import type { ExternalHostDoc } from './externals.ts';
import type { StepAssertion } from './assertions.ts';
import type { AppDoc, DialectPolicyDoc } from './schema.ts';
import type { Limits } from './limits.ts';

export type CheckKind = 'http' | 'tcp' | 'udp' | 'sctp';

export interface Cell {
  key: string;
  from: string;
  to: string;
  port: number;
  protocol: Protocol;
  /** How it is observed: an HTTP GET of the target's API, a TCP connect, a UDP echo, or not at all (SCTP). */
  check: CheckKind;
}

export const cellKey = (from: string, to: string, port: number, protocol: Protocol): string => `${from}>${to}@${port}/${protocol}`;

export interface PodSpec {
  /** `namespace/name` */
  id: string;
  namespace: string;
  name: string;
  kind: AppDoc['kind'];
  short: string;
  labels: Record<string, string>;
  /** Where its HTTP API (probe, collector) or its main port (app) listens. */
  apiPort: number;
  /** Declared (named) container ports. */
  ports: NamedPort[];
  cmd?: string;
  /** `Kind namespace/name` of the workload a manifest-made pod comes from. */
  workload?: string;
  /** An external (model/externals.ts): its address outside the pod network; no policy selects it. */
  external?: string;
  /** An automatic external: the ipBlock it stands in. */
  covers?: string;
  /** On its node's network (it has its node's address): no NetworkPolicy selects it, `nodes` peers match it. */
  hostNetwork?: boolean;
  /** The node it runs on (scenario-nodes.ts sets it for every hostNetwork pod). */
  node?: string;
  /** The step whose manifests add it; no cell involving it is judged before (absent: from the start). */
  fromStep?: number;
}

export interface ResolvedStep {
  index: number;
  name: string;
  description?: string;
  /** The policies in force; ipBlocks may hold {{ip ns/pod}}. */
  policies: NetworkPolicyObject[];
  /** The admin-tier policies in force (absent: none); networks may hold {{ip ns/pod}}. */
  clusterPolicies?: ClusterPolicy[];
  /** Labels in force per namespace (with the name label) and per pod. */
  namespaceLabels: Record<string, Record<string, string>>;
  podLabels: Record<string, Record<string, string>>;
  /** Hand-written verdicts (cell key → allowed); null: `expect: computed`. */
  intended: Map<string, boolean> | null;
  /** Intents (`assert:`, --assert) with the cells behind each; their verdicts are in `intended`. */
  assertions?: StepAssertion[];
  /** Cells `intended` does not judge are judged against the computed verdict (intents with no matrix). */
  computedRest?: boolean;
  timeoutSeconds?: number;
  /** For --policy-hook: the dialect policies in force, by name, as the file wrote them. */
  dialect?: Record<string, DialectPolicyDoc>;
}

export interface ResolvedScenario {
  name: string;
  description?: string;
  file: string;
  probeSeconds: number;
  timeoutSeconds: number;
  namespaces: NamespaceInfo[];
  pods: PodSpec[];
  /** The cluster's nodes (scenario-nodes.ts; absent: the default node). */
  nodes?: NodeInfo[];
  cells: Cell[];
  steps: ResolvedStep[];
  /** From `manifests:`: what was read, ignored and noted. */
  manifests?: string[];
  /**
   * With ResolveIo.deferManifestCells: the manifest pods' cells (manifestCells(pods)) are not in
   * `cells` but belong at index `at`; model/deferred-cells.ts reads them lazily or puts them in.
   */
  deferredCells?: { pods: PodSpec[]; at: number };
}

export interface ResolveIo extends ManifestIo {
  /** Reads a manifest file; `path` is the scenario's directory joined with the `file:` entry. */
  readFile(path: string): string;
  /** --external flags, after the file's `externals:`. */
  externals?: ExternalHostDoc[];
  /** The run's pod subnet (--netns-subnet): externals must be outside it (default DEFAULT_POD_SUBNET). */
  podSubnet?: string;
  /** How many pods and cells it may make (default RUN_LIMITS). */
  limits?: Limits;
  /** Leave the manifest pods' cells out of `cells` (ResolvedScenario.deferredCells): scenario diff at scale. */
  deferManifestCells?: boolean;
}
