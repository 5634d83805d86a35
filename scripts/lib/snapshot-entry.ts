// The script from which Node takes an executable's start-up snapshot (scripts/build.ts, issue 17):
// the program's bundle, wrapped so that Node's built-in modules whose state a snapshot cannot hold
// (the HTTP parser, sockets, TLS, ...) load when first used after start instead of when the bundle
// loads. Everything else (fastify, pino, yargs, prom-client, the program's own modules, and the code
// its warm-up ran, see shared/multicall.ts) is in the snapshot, ready when the executable starts.
//
// A lazy module is an object with the real module's keys, known at build time from the same Node
// (a snapshot only runs on the runtime that made it). Each key is a getter that loads the module;
// only plain data (http.STATUS_CODES, http.METHODS), which fastify reads while it loads, is copied.
import { createRequire } from 'node:module';

/** Built-in modules that must not load while the snapshot is taken. */
export const LAZY_BUILTINS = ['http', 'https', 'http2', 'tls', 'dgram', 'dns', 'dns/promises', 'child_process', 'zlib'];

const requireBuiltin = createRequire(import.meta.url);

function isPlainData(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  return Object.values(value).every((v) => v === null || (typeof v !== 'object' && typeof v !== 'function'));
}

/** Per lazy module: key → its value when it is plain data, else null (read from the real module). */
function lazyModuleKeys(): Record<string, Record<string, unknown>> {
  const keys: Record<string, Record<string, unknown>> = {};
  for (const name of LAZY_BUILTINS) {
    const mod = requireBuiltin(`node:${name}`) as Record<string, unknown>;
    keys[name] = Object.fromEntries(Object.keys(mod).map((k) => [k, isPlainData(mod[k]) ? mod[k] : null]));
  }
  return keys;
}

/** The snapshot's entry script for a CommonJS bundle. */
export function snapshotEntry(bundle: string): string {
  return `'use strict';
const LAZY = ${JSON.stringify(lazyModuleKeys())};
const lazyModules = new Map();
const requireNow = require;
function requireLazily(id) {
  const name = id.startsWith('node:') ? id.slice(5) : id;
  if (!Object.hasOwn(LAZY, name)) return requireNow(id);
  let shim = lazyModules.get(name);
  if (shim) return shim;
  let real;
  const load = () => (real ??= requireNow('node:' + name));
  shim = {};
  for (const [key, data] of Object.entries(LAZY[name])) {
    if (data !== null) shim[key] = data;
    else Object.defineProperty(shim, key, { enumerable: true, configurable: true, get: () => load()[key], set: (v) => { load()[key] = v; } });
  }
  lazyModules.set(name, shim);
  return shim;
}
(function (require, module, exports) {
${bundle}
})(requireLazily, { exports: {} }, {});
`;
}
