// The import boundaries of scripts/lint/boundaries.js, through ESLint with the project's own
// config: an import that reaches back up fails `npm run lint`, naming the rule's reason; the
// allowed directions pass. (The whole tree passing is `npm run lint` itself.)
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/process.ts';

const eslint = new ESLint({ cwd: ROOT });

async function problems(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, file) });
  return result!.messages.filter((m) => m.ruleId === 'boundaries/imports').map((m) => m.message);
}

describe('import boundaries', () => {
  it.each([
    ['shared/x.ts', "import { main } from '../probe/main.ts';", 'shared/ must not import ../probe/main.ts'],
    ['shared/netpol/x.ts', "import { readFileSync } from 'node:fs';", 'shared/netpol/ is pure'],
    ['shared/netpol/x.ts', "import { log } from '../logger.ts';", 'shared/netpol/ must not import ../logger.ts'],
    ['probe/x.ts', "import { x } from '../collector/state.ts';", 'the agents depend on shared/ only'],
    ['orchestrator/tasks/x.ts', "import { x } from '../api/apps.ts';", 'the API calls into the parts'],
    ['orchestrator/state/app-definition/x.ts', "import type { X } from '../../api/apps.ts';", 'the API calls into the parts'],
    ['orchestrator/isolation/x.ts', "import { x } from '../tasks/executor.ts';", 'the isolation is handed what it needs'],
    ['orchestrator/isolation/x.ts', "import { Evaluator } from '../../shared/netpol/evaluate.ts';", "the evaluator is the renderer's independent check"],
    ['orchestrator/http/x.ts', "export * from '../state/store.ts';", 'the HTTP layer knows the domain errors'],
    ['scenarios/x.ts', "const m = await import('../probe/main.ts');", 'scenarios/ drives the programs'],
  ])('%s: %s is refused', async (file, code, reason) => {
    const found = await problems(file, code);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(reason);
  });

  it.each([
    ['shared/netpol/x.ts', "import { x } from './types.ts';"],
    ['orchestrator/isolation/x.ts', "import { sendError } from '../http/errors.ts';\nimport { x } from '../../shared/netpol/validate.ts';"],
    ['orchestrator/api/x.ts', "import { x } from '../tasks/tracker.ts';"],
    ['scenarios/x.ts', "import { DEFAULTS } from '../orchestrator/config.ts';\nimport { x } from '../shared/netpol/evaluate.ts';"],
    ['test/x.ts', "import { x } from '../orchestrator/api/apps.ts';"],
  ])('%s: %s is allowed', async (file, code) => {
    expect(await problems(file, code)).toEqual([]);
  });
});
