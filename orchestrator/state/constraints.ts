// Placement constraints ([field, OPERATOR, value?]) checked and compiled once per definition.
// LIKE and UNLIKE carry a user's regular expression that must fully match the field's value.
// JavaScript's RegExp backtracks: `(.*.*)*X` against a host name hung the event loop, and again
// after every restart. They run on RE2JS instead (a port of RE2: matching time linear in the
// input, whatever the pattern), so a hostile pattern costs microseconds. What RE2 cannot do in
// linear time (backreferences, lookaround) is refused at validation with the engine's reason.
// One host here: only the `hostname` field is enforced.
import { RE2JS } from 're2js';
import type { Violation } from './app-definition.ts';

export const CONSTRAINT_OPERATORS = ['UNIQUE', 'CLUSTER', 'GROUP_BY', 'LIKE', 'UNLIKE', 'MAX_PER'];

/** Longest constraint value accepted (the pattern's size bounds RE2's program, and so its time). */
export const MAX_CONSTRAINT_VALUE = 512;

/** The compiled pattern, or why it is refused. */
export function compilePattern(value: string): RE2JS | string {
  if (value.length > MAX_CONSTRAINT_VALUE) return `got a value of ${value.length} characters, expected ${MAX_CONSTRAINT_VALUE} or less`;
  try {
    return RE2JS.compile(value);
  } catch (err) {
    return `'${value}' is not a valid regular expression (${(err as Error).message}; backreferences and lookaround are not supported: patterns are matched in linear time)`;
  }
}

/** Marathon's constraint rules (1.4 wording), with `/constraints(i)` paths. */
export function constraintProblems(constraints: readonly (readonly string[])[]): Violation[] {
  const out: Violation[] = [];
  constraints.forEach((c, i) => {
    const path = `/constraints(${i})`;
    const add = (error: string) => out.push({ path, errors: [error] });
    if (c.length < 2 || c.length > 3) return add('Each constraint must have either 2 or 3 fields');
    const [, op, value] = c;
    if (!CONSTRAINT_OPERATORS.includes(op ?? '')) return add(`Constraint operator must be one of the following: [${CONSTRAINT_OPERATORS.join(', ')}]`);
    if (value !== undefined && value.length > MAX_CONSTRAINT_VALUE)
      return add(`got a value of ${value.length} characters, expected ${MAX_CONSTRAINT_VALUE} or less`);
    if (op === 'UNIQUE' && value !== undefined) add('Value specified but not used');
    if (op === 'CLUSTER' && (value === undefined || value === '')) add('Missing value');
    if ((op === 'GROUP_BY' && value !== undefined && !/^\d+$/.test(value)) || (op === 'MAX_PER' && (value === undefined || !/^\d+$/.test(value))))
      add('Value was not an integer number');
    if (op === 'LIKE' || op === 'UNLIKE') {
      if (value === undefined) add('A regular expression value must be provided');
      else {
        const re = compilePattern(value);
        if (typeof re === 'string') add(re);
      }
    }
  });
  return out;
}

/** How many tasks of an app one host may hold, given that host's name. */
export type PlacementLimit = (hostname: string) => number;

const compiled = new WeakMap<readonly (readonly string[])[], PlacementLimit>();

/**
 * The constraints as one function, compiled the first time a definition's constraints are seen
 * (not at every launch). UNIQUE → 1, MAX_PER n → n, CLUSTER/LIKE/UNLIKE → all or nothing. A
 * pattern that does not compile (stored before this engine) places nothing: the app cannot launch.
 */
export function placementLimit(constraints: readonly (readonly string[])[]): PlacementLimit {
  let fn = compiled.get(constraints);
  if (fn) return fn;
  const checks: PlacementLimit[] = [];
  for (const [field, op, value] of constraints) {
    if (field !== 'hostname') continue;
    if (op === 'UNIQUE') checks.push(() => 1);
    else if (op === 'MAX_PER') checks.push(() => Number(value ?? 0));
    else if (op === 'CLUSTER' && value !== undefined) checks.push((h) => (h === value ? Infinity : 0));
    else if ((op === 'LIKE' || op === 'UNLIKE') && value !== undefined) {
      const re = compilePattern(value);
      const like = op === 'LIKE';
      checks.push(typeof re === 'string' ? () => 0 : (h) => (re.matches(h) === like ? Infinity : 0));
    }
  }
  fn = (h) => checks.reduce((limit, check) => Math.min(limit, check(h)), Infinity);
  compiled.set(constraints, fn);
  return fn;
}
