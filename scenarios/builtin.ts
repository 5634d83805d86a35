// The built-in scenarios (scenarios/builtin/*.yaml). The single-file executable carries them
// through the STARMAP_BUILTIN_SCENARIOS define (scripts/build.ts); from source they are read
// from the folder.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

declare const STARMAP_BUILTIN_SCENARIOS: Record<string, string> | undefined;

function fromDisk(): Record<string, string> {
  const here = import.meta.dirname as string | undefined;
  const dir = here ? join(here, 'builtin') : undefined;
  if (!dir || !existsSync(dir)) return {};
  return Object.fromEntries(readdirSync(dir).filter((f) => f.endsWith('.yaml')).map((f) => [f.replace(/\.yaml$/, ''), readFileSync(join(dir, f), 'utf8')]));
}

export const BUILTIN: Record<string, string> = typeof STARMAP_BUILTIN_SCENARIOS === 'undefined' ? fromDisk() : STARMAP_BUILTIN_SCENARIOS;
