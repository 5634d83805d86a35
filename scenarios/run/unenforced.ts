// What `scenario run` cannot enforce of the admin-tier policies (ClusterNetworkPolicy and the
// v1alpha1 kinds): the bundled orchestrator renders them on packets (orchestrator/isolation/
// compile-tiers.ts), except `nodes` and `domainNames` egress peers, which it renders as matching
// nothing (the one-machine cluster has no node model and serves its pods no DNS yet). Those peers
// never match a pod, so pod-to-pod cells are enforced as the policies say; a cell to an external
// (model/externals.ts: an address outside the pod network, which a node or a domain name could be)
// whose source is the subject of such a rule is "not run", with the rule named, never a pass. Pure.
import type { ClusterPolicy } from '../../shared/netpol/cluster-policy.ts';
import { selectorMatches } from '../../shared/netpol/selector.ts';
import { NAMESPACE_NAME_LABEL, objectId, type PodInfo } from '../../shared/netpol/types.ts';
import type { StepExpectation } from '../model/expect.ts';
import { EXTERNAL_PREFIX } from '../model/externals.ts';

export const NOT_ENFORCED = 'not enforced by this orchestrator';

/** `Admin cnp/x egress rule 2 (nodes peers)` for each egress rule of a policy with nodes or domainNames peers. */
function unenforcedRules(p: ClusterPolicy): string[] {
  return p.egress.flatMap((r, i) => {
    const kinds = [...new Set(r.peers.flatMap((peer) => ('nodes' in peer ? ['nodes'] : 'domainNames' in peer ? ['domainNames'] : [])))];
    return kinds.length > 0 ? [`${p.tier} ${p.id} egress rule ${i} (${kinds.join(' and ')} peers)`] : [];
  });
}

/** The cells of a step that depend on admin-tier rules not enforced here, each with its reason. */
export function unenforcedTierCells(exp: StepExpectation): Map<string, string> {
  const out = new Map<string, string>();
  // A named external is reached by name (shared/netpol/tiers.ts): the run serves no DNS yet, so
  // its cells cannot be observed as the evaluator judges them (lookup included).
  for (const c of exp.cells) {
    const to = exp.cluster.pods.find((p) => p.external && `${EXTERNAL_PREFIX}${p.name}` === c.cell.to);
    if (to?.names?.length) out.set(c.cell.key, `not run: ${c.cell.to} is reached by name (${to.names.join(', ')}), and this run serves no DNS yet`);
  }
  const policies = exp.step.clusterPolicies ?? [];
  const withRules = policies.map((p) => ({ p, rules: unenforcedRules(p) })).filter((x) => x.rules.length > 0);
  if (withRules.length === 0) return out;
  const nsLabels = new Map(exp.cluster.namespaces.map((n) => [n.name, n.labels]));
  const labelsOf = (ns: string) => nsLabels.get(ns) ?? { [NAMESPACE_NAME_LABEL]: ns };
  // Cells name an external `external:<name>`, a pod `namespace/name` (model/externals.ts).
  const pods = new Map(exp.cluster.pods.map((p) => [p.external ? `${EXTERNAL_PREFIX}${p.name}` : objectId(p), p]));
  const selects = (p: ClusterPolicy, pod: PodInfo) =>
    !pod.external &&
    !pod.hostNetwork &&
    ('namespaces' in p.subject
      ? selectorMatches(p.subject.namespaces, labelsOf(pod.namespace))
      : selectorMatches(p.subject.pods.namespaceSelector, labelsOf(pod.namespace)) && selectorMatches(p.subject.pods.podSelector, pod.labels));
  for (const c of exp.cells) {
    const from = pods.get(c.cell.from);
    const to = pods.get(c.cell.to);
    if (!from || !to?.external || out.has(c.cell.key)) continue;
    const rules = withRules.filter((x) => selects(x.p, from)).flatMap((x) => x.rules);
    if (rules.length > 0)
      out.set(
        c.cell.key,
        `not run: ${rules.join(', ')} ${NOT_ENFORCED}: nodes and domainNames peers match nothing here (no node model, no DNS), so this cell to an external cannot be judged`,
      );
  }
  return out;
}
