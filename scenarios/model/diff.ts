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
import type { Cluster } from '../../shared/netpol/evaluate.ts';
import type { CellExpectation, StepExpectation } from './expect.ts';
import { deadRulesOf, deadRulesPerCell, exercisedRules } from './diff-rules.ts';
import { materializeCells } from './deferred-cells.ts';
import { computedSide } from './diff-side.ts';
import type { Cause, CauseKind, CellSide, Flip, OneSidedCell, ScenarioDiff } from './diff-schema.ts';
import type { Cell, ResolvedScenario, ResolvedStep } from './resolve.ts';

/** One side of a diff: a scenario and the step compared (its last, unless one is named). */
export interface DiffSide {
  label: string;
  scenario: ResolvedScenario;
  step: ResolvedStep;
  /** Every cell with its reason; diffSideAt (diff-side.ts) computes it on first use only (the diff itself reads the matrices). */
  expectation: StepExpectation;
  /** The cluster at the step (else read from `expectation`). */
  cluster?: Cluster;
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

/** Every change between the two sides (policies, labels, workloads), and the cause of each, indexed. */
export interface ChangeCauses {
  causes: Cause[];
  /** The index of a cause, added when new. */
  cause: (kind: CauseKind, subject: string, detail?: string[]) => number;
  /** By policy id (namespace/name, or an admin tier's cnp/x): added, removed or edited. */
  policyCause: Map<string, number>;
  /** By pod id: labels changed, added or removed. */
  labelCause: Map<string, number>;
  nsCause: Map<string, number>;
  /** Pod ids of each side, with their labels at the step. */
  podsA: Map<string, Record<string, string>>;
  podsB: Map<string, Record<string, string>>;
}

/** The changes from BASE to HEAD, read from the policies and the labels in force at the compared steps. */
export function changeCauses(base: DiffSide, head: DiffSide): ChangeCauses {
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
  const before = new Map(base.step.policies.map((p) => [policyId(p), p]));
  const after = new Map(head.step.policies.map((p) => [policyId(p), p]));
  const policyCause = new Map<string, number>();
  for (const [id, p] of before) {
    const q = after.get(id);
    if (!q) policyCause.set(id, cause('policy removed', id));
    else if (canonical(p.spec) !== canonical(q.spec)) policyCause.set(id, cause('policy edited', id, editedParts(p, q)));
  }
  for (const id of after.keys()) if (!before.has(id)) policyCause.set(id, cause('policy added', id));
  // Admin-tier policies (cluster-scoped, by id: cnp/x, anp/x, banp/default) the same way.
  const cpBefore = new Map((base.step.clusterPolicies ?? []).map((p) => [p.id, p]));
  const cpAfter = new Map((head.step.clusterPolicies ?? []).map((p) => [p.id, p]));
  for (const [id, p] of cpBefore) {
    const q = cpAfter.get(id);
    if (!q) policyCause.set(id, cause('policy removed', id));
    else if (canonical({ ...p, id: '' }) !== canonical({ ...q, id: '' })) policyCause.set(id, cause('policy edited', id, editedClusterParts(p, q)));
  }
  for (const id of cpAfter.keys()) if (!cpBefore.has(id)) policyCause.set(id, cause('policy added', id));

  // Labels in force at the compared step, of pods and namespaces on both sides.
  // By the scenario's pod ids (`ns/pod`, `external:<name>`), which the cluster's pods follow in order.
  const clusterOf = (s: DiffSide) => s.cluster ?? s.expectation.cluster;
  const podLabels = (s: DiffSide) => new Map(s.scenario.pods.map((p, i) => [p.id, clusterOf(s).pods[i]!.labels]));
  const nsLabels = (s: DiffSide) => new Map(clusterOf(s).namespaces.map((n) => [n.name, n.labels]));
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
  return { causes, cause, policyCause, labelCause, nsCause, podsA, podsB };
}

const nsOf = (pod: string) => pod.slice(0, pod.indexOf('/'));

/** The causes of a flip: the changed policies that decided it on either side, then label changes of its pods and their namespaces. */
export function flipCauses(ch: ChangeCauses, cell: Cell, decided: Pick<CellExpectation, 'verdict' | 'tiered'>[]): number[] {
  const named = [...new Set(decided.flatMap(decidingPolicies))];
  const found = [
    ...named.flatMap((p) => (ch.policyCause.has(p) ? [ch.policyCause.get(p)!] : [])),
    ...[cell.from, cell.to].flatMap((p) => (ch.labelCause.has(p) ? [ch.labelCause.get(p)!] : [])),
    ...[...new Set([nsOf(cell.from), nsOf(cell.to)])].flatMap((n) => (ch.nsCause.has(n) ? [ch.nsCause.get(n)!] : [])),
  ];
  return found.length > 0 ? [...new Set(found)] : [ch.cause('other', 'no change names the rules that decide it')];
}

/** A cell of one side only, with its cause: the pod missing on the other side, else the port. */
export function oneSidedCell(ch: ChangeCauses, c: Cell, side: CellSide, gone: boolean): OneSidedCell {
  const { key, from, to, port, protocol } = c;
  const pods = gone ? ch.podsB : ch.podsA;
  const missing = [from, to].find((p) => !pods.has(p));
  const why = missing
    ? (ch.labelCause.get(missing) ?? ch.cause(gone ? 'workload removed' : 'workload added', missing))
    : ch.cause(gone ? 'port removed' : 'port added', `${to}:${port}/${protocol}`);
  return { key, from, to, port, protocol, side, cause: why };
}

/** What a diff found, cell by cell. */
export interface DiffParts {
  flips: Flip[];
  added: OneSidedCell[];
  removed: OneSidedCell[];
  undecided: ScenarioDiff['undecided'];
  deadRules: ScenarioDiff['deadRules'];
  /** Cells on either side. */
  cells: number;
}

export function assembleDiff(base: DiffSide, head: DiffSide, ch: ChangeCauses, parts: DiffParts): ScenarioDiff {
  const { flips, added, removed, undecided, deadRules } = parts;
  const opened = flips.filter((f) => f.after.allowed === true).length;
  return {
    base: base.label,
    head: head.label,
    step: { base: base.step.name, head: head.step.name },
    causes: ch.causes,
    flips,
    added,
    removed,
    undecided,
    deadRules,
    counts: {
      cells: parts.cells,
      flips: flips.length,
      opened,
      closed: flips.length - opened,
      added: added.length,
      removed: removed.length,
      undecided: undecided.length,
    },
  };
}

export function diffSides(base: DiffSide, head: DiffSide): ScenarioDiff {
  // Deferred cells (model/deferred-cells.ts) put in: this walk reads the list (diff-scale.ts's diffOf does not).
  materializeCells(base.scenario);
  materializeCells(head.scenario);
  const ch = changeCauses(base, head);

  // Both sides as verdict matrices (diff-side.ts), read cell by cell in one pass; reasons only for what is shown.
  const A = computedSide(base);
  const B = computedSide(head);
  const cellsA = base.scenario.cells;
  const cellsB = head.scenario.cells;
  // The same cells in the same order (a change of policies or labels): no key maps needed. Compared
  // by the fields the key is made of (comparing the keys themselves flattens millions of strings).
  const aligned =
    cellsA.length === cellsB.length &&
    cellsA.every((c, i) => {
      const d = cellsB[i]!;
      return c.from === d.from && c.to === d.to && c.port === d.port && c.protocol === d.protocol;
    });
  const indexB = aligned ? undefined : new Map(cellsB.map((c, j) => [c.key, j]));
  const keysA = aligned ? undefined : new Set(cellsA.map((c) => c.key));
  const parts: DiffParts = { flips: [], added: [], removed: [], undecided: [], deadRules: [], cells: 0 };
  // The distinct verdicts each side's cells have, for the rules a change leaves dead (diff-rules.ts);
  // neighbouring cells mostly share one (a class pair's), so a Set is touched only on a change.
  const verdictsA = new Set<Verdict>();
  const verdictsB = new Set<Verdict>();
  let lastA: Verdict | undefined;
  let lastB: Verdict | undefined;
  const seenA = (v: Verdict) => v !== lastA && verdictsA.add((lastA = v));
  const seenB = (v: Verdict) => v !== lastB && verdictsB.add((lastB = v));
  // HEAD's verdict of each of its cells, by index: the dead rules' explanations read them again.
  const headVerdicts: Verdict[] = new Array<Verdict>(cellsB.length);
  for (let i = 0; i < cellsA.length; i++) {
    const ca = cellsA[i]!;
    const j = aligned ? i : indexB!.get(ca.key);
    const cb = j === undefined ? undefined : cellsB[j];
    if (!cb) {
      seenA(A.verdict(ca));
      parts.removed.push(oneSidedCell(ch, ca, A.side(ca), true));
      continue;
    }
    const a = A.decide(ca);
    const b = B.decide(cb);
    seenA(a.verdict);
    seenB((headVerdicts[j!] = b.verdict));
    if (a.computed === null || b.computed === null) {
      parts.undecided.push({ key: ca.key, before: A.side(ca, a), after: B.side(cb, b) });
      continue;
    }
    if (a.computed === b.computed) continue;
    const { key, from, to, port, protocol } = ca;
    parts.flips.push({ key, from, to, port, protocol, before: A.side(ca, a), after: B.side(cb, b), causes: flipCauses(ch, ca, [a, b]) });
  }
  if (!aligned)
    cellsB.forEach((cb, j) => {
      if (!keysA!.has(cb.key)) {
        seenB((headVerdicts[j] = B.verdict(cb)));
        parts.added.push(oneSidedCell(ch, cb, B.side(cb), false));
      }
    });
  parts.cells = aligned ? cellsA.length : new Set([...keysA!, ...indexB!.keys()]).size;

  // Rules dead on HEAD that were alive on BASE, or that BASE did not have as they are now.
  // (Skipped when nothing changed; a cell of one side only or an unexplained flip is a change.)
  const tiers = (base.step.clusterPolicies?.length ?? 0) + (head.step.clusterPolicies?.length ?? 0) > 0;
  if (ch.causes.length > 0)
    parts.deadRules = tiers
      ? deadRulesPerCell(base.expectation, head.expectation, new Set(ch.policyCause.keys()))
      : deadRulesOf({
          base: { policies: base.step.policies, exercised: exercisedRules(verdictsA) },
          head: {
            policies: head.step.policies,
            exercised: exercisedRules(verdictsB),
            side: B,
            eachCell: (visit) => cellsB.forEach((cell, j) => visit(headVerdicts[j] ?? B.verdict(cell), () => cell)),
          },
          changed: new Set(ch.policyCause.keys()),
        });
  return assembleDiff(base, head, ch, parts);
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
