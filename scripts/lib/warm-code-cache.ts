// A program's code cache made after a warm-up (scripts/build.ts, issue 17). Node's SEA `useCodeCache`
// caches what compiling the bundle compiles: its top level only, so every module body and every
// function run before listen was still compiled at each start. Here the build runs the bundle once
// (its modules load, and the program's warm-up runs: shared/multicall.ts) and asks V8 for the code of
// everything that ran; the executable embeds the bundle and that cache as SEA assets, and a small
// loader compiles the bundle with it.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The bundle as a CommonJS function: the text V8 compiles at build time and at each start, byte for byte. */
const WRAPPER = ['(function (exports, require, module, __filename, __dirname) {', '\n})'] as const;

/**
 * A mode of the executable that must not load the bundle: under `arg` (its first argument) the
 * loader runs `source` instead, a statement with nothing of the bundle or its cache in memory (the
 * orchestrator's task spawner, orchestrator/executable.ts).
 */
export interface Divert {
  arg: string;
  source: string;
}

/** The SEA's main script: compiles the embedded bundle with the embedded cache and runs it. */
export function loaderSource(program: string, divert?: Divert): string {
  const load = loadSource(program);
  if (!divert) return `'use strict';\n${load}`;
  return `'use strict';
if (process.argv[2] === ${JSON.stringify(divert.arg)}) {
${divert.source}
} else {
${load}
}
`;
}

function loadSource(program: string): string {
  return `const { getAsset, getRawAsset } = require('node:sea');
const { Script } = require('node:vm');
const source = ${JSON.stringify(WRAPPER[0])} + getAsset('bundle.cjs', 'utf8') + ${JSON.stringify(WRAPPER[1])};
// A cache made under other V8 flags (NODE_OPTIONS) is rejected by V8, which then compiles as usual.
const script = new Script(source, { filename: ${JSON.stringify(`${program}.cjs`)}, cachedData: new Uint8Array(getRawAsset('bundle.cache')) });
const mod = { exports: {} };
script.runInThisContext()(mod.exports, require, mod, process.execPath, require('node:path').dirname(process.execPath));
`;
}

/** The build side: loads the bundle, awaits the warm-ups that runMain reports, writes the cache. */
const TRAINER = `'use strict';
const { Script } = require('node:vm');
const { readFileSync, writeFileSync } = require('node:fs');
const [bundlePath, cachePath] = process.argv.slice(2);
const warmUps = (globalThis[Symbol.for('starmap.warmUps')] = []);
const script = new Script(${JSON.stringify(WRAPPER[0])} + readFileSync(bundlePath, 'utf8') + ${JSON.stringify(WRAPPER[1])}, { filename: bundlePath });
const mod = { exports: {} };
script.runInThisContext()(mod.exports, require, mod, bundlePath, require('node:path').dirname(bundlePath));
const timeout = setTimeout(() => { console.error('the warm-up did not finish in 60 s'); process.exit(1); }, 60_000);
// A program may register its warm-up later than the bundle's top level (the orchestrator's entry
// imports its main dynamically): wait until no new one comes while the others finish.
(async () => {
  await new Promise((resolve) => setImmediate(resolve));
  for (let seen = -1; seen !== warmUps.length; ) {
    seen = warmUps.length;
    await Promise.all(warmUps);
  }
  if (warmUps.length === 0) throw new Error('the bundle registered no warm-up (shared/multicall.ts runMain)');
})().then(() => {
  clearTimeout(timeout);
  writeFileSync(cachePath, script.createCachedData());
  process.exit(0);
}, (err) => { console.error(err); process.exit(1); });
`;

/** Runs the trainer under the executable's own V8 flags (V8 accepts a cache only under the flags that made it). */
export function makeCodeCache(node: string, execArgv: string[], bundlePath: string, work: string): string {
  const trainer = join(work, 'code-cache-trainer.cjs');
  const cachePath = join(work, 'bundle.cache');
  writeFileSync(trainer, TRAINER);
  execFileSync(node, [...execArgv, trainer, bundlePath, cachePath], { stdio: 'pipe', timeout: 120_000 });
  if (readFileSync(cachePath).length === 0) throw new Error(`no code cache was made for ${bundlePath}`);
  return cachePath;
}
