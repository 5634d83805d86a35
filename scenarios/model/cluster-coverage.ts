// Rule coverage of the admin tiers (coverage.ts does NetworkPolicies): every rule of every
// ClusterNetworkPolicy (and v1alpha1 AdminNetworkPolicy / BaselineAdminNetworkPolicy) in force at
// a step, with the cells it decided or passed on its side (the rule is in that side's chain:
// shared/netpol/tiers.ts), and the rules no cell reaches, with why. An admin-tier rule can also be
// dead by order: every cell it matches is decided before it (an earlier rule of its policy, or a
// policy of a lower priority value), which the NetworkPolicy tier, where every rule adds, cannot be.
// A peer's cells are found by evaluating the rule with that peer alone. Pure.
import type { Direction } from '../../shared/netpol/evaluate.ts';
import type { ClusterPolicy, ClusterRule } from '../../shared/netpol/cluster-policy.ts';
import { TieredEvaluator, type TieredSide } from '../../shared/netpol/tiers.ts';
import type { PodInfo } from '../../shared/netpol/types.ts';
import type { PeerCoverage, RuleCoverage } from './coverage.ts';
import type { CellExpectation, StepExpectation } from './expect.ts';
import { EXTERNAL_PREFIX } from './externals.ts';

/** A cell end (`ns/pod`, or `external:<name>` for an external, which is `external/<name>` in the cluster) → the step's pod. */
export function podLookup(exp: Pick<StepExpectation, 'cluster'>): (id: string) => PodInfo | undefined {
  const byId = new Map(exp.cluster.pods.map((p): [string, PodInfo] => [p.external ? `${EXTERNAL_PREFIX}${p.name}` : `${p.namespace}/${p.name}`, p]));
  return (id) => byId.get(id);
}

const inChain = (side: TieredSide | undefined, id: string, rule: number) => !!side?.chain.some((s) => 'policy' in s && s.policy === id && s.rule === rule);

/** `p` with only `rule` of direction `d` (nothing of the other), as a policy of its own. */
function alone(p: ClusterPolicy, d: Direction, rule: ClusterRule): ClusterPolicy {
  return { ...p, ingress: d === 'ingress' ? [rule] : [], egress: d === 'egress' ? [rule] : [] };
}

/** The cells among `among` whose `d` side the policy alone (its rule 0) decides or passes. */
function matchedAlone(exp: StepExpectation, policy: ClusterPolicy, d: Direction, among: readonly CellExpectation[]): string[] {
  const ev = new TieredEvaluator(exp.cluster, [], [policy]);
  const pod = podLookup(exp);
  return among
    .filter((c) => {
      const from = pod(c.cell.from);
      const to = pod(c.cell.to);
      if (!from || !to) return false;
      return inChain(ev.evaluate({ from, to, port: c.cell.port, protocol: c.cell.protocol })[d], policy.id, 0);
    })
    .map((c) => c.cell.key);
}

/** Every peer and every protocol: a rule that matches whatever the policy's subject talks to. */
const EVERYTHING: ClusterRule = { action: 'Pass', peers: [{ namespaces: {} }, { networks: ['0.0.0.0/0', '::/0'] }] };

function whyDead(exp: StepExpectation, p: ClusterPolicy, d: Direction, rule: ClusterRule): string {
  const selected = exp.cells.filter((c) => matchedAlone(exp, alone(p, d, EVERYTHING), d, [c]).length > 0);
  if (selected.length === 0)
    return `dead: the policy selects no pod with ${d === 'ingress' ? 'an ingress' : 'an egress'} cell (its subject matches no pod checked here)`;
  if (matchedAlone(exp, alone(p, d, rule), d, selected).length > 0)
    return 'dead: every cell it matches is decided before it (by an earlier rule, or a policy of a lower priority value)';
  const { protocols: _ports, ...anyPort } = rule;
  if (matchedAlone(exp, alone(p, d, anyPort), d, selected).length > 0) return 'dead: its peers match, but no cell is on its ports';
  return 'dead: no pod or external matches its peers';
}

export function clusterRuleCoverage(exp: StepExpectation): RuleCoverage[] {
  const out: RuleCoverage[] = [];
  for (const p of exp.step.clusterPolicies ?? []) {
    const tier = p.tier === 'Admin' ? 'admin' : 'baseline';
    for (const d of ['ingress', 'egress'] as const) {
      p[d].forEach((rule, r) => {
        const cells = exp.cells.filter((c) => inChain(c.tiered?.[d], p.id, r));
        // Undecided at this tier because an address is not known yet: a `networks` rule may be why.
        const pending = rule.peers.some((x) => 'networks' in x)
          ? exp.cells.filter((c) => c.tiered?.[d].allowed === null && c.tiered[d].decidedBy === tier).map((c) => c.cell.key)
          : [];
        const peers = rule.peers.map((peer, i): PeerCoverage => ({
          peer: i,
          cells: rule.peers.length === 1 ? cells.map((c) => c.cell.key) : matchedAlone(exp, alone(p, d, { ...rule, peers: [peer] }), d, cells),
        }));
        const entry: RuleCoverage = { policy: p.id, direction: d, rule: r, cells: cells.map((c) => c.cell.key), pending, peers };
        if (cells.length === 0 && pending.length === 0) entry.dead = whyDead(exp, p, d, rule);
        out.push(entry);
      });
    }
  }
  return out;
}
