// The diff of two sides (`scenario diff BASE HEAD --report-json FILE`): one TypeBox schema gives
// the types of model/diff.ts and the published JSON Schema (`scenario diff-schema` prints it;
// scenarios/model/diff.schema.json is the committed copy), so CI tools can read the report.
import { type Static, Type } from '@sinclair/typebox';

const Verdict = Type.Union([Type.Boolean(), Type.Null()], { description: 'true allowed, false blocked, null undecided (depends on addresses not known)' });

export const CellSide = Type.Object(
  { allowed: Verdict, reason: Type.String({ description: 'the deciding rules, e.g. "ingress allowed by shop/allow-web ingress rule 0"' }) },
  { additionalProperties: false },
);

export const CauseKind = Type.Union(
  [
    'policy added',
    'policy removed',
    'policy edited',
    'pod labels changed',
    'namespace labels changed',
    'workload added',
    'workload removed',
    'port added',
    'port removed',
    'other',
  ].map((k) => Type.Literal(k)),
);

export const Cause = Type.Object(
  {
    kind: CauseKind,
    subject: Type.String({ description: 'the policy (ns/name), pod (ns/name), namespace or port (ns/pod:port/PROTOCOL) that changed' }),
    detail: Type.Array(Type.String(), { description: 'an edited policy: the rules and fields that differ; labels: the keys that differ' }),
  },
  { additionalProperties: false },
);

const CellId = {
  key: Type.String(),
  from: Type.String({ description: 'ns/pod' }),
  to: Type.String({ description: 'ns/pod' }),
  port: Type.Integer(),
  protocol: Type.String(),
};

// Proven on packets (`scenario diff BASE HEAD --isolation=netns`): what the packets did at BASE and
// after HEAD was applied in place, beside what the policies say (run/diff-run.ts fills these).
const Observed = Type.Union([Type.Boolean(), Type.Null()], { description: 'what the packets did: true allowed, false blocked, null not observed' });

export const FlipObservationStatus = Type.Union(
  ['as computed', 'not made', 'not as computed', 'not observed'].map((k) => Type.Literal(k)),
  {
    description:
      'as computed: observed before and after as the policies say, each blocked side dropped by the rule that decides it; not made: the packets did not flip (an enforcement fault); not as computed: observed otherwise, or dropped by another rule, or nothing observed in time (an enforcement fault); not observed: the cell cannot be observed here (SCTP), never counted as proven',
  },
);

export const FlipObservation = Type.Object(
  {
    before: Observed,
    after: Observed,
    status: FlipObservationStatus,
    convergedAfterMs: Type.Union([Type.Number(), Type.Null()], {
      description:
        "the cell's convergence time: ms from HEAD's policies and labels applying to its last flip to the value observed at the end; null: not observed",
    }),
  },
  { additionalProperties: false },
);

export const Flip = Type.Object(
  {
    ...CellId,
    before: CellSide,
    after: CellSide,
    causes: Type.Array(Type.Integer(), { description: 'indexes into causes; the flip is grouped under the first' }),
    observed: Type.Optional(FlipObservation),
  },
  { additionalProperties: false },
);

export const OneSidedCell = Type.Object(
  { ...CellId, side: CellSide, cause: Type.Integer({ description: 'index into causes: the workload or port added or removed' }) },
  { additionalProperties: false },
);

export const Counts = Type.Object(
  {
    cells: Type.Integer({ description: 'cells on either side' }),
    flips: Type.Integer(),
    opened: Type.Integer({ description: 'flips blocked -> allowed' }),
    closed: Type.Integer({ description: 'flips allowed -> blocked' }),
    added: Type.Integer({ description: 'cells of HEAD only' }),
    removed: Type.Integer({ description: 'cells of BASE only' }),
    undecided: Type.Integer(),
  },
  { additionalProperties: false },
);

export const Approval = Type.Object(
  {
    file: Type.String(),
    passed: Type.Boolean({ description: 'the flips are exactly the approved ones' }),
    unapproved: Type.Array(Type.String(), { description: 'the keys of the flips no statement approves' }),
    missing: Type.Array(Type.String(), { description: 'approved statements no flip made, as written' }),
  },
  { additionalProperties: false },
);

export const ObservationFault = Type.Object(
  {
    ...CellId,
    kind: Type.Union(
      ['flip not made', 'flip not computed', 'not as computed'].map((k) => Type.Literal(k)),
      {
        description:
          'flip not made: the policies flip the cell, the packets did not; flip not computed: the packets flipped, the policies do not; not as computed: at one side the packets did not do what the policies say (or were dropped by another rule)',
      },
    ),
    side: Type.Union([Type.Literal('base'), Type.Literal('head'), Type.Literal('both')]),
    computed: Type.Object(
      { before: Verdict, after: Verdict },
      { additionalProperties: false, description: 'null: the side has no such cell, or it is undecided' },
    ),
    observed: Type.Object({ before: Observed, after: Observed }, { additionalProperties: false }),
    text: Type.String({ description: 'the fault in one line, with the evidence the run found' }),
  },
  { additionalProperties: false },
);

export const Observation = Type.Object(
  {
    isolation: Type.Literal('netns'),
    outcome: Type.Union([Type.Literal('pass'), Type.Literal('fail'), Type.Literal('not proven')], {
      description:
        'pass: every flip observed as computed and no other cell flipped or failed; fail: an enforcement fault (faults) or the run failed (error); not proven: no fault, but some flip could not be observed here',
    }),
    error: Type.Optional(Type.String({ description: 'why the run did not observe both sides (nothing deployed, an error, stopped)' })),
    counts: Type.Object(
      {
        flips: Type.Integer({ description: 'flips the policies make' }),
        asComputed: Type.Integer({ description: 'of those, observed as computed' }),
        notObserved: Type.Integer({ description: 'of those, not observable here (SCTP)' }),
        faults: Type.Integer(),
      },
      { additionalProperties: false },
    ),
    faults: Type.Array(ObservationFault, { description: 'every enforcement fault, one per cell' }),
  },
  {
    additionalProperties: false,
    description:
      'present with --isolation=netns: BASE deployed and observed, HEAD applied in place (policies replaced, pods and namespaces relabelled), observed again',
  },
);

export const ScenarioDiffSchema = Type.Object(
  {
    base: Type.String({ description: 'the BASE side as given (a file, a folder or git:REF:PATH)' }),
    head: Type.String(),
    step: Type.Object({ base: Type.String(), head: Type.String() }, { description: 'the step compared on each side', additionalProperties: false }),
    counts: Counts,
    causes: Type.Array(Cause, { description: 'every change between the sides, flips or not' }),
    flips: Type.Array(Flip),
    added: Type.Array(OneSidedCell),
    removed: Type.Array(OneSidedCell),
    undecided: Type.Array(Type.Object({ key: Type.String(), before: CellSide, after: CellSide }, { additionalProperties: false })),
    deadRules: Type.Array(
      Type.Object({ rule: Type.String({ description: 'ns/policy ingress[i] or egress[i]' }), why: Type.String() }, { additionalProperties: false }),
      {
        description:
          'rules no cell exercises on HEAD that some cell exercised on BASE, or that a new or edited policy brings: a change can flip nothing and still leave a rule dead',
      },
    ),
    approval: Type.Optional(Approval),
    observation: Type.Optional(Observation),
  },
  { additionalProperties: false, $id: 'https://starmap.invalid/diff.schema.json', title: 'Starmap scenario diff' },
);

export type ScenarioDiff = Static<typeof ScenarioDiffSchema>;
export type Cause = Static<typeof Cause>;
export type CauseKind = Static<typeof CauseKind>;
export type CellSide = Static<typeof CellSide>;
export type Flip = Static<typeof Flip>;
export type OneSidedCell = Static<typeof OneSidedCell>;
export type FlipObservation = Static<typeof FlipObservation>;
export type ObservationFault = Static<typeof ObservationFault>;
export type Observation = Static<typeof Observation>;
