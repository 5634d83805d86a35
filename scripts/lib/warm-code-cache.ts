// A program's code cache made after a warm-up (scripts/build.ts, issue 17). Node's SEA `useCodeCache`
// caches what compiling the bundle compiles: its top level only, so every module body and every
// function run before listen was still compiled at each start. Here the build runs the bundle once
// (its modules load, and the program's warm-up runs: shared/multicall.ts) and asks V8 for the code of
// everything that ran; a small loader (the SEA's main script) compiles the bundle with that cache.
//
// The bundle and the cache are appended to the executable after its ELF image (appendPayload), not
// embedded as SEA assets: an asset lives in the mapped SEA note, and every page of it that start-up
// reads stays in the process' RSS for good (2.1 MiB of the probe's 60 MiB at rest). Read with
// pread instead, they pass through a buffer that is freed once V8 has compiled the bundle.
import { execFileSync } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The bundle as a CommonJS function: the text V8 compiles at build time and at each start, byte for byte. */
const WRAPPER = ['(function (exports, require, module, __filename, __dirname) {', '\n})'] as const;

/** What makeCodeCache leaves in its work folder for appendPayload: the wrapped bundle and V8's cache of it. */
export interface Payload {
  source: string;
  cache: string;
}

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

/** Ends the executable: the source's and the cache's lengths (u64 LE), then this mark. */
const MARK = 'starmap-payload1';
const TRAILER = 16 + MARK.length;

/** What the build appends to the executable: the wrapped bundle, its code cache, the trailer. */
export function appendPayload(executable: string, payload: Payload): void {
  const source = readFileSync(payload.source);
  const cache = readFileSync(payload.cache);
  const trailer = Buffer.alloc(TRAILER);
  trailer.writeBigUInt64LE(BigInt(source.length), 0);
  trailer.writeBigUInt64LE(BigInt(cache.length), 8);
  trailer.write(MARK, 16, 'latin1');
  appendFileSync(executable, Buffer.concat([source, cache, trailer]));
}

// /proc/self/exe is the file this process runs even if a build has since renamed another over it.
function loadSource(program: string): string {
  return `const { openSync, fstatSync, readSync, closeSync } = require('node:fs');
const { Script } = require('node:vm');
const lost = () => {
  process.stderr.write(${JSON.stringify(`${program}: the executable has lost its bundle: rebuild it (npm run build)\n`)});
  process.exit(1);
};
const fd = openSync('/proc/self/exe', 'r');
const read = (length, position) => {
  if (position < 0) lost();
  const buf = Buffer.allocUnsafeSlow(length);
  for (let at = 0; at < length; ) {
    const n = readSync(fd, buf, at, length - at, position + at);
    if (n === 0) lost();
    at += n;
  }
  return buf;
};
const end = fstatSync(fd).size;
const trailer = read(${TRAILER}, end - ${TRAILER});
if (trailer.toString('latin1', 16) !== ${JSON.stringify(MARK)}) lost();
const sourceLength = Number(trailer.readBigUInt64LE(0));
const cacheLength = Number(trailer.readBigUInt64LE(8));
const bytes = read(sourceLength + cacheLength, end - ${TRAILER} - sourceLength - cacheLength);
closeSync(fd);
// A cache made under other V8 flags (NODE_OPTIONS) is rejected by V8, which then compiles as usual.
const script = new Script(bytes.toString('utf8', 0, sourceLength), { filename: ${JSON.stringify(`${program}.cjs`)}, cachedData: bytes.subarray(sourceLength) });
const mod = { exports: {} };
script.runInThisContext()(mod.exports, require, mod, process.execPath, require('node:path').dirname(process.execPath));
`;
}

/** The build side: loads the bundle, awaits the warm-ups that runMain reports, writes the cache. */
const TRAINER = `'use strict';
const { Script } = require('node:vm');
const { readFileSync, writeFileSync } = require('node:fs');
const [sourcePath, cachePath, bundlePath] = process.argv.slice(2);
const warmUps = (globalThis[Symbol.for('starmap.warmUps')] = []);
const script = new Script(readFileSync(sourcePath, 'utf8'), { filename: bundlePath });
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

/**
 * Wraps the bundle once (the trainer compiles that file and the executable carries it) and runs the
 * trainer under the executable's own V8 flags (V8 accepts a cache only under the flags that made it).
 */
export function makeCodeCache(node: string, execArgv: string[], bundlePath: string, work: string): Payload {
  const trainer = join(work, 'code-cache-trainer.cjs');
  const payload = { source: join(work, 'bundle.wrapped.cjs'), cache: join(work, 'bundle.cache') };
  writeFileSync(payload.source, WRAPPER[0] + readFileSync(bundlePath, 'utf8') + WRAPPER[1]);
  writeFileSync(trainer, TRAINER);
  execFileSync(node, [...execArgv, trainer, payload.source, payload.cache, bundlePath], { stdio: 'pipe', timeout: 120_000 });
  if (readFileSync(payload.cache).length === 0) throw new Error(`no code cache was made for ${bundlePath}`);
  return payload;
}
