// Finding and reading a scenario: a file (its manifests relative to it) or a built-in by name
// (its manifests from the built-in files). Errors are ScenarioErrors naming the file.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BUILTIN, BUILTIN_FILES, builtinNames } from './builtin.ts';
import { MAX_SCENARIO_BYTES, readScenario, ScenarioError } from './model.ts';
import { resolveScenario, type ResolvedScenario } from './resolve.ts';
import { shapeProblem } from './yaml-bounds.ts';

function readBounded(path: string): string {
  const size = statSync(path).size;
  if (size > MAX_SCENARIO_BYTES) throw Object.assign(new Error(`larger than ${MAX_SCENARIO_BYTES / 1024 / 1024} MiB`), { code: 'EFBIG' });
  return readFileSync(path, 'utf8');
}

/** A manifest file a scenario names, bounded as the scenario is (readScenario checks its own text). */
function readManifest(path: string): string {
  const text = readBounded(path);
  const problem = shapeProblem(text);
  if (problem) throw new Error(problem);
  return text;
}

export function loadScenario(ref: string): ResolvedScenario {
  const builtin = BUILTIN[ref];
  if (builtin) {
    const readFile = (path: string) => {
      const text = BUILTIN_FILES[path];
      if (text === undefined) throw Object.assign(new Error(`no built-in file ${path}`), { code: 'ENOENT' });
      return text;
    };
    return resolveScenario(readScenario(readFile(builtin), builtin), { readFile });
  }
  if (!existsSync(ref)) throw new ScenarioError(`no scenario file ${JSON.stringify(ref)} and no built-in of that name (built-in: ${builtinNames()})`);
  let text: string;
  try {
    text = readBounded(ref);
  } catch (err) {
    throw new ScenarioError(`${ref}: cannot read: ${(err as Error).message}`);
  }
  return resolveScenario(readScenario(text, ref), { readFile: readManifest });
}

/**
 * One scenario, or a set: a built-in folder (`k8s-e2e`) or a directory, every scenario file in it
 * (YAML or JSON with top-level steps) in name order.
 */
export function loadTargets(ref: string): { set?: string; scenarios: ResolvedScenario[] } {
  const isFile = existsSync(ref) && statSync(ref).isFile();
  if (BUILTIN[ref] || isFile) return { scenarios: [loadScenario(ref)] };
  const prefix = `${ref.replace(/\/+$/, '')}/`;
  const builtins = Object.keys(BUILTIN)
    .filter((n) => n.startsWith(prefix))
    .sort();
  if (builtins.length > 0) return { set: ref.replace(/\/+$/, ''), scenarios: builtins.map(loadScenario) };
  if (existsSync(ref) && statSync(ref).isDirectory()) {
    const files = readdirSync(ref)
      .filter((f) => /\.(ya?ml|json)$/.test(f))
      .sort()
      .map((f) => join(ref, f))
      .filter((f) => statSync(f).isFile() && /^\s*"?steps"?\s*:/m.test(readBounded(f)));
    if (files.length === 0) throw new ScenarioError(`${ref}: no scenario files (YAML or JSON with steps) in this directory`);
    return { set: ref.replace(/\/+$/, ''), scenarios: files.map(loadScenario) };
  }
  return { scenarios: [loadScenario(ref)] };
}
