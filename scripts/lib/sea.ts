// Turns a CommonJS bundle into a single-file executable: Node's SEA tooling makes the blob (with a
// code cache, see START in scripts/build.ts), postject injects it into a stripped copy of the Node
// runtime. Used by scripts/build.ts and by bench/startup.bench.ts (a bare fastify server built the
// same way, as the floor the programs' start is compared with).
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { appendPayload, loaderSource, makeCodeCache, type Divert, type Payload } from './warm-code-cache.ts';

const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const POSTJECT = join(resolve(import.meta.dirname, '..', '..'), 'node_modules', 'postject', 'dist', 'cli.js');

/** How an executable loads its bundle: with a code cache made after a warm-up, Node's own, or none. */
export type Start = 'warm-code-cache' | 'code-cache' | 'bundle';

/** Runs a tool quietly; its output is shown only when it fails. */
export function run(cmd: string, args: string[]): void {
  try {
    execFileSync(cmd, args, { stdio: 'pipe' });
  } catch (err) {
    const e = err as { stderr?: Buffer; stdout?: Buffer };
    process.stderr.write(`${cmd} ${args.join(' ')} failed:\n${e.stdout?.toString() ?? ''}${e.stderr?.toString() ?? ''}`);
    throw err;
  }
}

export function hasCommand(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function stripTool(arch: 'x64' | 'arm64'): string | undefined {
  const candidates = arch === 'x64' ? ['strip', 'llvm-strip'] : ['aarch64-linux-gnu-strip', 'llvm-strip'];
  return candidates.find(hasCommand);
}

export interface ExecutableOptions {
  /** The program's name (the loader names its bundle after it). */
  name: string;
  bundlePath: string;
  /** The Node runtime to embed, for `arch`. A code cache needs it to be this process' own runtime. */
  runtime: string;
  arch: 'x64' | 'arm64';
  start: Start;
  /** Node/V8 options baked in (a code cache is made under them). */
  execArgv: string[];
  /** Where the executable goes: written beside it and renamed over it, as it may be running. */
  out: string;
  /** A scratch folder, removed at the end. */
  work: string;
  /** With `warm-code-cache`: a mode that runs without loading the bundle (warm-code-cache.ts). */
  divert?: Divert | undefined;
}

export function writeExecutable(o: ExecutableOptions): void {
  mkdirSync(o.work, { recursive: true });
  const blob = join(o.work, 'sea.blob');
  const config = join(o.work, 'sea-config.json');
  let main = o.bundlePath;
  let payload: Payload | undefined;
  if (o.start === 'warm-code-cache') {
    main = join(o.work, 'loader.cjs');
    writeFileSync(main, loaderSource(o.name, o.divert));
    payload = makeCodeCache(process.execPath, o.execArgv, o.bundlePath, o.work);
  }
  writeFileSync(
    config,
    JSON.stringify({
      main,
      output: blob,
      disableExperimentalSEAWarning: true,
      useCodeCache: o.start === 'code-cache',
      useSnapshot: false,
      execArgv: o.execArgv,
    }),
  );
  run(process.execPath, [...o.execArgv, '--experimental-sea-config', config]);
  const tmp = join(o.work, 'node');
  copyFileSync(o.runtime, tmp);
  chmodSync(tmp, 0o755);
  // Strip before injecting: stripping after injection breaks the binary.
  const strip = stripTool(o.arch);
  if (strip) run(strip, [tmp]);
  else console.warn(`no strip tool for ${o.arch}: ${basename(o.out)} keeps its symbols`);
  run(process.execPath, [POSTJECT, tmp, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE]);
  if (payload) appendPayload(tmp, payload);
  mkdirSync(dirname(o.out), { recursive: true });
  const staged = `${o.out}.new-${process.pid}`;
  copyFileSync(tmp, staged);
  chmodSync(staged, 0o755);
  renameSync(staged, o.out);
  rmSync(o.work, { recursive: true, force: true });
}
