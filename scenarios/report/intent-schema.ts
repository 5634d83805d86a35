// The parts of a step's report about intents and rule coverage: each assertion with its outcome
// and the cells behind it, and each rule of each policy in force with the cells it allowed (dead
// rules named). Kept beside schema.ts, which adds them to a step's result.
import { type Static, Type } from '@sinclair/typebox';
import { CellEnds } from '../model/cell-schema.ts';

const CellRef = Type.Object(
  {
    ...CellEnds,
    status: Type.String({ description: "the cell's status, as in the step's cells (pass, 'intended != computed', …)" }),
  },
  { additionalProperties: false },
);

export const AssertionResult = Type.Object(
  {
    statement: Type.String({ description: 'the intent as written: allow:/deny: SOURCE -> DEST[:port] [except …]' }),
    source: Type.String({ description: 'where it was written: steps/<i>/assert/<j>, or the --assert file and entry' }),
    verdict: Type.Union([Type.Literal('allow'), Type.Literal('deny')]),
    outcome: Type.Union([Type.Literal('pass'), Type.Literal('fail'), Type.Literal('not run')], {
      description: 'fail: a cell behind it failed; pass: every cell passed; not run: nothing failed but not every cell was observed',
    }),
    policiesAgree: Type.Boolean({ description: 'the policies say what it intends on every cell (intended = computed)' }),
    cells: Type.Array(CellRef, { description: 'the cells it judges' }),
  },
  { additionalProperties: false },
);

export const RuleCoverageResult = Type.Object(
  {
    policy: Type.String({ description: 'namespace/name' }),
    direction: Type.Union([Type.Literal('ingress'), Type.Literal('egress')]),
    rule: Type.Integer({ description: 'index in spec.ingress or spec.egress' }),
    cells: Type.Array(Type.String(), { description: "cells whose verdict this rule allowed on its side ('from -> to port/PROTOCOL')" }),
    pending: Type.Array(Type.String(), { description: 'cells it may allow once addresses are known' }),
    peers: Type.Array(Type.Object({ peer: Type.Integer(), cells: Type.Array(Type.String()) }, { additionalProperties: false }), {
      description: 'per peer (index in from/to), the cells it matched; empty: the rule has no peers',
    }),
    dead: Type.Optional(Type.String({ description: 'no cell exercises the rule, and why' })),
  },
  { additionalProperties: false },
);

export type AssertionResultDoc = Static<typeof AssertionResult>;
export type RuleCoverageDoc = Static<typeof RuleCoverageResult>;
