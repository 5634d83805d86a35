// What a change does, cell by cell (`scenario diff BASE HEAD`): every cell computed on both sides,
// each flip (allowed -> blocked, blocked -> allowed) with the deciding reason on both sides and the
// change that caused it, and the cells that exist on one side only. Pure: two computed sides in, the
// diff out; cli/diff.ts reads the sides and report/diff-*.ts render it.
//
// A flip's cause is found from the verdicts, not guessed from the text of the change: the policies
// that decided the cell on either side (the isolating ones and the rules that allowed it) that were
// added, removed or edited, then label changes of the cell's two pods and their namespaces. A flip
// no change explains (an ipBlock's address moved, say) is kept under "other".
import type { SideVerdict, Verdict } from '../../shared/netpol/evaluate.ts';
import type { ClusterPolicy } from '../../shared/netpol/cluster-policy.ts';
import type { TieredSide } from '../../shared/netpol/tiers.ts';
import type { NetworkPolicyObject } from '../../shared/netpol/types.ts';
import { ruleCoverage, ruleName } from './coverage.ts';
import type { CellExpectation, StepExpectation } from './expect.ts';
import type { Cause, CauseKind, CellSide, Flip, OneSidedCell, ScenarioDiff } from './diff-schema.ts';
import type { ResolvedScenario, ResolvedStep } from './resolve.ts';

/** One side of a diff: a scenario and the step compared (its last, unless one is named). */
export interface DiffSide {
  label: string;
  scenario: ResolvedScenario;
  step: ResolvedStep;
  expectation: StepExpectation;
}

export type { Cause, CauseKind, CellSide, Flip, OneSidedCell, ScenarioDiff };

const policyId = (p: NetworkPolicyObject) => `${p.metadata.namespace}/${p.metadata.name}`;

/** JSON with object keys sorted: two specs that differ only in key order (reordered YAML) are equal. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/** The rules of two versions of one policy that differ, as `ingress rule 0`, and the other fields that do. */
function editedParts(a: NetworkPolicyObject, b: NetworkPolicyObject): string[] {
  const out: string[] = [];
  for (const field of ['podSelector', 'policyTypes'] as const) if (canonical(a.spec[field] ?? null) !== canonical(b.spec[field] ?? null)) out.push(field);
  for (const dir of ['ingress', 'egress'] as const) {
    const ra = a.spec[dir] ?? [];
    const rb = b.spec[dir] ?? [];
    for (let i = 0; i < Math.max(ra.length, rb.length); i++) {
      if (i >= ra.length) out.push(`${dir} rule ${i} added`);
      else if (i >= rb.length) out.push(`${dir} rule ${i} removed`);
      else if (canonical(ra[i]) !== canonical(rb[i])) out.push(`${dir} rule ${i}`);
    }
  }
  return out;
}

/** The labels whose values differ between two label maps (added, removed or changed keys). */
function labelKeysChanged(a: Record<string, string>, b: Record<string, string>): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].filter((k) => a[k] !== b[k]).sort();
}

/** The policies a side's decision names: those isolating it and those whose rules allowed it. */
function sidePolicies(side: SideVerdict): string[] {
  switch (side.decision) {
    case 'allowed':
      return [...side.isolatedBy, ...side.allowedBy.map((r) => r.policy)];
    case 'denied':
      return side.isolatedBy;
    case 'undecided':
      return [...side.isolatedBy, ...side.pending.map((r) => r.policy)];
    default:
      return [];
  }
}

/** The policies a side's chain through the tiers names: the admin-tier rules it followed and the NetworkPolicy tier's. */
function chainPolicies(side: TieredSide): string[] {
  return side.chain.flatMap((step) => ('verdict' in step ? sidePolicies(step.verdict) : [step.policy]));
}

/** Every policy a cell's decision names (either side), through the tiers when admin-tier policies are in force. */
export function decidingPolicies(c: Pick<CellExpectation, 'verdict' | 'tiered'>): string[] {
  if (c.tiered) return [...new Set([...chainPolicies(c.tiered.egress), ...chainPolicies(c.tiered.ingress)])];
  const v: Verdict = c.verdict;
  return [...new Set([...sidePolicies(v.egress), ...sidePolicies(v.ingress)])];
}

/** The rules of two versions of one admin-tier policy that differ, and the other fields that do. */
function editedClusterParts(a: ClusterPolicy, b: ClusterPolicy): string[] {
  const out: string[] = [];
  for (const field of ['tier', 'priority', 'subject'] as const) if (canonical(a[field]) !== canonical(b[field])) out.push(field);
  for (const dir of ['ingress', 'egress'] as const)
    for (let i = 0; i < Math.max(a[dir].length, b[dir].length); i++) {
      if (i >= a[dir].length) out.push(`${dir} rule ${i} added`);
      else if (i >= b[dir].length) out.push(`${dir} rule ${i} removed`);
      else if (canonical(a[dir][i]) !== canonical(b[dir][i])) out.push(`${dir} rule ${i}`);
    }
  return out;
}

const sideOf = (c: CellExpectation): CellSide => ({ allowed: c.computed, reason: c.reason });

export function diffSides(base: DiffSide, head: DiffSide): ScenarioDiff {
  const causes: Cause[] = [];
  const causeIndex = new Map<string, number>();
  const cause = (kind: CauseKind, subject: string, detail: string[] = []): number => {
    const id = `${kind}\0${subject}`;
    let i = causeIndex.get(id);
    if (i === undefined) {
      i = causes.push({ kind, subject, detail }) - 1;
      causeIndex.set(id, i);
    }
    return i;
  };

  // Policies: by namespace/name, compared by their spec (the labels of a policy object change nothing).
  const before = new Map(base.expectation.step.policies.map((p) => [policyId(p), p]));
  const after = new Map(head.expectation.step.policies.map((p) => [policyId(p), p]));
  const policyCause = new Map<string, number>();
  for (const [id, p] of before) {
    const q = after.get(id);
    if (!q) policyCause.set(id, cause('policy removed', id));
    else if (canonical(p.spec) !== canonical(q.spec)) policyCause.set(id, cause('policy edited', id, editedParts(p, q)));
  }
  for (const id of after.keys()) if (!before.has(id)) policyCause.set(id, cause('policy added', id));
  // Admin-tier policies (cluster-scoped, by id: cnp/x, anp/x, banp/default) the same way.
  const cpBefore = new Map((base.expectation.step.clusterPolicies ?? []).map((p) => [p.id, p]));
  const cpAfter = new Map((head.expectation.step.clusterPolicies ?? []).map((p) => [p.id, p]));
  for (const [id, p] of cpBefore) {
    const q = cpAfter.get(id);
    if (!q) policyCause.set(id, cause('policy removed', id));
    else if (canonical({ ...p, id: '' }) !== canonical({ ...q, id: '' })) policyCause.set(id, cause('policy edited', id, editedClusterParts(p, q)));
  }
  for (const id of cpAfter.keys()) if (!cpBefore.has(id)) policyCause.set(id, cause('policy added', id));

  // Labels in force at the compared step, of pods and namespaces on both sides.
  // By the scenario's pod ids (`ns/pod`, `external:<name>`), which the cluster's pods follow in order.
  const podLabels = (s: DiffSide) => new Map(s.expectation.cluster.pods.map((p, i) => [s.scenario.pods[i]!.id, p.labels]));
  const nsLabels = (s: DiffSide) => new Map(s.expectation.cluster.namespaces.map((n) => [n.name, n.labels]));
  const [podsA, podsB, nsA, nsB] = [podLabels(base), podLabels(head), nsLabels(base), nsLabels(head)];
  const labelCause = new Map<string, number>();
  for (const [id, la] of podsA) {
    const lb = podsB.get(id);
    if (!lb) labelCause.set(id, cause('workload removed', id));
    else {
      const keys = labelKeysChanged(la, lb);
      if (keys.length > 0) labelCause.set(id, cause('pod labels changed', id, keys));
    }
  }
  for (const id of podsB.keys()) if (!podsA.has(id)) labelCause.set(id, cause('workload added', id));
  const nsCause = new Map<string, number>();
  for (const [name, la] of nsA) {
    const keys = labelKeysChanged(la, nsB.get(name) ?? {});
    if (nsB.has(name) && keys.length > 0) nsCause.set(name, cause('namespace labels changed', name, keys));
  }

  const cellsA = new Map(base.expectation.cells.map((c) => [c.cell.key, c]));
  const cellsB = new Map(head.expectation.cells.map((c) => [c.cell.key, c]));
  const flips: Flip[] = [];
  const undecided: ScenarioDiff['undecided'] = [];
  const removed: OneSidedCell[] = [];
  const added: OneSidedCell[] = [];
  const nsOf = (pod: string) => pod.slice(0, pod.indexOf('/'));
  const oneSided = (c: CellExpectation, gone: boolean): OneSidedCell => {
    const { key, from, to, port, protocol } = c.cell;
    const pods = gone ? podsB : podsA;
    // The pod that is missing on the other side, else the port that is.
    const missing = [from, to].find((p) => !pods.has(p));
    const why = missing
      ? (labelCause.get(missing) ?? cause(gone ? 'workload removed' : 'workload added', missing))
      : cause(gone ? 'port removed' : 'port added', `${to}:${port}/${protocol}`);
    return { key, from, to, port, protocol, side: sideOf(c), cause: why };
  };
  for (const [key, a] of cellsA) {
    const b = cellsB.get(key);
    if (!b) {
      removed.push(oneSided(a, true));
      continue;
    }
    if (a.computed === null || b.computed === null) {
      undecided.push({ key, before: sideOf(a), after: sideOf(b) });
      continue;
    }
    if (a.computed === b.computed) continue;
    const named = [...new Set([...decidingPolicies(a), ...decidingPolicies(b)])];
    const found = [
      ...named.flatMap((p) => (policyCause.has(p) ? [policyCause.get(p)!] : [])),
      ...[a.cell.from, a.cell.to].flatMap((p) => (labelCause.has(p) ? [labelCause.get(p)!] : [])),
      ...[...new Set([nsOf(a.cell.from), nsOf(a.cell.to)])].flatMap((n) => (nsCause.has(n) ? [nsCause.get(n)!] : [])),
    ];
    const { from, to, port, protocol } = a.cell;
    flips.push({
      key,
      from,
      to,
      port,
      protocol,
      before: sideOf(a),
      after: sideOf(b),
      causes: found.length > 0 ? [...new Set(found)] : [cause('other', 'no change names the rules that decide it')],
    });
  }
  for (const [key, b] of cellsB) if (!cellsA.has(key)) added.push(oneSided(b, false));

  // Rules dead on HEAD that were alive on BASE, or that BASE did not have as they are now.
  // (Rule coverage evaluates every rule's peers alone: skipped when nothing changed.)
  const baseRules = causes.length === 0 ? new Map() : new Map(ruleCoverage(base.expectation).map((r) => [ruleName(r), r]));
  const deadRules = (causes.length === 0 ? [] : ruleCoverage(head.expectation))
    .filter((r) => r.dead !== undefined && (baseRules.get(ruleName(r))?.dead === undefined || policyCause.has(r.policy)))
    .map((r) => ({ rule: ruleName(r), why: r.dead! }));
  const opened = flips.filter((f) => f.after.allowed === true).length;
  return {
    base: base.label,
    head: head.label,
    step: { base: base.step.name, head: head.step.name },
    causes,
    flips,
    added,
    removed,
    undecided,
    deadRules,
    counts: {
      cells: new Set([...cellsA.keys(), ...cellsB.keys()]).size,
      flips: flips.length,
      opened,
      closed: flips.length - opened,
      added: added.length,
      removed: removed.length,
      undecided: undecided.length,
    },
  };
}

/** The flips grouped under their first cause, in the order the causes were found. */
export function flipsByCause(d: ScenarioDiff): { cause: Cause; flips: Flip[] }[] {
  const groups = new Map<number, Flip[]>();
  for (const f of d.flips) {
    const first = f.causes[0]!;
    const group = groups.get(first);
    if (group) group.push(f);
    else groups.set(first, [f]);
  }
  return [...groups.entries()].sort(([a], [b]) => a - b).map(([i, flips]) => ({ cause: d.causes[i]!, flips }));
}
