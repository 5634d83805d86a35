// A pull request against a generated cluster (cluster-gen.ts), seeded: HEAD is BASE with a few
// policies edited (a port moved), one removed and one added (a copy of another under a new name
// with its first rule dropped), one namespace and two Deployments relabelled. What
// bench/diff-scale.bench.ts times and test/scenarios/model/diff-matrix.test.ts holds the matrix
// diff to the per-cell one on. BASE is not modified.
import { rng } from '../../test/fuzz/values.ts';
import type { NetworkPolicyObject } from '../../shared/netpol/types.ts';
import type { GeneratedCluster } from './cluster-gen.ts';

export interface ClusterChange {
  head: GeneratedCluster;
  /** What was changed, in words (for the bench's notes). */
  changes: string[];
}

export function changedCluster(base: GeneratedCluster, seed: number, edits = 3): ClusterChange {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const head = structuredClone(base) as GeneratedCluster;
  const changes: string[] = [];
  const id = (p: NetworkPolicyObject) => `${p.metadata.namespace}/${p.metadata.name}`;
  const withRules = () => head.policies.filter((p) => (p.spec.ingress?.length ?? 0) + (p.spec.egress?.length ?? 0) > 0);
  for (let i = 0; i < edits; i++) {
    const p = pick(withRules());
    const rules = [...(p.spec.ingress ?? []), ...(p.spec.egress ?? [])];
    const rule = pick(rules) as { ports?: { port?: number | string; protocol?: string }[] };
    // A port moved (or, on a rule for every port, one port asked): the allows on it flip.
    rule.ports = rule.ports?.length ? rule.ports.map((pp, k) => (k === 0 ? { ...pp, port: 8081 } : pp)) : [{ port: 8080 }];
    changes.push(`${id(p)}: a rule's port edited`);
  }
  const removed = pick(withRules());
  head.policies = head.policies.filter((p) => p !== removed);
  changes.push(`${id(removed)}: removed`);
  const copied = structuredClone(pick(withRules()));
  copied.metadata = { ...copied.metadata, name: `${copied.metadata.name}-v2` };
  if (copied.spec.ingress?.length) copied.spec.ingress = copied.spec.ingress.slice(1);
  head.policies.push(copied);
  changes.push(`${id(copied)}: added`);
  const team = pick(head.namespaces.filter((n) => n.labels.team !== undefined));
  team.labels = { ...team.labels, env: team.labels.env === 'prod' ? 'staging' : 'prod' };
  changes.push(`namespace ${team.name}: env relabelled`);
  for (let i = 0; i < 2; i++) {
    const d = pick(head.deployments.filter((x) => x.labels.tier !== undefined));
    d.labels = { ...d.labels, tier: d.labels.tier === 'backend' ? 'frontend' : 'backend' };
    changes.push(`deployment ${d.namespace}/${d.name}: tier relabelled`);
  }
  return { head, changes };
}
