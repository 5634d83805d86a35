// Hostile inputs for the fuzzer, drawn from a seeded generator so that a failing request can be
// made again from (seed, service, index). Every value goes through `sanitize` before it is sent:
// the services run what they are given (the orchestrator runs commands and containers, the
// collector fetches URLs), so commands, images and URLs are replaced by harmless, loopback-only
// ones, and instance counts are kept small, whatever the generator drew.

/** mulberry32: small, fast, good enough to pick inputs; the same seed gives the same sequence. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A seed for request `index` of `stream` (each request can be drawn again on its own). */
export function seedOf(seed: number, stream: string, index: number): number {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  for (const c of `${stream}:${index}`) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
  return h;
}

export class Draw {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = rng(seed);
  }
  int(max: number): number {
    return Math.floor(this.next() * max);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(list: readonly T[]): T {
    return list[this.int(list.length)]!;
  }
}

export const STRINGS = [
  '',
  ' ',
  '%',
  '%25',
  '%00',
  '\u0000',
  '\n',
  '../..',
  '/',
  '//',
  '.',
  '..',
  '*',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'x'.repeat(3000),
  '\ud800',
  '😀',
  '${PATH}',
  '`id`',
  '<script>',
  '{}',
  '[]',
  'null',
  'true',
  '1e309',
  '-1',
  '0x10',
  'NaN',
  'Infinity',
  'http://127.0.0.1:1/',
  'https://[::1]:1/x',
  'http://localhost:0',
  'ftp://127.0.0.1/',
  'http://127.0.0.1:99999',
  '(.*.*)*X',
  '(a)\\1',
  '[',
  'a{1001}',
  'UNIQUE',
  'LIKE',
  'MAX_PER',
  'hostname',
  'TASK_RUNNING',
  'tcp',
  'udp',
  'HTTP',
  'COMMAND',
  'DOCKER',
  'BRIDGE',
  'OLDEST_FIRST',
  '2017-01-01T00:00:00.000Z',
  '1970-01-01T00:00:00Z',
  'web.00000000-0000-0000-0000-000000000000',
  '/fz/a',
  'fz/b',
  '/',
  'a,b',
  'k==v',
  'k in (a,b)',
];
export const NUMBERS = [0, -1, 1, 2, 3, 1e9, 1e308, -1e308, 0.5, 2 ** 53, 65535, 65536, 10_000, 10_001, 1e-320, 3.7, -0.0];
/** Keys a definition, a group, a resource or an account has, and some no object should. */
export const KEYS = [
  'id',
  'cmd',
  'args',
  'instances',
  'cpus',
  'mem',
  'disk',
  'gpus',
  'env',
  'labels',
  'constraints',
  'ports',
  'portDefinitions',
  'requirePorts',
  'healthChecks',
  'readinessChecks',
  'dependencies',
  'upgradeStrategy',
  'container',
  'ipAddress',
  'secrets',
  'fetch',
  'uris',
  'version',
  'versionInfo',
  'taskKillGracePeriodSeconds',
  'killSelection',
  'backoffSeconds',
  'backoffFactor',
  'maxLaunchDelaySeconds',
  'executor',
  'user',
  'acceptedResourceRoles',
  'residency',
  'unreachableStrategy',
  'storeUrls',
  'apps',
  'groups',
  'scaleBy',
  'ids',
  'url',
  'uid',
  'password',
  'public_key',
  'token',
  'protocol',
  'port',
  'portIndex',
  'name',
  'path',
  'command',
  'value',
  'docker',
  'image',
  'network',
  'portMappings',
  'discovery',
  'policies',
  'spec',
  'metadata',
  '__proto__',
  'constructor',
  '',
  ' ',
];

/** A JSON value: scalars, arrays and objects, now and then very deep or very wide. */
export function value(d: Draw, depth = 0): unknown {
  const r = d.next();
  if (depth > 4 || r < 0.35) return scalar(d);
  if (r < 0.55) return Array.from({ length: d.int(4) }, () => value(d, depth + 1));
  if (r < 0.9) return object(d, depth + 1);
  if (r < 0.95) return deep(d.pick([70, 500, 10_000]), d.chance(0.5));
  return Array.from({ length: d.pick([1000, 20_000]) }, () => (d.chance(0.5) ? 0 : {}));
}

export function scalar(d: Draw): unknown {
  const r = d.next();
  if (r < 0.45) return d.pick(STRINGS);
  if (r < 0.8) return d.pick(NUMBERS);
  if (r < 0.9) return d.chance(0.5);
  return null;
}

export function object(d: Draw, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = d.int(5); i > 0; i--) Object.defineProperty(out, d.pick(KEYS), { value: value(d, depth), enumerable: true, configurable: true, writable: true });
  return out;
}

/** Objects or arrays nested `n` deep (iteratively built: the generator must not overflow either). */
export function deep(n: number, arrays: boolean): unknown {
  let v: unknown = 1;
  for (let i = 0; i < n; i++) v = arrays ? [v] : { a: v };
  return v;
}

/** Bodies that are not JSON, or JSON that parsers like to trip over, as text. */
export const RAW_BODIES = [
  '{',
  '{"a":}',
  'nul',
  '[1,]',
  '\u0000',
  '{"a":1}garbage',
  '1e999999',
  '{"id":"/x","id":"/y"}',
  '\ufeff{}',
  '{"__proto__":{"polluted":1}}',
  '"a string"',
  '123',
  'true',
  '[]',
  '[[[[[[[[[[]]]]]]]]]]',
  'a=1&b=2',
  '--boundary\r\nContent-Disposition: form-data\r\n\r\nx\r\n--boundary--',
  `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
  `{"labels":{${Array.from({ length: 3000 }, (_, i) => `"k${i}":"v"`).join(',')}}}`,
];

/** A number as the services read one (numbers, and numeric strings); never converts objects (deep arrays overflow toString). */
const num = (x: unknown) => (typeof x === 'number' || typeof x === 'string' ? Number(x) : NaN);

const SAFE_CMDS = ['sleep 1000', 'true', 'exit 3', '', '  '];
const LOOPBACK_HOST = /^(127(\.\d{1,3}){3}|localhost|\[::1\])$/i;

/** A URL the services may fetch: loopback only; anything else is replaced by a refused loopback port. */
export function safeUrl(s: string, fallback: string): string {
  if (!s.includes('://')) return s;
  try {
    const u = new URL(s);
    return LOOPBACK_HOST.test(u.hostname) || u.hostname === '' ? s : fallback;
  } catch {
    return /^[a-z][a-z0-9+.-]*:\/\/(127\.|localhost|\[::1\])/i.test(s) ? s : fallback;
  }
}

/**
 * Makes a body harmless to run, in place (iteratively): commands and check commands become
 * `sleep`/`true`, container images a local name that cannot be pulled from anywhere else, docker
 * parameters go, instances and scale factors stay small (an app object without `instances` gets
 * 0 or 1), and every URL points at loopback.
 */
export function sanitize(body: unknown, d: Draw, fallbackUrl: string): unknown {
  if (typeof body === 'string') return safeUrl(body, fallbackUrl);
  const stack: unknown[] = [body];
  for (let seen = 0; stack.length > 0; seen++) {
    if (seen > 200_000) return { tooLargeToCheck: true }; // never send what was not checked whole
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    const o = v as Record<string, unknown>;
    const isArray = Array.isArray(o);
    if (!isArray && ('cmd' in o || 'args' in o || 'container' in o) && !Object.hasOwn(o, 'instances')) o.instances = d.int(2);
    for (const k of Object.keys(o)) {
      const x = o[k];
      if (typeof x === 'string') o[k] = safeUrl(x, fallbackUrl);
      if (isArray) {
        if (x !== null && typeof x === 'object') stack.push(x);
        continue;
      }
      if ((k === 'cmd' || k === 'value') && typeof x === 'string') o[k] = d.pick(SAFE_CMDS);
      else if (k === 'args' && Array.isArray(x)) o[k] = ['sleep', '1000'];
      else if (k === 'image' && typeof x === 'string') o[k] = 'localhost/starmap-fuzz/none:0';
      else if (k === 'parameters' && Array.isArray(x)) o[k] = [];
      else if (k === 'instances' && num(x) > 2 && num(x) <= 10_000) o[k] = 1;
      else if (k === 'scaleBy' && num(x) > 2 && num(x) < 1e6) o[k] = 1.5;
      else if (x !== null && typeof x === 'object') stack.push(x);
    }
  }
  return body;
}
