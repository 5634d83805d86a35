// The JSON report of a scenario run (`scenario run --report-json FILE`): every cell of every step
// with what was intended, what the policies say and why, what the packets did, and which side
// dropped a blocked connection. One TypeBox schema drives the types and the published JSON Schema
// (`scenario report-schema` prints it; scenarios/report/report.schema.json is the committed copy), so
// other tools can read the report.
import { type Static, Type } from '@sinclair/typebox';
import { CellEnds, MaybeVerdict } from '../model/cell-schema.ts';
import { AssertionResult, RuleCoverageResult } from './intent-schema.ts';
import { SummaryReport } from './summary-schema.ts';

const RuleRef = Type.Object(
  {
    policy: Type.String({ description: 'namespace/name' }),
    direction: Type.Union([Type.Literal('ingress'), Type.Literal('egress')]),
    rule: Type.Integer({ description: 'index in spec.ingress or spec.egress' }),
    peer: Type.Union([Type.Integer(), Type.Null()], { description: 'index in from/to; null: the rule has no peers (every peer)' }),
    port: Type.Union([Type.Integer(), Type.Null()], { description: 'index in ports; null: the rule has no ports (every port)' }),
  },
  { additionalProperties: false },
);
const Policies = Type.Array(Type.String(), { description: 'the policies that select the pod for this direction (namespace/name)' });
const Side = Type.Union(
  [
    Type.Object(
      { decision: Type.Literal('loopback'), allowed: Type.Literal(true) },
      { additionalProperties: false, description: 'the same pod: loopback is never filtered' },
    ),
    Type.Object(
      { decision: Type.Literal('not-isolated'), allowed: Type.Literal(true) },
      { additionalProperties: false, description: 'no policy selects the pod for this direction' },
    ),
    Type.Object(
      {
        decision: Type.Literal('allowed'),
        allowed: Type.Literal(true),
        isolatedBy: Policies,
        allowedBy: Type.Array(RuleRef, { description: 'every rule that allows it' }),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      { decision: Type.Literal('denied'), allowed: Type.Literal(false), isolatedBy: Policies },
      { additionalProperties: false, description: 'isolated and no rule allows it' },
    ),
    Type.Object(
      { decision: Type.Literal('undecided'), allowed: Type.Null(), isolatedBy: Policies, pending: Type.Array(RuleRef) },
      { additionalProperties: false, description: 'depends on addresses not known yet' },
    ),
  ],
  { description: "one side's verdict: the source's egress or the destination's ingress" },
);

const SideName = Type.Union([Type.Literal('egress'), Type.Literal('ingress')]);
const DropRule = Type.Object(
  {
    side: SideName,
    pod: Type.String({ description: 'the pod whose side it is (namespace/pod): the source for egress, the destination for ingress' }),
    policies: Type.Union([Type.Array(Type.String()), Type.Null()], {
      description:
        'the isolating policies whose default drop it is (namespace/name, sorted), or the admin-tier rule that denies ("Admin cnp/x egress rule 2"); null: the orchestrator could not say',
    }),
  },
  { additionalProperties: false },
);

export const EvidenceVerdict = Type.Union(
  [Type.Literal('proven'), Type.Literal('not enforced'), Type.Literal('dropped by another rule'), Type.Literal('counters unreadable')],
  {
    description:
      "proven: the counter of the rule the evaluator says decides the cell went up during the step; 'not enforced': no drop of the cell was counted; 'dropped by another rule': only other rules' counters went up; 'counters unreadable': the orchestrator could not read a side's counters",
  },
);

export const Evidence = Type.Object(
  {
    verdict: EvidenceVerdict,
    rule: Type.Union([DropRule, Type.Null()], {
      description:
        "the drop the evaluator says decides the cell (the source's egress when it denies, else the destination's ingress); null: the evaluator could not decide (any counted drop is then evidence)",
    }),
    drops: Type.Array(
      Type.Object({ ...DropRule.properties, packets: Type.Integer({ description: "the counter's delta during the step" }) }, { additionalProperties: false }),
      {
        description: "the cell's drops counted during the step (GET /v2/starmap/drops before the step's write and after it settled), per side and rule",
      },
    ),
    positiveControl: Type.Union([Type.String(), Type.Null()], {
      description:
        'a source pod whose cell to the same destination, port and protocol was observed reachable in the same step (the server answers); null: no positive control (a dead server looks exactly like a policy drop)',
    }),
  },
  { additionalProperties: false, description: 'why a blocked cell counts as blocked by the policies: measured drops of the deciding rule' },
);

export const CellStatus = Type.Union(
  [
    Type.Literal('pass'),
    Type.Literal('intended != computed'),
    Type.Literal('computed != observed'),
    Type.Literal('dropped by another rule'),
    Type.Literal('not enforced'),
    Type.Literal('no value'),
    Type.Literal('not run'),
    Type.Literal('not judged'),
    Type.Literal('not proven'),
  ],
  {
    description:
      "pass; 'intended != computed': the author's verdict is not what the policies say (a policy-writing mistake); 'computed != observed': the packets did not do what the policies say (an enforcement fault); 'dropped by another rule': a blocked cell's packets were dropped, but not by the rule the policies say decides it; 'not enforced': on an isolated run, a cell the policies block had no drop counted (nothing enforced it, whatever was observed); 'no value': judged but not observed in time; 'not run': cannot be observed here (SCTP); 'not judged': the step does not judge it; 'not proven': judged, but the policies block it and are not enforced here (no isolation), so only its computed verdict holds",
  },
);

export const CellResult = Type.Object(
  {
    ...CellEnds,
    expected: MaybeVerdict('what the cell is judged against (intended when hand-written, else computed); null: not judged'),
    observed: MaybeVerdict('what the packets did; null: not observed'),
    reason: Type.String({ description: "the evaluator's reason in one line" }),
    intended: MaybeVerdict("the author's verdict; null: not given"),
    computed: MaybeVerdict("the evaluator's verdict; null: undecided"),
    status: CellStatus,
    evaluation: Type.Object({ egress: Side, ingress: Side }, { additionalProperties: false }),
    chain: Type.Optional(
      Type.Object(
        { egress: Type.String(), ingress: Type.String() },
        {
          additionalProperties: false,
          description:
            "with admin-tier policies in force (ClusterNetworkPolicy, AdminNetworkPolicy, BaselineAdminNetworkPolicy): each side's chain of decisions, Admin tier -> NetworkPolicy -> Baseline tier -> default; `evaluation` then holds the NetworkPolicy tier's own answer",
        },
      ),
    ),
    orderDependsOn: Type.Optional(
      Type.Array(Type.String(), {
        description:
          'the admin-tier policies of one tier and priority that matched this cell with different actions: upstream leaves their order undefined, so the verdict depends on it (taken here by name)',
      }),
    ),
    observedReason: Type.Union([Type.String(), Type.Null()], { description: "the probe's reason: ok, timeout, refused, …; or why not observed" }),
    droppedBy: Type.Union([Type.Literal('egress'), Type.Literal('ingress'), Type.Literal('both'), Type.Null()], {
      description:
        'for a blocked observation, the side whose drop rule counted its packets during the step (GET /v2/starmap/drops); null when no drop was counted or counters are not available',
    }),
    evidence: Type.Optional(
      Type.Union([Evidence, Type.Null()], {
        description:
          'for a cell judged blocked and observed, where the drop counters could be read: the rule that decides it and what was counted; absent otherwise',
      }),
    ),
    changedAfterMs: Type.Union([Type.Number(), Type.Null()], {
      description: 'ms from the step applying to this cell showing its new value; null: it did not change',
    }),
    convergedAfterMs: Type.Optional(
      Type.Union([Type.Number(), Type.Null()], {
        description:
          "the cell's convergence time: ms from the step's policies applying to its last flip to the value it was observed with at the end of the step (0: it already had that value; its flip as the probe saw it, else as the runner first saw it); null: not observed in the step; absent: the step was not run",
      }),
    ),
  },
  { additionalProperties: false },
);

const Outcome = Type.Union([Type.Literal('pass'), Type.Literal('fail'), Type.Literal('not run'), Type.Literal('computed only')], {
  description:
    "pass: nothing failed and something judged was observed; fail: a cell failed (or the run did); not run: nothing failed but nothing judged could be observed (SCTP here, or a run stopped before it); computed only: nothing failed, but some judged cells are 'not proven' (policies not enforced here, or `scenario check`) — neither is counted as passed",
});

const Counts = Type.Object(
  {
    cells: Type.Integer(),
    pass: Type.Integer(),
    intendedNotComputed: Type.Integer({ description: "cells 'intended != computed'" }),
    computedNotObserved: Type.Integer({ description: "cells 'computed != observed'" }),
    otherRule: Type.Integer({ description: "cells 'dropped by another rule'" }),
    notEnforced: Type.Integer({ description: "cells 'not enforced'" }),
    noValue: Type.Integer(),
    notRun: Type.Integer(),
    notJudged: Type.Integer(),
    notProven: Type.Integer({ description: "cells 'not proven': judged, blocked by the policies, not enforced here" }),
  },
  { additionalProperties: false },
);

export const StepResult = Type.Object(
  {
    index: Type.Integer(),
    name: Type.String(),
    description: Type.Optional(Type.String()),
    policies: Type.Array(Type.String(), {
      description: 'the policies in force: NetworkPolicies as namespace/name, then admin-tier policies as cnp/<name>, anp/<name>, banp/default',
    }),
    expectation: Type.Union([Type.Literal('computed'), Type.Literal('intended')]),
    outcome: Outcome,
    passed: Type.Boolean({ description: "outcome is 'pass'" }),
    failure: Type.Union(
      [
        Type.Literal('intended != computed'),
        Type.Literal('computed != observed'),
        Type.Literal('dropped by another rule'),
        Type.Literal('not enforced'),
        Type.Literal('no value'),
        Type.Null(),
      ],
      {
        description: 'what kind of failure, the policy-writing one first',
      },
    ),
    observed: Type.Boolean({ description: 'false when the step was not run (a policy-writing mistake stops the run before anything is deployed)' }),
    settled: Type.Union([Type.Boolean(), Type.Null()]),
    durationMs: Type.Union([Type.Number(), Type.Null()], { description: 'ms from the policies applying to settling (or to the deadline)' }),
    budgetMs: Type.Number({ description: 'probe interval + check timeout + 1 s: the time a step should settle within' }),
    applyMs: Type.Union([Type.Number(), Type.Null()], { description: 'ms from writing the change to the orchestrator answering that it is in force' }),
    lastFlipMs: Type.Union([Type.Number(), Type.Null()], { description: 'ms from writing the policies to the last cell that flipped showing it' }),
    counts: Counts,
    cells: Type.Array(CellResult),
    tables: Type.String({ description: 'the truth tables as text' }),
    assertions: Type.Optional(Type.Array(AssertionResult, { description: "the step's intents (assert:, --assert), each with the cells behind it" })),
    rules: Type.Optional(Type.Array(RuleCoverageResult, { description: 'every rule of every policy in force, with the cells it allowed; dead rules named' })),
  },
  { additionalProperties: false },
);

export const ScenarioReport = Type.Object(
  {
    scenario: Type.String(),
    description: Type.Optional(Type.String()),
    isolated: Type.Boolean({ description: 'tasks ran in their own network namespaces' }),
    enforced: Type.Boolean({ description: 'policies were applied; false: blocked cells could not be observed' }),
    startedAt: Type.String(),
    finishedAt: Type.String(),
    outcome: Outcome,
    passed: Type.Boolean({ description: "outcome is 'pass'" }),
    failure: Type.Union([
      Type.Literal('intended != computed'),
      Type.Literal('computed != observed'),
      Type.Literal('dropped by another rule'),
      Type.Literal('not enforced'),
      Type.Literal('no value'),
      Type.Literal('error'),
      Type.Null(),
    ]),
    notices: Type.Array(Type.String()),
    pods: Type.Array(
      Type.Object(
        {
          id: Type.String(),
          short: Type.String(),
          namespace: Type.String(),
          name: Type.String(),
          kind: Type.String(),
          ip: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
    steps: Type.Array(StepResult),
    error: Type.Optional(Type.String({ description: 'why the run could not be completed' })),
  },
  { additionalProperties: false, description: 'the report of one scenario' },
);

export const SetReport = Type.Object(
  {
    set: Type.String({ description: 'the set run (a built-in folder such as k8s-e2e, or a directory)' }),
    startedAt: Type.String(),
    finishedAt: Type.String(),
    passed: Type.Boolean({ description: 'no scenario failed' }),
    scenarios: Type.Array(ScenarioReport),
  },
  { additionalProperties: false, description: 'the report of a set of scenarios run together (`scenario run <folder>`)' },
);

/** What `--report-json` writes: one scenario's report, or a set's; `scenario check` past its per-cell bound, a summary. */
export const Report = Type.Union([ScenarioReport, SetReport, SummaryReport], {
  $id: 'https://starmap.invalid/report.schema.json',
  title: 'Starmap scenario report',
});

export type CellResultDoc = Static<typeof CellResult>;
export type CellStatusName = Static<typeof CellStatus>;
export type EvidenceDoc = Static<typeof Evidence>;
export type DropRuleDoc = Static<typeof DropRule>;
export type StepResultDoc = Static<typeof StepResult>;
export type ScenarioReportDoc = Static<typeof ScenarioReport>;
export type SetReportDoc = Static<typeof SetReport>;

/** What a run reports: one scenario, or a set of them. */
export type ReportDoc = ScenarioReportDoc | SetReportDoc;

/** The scenarios of a report document, in order. */
export const scenariosOf = (doc: ReportDoc): readonly ScenarioReportDoc[] => ('scenarios' in doc ? doc.scenarios : [doc]);
