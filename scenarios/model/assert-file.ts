// `--assert FILE` on `scenario check` and `scenario run`: intents kept beside the manifests rather
// than in a scenario file. The file is YAML (or JSON): a list of statements, which apply to every
// step, or a map from step names to lists, which apply to those steps:
//
//   - allow: shop/web -> shop/api:http          as-rendered:
//   - deny: "*" -> shop-data/postgres              - deny: "*" -> shop-data/postgres
//     except: [shop/api]                             except: [shop/api]
//
// Messages name the file, the entry and its line. Throws ScenarioError.
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { lineOf } from '../../shared/netpol/manifests.ts';
import { ScenarioError } from '../errors.ts';
import { applyAssertions, type StatementInput } from './assertions.ts';
import { nearestText } from './nearest.ts';
import type { ResolvedScenario } from './resolve.ts';
import { MAX_ALIASES, shapeProblem } from './yaml-bounds.ts';

/** Bound on an assert file: statements are short, a reviewer reads them. */
const MAX_ASSERT_BYTES = 1024 * 1024;
const MAX_STATEMENTS = 4096;

export interface AssertFile {
  file: string;
  /** null: every step. */
  byStep: Map<string | null, StatementInput[]>;
}

/** Reads an assert file's text; `file` names it in messages. */
export function parseAssertFile(text: string, file: string): AssertFile {
  if (Buffer.byteLength(text) > MAX_ASSERT_BYTES) throw new ScenarioError(`${file}: larger than ${MAX_ASSERT_BYTES / 1024 / 1024} MiB`);
  const shape = shapeProblem(text);
  if (shape) throw new ScenarioError(`${file}: not read: ${shape}`);
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) throw new ScenarioError(`${file}: not valid YAML/JSON: ${doc.errors.map((e) => e.message.split('\n')[0]).join('; ')}`);
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (err) {
    throw new ScenarioError(`${file}: not valid YAML/JSON: ${(err as Error).message}`);
  }
  const line = (pointer: string) => {
    const n = lineOf(doc, text, pointer);
    return n ? ` (line ${n})` : '';
  };
  const entries = (list: unknown, pointer: string, label: string): StatementInput[] => {
    if (!Array.isArray(list))
      throw new ScenarioError(`${file}: ${label}${line(pointer)}: expected a list of statements such as - allow: shop/web -> shop/api:http`);
    return list.map((doc, j) => ({ doc, where: `${file}: ${label}#${j + 1}${line(`${pointer}/${j}`)}`, source: `${file} ${label}#${j + 1}` }));
  };
  const byStep = new Map<string | null, StatementInput[]>();
  if (Array.isArray(value)) byStep.set(null, entries(value, '', ''));
  else if (value && typeof value === 'object') {
    for (const [step, list] of Object.entries(value)) byStep.set(step, entries(list, `/${step.replace(/~/g, '~0').replace(/\//g, '~1')}`, `${step} `));
  } else throw new ScenarioError(`${file}: expected a list of statements (every step) or a map from step names to lists`);
  const count = [...byStep.values()].reduce((n, l) => n + l.length, 0);
  if (count === 0) throw new ScenarioError(`${file}: no statements`);
  if (count > MAX_STATEMENTS) throw new ScenarioError(`${file}: ${count} statements; at most ${MAX_STATEMENTS}`);
  return { file, byStep };
}

export function readAssertFile(path: string): AssertFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ScenarioError(`--assert ${path}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parseAssertFile(text, path);
}

/** Adds the file's intents to the scenario's steps (in place); every problem is said at once. */
export function applyAssertFile(s: ResolvedScenario, af: AssertFile): void {
  const problems: string[] = [];
  const stepNames = s.steps.map((st) => st.name);
  for (const key of af.byStep.keys())
    if (key !== null && !stepNames.includes(key)) problems.push(`${af.file}: ${key}: no step of that name in ${s.name}${nearestText(key, stepNames)}`);
  // A statement for every step that is wrong in each is said once, with the steps it is wrong in.
  const inSteps = new Map<string, string[]>();
  for (const step of s.steps) {
    const inputs = [...(af.byStep.get(null) ?? []), ...(af.byStep.get(step.name) ?? [])];
    for (const p of applyAssertions(s, step, inputs).problems) {
      const said = `${p.input.where}: ${p.message}`;
      inSteps.set(said, [...(inSteps.get(said) ?? []), step.name]);
    }
  }
  for (const [said, steps] of inSteps) problems.push(s.steps.length > 1 ? `${said} (step ${steps.join(', ')})` : said);
  if (problems.length > 0)
    throw new ScenarioError(
      `${af.file}: invalid intents:\n  ${problems.slice(0, 30).join('\n  ')}${problems.length > 30 ? `\n  … and ${problems.length - 30} more` : ''}`,
    );
}
