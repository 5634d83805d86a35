// The `manifests:` of a scenario (or the whole scenario, when `scenario check DIR` is given
// manifests and no scenario file): every entry read (files relative to the scenario file,
// directories recursively, `-` for stdin), as one set, made into pods. Throws ManifestError.
import { dirname, isAbsolute, join, normalize } from 'node:path';
import type { LoadedPolicy } from '../../shared/netpol/manifests.ts';
import type { LoadedClusterPolicy } from './cluster-policies.ts';
import { cellKey, type Cell, type PodSpec } from './resolve.ts';
import { manifestPods, manifestSummary, readManifestSet, type ManifestSet, type ManifestSource } from './manifests.ts';

export interface ManifestIo {
  /** The texts of a manifest file, a directory of them or `-`; `path` is resolved against the scenario's directory. */
  manifests?(path: string): ManifestSource[];
  /** The namespace of objects that give none (default `default`), as kubectl's --namespace. */
  namespace?: string;
  /** One pod per replica the manifests ask for, instead of one per workload. */
  replicas?: boolean;
}

export interface ManifestModel {
  set: ManifestSet;
  pods: PodSpec[];
  policies: LoadedPolicy[];
  /** What was read, ignored and noted, for `scenario check` and the run's log. */
  summary: string[];
}

/** Where an entry is: `-` as is, a relative path beside the scenario file. */
export function manifestPath(entry: string, scenarioFile: string): string {
  return entry === '-' || isAbsolute(entry) ? entry : normalize(join(dirname(scenarioFile), entry));
}

export function manifestModel(
  entries: readonly string[],
  scenarioFile: string,
  io: ManifestIo,
  limits: { maxPods: number; maxCells: number; why?: { pods: string; cells: string } },
): ManifestModel {
  if (!io.manifests) throw new Error('manifests: this scenario cannot read manifest files (a built-in names none)');
  const sources = entries.flatMap((e) => io.manifests!(manifestPath(e, scenarioFile)));
  const set = readManifestSet(sources, io.namespace !== undefined ? { namespace: io.namespace } : {});
  const pods = manifestPods(set, { replicas: io.replicas ?? false, ...limits });
  return { set, pods, policies: set.policies, summary: manifestSummary(set, pods) };
}

const CHECK = { TCP: 'tcp', UDP: 'udp', SCTP: 'sctp' } as const;

/** The cell of `from` probing `to` on one of its ports, as manifestCells makes it. */
export const manifestCell = (from: PodSpec, to: PodSpec, np: PodSpec['ports'][number]): Cell => ({
  key: cellKey(from.id, to.id, np.port, np.protocol),
  from: from.id,
  to: to.id,
  port: np.port,
  protocol: np.protocol,
  check: CHECK[np.protocol],
});

/** Every manifest-made pod probes every other on each port the destination declares (never its probe API port). */
export function manifestCells(pods: readonly PodSpec[]): Cell[] {
  return pods.flatMap((from) => pods.flatMap((to) => (from === to ? [] : to.ports.map((np) => manifestCell(from, to, np)))));
}

/** How many cells manifestCells makes of `pods`. */
export const manifestCellCount = (pods: readonly Pick<PodSpec, 'ports'>[]): number =>
  pods.reduce((n, p) => n + p.ports.length, 0) * Math.max(0, pods.length - 1);

/** The NetworkPolicies of a directory of manifests (`policies: - file: DIR`; the admin-tier ones go to `cluster`; everything else is ignored). */
export function directoryPolicies(path: string, io: ManifestIo, cluster: LoadedClusterPolicy[] = []): LoadedPolicy[] {
  if (!io.manifests) throw new Error('directoryPolicies: no manifest reader');
  const set = readManifestSet(io.manifests(path), io.namespace !== undefined ? { namespace: io.namespace } : {});
  cluster.push(...set.clusterPolicies);
  return set.policies;
}
