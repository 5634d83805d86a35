// Where the agent and orchestrator programs are. Inside a single-file executable the others sit
// next to it (dist/bin/…); from source, the built executables are preferred and the sources
// (run by this Node) are the fallback.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { isSea } from 'node:sea';
import type { Programs } from './deploy-plan.ts';

export interface FoundPrograms {
  programs: Programs;
  orchestrator: string[];
  /** How they were found, for the log. */
  origin: string;
}

export function locatePrograms(): FoundPrograms {
  if (isSea()) {
    const dir = dirname(process.execPath);
    const bin = (name: string) => [join(dir, name)];
    return { programs: { probe: bin('probe'), collector: bin('collector') }, orchestrator: bin('orchestrator'), origin: dir };
  }
  // From source: argv[1] is scenarios/main.ts (or a test importing this module from the repo).
  const root =
    process.argv[1] && existsSync(join(dirname(resolve(process.argv[1])), '..', 'package.json'))
      ? join(dirname(resolve(process.argv[1])), '..')
      : process.cwd();
  const built = join(root, 'dist', 'bin');
  const pick = (name: string, entry: string) => (existsSync(join(built, name)) ? [join(built, name)] : [process.execPath, join(root, entry)]);
  return {
    programs: { probe: pick('probe', 'probe/main.ts'), collector: pick('collector', 'collector/main.ts') },
    orchestrator: pick('orchestrator', 'orchestrator/main.ts'),
    origin: existsSync(built) ? built : root,
  };
}
