// Reading a scenario file: YAML or JSON, checked against the schema (schema.ts), with errors that
// name the file, the path and the line. What a valid file means (pods, cells, policies per step)
// is worked out in resolve.ts.
import { type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { parseDocument } from 'yaml';
import { lineOf } from '../../shared/netpol/manifests.ts';
import { Scenario, type ScenarioDoc } from './schema.ts';
import { aliasProblem, MAX_ALIASES, shapeProblem } from './yaml-bounds.ts';

export { Scenario };
export type { AppDoc, DialectPolicyDoc, ExpectationDoc, ScenarioDoc, StepDoc } from './schema.ts';

/** Bound on a scenario file (manifests it names have their own). */
export const MAX_SCENARIO_BYTES = 4 * 1024 * 1024;
/** Aliases a file may expand (yaml's bound against alias bombs: each expansion copies a subtree). */
export { MAX_ALIASES };
/** Schema errors worked out at most: a file of 100,000 bad steps needs only the first few said. */
const MAX_SCHEMA_ERRORS = 200;

import { ScenarioError } from '../errors.ts';

export { ScenarioError };

export interface ParsedScenario {
  doc: ScenarioDoc;
  file: string;
  /** ' (line N)' for a JSON pointer into the file, or '' when it has no line. */
  at: (pointer: string) => string;
}

/** Parses YAML or JSON (JSON is YAML) and checks it against the schema. */
export function readScenario(text: string, file = 'scenario'): ParsedScenario {
  if (Buffer.byteLength(text) > MAX_SCENARIO_BYTES) throw new ScenarioError(`${file}: larger than ${MAX_SCENARIO_BYTES / 1024 / 1024} MiB`);
  const nesting = shapeProblem(text);
  if (nesting) throw new ScenarioError(`${file}: not read: ${nesting}`);
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ScenarioError(`${file}: not valid YAML/JSON: ${doc.errors.map((e) => e.message.split('\n')[0]).join('; ')}`);
  }
  const at = (pointer: string) => {
    const line = lineOf(doc, text, pointer);
    return line ? ` (line ${line})` : '';
  };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (err) {
    // yaml throws a ReferenceError for an alias bomb (and for an alias to nothing).
    throw new ScenarioError(`${file}: not valid YAML/JSON: ${aliasProblem(err as Error)}`);
  }
  if (!Value.Check(Scenario, value)) {
    const problems = explain(Scenario, value, '')
      .filter((e, i, all) => all.findIndex((o) => o.path === e.path) === i)
      .slice(0, 8)
      .map((e) => `${e.path || '/'}${at(e.path)}: ${e.message}`);
    throw new ScenarioError(`${file}: invalid scenario:\n  ${problems.join('\n  ')}`);
  }
  return { doc: value, file, at };
}

/**
 * Validation errors, with unions resolved by their `kind` discriminator: "Expected union value"
 * says nothing, the errors of the branch the author meant say what is wrong.
 */
function explain(schema: TSchema, value: unknown, prefix: string): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  for (const e of Value.Errors(schema, value)) {
    if (out.length >= MAX_SCHEMA_ERRORS) break;
    const branches = (e.schema as { anyOf?: TSchema[] }).anyOf;
    const kind = (e.value as { kind?: unknown } | null)?.kind;
    const branch = branches?.find((b) => (b as { properties?: { kind?: { const?: unknown } } }).properties?.kind?.const === kind);
    if (branch) out.push(...explain(branch, e.value, prefix + e.path));
    else if (branches && typeof e.value === 'object' && e.value !== null && 'kind' in e.value && !('apiVersion' in e.value)) {
      const kinds = branches.map((b) => (b as { properties?: { kind?: { const?: unknown } } }).properties?.kind?.const).filter(Boolean);
      out.push({ path: `${prefix}${e.path}/kind`, message: `must be one of ${kinds.map((k) => JSON.stringify(k)).join(', ')}` });
    } else out.push({ path: prefix + e.path, message: e.message });
  }
  return out;
}
