// Flag handling with yargs for every program: strict flags, `--help`, `--version`, and errors that
// exit non-zero with a message naming the flag. Value checks are `coerce` functions that throw
// with the flag's name, so a bad value never reaches the program.
//
// A program declares its flags once, as a table (FlagTable, as goldpinger's config.go): one entry
// a flag, keyed by its dashed name, with its aliases, type, default, help text and coerce. The
// table is the yargs options as they are; the type of the parsed flags (FlagValues) and their
// defaults (flagDefaults) are derived from it, so neither is written again by hand.
import { isatty } from 'node:tty';
import yargs, { type Argv, type Options } from 'yargs';
import { VERSION } from './version.ts';

export class FlagError extends Error {}

/** pino's level names, for every program's --log-level. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** One flag: what yargs takes for it (the subset the programs use). */
export interface FlagSpec {
  alias?: string | readonly string[];
  type?: 'string' | 'number' | 'boolean';
  default?: unknown;
  choices?: readonly string[];
  describe: string;
  /** Checks and converts the value; throws naming the flag (numberFlag, stringFlag…). */
  coerce?: (value: unknown) => unknown;
}

/** A program's flags, keyed by dashed name, in --help order. Declare it `as const satisfies FlagTable`. */
export type FlagTable = Record<string, FlagSpec>;

/** `http-port` → `httpPort`, the key yargs gives the value under. */
export type CamelCase<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S;

type Widen<T> = T extends string ? string : T extends number ? number : T extends boolean ? boolean : T;
type BaseValue<F> = F extends { coerce: (value: unknown) => infer R }
  ? R
  : F extends { choices: readonly (infer C)[] }
    ? C
    : F extends { type: 'boolean' }
      ? boolean
      : F extends { type: 'number' }
        ? number
        : F extends { default: infer D }
          ? Widen<D>
          : string;
/** A flag's parsed value: its coerce's result, else its choices or type; undefined when absent and without a default. */
export type FlagValue<F> = F extends { default: unknown } ? BaseValue<F> : BaseValue<F> | undefined;

/** The parsed flags of a table, camel-cased. */
export type FlagValues<T extends FlagTable> = { -readonly [K in keyof T & string as CamelCase<K>]: FlagValue<T[K]> };

/** The defaults of a table's flags that have one, camel-cased (as declared, before any coerce). */
export type FlagDefaults<T extends FlagTable> = {
  -readonly [K in keyof T & string as T[K] extends { default: unknown } ? CamelCase<K> : never]: T[K] extends { default: infer D } ? Widen<D> : never;
};

const camelCase = (flag: string): string => flag.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

export function flagDefaults<T extends FlagTable>(table: T): FlagDefaults<T> {
  const out: Record<string, unknown> = {};
  for (const [flag, spec] of Object.entries(table)) if ('default' in spec) out[camelCase(flag)] = spec.default;
  return out as FlagDefaults<T>;
}

/** Adds a table's flags to a yargs instance (for a program that builds its yargs itself). */
export function withFlags(y: Argv, table: FlagTable): Argv {
  return y.options(table as Record<string, Options>);
}

export interface CliSpec<T extends FlagTable> {
  name: string;
  description: string;
  examples?: [string, string][];
  epilogue?: string;
  flags: T;
  /** Rules across flags (yargs .check, .conflicts), added after the flags. */
  refine?: (y: Argv) => Argv;
}

/** Word-wraps prose for --help (yargs breaks the usage text in the middle of words). */
export function wrapText(text: string, width: number): string {
  return text
    .split('\n')
    .map((paragraph) => {
      const lines: string[] = [];
      let line = '';
      for (const word of paragraph.split(/\s+/).filter(Boolean)) {
        if (line && line.length + 1 + word.length > width) {
          lines.push(line);
          line = word;
        } else line = line ? `${line} ${word}` : word;
      }
      return [...lines, line].join('\n');
    })
    .join('\n');
}

/** Parses argv; on a bad flag prints the reason and a hint to stderr and exits 2. */
export function parseFlags<T extends FlagTable>(spec: CliSpec<T>, argv: string[]): FlagValues<T> {
  // Only a terminal has a width; asking process.stdout for it creates that stream (~2 ms of every
  // start, and the programs write through pino's own stream on fd 1).
  const width = isatty(1) ? Math.min(110, process.stdout.columns || 100) : 100;
  let y = yargs(argv)
    .scriptName(spec.name)
    .usage(`${spec.name} ${VERSION}\n\n${wrapText(spec.description, Math.min(96, width))}\n\nUsage: ${spec.name} [options]`)
    .parserConfiguration({ 'dot-notation': false, 'duplicate-arguments-array': false, 'strip-aliased': true, 'boolean-negation': false })
    .strict()
    .version(VERSION)
    .help('help')
    .alias('help', 'h')
    .wrap(null)
    .fail((msg, err) => {
      const text = msg || err?.message || 'invalid arguments';
      process.stderr.write(`${spec.name}: error: ${text}\nRun '${spec.name} --help' for the list of flags.\n`);
      process.exit(2);
    });
  for (const [cmd, what] of spec.examples ?? []) y = y.example(cmd, what);
  if (spec.epilogue) y = y.epilogue(spec.epilogue);
  y = withFlags(y, spec.flags);
  if (spec.refine) y = spec.refine(y);
  const parsed = y.parseSync() as Record<string, unknown>;
  // yargs applies `coerce` to the dashed key only; its camelCase twin keeps the raw text.
  for (const key of Object.keys(parsed)) {
    if (key.includes('-')) parsed[camelCase(key)] = parsed[key];
  }
  return parsed as FlagValues<T>;
}

function fail(flag: string, value: unknown, expected: string): never {
  throw new FlagError(`invalid value for --${flag}: ${JSON.stringify(value)} (expected ${expected})`);
}

/** A coerce function for a number within [min, max]. */
export function numberFlag(flag: string, min: number, max = Number.MAX_SAFE_INTEGER, integer = false) {
  return (value: unknown): number => {
    if (Array.isArray(value)) fail(flag, value, 'a single value');
    const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
    const kind = integer ? 'an integer' : 'a number';
    if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
      fail(flag, value, `${kind} from ${min} to ${max}`);
    }
    return n;
  };
}

export const portFlag = (flag: string) => numberFlag(flag, 0, 65535, true);

/** A coerce function for a non-empty string (also rejects a flag given twice). */
export function stringFlag(flag: string) {
  return (value: unknown): string => {
    if (Array.isArray(value)) fail(flag, value, 'a single value');
    if (typeof value !== 'string' && typeof value !== 'number') fail(flag, value, 'a value');
    const s = String(value);
    if (s.trim() === '') fail(flag, value, 'a non-empty value');
    return s;
  };
}

/**
 * A coerce function for an optional flag whose text `parse` turns into a value: a missing flag
 * stays undefined, and whatever `parse` throws becomes "invalid value for --<flag>: <its message>".
 */
export function parsedFlag<T>(flag: string, parse: (text: string) => T) {
  return (value: unknown): T | undefined => {
    if (value === undefined) return undefined;
    const text = stringFlag(flag)(value);
    try {
      return parse(text);
    } catch (err) {
      throw new FlagError(`invalid value for --${flag}: ${(err as Error).message}`);
    }
  };
}

/** A coerce function that validates a listen address (an IPv4/IPv6 literal or a host name). */
export function addressFlag(flag: string) {
  return (value: unknown): string => {
    const s = stringFlag(flag)(value).replace(/^\[(.*)\]$/, '$1');
    if (!/^[A-Za-z0-9.:_%-]+$/.test(s)) fail(flag, value, 'an IP address or host name');
    return s;
  };
}
