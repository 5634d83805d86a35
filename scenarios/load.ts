// Finding and reading a scenario: a file (its manifests relative to it) or a built-in by name
// (its manifests from the built-in files). Errors are ScenarioErrors naming the file.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { BUILTIN, BUILTIN_FILES } from './builtin.ts';
import { MAX_SCENARIO_BYTES, readScenario, ScenarioError } from './model.ts';
import { resolveScenario, type ResolvedScenario } from './resolve.ts';

function readBounded(path: string): string {
  const size = statSync(path).size;
  if (size > MAX_SCENARIO_BYTES) throw Object.assign(new Error(`larger than ${MAX_SCENARIO_BYTES / 1024 / 1024} MiB`), { code: 'EFBIG' });
  return readFileSync(path, 'utf8');
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
  if (!existsSync(ref)) throw new ScenarioError(`no scenario file ${JSON.stringify(ref)} and no built-in of that name (built-in: ${Object.keys(BUILTIN).join(', ')})`);
  let text: string;
  try {
    text = readBounded(ref);
  } catch (err) {
    throw new ScenarioError(`${ref}: cannot read: ${(err as Error).message}`);
  }
  return resolveScenario(readScenario(text, ref), { readFile: readBounded });
}
