// `scenario diff BASE HEAD --isolation=netns`: the two sides as one two-step scenario the runner
// deploys (step 1 BASE; step 2 HEAD applied in place, as `kubectl apply` would: the pods keep
// running, policies are replaced, pods and namespaces relabelled), and the comparison of what the
// packets did at the two steps with the flips the policies make. Pure: sides in, a scenario out;
// the diff and the run's report in, the diff with its observation out.
//
// Each step's intended matrix is that side's computed cells, so the runner judges every cell of the
// side (and refuses, before deploying, if the combined scenario computed anything else). A pod of
// one side only runs through both steps (the runner deploys once): a pod of HEAD only from the
// start (as a step's manifests add one, step-workloads.ts), a pod of BASE only until the end; the
// cells of a side are judged at that side's step only.
import { ScenarioError } from '../errors.ts';
import type { ScenarioDiff, Flip, FlipObservation, Observation, ObservationFault } from '../model/diff-schema.ts';
import type { StepExpectation } from '../model/expect.ts';
import type { Cell, PodSpec, ResolvedScenario, ResolvedStep } from '../model/resolve.ts';
import { FAILING, failureLine, type CellResultDoc, type ScenarioReportDoc } from '../report/results.ts';

/** One side as the diff compares it: a scenario and the step compared. */
export interface InPlaceSide {
  label: string;
  scenario: ResolvedScenario;
  step: ResolvedStep;
}

const cellName = (c: Pick<Cell, 'from' | 'to' | 'port' | 'protocol'>) => `${c.from} -> ${c.to} ${c.port}/${c.protocol}`;

/** A pod of both sides: BASE's, with the ports HEAD adds; a pod that is a different workload on HEAD cannot be applied in place. */
function mergedPod(a: PodSpec, b: PodSpec): PodSpec {
  const differs = (['kind', 'apiPort', 'cmd', 'external'] as const).find((k) => a[k] !== b[k]);
  if (differs)
    throw new ScenarioError(
      `--isolation=netns: pod ${a.id} has ${differs} ${JSON.stringify(a[differs] ?? null)} on BASE and ${JSON.stringify(b[differs] ?? null)} on HEAD: a different workload, which cannot be applied in place (diff it without --isolation)`,
    );
  const ports = [...a.ports];
  for (const p of b.ports) {
    const same = ports.find((q) => q.port === p.port && q.protocol === p.protocol);
    if (!same) ports.push(p);
    else if (same.name !== p.name)
      throw new ScenarioError(
        `--isolation=netns: pod ${a.id} names port ${p.port}/${p.protocol} ${JSON.stringify(same.name)} on BASE and ${JSON.stringify(p.name)} on HEAD: a renamed port cannot be applied in place (diff it without --isolation)`,
      );
  }
  return { ...a, ports };
}

/** The step of a side with every label of its pods and namespaces spelled out, judged nowhere yet. */
function sideStep(side: InPlaceSide, index: number, name: string): ResolvedStep {
  const { scenario: s, step } = side;
  return {
    index,
    name,
    description: `${side.label} (step ${step.name})`,
    policies: step.policies,
    ...(step.clusterPolicies ? { clusterPolicies: step.clusterPolicies } : {}),
    namespaceLabels: Object.fromEntries(s.namespaces.map((n) => [n.name, step.namespaceLabels[n.name] ?? n.labels])),
    podLabels: Object.fromEntries(s.pods.map((p) => [p.id, step.podLabels[p.id] ?? p.labels])),
    intended: new Map(),
    ...(step.dialect ? { dialect: step.dialect } : {}),
  };
}

/**
 * BASE then HEAD in place, as one scenario: the pods and cells of both sides (BASE's first, so its
 * pods get the addresses they would alone), each step's labels and policies its side's. The steps
 * judge nothing until `withIntents` gives them their side's computed cells.
 */
export function inPlaceScenario(base: InPlaceSide, head: InPlaceSide): ResolvedScenario {
  const headPods = new Map(head.scenario.pods.map((p) => [p.id, p]));
  const basePods = new Set(base.scenario.pods.map((p) => p.id));
  const pods: PodSpec[] = [
    ...base.scenario.pods.map((p) => (headPods.has(p.id) ? mergedPod(p, headPods.get(p.id)!) : p)),
    ...head.scenario.pods.filter((p) => !basePods.has(p.id)).map((p) => ({ ...p, fromStep: 1 })),
  ];
  const cells = new Map(base.scenario.cells.map((c) => [c.key, c]));
  for (const c of head.scenario.cells) if (!cells.has(c.key)) cells.set(c.key, c);
  const namespaces = new Map(base.scenario.namespaces.map((n) => [n.name, n]));
  for (const n of head.scenario.namespaces) if (!namespaces.has(n.name)) namespaces.set(n.name, n);
  return {
    name: 'diff',
    description: `${base.label} -> ${head.label}, applied in place`,
    file: base.scenario.file,
    probeSeconds: Math.min(base.scenario.probeSeconds, head.scenario.probeSeconds),
    timeoutSeconds: Math.max(base.scenario.timeoutSeconds, head.scenario.timeoutSeconds),
    namespaces: [...namespaces.values()],
    pods,
    cells: [...cells.values()],
    steps: [sideStep(base, 0, 'base'), sideStep(head, 1, 'head')],
  };
}

/** The in-place scenario with each step judging its side's cells at their computed verdicts (undecided ones: not judged). */
export function withIntents(s: ResolvedScenario, base: StepExpectation, head: StepExpectation): ResolvedScenario {
  const intents = (e: StepExpectation) => new Map(e.cells.flatMap((c) => (c.computed === null ? [] : [[c.cell.key, c.computed] as const])));
  return {
    ...s,
    steps: [
      { ...s.steps[0]!, intended: intents(base) },
      { ...s.steps[1]!, intended: intents(head) },
    ],
  };
}

const word = (v: boolean | null) => (v === true ? 'allowed' : v === false ? 'blocked' : 'nothing');

/** How one flip went on packets, from its cell at the two steps. */
function flipObservation(c1: CellResultDoc, c2: CellResultDoc): FlipObservation {
  const seen = { before: c1.observed, after: c2.observed, convergedAfterMs: c2.convergedAfterMs ?? null };
  const failing = FAILING.includes(c1.status) || FAILING.includes(c2.status);
  if (c1.observed === null || c2.observed === null) return { ...seen, status: failing ? 'not as computed' : 'not observed' };
  if (c1.observed === c2.observed) return { ...seen, status: 'not made' };
  return { ...seen, status: failing ? 'not as computed' : 'as computed' };
}

/** The failing side of a cell at the two steps, in words: `at HEAD: dropped by another rule: …`. */
function sideFailures(c1: CellResultDoc | undefined, c2: CellResultDoc | undefined): { side: ObservationFault['side']; text: string } | undefined {
  const bad = [...(c1 && FAILING.includes(c1.status) ? [['base', c1] as const] : []), ...(c2 && FAILING.includes(c2.status) ? [['head', c2] as const] : [])];
  if (bad.length === 0) return undefined;
  return { side: bad.length === 2 ? 'both' : bad[0]![0], text: bad.map(([side, c]) => `at ${side.toUpperCase()}: ${failureLine(c)}`).join('; ') };
}

/**
 * The diff with what the packets did: each flip's observation, and every enforcement fault (a flip
 * not made, a flip the policies do not make, a cell not as computed at a side). `s` is the
 * scenario that ran (inPlaceScenario), `report` its run's report.
 */
export function withObservation(diff: ScenarioDiff, s: ResolvedScenario, report: ScenarioReportDoc): ScenarioDiff {
  const flips = new Map(diff.flips.map((f) => [f.key, f]));
  const observed = (error: string, outcome: Observation['outcome'] = 'fail'): ScenarioDiff => ({
    ...diff,
    observation: { isolation: 'netns', outcome, error, counts: { flips: diff.flips.length, asComputed: 0, notObserved: 0, faults: 0 }, faults: [] },
  });
  const [first, second] = report.steps;
  if (!first?.observed || !second?.observed) {
    const why =
      report.error ??
      (report.failure === 'intended != computed'
        ? 'the two sides as one scenario compute differently from the sides alone (a fault of scenario diff)'
        : 'not run');
    return observed(`BASE and HEAD were not both observed: ${why}`, report.outcome === 'not run' && !report.error ? 'not proven' : 'fail');
  }
  const faults: ObservationFault[] = [];
  const out: Flip[] = [];
  const observations = new Map<string, FlipObservation>();
  s.cells.forEach((cell, i) => {
    const c1 = first.cells[i]!;
    const c2 = second.cells[i]!;
    const onBase = c1.expected !== null;
    const onHead = c2.expected !== null;
    const flip = flips.get(cell.key);
    const fault = (kind: ObservationFault['kind'], side: ObservationFault['side'], text: string) =>
      faults.push({
        key: cell.key,
        from: cell.from,
        to: cell.to,
        port: cell.port,
        protocol: cell.protocol,
        kind,
        side,
        computed: { before: onBase ? c1.computed : null, after: onHead ? c2.computed : null },
        observed: { before: c1.observed, after: c2.observed },
        text,
      });
    const failed = sideFailures(onBase ? c1 : undefined, onHead ? c2 : undefined);
    if (flip) {
      const o = flipObservation(c1, c2);
      observations.set(cell.key, o);
      if (o.status === 'not made')
        fault(
          'flip not made',
          'both',
          `flip not made: ${cellName(cell)}: the policies say ${word(flip.before.allowed)} -> ${word(flip.after.allowed)}, the packets were ${word(c1.observed)} at BASE and ${word(c2.observed)} at HEAD${failed ? `; ${failed.text}` : ''}`,
        );
      else if (o.status === 'not as computed') fault('not as computed', failed?.side ?? 'both', `not as computed: ${failed?.text ?? cellName(cell)}`);
      return;
    }
    if (onBase && onHead && c1.observed !== null && c2.observed !== null && c1.observed !== c2.observed)
      fault(
        'flip not computed',
        'both',
        `flip not computed: ${cellName(cell)}: the packets were ${word(c1.observed)} at BASE and ${word(c2.observed)} at HEAD, the policies say ${word(c1.computed)} on both sides${failed ? `; ${failed.text}` : ''}`,
      );
    else if (failed) fault('not as computed', failed.side, `not as computed: ${failed.text}`);
  });
  for (const f of diff.flips) {
    const o = observations.get(f.key);
    out.push(o ? { ...f, observed: o } : f);
  }
  const statuses = [...observations.values()].map((o) => o.status);
  const notObserved = statuses.filter((st) => st === 'not observed').length;
  const outcome: Observation['outcome'] = faults.length > 0 || report.outcome === 'fail' ? 'fail' : notObserved > 0 ? 'not proven' : 'pass';
  return {
    ...diff,
    flips: out,
    observation: {
      isolation: 'netns',
      outcome,
      ...(report.error ? { error: report.error } : {}),
      counts: { flips: diff.flips.length, asComputed: statuses.filter((st) => st === 'as computed').length, notObserved, faults: faults.length },
      faults,
    },
  };
}
