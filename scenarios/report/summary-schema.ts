// The summary form of `scenario check` (report/check-summary.ts): what a computed-only check of
// a large manifest set reports instead of one object per cell, so that the report stays a few MB
// whatever the input. Pods of one workload are one row; workload pairs are listed per port with
// their cells counted by verdict, up to a bound (the rest counted); every cell, one per line, is
// in the file --report-cells writes (NDJSON), never in this document. Part of the published
// report schema (report/schema.ts's Report).
import { type Static, Type } from '@sinclair/typebox';

const Protocol = Type.Union([Type.Literal('TCP'), Type.Literal('UDP'), Type.Literal('SCTP')]);
const Tally = Type.Object(
  { allowed: Type.Integer(), denied: Type.Integer(), undecided: Type.Integer({ description: 'depend on addresses not known' }) },
  { additionalProperties: false },
);

export const SummaryWorkload = Type.Object(
  {
    workload: Type.String({ description: 'Kind namespace/name of the workload (a pod of none: its namespace/name)' }),
    namespace: Type.String(),
    pods: Type.Integer(),
    out: Type.Object(Tally.properties, { additionalProperties: false, description: "the cells from the workload's pods, by verdict" }),
    in: Type.Object(Tally.properties, { additionalProperties: false, description: "the cells to the workload's pods, by verdict" }),
  },
  { additionalProperties: false },
);

export const SummaryPair = Type.Object(
  {
    from: Type.String({ description: 'the source workload' }),
    to: Type.String({ description: 'the destination workload' }),
    port: Type.Integer(),
    protocol: Protocol,
    verdict: Type.Union([Type.Literal('allowed'), Type.Literal('denied'), Type.Literal('undecided'), Type.Literal('mixed')], {
      description: "every cell's verdict when they agree; mixed: they differ (by address, or by pod)",
    }),
    cells: Tally,
    reason: Type.Union([Type.String(), Type.Null()], {
      description: "the cells' reason in one line (cut at 300 characters) when they share one verdict object; null: their reasons differ",
    }),
  },
  { additionalProperties: false },
);

export const SummaryCell = Type.Object(
  { from: Type.String(), to: Type.String(), port: Type.Integer(), protocol: Protocol, why: Type.String() },
  { additionalProperties: false },
);

export const SummaryReport = Type.Object(
  {
    scenario: Type.String(),
    form: Type.Literal('summary', { description: 'a check summarised by workload (scenario check past its per-cell bound, or --summary)' }),
    startedAt: Type.String(),
    finishedAt: Type.String(),
    outcome: Type.Union([Type.Literal('computed only'), Type.Literal('undecided')]),
    notices: Type.Array(Type.String()),
    manifests: Type.Array(Type.String({ description: 'what was read, ignored and noted' })),
    addresses: Type.String({ description: 'the pod addresses ipBlocks were decided with, in words' }),
    counts: Type.Object(
      {
        pods: Type.Integer(),
        workloads: Type.Integer(),
        classes: Type.Integer({ description: 'classes of identical pods (namespace, labels, ports) the verdicts were computed over' }),
        policies: Type.Integer(),
        cells: Type.Integer({ description: "ordered pairs of distinct pods × the destination's declared ports" }),
        ...Tally.properties,
      },
      { additionalProperties: false },
    ),
    workloads: Type.Array(SummaryWorkload, { description: 'by name, up to a bound' }),
    workloadsOmitted: Type.Integer({ description: 'workloads past the bound, not listed' }),
    pairs: Type.Array(SummaryPair, { description: 'workload pairs per port, up to a bound (those met first in the computation), by name' }),
    cellsNotInPairs: Type.Integer({ description: 'cells of the workload pairs past the bound' }),
    undecided: Type.Array(SummaryCell, { description: 'undecided cells, up to a bound' }),
    undecidedOmitted: Type.Integer(),
    cellsFile: Type.Union([Type.String(), Type.Null()], { description: 'the NDJSON file of every cell (--report-cells); null: not written' }),
  },
  { additionalProperties: false, description: 'the summary of a computed-only check (scenario check of a large manifest set)' },
);

export type SummaryReportDoc = Static<typeof SummaryReport>;
export type SummaryPairDoc = Static<typeof SummaryPair>;
export type SummaryWorkloadDoc = Static<typeof SummaryWorkload>;
export type TallyDoc = Static<typeof Tally>;
