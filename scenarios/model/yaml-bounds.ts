// The shape a scenario file (or a manifest file it names) may have, checked before it is parsed:
// the YAML parser and everything after it walk the document recursively, so 2 MB of `[` runs the
// parser out of memory and a few thousand levels overflow the stack; and the parser builds a
// few objects per value, so 100,000 steps take it longer than anyone waits. yaml's own lexer reads
// the text in one flat pass (quotes, comments and block scalars as the parser will see them), so
// brackets inside strings do not count, and the scan stops at the first bound passed.
import { CST, Lexer } from 'yaml';

/** Levels of [ ] and { } a file may nest: a NetworkPolicy needs about a dozen. */
export const MAX_FLOW_DEPTH = 64;
/** The column block content may start at (indentation and `- ` / `? ` / `: ` indicators). */
export const MAX_INDENT = 200;

/** Values (scalars and aliases) a file may hold: 100 pods that each probe all the others are 10,000. */
export const MAX_VALUES = 20_000;
/** Values a Kubernetes manifest file may hold: `kubectl get -A -o yaml` of a large cluster is far past a scenario's bound, within its 4 MiB. */
export const MAX_MANIFEST_VALUES = 1_000_000;

const VALUES = new Set(['scalar', 'single-quoted-scalar', 'double-quoted-scalar', 'alias']);
const OPEN = new Set(['flow-seq-start', 'flow-map-start']);
const CLOSE = new Set(['flow-seq-end', 'flow-map-end']);
const INDENTS = new Set(['space', 'seq-item-ind', 'explicit-key-ind', 'map-value-ind']);

/** Why the text cannot be parsed safely ("... at line N"), or undefined when it can. */
export function shapeProblem(text: string, maxValues = MAX_VALUES): string | undefined {
  let values = 0;
  let depth = 0;
  let line = 1;
  let column = 0;
  let lineChecked = false;
  for (const token of new Lexer().lex(text)) {
    const type = CST.tokenType(token);
    if (type === 'newline') {
      line += token.split('\n').length - 1;
      column = 0;
      lineChecked = false;
      continue;
    }
    if (VALUES.has(type ?? '') && ++values > maxValues)
      return `more than ${maxValues} values (at line ${line})${maxValues === MAX_VALUES ? '; a scenario needs far fewer' : ''}`;
    if (OPEN.has(type ?? '')) {
      if (++depth > MAX_FLOW_DEPTH) return `nested deeper than ${MAX_FLOW_DEPTH} levels of [ ] and { } at line ${line}`;
    } else if (CLOSE.has(type ?? '')) depth = Math.max(0, depth - 1);
    // Multi-line tokens (block scalars, quoted scalars) move the line count on, after this one.
    const here = line;
    if (type !== undefined && token.includes('\n')) line += token.split('\n').length - 1;
    if (depth > 0 || lineChecked) continue;
    if (INDENTS.has(type ?? '')) column += token.length;
    else if (type !== undefined && type !== 'doc-mode' && type !== 'byte-order-mark') {
      // The first content of a line outside flow collections: its column bounds the block nesting.
      if (column > MAX_INDENT) return `indented deeper than ${MAX_INDENT} columns at line ${here}`;
      lineChecked = true;
    }
  }
  return undefined;
}

/** How many times a file's aliases may be expanded (yaml's maxAliasCount): more is an alias bomb. */
export const MAX_ALIASES = 100;

/** A parse or expansion error as the reader says it: an alias bomb by name, else the error's first line. */
export function aliasProblem(err: Error): string {
  if (/excessive alias count/i.test(err.message)) return `its aliases (*name) expand more than ${MAX_ALIASES} times (an alias bomb?)`;
  return err.message.split('\n')[0]!;
}
