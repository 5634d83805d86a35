// The TypeBox shapes a cell has in every published report: the run's (report/schema.ts and
// report/intent-schema.ts) and the diff's (diff-schema.ts). In model/ so that both may import them
// (report/ stands on model/, never the other way). One definition each, so the reports cannot
// drift apart on what a cell is.
import { Type } from '@sinclair/typebox';

export const Protocol = Type.Union([Type.Literal('TCP'), Type.Literal('UDP'), Type.Literal('SCTP')]);

/** A verdict that may be unknown: true allowed, false blocked, null (what null means is said by each use). */
export const MaybeVerdict = (description: string) => Type.Union([Type.Boolean(), Type.Null()], { description });

/** Which cell: its source and destination pods and the destination's port. */
export const CellEnds = {
  from: Type.String({ description: 'source pod, namespace/pod' }),
  to: Type.String({ description: 'destination pod, namespace/pod' }),
  port: Type.Integer(),
  protocol: Protocol,
};
