// Live expectations: what a scenario runner says the collector should see during the step in
// force (`PUT /starmap/expectations`, see routes-expectations.ts), kept in memory until replaced or
// deleted, and read by the web UI to mark every cell where what it observes is not what the step
// expects, with the reasons (the NetworkPolicy evaluator's). One TypeBox schema drives the route's
// validation, the type, and the README's description. Cells name resources by id (the collector's
// resource ids); the collector's own row uses `collector.id`.
import { type Static, Type } from '@sinclair/typebox';

/** Largest accepted `PUT /starmap/expectations` body: 10,000 cells with their reasons. */
export const EXPECTATIONS_BODY_LIMIT = 4 * 1024 * 1024;

const Verdict = Type.Union([Type.Boolean(), Type.Null()]);
const Id = Type.String({ minLength: 1, maxLength: 253 });
const Text = (maxLength: number) => Type.String({ maxLength });

export const ExpectedCell = Type.Object(
  {
    from: Type.String({ minLength: 1, maxLength: 253, description: 'the source: a resource id, or collector.id for the collector itself' }),
    to: Type.String({ minLength: 1, maxLength: 253, description: 'the destination resource id' }),
    url: Type.Optional(Type.String({ maxLength: 2048, description: "the target URL the source's probe checks (tells ports of one pair apart)" })),
    port: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
    protocol: Type.Optional(Type.Union([Type.Literal('TCP'), Type.Literal('UDP'), Type.Literal('SCTP')])),
    expected: Type.Union([Type.Boolean(), Type.Null()], { description: 'true allowed, false blocked, null not judged by the step' }),
    observed: Type.Optional(Verdict),
    status: Type.Optional(Text(40)),
    reason: Type.String({ maxLength: 2000, description: "the evaluator's reason in one line" }),
    reasons: Type.Optional(
      Type.Array(Text(2000), { maxItems: 8, description: "the evaluator's account, one line per side (egress of the source, ingress of the destination)" }),
    ),
  },
  { additionalProperties: false },
);

export const Expectations = Type.Object(
  {
    scenario: Text(200),
    step: Type.Object(
      {
        index: Type.Integer({ minimum: 0, maximum: 100_000, description: '0-based' }),
        name: Type.String({ minLength: 1, maxLength: 200 }),
        total: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
        description: Type.Optional(Text(1000)),
        policies: Type.Optional(Type.Array(Text(300), { maxItems: 1000 })),
      },
      { additionalProperties: false },
    ),
    phase: Type.Union([Type.Literal('applying'), Type.Literal('judged')], { description: 'applying: the step has started; judged: the runner has judged it' }),
    outcome: Type.Optional(Type.Union([Type.Literal('pass'), Type.Literal('fail'), Type.Literal('not run'), Type.Literal('computed only')])),
    enforced: Type.Optional(
      Type.Boolean({
        description: "false: the run cannot enforce policies (no isolation); cells they block are 'not proven' and the UI says so instead of a pass",
      }),
    ),
    collector: Type.Optional(Type.Object({ id: Id, label: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })) }, { additionalProperties: false })),
    labels: Type.Optional(
      Type.Record(Type.String({ maxLength: 253 }), Type.String({ minLength: 1, maxLength: 40 }), {
        maxProperties: 10_000,
        description: 'short names for the matrix headers (resource id → name), as the terminal tables use',
      }),
    ),
    cells: Type.Array(ExpectedCell, { maxItems: 10_000 }),
  },
  { additionalProperties: false, $id: 'StarmapExpectations' },
);

export type ExpectationsDoc = Static<typeof Expectations>;

/** The expectations in force, with when they came and a version for the ETag. */
export class ExpectationStore {
  #doc: (ExpectationsDoc & { publishedAt: string }) | undefined;
  #body: string | undefined;
  #version = 0;

  get version(): number {
    return this.#version;
  }

  /** The stored document as JSON text, or undefined when nothing is published. */
  get body(): string | undefined {
    return this.#body;
  }

  get current(): (ExpectationsDoc & { publishedAt: string }) | undefined {
    return this.#doc;
  }

  put(doc: ExpectationsDoc, now = new Date()): void {
    this.#doc = { ...doc, publishedAt: now.toISOString() };
    this.#body = JSON.stringify(this.#doc);
    this.#version++;
  }

  /** Removes them; false when there were none. */
  clear(): boolean {
    if (!this.#doc) return false;
    this.#doc = undefined;
    this.#body = undefined;
    this.#version++;
    return true;
  }
}
