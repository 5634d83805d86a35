// Entry of the orchestrator's single-file executable (scripts/lib/programs.ts). The executor's
// task spawner (tasks/spawner.ts) is this same executable started with SPAWNER_ARG: it must stay a
// small process, so that mode is decided before anything else is evaluated, and only otherwise is
// the orchestrator loaded (esbuild keeps a dynamically imported module lazy inside the bundle:
// nothing of it runs in the spawner). From source, `node orchestrator/main.ts` is the entry and
// the spawner starts as `node -e` code (tasks/spawner-client.ts).
import * as childProcess from 'node:child_process';
import * as fs from 'node:fs';
import { runSpawner, SPAWNER_ARG } from './tasks/spawner.ts';

if (process.argv[2] === SPAWNER_ARG) runSpawner(childProcess, fs);
else void import('./main.ts');
