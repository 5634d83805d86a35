// Bundles a program into one minified CommonJS file with esbuild, as scripts/build.ts does for every
// executable and bench/startup.bench.ts for its bare fastify server (the floor the programs' start
// is compared with, so it must be bundled the same way).
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build, transform, type Plugin } from 'esbuild';

const root = resolve(import.meta.dirname, '..', '..');

/**
 * Edits to dependencies' text, each removing work they do at start that Starmap never needs.
 *
 * Modules loaded at load though never called: fastify's lib/server.js loads node:https and
 * node:http2 (used only for a server made with the `https` or `http2` option) and node:dns (for
 * `localhost`), undici's Client loads its HTTP/2 client (used only when TLS negotiates h2, which
 * Starmap never allows), which loads node:http2, and pino loads node:worker_threads for
 * asynchronous destinations and transports (thread-stream), which Starmap does not use (its
 * destinations are synchronous: shared/logger.ts): ~2 ms of every start. Together they cost a
 * program ~10 MiB of RSS and ~15 ms of CPU at start, and undici's another ~10 MiB once its client
 * has run, which is now only the orchestrator's event callbacks (OpenSSL's TLS state and the HTTP/2
 * binding; bench/startup.bench.ts).
 * The bundle loads each on its first call instead. Likewise fastify's plugin-utils.js loads semver
 * (~40 regular expressions made at load) for plugins that declare the fastify versions they need,
 * which none of Starmap's do, prom-client's CPU metrics load @opentelemetry/api for exemplars,
 * which Starmap does not enable, its heap-space gauges load node:v8 to try it at registration, and
 * fastify's requests load @fastify/proxy-addr for the trustProxy option, which Starmap never sets.
 *
 * Work done at load, per call or per route: yargs' version guess, its terminal width and its
 * signature checks, find-my-way's matchers compiled with new Function for every route and prefix
 * and its test of its own regular expressions, and fastify's default 404 routes for every method
 * (each edit says why). If a dependency's text changes, the build fails here rather than silently
 * losing this.
 */
const DEPENDENCY_EDITS: { file: RegExp; edits: [string, string][] }[] = [
  {
    file: /[\\/]node_modules[\\/]fastify[\\/]lib[\\/]server\.js$/,
    edits: [
      ["const dns = require('node:dns')", "const dns = { lookup: (...args) => require('node:dns').lookup(...args) }"],
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
    file: /[\\/]node_modules[\\/]fastify[\\/]lib[\\/]plugin-utils\.js$/,
    edits: [
      [
        "const semver = require('semver')",
        "const semver = { gt: (...args) => require('semver').gt(...args), coerce: (...args) => require('semver').coerce(...args), satisfies: (...args) => require('semver').satisfies(...args) }",
      ],
    ],
  },
  {
    file: /[\\/]node_modules[\\/]prom-client[\\/]lib[\\/]metrics[\\/]processCpuTotal\.js$/,
    edits: [
      [
        "const OtelApi = require('@opentelemetry/api');",
        "const OtelApi = { get trace() { return require('@opentelemetry/api').trace; }, get context() { return require('@opentelemetry/api').context; } };",
      ],
    ],
  },
  {
    // The heap-space gauges load node:v8 (~0.5 ms) at registration, to try it once (for Bun,
    // which lacks it); Starmap runs on Node, so node:v8 loads at the first scrape instead.
    file: /[\\/]node_modules[\\/]prom-client[\\/]lib[\\/]metrics[\\/]heapSpacesSizeAndUsed\.js$/,
    edits: [
      ["const v8 = require('v8');", "const v8 = { getHeapSpaceStatistics: () => require('v8').getHeapSpaceStatistics() };"],
      [
        "\ttry {\n\t\tv8.getHeapSpaceStatistics();\n\t} catch (e) {\n\t\tif (e.code === 'ERR_NOT_IMPLEMENTED') {\n\t\t\treturn; // Bun\n\t\t}\n\t\tthrow e;\n\t}\n",
        '',
      ],
    ],
  },
  {
    // Every yargs made guesses its program's version from the nearest package.json, walking up from
    // the executable's folder and listing each folder on the way (for a program in /usr/local/bin,
    // every folder up to /, then a failed assertion): ~2.5 ms of every start. Every program declares
    // its own version (shared/cli.ts, scenarios/main.ts), which replaces the guess.
    file: /[\\/]node_modules[\\/]yargs[\\/]build[\\/]lib[\\/]yargs-factory\.js$/,
    edits: [['        yargs.version();\n', '        yargs.version(false); // declared by the program\n']],
  },
  {
    // yargs checks the arguments of each of its own calls against a signature string, which it
    // parses with regular expressions at every call (several per flag a program declares): ~1 ms of
    // the orchestrator's start. The parse depends on the string alone and nobody changes it.
    file: /[\\/]node_modules[\\/]yargs[\\/]build[\\/]lib[\\/]argsert\.js$/,
    edits: [
      ['const positionName = ', 'const parsedSignatures = new Map();\nconst positionName = '],
      ['parseCommand(`cmd ${arg1}`),', 'parsedSignatures.get(arg1) ?? parsedSignatures.set(arg1, parseCommand(`cmd ${arg1}`)).get(arg1),'],
    ],
  },
  {
    // yargs' shim reads the terminal's width at load, for help text: that creates process.stdout
    // (~2 ms) in every program, whose output goes through pino's own stream on fd 1.
    file: /[\\/]node_modules[\\/]yargs[\\/]lib[\\/]platform-shims[\\/]esm\.mjs$/,
    edits: [
      [
        "stdColumns: typeof process.stdout.columns !== 'undefined' ? process.stdout.columns : null",
        "get stdColumns() { return typeof process.stdout.columns !== 'undefined' ? process.stdout.columns : null }",
      ],
    ],
  },
  {
    // find-my-way compiles small functions with new Function for each route and method it adds (one
    // that builds the route's params object, one that matches its constraints). The code cache
    // cannot hold code made by new Function, so every start compiled them again for each route,
    // though their texts hardly differ. Each depends on its text alone (the constraint matcher
    // reads its storage through `this`), so one function per text serves every route.
    file: /[\\/]node_modules[\\/]find-my-way[\\/]lib[\\/]handler-storage\.js$/,
    edits: [
      [
        'class HandlerStorage {',
        "const compiled = new Map()\nfunction compileOnce (params, body) {\n  const key = params + '\\0' + body\n  let fn = compiled.get(key)\n  if (fn === undefined) compiled.set(key, (fn = new Function(params, body)))\n  return fn\n}\n\nclass HandlerStorage {",
      ],
      ["return new Function('NullObject', fnBody.join('\\n'))(NullObject)", "return compileOnce('NullObject', fnBody.join('\\n'))(NullObject)"],
      [
        "this._getHandlerMatchingConstraints = new Function('derivedConstraints', lines.join('\\n'))",
        "this._getHandlerMatchingConstraints = compileOnce('derivedConstraints', lines.join('\\n'))",
      ],
    ],
  },
  {
    // A static node's prefix (shorter than 16 characters; longer ones use indexOf upstream) was
    // compared by a chain of charCodeAt tests compiled with new Function, one per distinct prefix
    // at every start (17 in the orchestrator's). String#startsWith gives the same answer natively:
    // the caller has matched the first character, and past the path's end both say no.
    file: /[\\/]node_modules[\\/]find-my-way[\\/]lib[\\/]node\.js$/,
    edits: [
      [
        "  const lines = []\n  for (let i = 1; i < prefix.length; i++) {\n    const charCode = prefix.charCodeAt(i)\n    lines.push(`path.charCodeAt(i + ${i}) === ${charCode}`)\n  }\n  return new Function('path', 'i', `'use strict'\\nreturn ${lines.join(' && ')}`) // eslint-disable-line\n",
        '  return function matchShortPrefix (path, i) {\n    return path.startsWith(prefix, i)\n  }\n',
      ],
    ],
  },
  {
    // Every fastify instance adds its default 404 handler to its 404 router for each of the 35
    // methods Node knows, twice (`/` and `/*`): 70 routes, ~1 ms of every start, for a router that
    // is read only when a request matches no route. They are added at its first read instead, in
    // the order they were set. (A clash between two 404 handlers of one prefix in sibling plugins
    // would then throw at that request instead of at ready: Starmap sets one, on the root.)
    file: /[\\/]node_modules[\\/]fastify[\\/]lib[\\/]four-oh-four\.js$/,
    edits: [
      [
        '  return { router, setNotFoundHandler, setContext, arrange404 }',
        '  const pendingRoutes = []\n  function addPendingRoutes () {\n    while (pendingRoutes.length > 0) pendingRoutes.shift()()\n  }\n\n  return { router, setNotFoundHandler, setContext, arrange404, addPendingRoutes }',
      ],
      [
        "    router.all(prefix + (prefix.endsWith('/') ? '*' : '/*'), routeHandler, context)\n    router.all(prefix, routeHandler, context)",
        "    pendingRoutes.push(() => {\n      router.all(prefix + (prefix.endsWith('/') ? '*' : '/*'), routeHandler, context)\n      router.all(prefix, routeHandler, context)\n    })",
      ],
    ],
  },
  {
    // find-my-way tests three regular expressions of its own with safe-regex2 at load (each parsed
    // by ret, whose tables are built at load too: ~1 ms of every start), to fail if a change to its
    // source made one unsafe; the bundle's copy is the released one. safe-regex2 still tests every
    // regular expression a route declares, loaded at the first such route.
    file: /[\\/]node_modules[\\/]find-my-way[\\/]index\.js$/,
    edits: [
      ["const isRegexSafe = require('safe-regex2')", "const isRegexSafe = (...args) => require('safe-regex2')(...args)"],
      [
        "if (!isRegexSafe(OPTIONAL_PARAM_REGEXP)) {\n  throw new Error('the OPTIONAL_PARAM_REGEXP is not safe, update this module')\n}\n\nif (!isRegexSafe(ESCAPE_REGEXP)) {\n  throw new Error('the ESCAPE_REGEXP is not safe, update this module')\n}\n\nif (!isRegexSafe(REMOVE_DUPLICATE_SLASHES_REGEXP)) {\n  throw new Error('the REMOVE_DUPLICATE_SLASHES_REGEXP is not safe, update this module')\n}\n",
        '// its own regular expressions: tested by its release, not at every start (scripts/lib/bundle.ts)\n',
      ],
    ],
  },
  {
    // fastify's requests load @fastify/proxy-addr (with ipaddr.js: ~1 ms of every start) for the
    // trustProxy option, which no Starmap server sets: loaded at its first use instead.
    file: /[\\/]node_modules[\\/]fastify[\\/]lib[\\/]request\.js$/,
    edits: [
      [
        "const proxyAddr = require('@fastify/proxy-addr')",
        "const proxyAddr = { compile: (...args) => require('@fastify/proxy-addr').compile(...args), all: (...args) => require('@fastify/proxy-addr').all(...args) }",
      ],
    ],
  },
  {
    file: /[\\/]node_modules[\\/]fastify[\\/]fastify\.js$/,
    edits: [
      ['    fourOhFour.router.lookup(req, res)', '    fourOhFour.addPendingRoutes()\n    fourOhFour.router.lookup(req, res)'],
      ['      fourOhFour.router.compile()', '      fourOhFour.addPendingRoutes()\n      fourOhFour.router.compile()'],
    ],
  },
  {
    file: /[\\/]node_modules[\\/]undici[\\/]lib[\\/]dispatcher[\\/]client\.js$/,
    edits: [["const connectH2 = require('./client-h2.js')", "const connectH2 = (...args) => require('./client-h2.js')(...args)"]],
  },
];

/**
 * Function and class names are kept only where a program shows them. esbuild's `keepNames` wraps
 * every function of a bundle, each time one is made, in a call that redefines its `name`: 3-4 ms
 * of the orchestrator's and the collector's start (none measurable of the probe's;
 * bench/RESULTS.md), for names that minifying would otherwise change. A program shows them in its
 * own code (a logged error's `type` is its class' name, fastify names plugins after their
 * functions) and in the dependencies' error classes (undici, jose, yargs, TypeBox and fastify's
 * errors are logged or named after their classes), so names are kept in Starmap's own modules and
 * in every dependency module that defines an error class or captures a stack; everywhere else they
 * are minified.
 */
const SHOWS_NAMES = /\bclass\s+[\w$]+\s+extends\s+[\w.$]*(?:Error|Exception)\b|\bError\.captureStackTrace\b/;
const tsconfigRaw = readFileSync(join(root, 'tsconfig.json'), 'utf8');

async function keepNamesWhereShown(path: string, text: string): Promise<string | undefined> {
  const own = !/[\\/]node_modules[\\/]/.test(path);
  if (!own && !SHOWS_NAMES.test(text)) return undefined;
  const out = await transform(text, { loader: path.endsWith('.ts') ? 'ts' : 'js', keepNames: true, target: 'node24', tsconfigRaw, sourcefile: path });
  return out.code;
}

const dependencyEdits: Plugin = {
  name: 'dependency-edits',
  setup(b) {
    for (const { file, edits } of DEPENDENCY_EDITS) {
      b.onLoad({ filter: file }, async (args) => {
        let text = readFileSync(args.path, 'utf8');
        for (const [eager, lazy] of edits) {
          if (!text.includes(eager)) throw new Error(`${args.path} no longer has "${eager}": update DEPENDENCY_EDITS in scripts/lib/bundle.ts`);
          text = text.replace(eager, lazy);
        }
        return { contents: (await keepNamesWhereShown(args.path, text)) ?? text, loader: 'js' };
      });
    }
  },
};

/** Every other module of the bundle, with its names kept where shown (above). */
const namesWhereShown: Plugin = {
  name: 'names-where-shown',
  setup(b) {
    b.onLoad({ filter: /\.[cm]?[jt]s$/, namespace: 'file' }, async (args) => {
      const contents = await keepNamesWhereShown(args.path, readFileSync(args.path, 'utf8'));
      return contents === undefined ? undefined : { contents, loader: 'js' };
    });
  },
};

/**
 * Node's built-in modules that a program needs only after it answers, loaded at first use: every
 * import of one gets an object whose properties load the module when first read (a namespace or
 * named import reads them at the call, as esbuild compiles imports to property reads). The
 * orchestrator loaded node:child_process (to spawn tasks, ~11 ms with what it pulls in) and
 * node:fs/promises before its first answer; the probe node:crypto (for UDP nonces) and
 * node:dns/promises (for its resolver, which IP targets never need); and node:dgram (for UDP checks
 * and echoes: the orchestrator never makes them, a probe only for udp:// targets and --serve;
 * ~0.4 ms). node:assert is called at start (fastify's router checks every route it registers), so
 * it has its own stand-in below.
 */
const LAZY_BUILTINS = ['child_process', 'fs/promises', 'crypto', 'dns/promises', 'dgram'];

const lazyBuiltins: Plugin = {
  name: 'lazy-builtins',
  setup(b) {
    b.onResolve({ filter: new RegExp(`^(node:)?(${LAZY_BUILTINS.join('|')})$`) }, (args) => ({
      path: args.path.replace(/^node:/, ''),
      namespace: 'lazy-builtin',
    }));
    b.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (args) => {
      const id = `node:${args.path}`;
      // The export names of this Node (a build runs on the runtime it embeds).
      const names = Object.keys(process.getBuiltinModule(id) as object);
      const props = names.map((n) => `${JSON.stringify(n)}: { enumerable: true, get: () => load()[${JSON.stringify(n)}] }`);
      const contents = `let m;\nconst load = () => (m ??= process.getBuiltinModule(${JSON.stringify(id)}));\nmodule.exports = Object.defineProperties({}, { ${props.join(', ')} });\n`;
      return { contents, loader: 'js' };
    });
  },
};

/** node:assert, loaded only when an assertion fails or more of it is used (scripts/lib/assert-on-failure.ts). */
const assertOnFailure: Plugin = {
  name: 'assert-on-failure',
  setup(b) {
    b.onResolve({ filter: /^(node:)?assert$/ }, () => ({ path: 'assert', namespace: 'assert-on-failure' }));
    b.onLoad({ filter: /.*/, namespace: 'assert-on-failure' }, () => {
      const names = Object.keys(process.getBuiltinModule('node:assert') as object);
      const facade = join(root, 'scripts', 'lib', 'assert-on-failure.ts');
      return { contents: `module.exports = require(${JSON.stringify(facade)}).assertOnFailure(${JSON.stringify(names)});\n`, loader: 'js', resolveDir: root };
    });
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

/** Bundles `entry` into `outfile`; `define` adds build-time constants. */
export async function bundleProgram(entry: string, outfile: string, define: Record<string, string> = {}): Promise<void> {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    minifyWhitespace: true,
    minifySyntax: true,
    minifyIdentifiers: true,
    legalComments: 'none',
    logLevel: 'warning',
    loader: { '.html': 'text', '.css': 'text', '.svg': 'text' },
    define: { 'process.env.STARMAP_BUNDLED': '"1"', ...define },
    plugins: [dependencyEdits, lazyBuiltins, assertOnFailure, oneAjv, namesWhereShown],
  });
}
