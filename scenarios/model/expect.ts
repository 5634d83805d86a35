// What a step's policies say, cell by cell: the evaluator's verdict and reasons beside the
// author's intended verdict, and where the two disagree (a policy-writing mistake, found before
// anything is deployed). Pure; the runner, `scenario explain` and the reports read this.
// With admin-tier policies in force (ClusterNetworkPolicy and the v1alpha1 kinds) the verdict is
// the tiered evaluator's (shared/netpol/tiers.ts) and the reason is the chain it followed per side;
// a cell whose verdict rests on an order upstream leaves undefined (same tier and priority) says so.
import { Evaluator, type Cluster, type Verdict } from '../../shared/netpol/evaluate.ts';
import { reasonLine } from '../../shared/netpol/explain.ts';
import { chainText, TieredEvaluator, type TieredVerdict } from '../../shared/netpol/tiers.ts';
import { DEFAULT_NODE_NAME, nodeLabels, type PodInfo } from '../../shared/netpol/types.ts';
import type { Cell, ResolvedScenario, ResolvedStep } from './resolve.ts';
import { absentAt } from './step-workloads.ts';

export interface CellExpectation {
  cell: Cell;
  /** The author's verdict; null when the step does not judge this cell (or expects `computed`). */
  intended: boolean | null;
  /** The evaluator's; null when it depends on addresses not known yet. */
  computed: boolean | null;
  /** What the observation is judged against: intended when hand-written, else computed; null: not judged. */
  expected: boolean | null;
  verdict: Verdict;
  /** The verdict's reasons in one line. */
  reason: string;
  /** With admin-tier policies in force: each side's chain in words (`Admin cnp/x egress rule 2 Pass -> …`). */
  chain?: { egress: string; ingress: string };
  /** The policies (same tier and priority) whose undefined order upstream this cell's verdict depends on. */
  orderDependsOn?: string[];
  /** With admin-tier policies in force: the tiered verdict the chain was written from. */
  tiered?: TieredVerdict;
}

export interface StepExpectation {
  step: ResolvedStep;
  /** The NetworkPolicy evaluator (with admin tiers, the tier between them). */
  evaluator: Evaluator;
  /** Present when admin-tier policies are in force. */
  tiered?: TieredEvaluator;
  cluster: Cluster;
  cells: CellExpectation[];
  /** Cells where the intended verdict is not what the policies say: policy-writing mistakes. */
  mistakes: CellExpectation[];
}

/** Namespaces and pods with the labels in force at a step, and the addresses known so far. */
export function clusterAt(s: ResolvedScenario, step: ResolvedStep, ips: ReadonlyMap<string, string> = new Map()): Cluster {
  return {
    namespaces: s.namespaces.map((n) => ({ name: n.name, labels: step.namespaceLabels[n.name] ?? n.labels })),
    pods: s.pods.map((p): PodInfo => ({
      namespace: p.namespace,
      name: p.name,
      labels: step.podLabels[p.id] ?? p.labels,
      ports: p.ports,
      // An external's address is its own, known before anything runs (model/externals.ts).
      ...(p.external !== undefined ? { ip: p.external, external: true } : ips.has(p.id) ? { ip: ips.get(p.id)! } : {}),
      ...(p.hostNetwork ? { hostNetwork: true } : {}),
      ...(p.node !== undefined ? { node: p.node } : {}),
    })),
    nodes: s.nodes ?? [{ name: DEFAULT_NODE_NAME, labels: nodeLabels(DEFAULT_NODE_NAME) }],
  };
}

export function expectStep(s: ResolvedScenario, step: ResolvedStep, ips?: ReadonlyMap<string, string>): StepExpectation {
  const cluster = clusterAt(s, step, ips);
  const tiered = step.clusterPolicies?.length ? new TieredEvaluator(cluster, step.policies, step.clusterPolicies) : undefined;
  const evaluator = tiered?.networkPolicies ?? new Evaluator(cluster, step.policies);
  const podById = new Map(cluster.pods.map((p, i) => [s.pods[i]!.id, p]));
  // A pod a later step's manifests add is not there yet: its cells are not judged here.
  const absent = absentAt(s.pods, step.index);
  const cells = s.cells.map((cell): CellExpectation => {
    const conn = { from: podById.get(cell.from)!, to: podById.get(cell.to)!, port: cell.port, protocol: cell.protocol };
    const verdict = evaluator.evaluate(conn);
    const here = !absent.has(cell.from) && !absent.has(cell.to);
    const intended = here ? (step.intended?.get(cell.key) ?? null) : null;
    const judge = (computed: boolean | null) => (!here ? null : step.intended ? (intended ?? (step.computedRest ? computed : null)) : computed);
    if (!tiered) return { cell, intended, computed: verdict.allowed, expected: judge(verdict.allowed), verdict, reason: reasonLine(verdict) };
    const t = tiered.evaluate(conn);
    const chain = { egress: chainText('egress', conn.from, t.egress), ingress: chainText('ingress', conn.to, t.ingress) };
    const order = [...new Set([...(t.egress.orderDependsOn ?? []), ...(t.ingress.orderDependsOn ?? [])])];
    return {
      cell,
      intended,
      computed: t.allowed,
      expected: judge(t.allowed),
      verdict,
      reason: `egress: ${chain.egress}; ingress: ${chain.ingress}`,
      chain,
      ...(order.length > 0 ? { orderDependsOn: order } : {}),
      tiered: t,
    };
  });
  const mistakes = cells.filter((c) => c.intended !== null && c.computed !== null && c.intended !== c.computed);
  return { step, evaluator, ...(tiered ? { tiered } : {}), cluster, cells, mistakes };
}
