// Every endpoint of the three services, and how to draw a hostile request for each: paths with
// odd segments, queries with odd parameters, bodies that are almost right (a valid definition with
// a few fields replaced by hostile values), plainly wrong, not JSON, or huge.
import type { Draw } from './values.ts';
import { RAW_BODIES, STRINGS, deep, object, sanitize, value } from './values.ts';

export type Service = 'orchestrator' | 'collector' | 'probe';
type BodyKind = 'none' | 'app' | 'apps' | 'group' | 'taskIds' | 'login' | 'user' | 'resource' | 'policy';
type Endpoint = [method: string, path: string, body?: BodyKind];

export const ENDPOINTS: Record<Service, Endpoint[]> = {
  orchestrator: [
    ['GET', '/'],
    ['GET', '/marathon/v2/apps'],
    ['POST', '/marathon/v2/apps', 'app'],
    ['GET', '/v2/apps'],
    ['POST', '/v2/apps', 'app'],
    ['PUT', '/v2/apps', 'apps'],
    ['PATCH', '/v2/apps', 'apps'],
    ['GET', '/v2/apps/{app}'],
    ['PUT', '/v2/apps/{app}', 'app'],
    ['PATCH', '/v2/apps/{app}', 'app'],
    ['DELETE', '/v2/apps/{app}'],
    ['POST', '/v2/apps/{app}/restart'],
    ['GET', '/v2/apps/{app}/versions'],
    ['GET', '/v2/apps/{app}/versions/{version}'],
    ['GET', '/v2/apps/{app}/tasks'],
    ['DELETE', '/v2/apps/{app}/tasks'],
    ['DELETE', '/v2/apps/{app}/tasks/{task}'],
    ['GET', '/v2/apps/{app}/*'],
    ['GET', '/v2/apps/{app}/*/tasks'],
    ['GET', '/v2/groups'],
    ['POST', '/v2/groups', 'group'],
    ['PUT', '/v2/groups', 'group'],
    ['GET', '/v2/groups/{app}'],
    ['POST', '/v2/groups/{app}', 'group'],
    ['PUT', '/v2/groups/{app}', 'group'],
    ['DELETE', '/v2/groups/{app}'],
    ['GET', '/v2/groups/{app}/versions'],
    ['GET', '/v2/groups/{app}/versions/{version}'],
    ['GET', '/v2/tasks'],
    ['POST', '/v2/tasks/delete', 'taskIds'],
    ['GET', '/v2/deployments'],
    ['DELETE', '/v2/deployments/{deployment}'],
    ['GET', '/v2/queue'],
    ['DELETE', '/v2/queue/{app}/delay'],
    ['GET', '/v2/info'],
    ['GET', '/v2/leader'],
    ['DELETE', '/v2/leader'],
    ['GET', '/ping'],
    ['GET', '/metrics'],
    ['GET', '/help'],
    ['GET', '/logging'],
    ['GET', '/v2/events'],
    ['GET', '/v2/eventSubscriptions'],
    ['POST', '/v2/eventSubscriptions'],
    ['DELETE', '/v2/eventSubscriptions'],
    ['POST', '/acs/api/v1/auth/login', 'login'],
    ['GET', '/acs/api/v1/auth/jwks'],
    ['GET', '/acs/api/v1/users'],
    ['GET', '/acs/api/v1/users/{uid}'],
    ['PUT', '/acs/api/v1/users/{uid}', 'user'],
    ['PATCH', '/acs/api/v1/users/{uid}', 'user'],
    ['DELETE', '/acs/api/v1/users/{uid}'],
    ['GET', '/v2/starmap/policies'],
    ['POST', '/v2/starmap/policies', 'policy'],
    ['GET', '/v2/starmap/policies/{policy}'],
    ['PUT', '/v2/starmap/policies/{policy}', 'policy'],
    ['DELETE', '/v2/starmap/policies/{policy}'],
    ['GET', '/v2/starmap/network'],
    ['GET', '/v2/starmap/namespaces'],
    ['POST', '/v2/starmap/changes', 'policy'],
    ['GET', '/v2/starmap/drops'],
  ],
  collector: [
    ['GET', '/'],
    ['GET', '/index.html'],
    ['GET', '/assets/{asset}'],
    ['GET', '/resources'],
    ['POST', '/resources', 'resource'],
    ['GET', '/resources/{resource}'],
    ['PUT', '/resources/{resource}', 'resource'],
    ['DELETE', '/resources/{resource}'],
    ['GET', '/responses'],
    ['GET', '/responses/{resource}'],
    ['GET', '/responses/example'],
    ['GET', '/healthz'],
    ['GET', '/metrics'],
  ],
  probe: [
    ['GET', '/status'],
    ['GET', '/healthz'],
    ['GET', '/metrics'],
    ['GET', '/'],
  ],
};

const ODD = [
  '%25',
  '%2F',
  '%2e%2e',
  '..',
  '.',
  '%00',
  '%',
  '%zz',
  'A',
  'a%20b',
  '__proto__',
  'constructor',
  'x'.repeat(300),
  '*',
  '',
  ';',
  '%C0%AF',
  '😀',
  '\\',
];
const SEGMENTS: Record<string, string[]> = {
  app: ['fz/a', 'fz/b/c', 'fz', 'fz/d', 'nope', `${'a/'.repeat(40)}a`, 'fz/*', ...ODD],
  version: ['2017-01-01T00:00:00.000Z', 'notadate', '1e309', '0', ...ODD],
  task: ['fz_a.00000000-0000-0000-0000-000000000000', 'fz_a.0', 'x', ...ODD],
  deployment: ['00000000-0000-0000-0000-000000000000', 'x', ...ODD],
  uid: ['fuzz', 'fuzz2', 'bot', ...ODD],
  policy: ['p1', 'default/np', 'a/b/c', ...ODD],
  resource: ['r1', 'r2', 'probe', ...ODD],
  asset: ['app.js', 'style.css', '../../package.json', '..%2F..%2Fpackage.json', ...ODD],
};
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'PROPFIND', 'TRACE'];
const QUERY_KEYS = [
  'embed',
  'label',
  'force',
  'scale',
  'wipe',
  'host',
  'partialUpdate',
  'dryRun',
  'status',
  'status[]',
  'cmd',
  'id',
  'event_type',
  'plan-format',
  'callbackUrl',
  'example',
  '__proto__',
  'constructor',
  '',
];
const QUERY_VALUES = [
  'true',
  'false',
  'apps.tasks',
  'app.counts',
  'group.apps.tasks',
  'group.groups',
  'apps.taskStats',
  'running',
  'staging',
  'light',
  'tier==front',
  'a in (b,c)',
  'a notin ()',
  '!=',
  ...STRINGS,
];
/** Host values a DNS-rebinding page, a confused proxy or a hostile client sends (the allow-list: shared/web-guard.ts). */
const HOSTS = [
  'evil.example',
  'evil.example:9001',
  'localhost.',
  'ui.localhost:1',
  // (An unclosed '[' undici cannot send: it reads the name from the Host.)
  '[::1]]',
  '[not-v6]',
  '[::1]:99999',
  '[fe80::1%25eth0]',
  '127.0.0.1:0',
  '127.1',
  'x@127.0.0.1',
  'a'.repeat(300),
  '..',
  'LOCALHOST',
];
const FETCH_SITES = ['cross-site', 'same-site', 'same-origin', 'none', 'bogus', ''];
const ACCEPT = [undefined, 'application/json', 'text/plain', 'text/event-stream', '*/*', 'text/html', 'application/xml', ';;;', 'text/event-stream;q=0'];
const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  undefined,
  'multipart/form-data; boundary=boundary',
  'application/json; charset=latin1',
  '*/*',
  '',
];

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface DrawContext {
  /** `authorization` header value for the orchestrator (a valid token). */
  token?: string | undefined;
  /** Where URLs that would leave the machine are pointed instead (a loopback port that refuses). */
  fallbackUrl: string;
  /** A URL the collector may fetch for real (the probe's /status). */
  probeUrl: string;
}

/** encodeURIComponent that also takes lone surrogates (encoded as U+FFFD, as a browser would). */
const enc = (s: string) => encodeURIComponent(s.toWellFormed());

function fillPath(d: Draw, template: string): string {
  return template.replace(/\{(\w+)\}/g, (_m, k: string) => {
    const s = d.pick(SEGMENTS[k] ?? ODD);
    // Most segments are sent as a client would encode them, some raw (invalid escapes included).
    return d.chance(0.7)
      ? s
          .split('/')
          .map((x) => (/%[0-9a-fA-F]{2}/.test(x) ? x : enc(x)))
          .join('/')
      : s;
  });
}

function drawQuery(d: Draw, ctx: DrawContext): string {
  if (d.chance(0.5)) return '';
  const parts: string[] = [];
  for (let i = 1 + d.int(3); i > 0; i--) {
    const k = d.pick(QUERY_KEYS);
    const v = k === 'callbackUrl' && d.chance(0.5) ? ctx.fallbackUrl : d.pick(QUERY_VALUES);
    const raw = v.includes('://') && !v.startsWith('http://127.') && !v.startsWith('https://[::1]') ? ctx.fallbackUrl : v;
    parts.push(d.chance(0.85) ? `${enc(k)}=${enc(raw)}` : `${k}=${raw.replace(/[^\x21-\x7e]/g, '')}`);
  }
  return `?${parts.join('&')}`;
}

const APP_IDS = ['/fz/a', '/fz/b/c', '/fz/d', 'fz/e', '/fz', '/', ''];

function appBody(d: Draw): unknown {
  if (d.chance(0.15)) return value(d);
  const app: Record<string, unknown> = { id: d.pick(APP_IDS), cmd: 'sleep 1000', instances: d.int(2) };
  if (d.chance(0.3)) app.portDefinitions = [{ port: 0, name: 'http' }];
  if (d.chance(0.2))
    app.healthChecks = [{ protocol: d.pick(['HTTP', 'TCP', 'COMMAND']), portIndex: 0, command: { value: 'true' }, gracePeriodSeconds: 1, intervalSeconds: 1 }];
  if (d.chance(0.2))
    app.constraints = [['hostname', d.pick(['LIKE', 'UNLIKE', 'UNIQUE', 'MAX_PER', 'CLUSTER']), d.pick(['127\\.0\\..*', '(.*.*)*X', '(a)\\1', '1', '['])]];
  if (d.chance(0.1)) app.container = { type: 'DOCKER', docker: { image: 'x', network: d.pick(['HOST', 'BRIDGE']), portMappings: [{ containerPort: 80 }] } };
  for (let i = d.int(4); i > 0; i--)
    Object.defineProperty(
      app,
      d.pick(Object.keys(app).concat(['labels', 'env', 'secrets', 'ports', 'dependencies', 'upgradeStrategy', 'ipAddress', 'version', 'instances'])),
      { value: value(d), enumerable: true, configurable: true, writable: true },
    );
  return app;
}

function groupBody(d: Draw, depth = 0): unknown {
  if (d.chance(0.15)) return value(d);
  const g: Record<string, unknown> = {};
  if (d.chance(0.7)) g.id = d.pick(['fz', '/fz', 'fz/g', '/', '', 'g', '../x', '/fz/a']);
  if (d.chance(0.6)) g.apps = Array.from({ length: d.int(3) }, () => ({ ...(appBody(d) as object), id: d.pick(['a', 'b', '/fz/x', '../y']) }));
  if (depth < 3 && d.chance(0.3)) g.groups = [groupBody(d, depth + 1)];
  if (d.chance(0.15)) g.scaleBy = d.pick([0, 0.5, 1.5, 2, 1e9, -1, 'x', 1e308]);
  if (d.chance(0.1)) g.version = d.pick(['2017-01-01T00:00:00.000Z', 'x', 5]);
  if (d.chance(0.1)) g.dependencies = value(d);
  if (d.chance(0.05)) g.groups = deep(d.pick([40, 3000]), false);
  return g;
}

function bodyOf(d: Draw, kind: BodyKind, ctx: DrawContext): unknown {
  switch (kind) {
    case 'app':
      return appBody(d);
    case 'apps':
      return d.chance(0.8) ? Array.from({ length: 1 + d.int(3) }, () => appBody(d)) : value(d);
    case 'group':
      return groupBody(d);
    case 'taskIds':
      return d.chance(0.7) ? { ids: Array.from({ length: d.int(4) }, () => (d.chance(0.5) ? d.pick(SEGMENTS.task!) : value(d))) } : value(d);
    case 'login':
      return d.chance(0.7)
        ? { uid: d.pick(['admin', 'fuzz', '', '__proto__']), password: d.pick(STRINGS), ...(d.chance(0.3) ? { token: d.pick(STRINGS) } : {}) }
        : value(d);
    case 'user':
      return d.chance(0.7) ? { ...(d.chance(0.5) ? { password: 'fuzz-password-12345' } : { public_key: d.pick(STRINGS) }), ...object(d) } : value(d);
    case 'resource':
      return d.chance(0.7) ? { id: d.pick(SEGMENTS.resource!), url: d.chance(0.5) ? ctx.probeUrl : d.pick(STRINGS) } : value(d);
    case 'policy':
      return d.chance(0.5) ? { id: 'p1', selector: { labels: object(d) }, ingress: value(d) } : object(d);
    default:
      return d.chance(0.8) ? undefined : value(d);
  }
}

/** JSON text; a value too deep for JSON.stringify (it recurses) becomes the same depth written out. */
function stringify(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch {
    return `{"id":"/fz/a","cmd":"sleep 1000","instances":0,"secrets":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
  }
}

/** Request `d` draws for `service`: an endpoint, now and then a random path or method, then query, headers and body. */
export function drawRequest(d: Draw, service: Service, ctx: DrawContext): FuzzRequest {
  const [method0, template, kind = 'none'] = d.pick(ENDPOINTS[service]);
  let method = d.chance(0.08) ? d.pick(METHODS) : method0;
  let path = d.chance(0.08) ? `/${Array.from({ length: 1 + d.int(4) }, () => d.pick([...ODD, 'v2', 'apps', 'groups'])).join('/')}` : fillPath(d, template);
  // The fuzzer keeps its own way in: the admin account is neither changed nor deleted.
  if (/^\/acs\/api\/v1\/users\/admin\b/.test(path) && method !== 'GET') path = path.replace('/users/admin', '/users/fuzz');
  if (method === 'TRACE' && service !== 'orchestrator') method = 'GET';
  path += drawQuery(d, ctx);
  // What HTTP cannot carry in a request line (spaces, control characters, non-Latin-1) is sent
  // percent-encoded, as a client would; undici refuses it otherwise (and its pool then stalls).
  path = path.replace(/[^\u0021-\u00ff]/gu, (c) => enc(c));
  const headers: Record<string, string> = {};
  const accept = d.pick(ACCEPT);
  if (accept !== undefined) headers.accept = accept;
  if (service === 'orchestrator' && ctx.token && d.chance(0.9)) headers.authorization = ctx.token;
  else if (d.chance(0.3)) headers.authorization = d.pick(['token=', 'token=abc', 'Bearer a.b.c', 'Basic YWRtaW46YWRtaW4=', 'token=eyJhbGciOiJub25lIn0.e30.']);
  if (d.chance(0.1)) headers.origin = d.pick(['http://127.0.0.1:1', 'null', 'http://attacker.invalid', 'http://[::1', 'file://', 'http://localhost', '%']);
  if (d.chance(0.05)) headers['sec-fetch-site'] = d.pick(FETCH_SITES);
  if (d.chance(0.05)) headers.host = d.pick(HOSTS);
  // The orchestrator serves its API under DC/OS's prefixes too.
  if (service === 'orchestrator' && d.chance(0.05)) path = `${d.pick(['/marathon', '/service/marathon', '/marathonx'])}${path}`;
  let body: string | undefined;
  const r = d.next();
  if (r < 0.08) body = d.pick(RAW_BODIES);
  else {
    const v = sanitize(r < 0.16 ? value(d) : bodyOf(d, kind, ctx), d, ctx.fallbackUrl);
    if (v !== undefined) body = stringify(v);
  }
  if (body !== undefined && d.chance(0.01)) body = body.padEnd(9 * 1024 * 1024, ' '); // beyond every body limit
  if (body !== undefined) {
    const type = d.pick(CONTENT_TYPES);
    if (type !== undefined) headers['content-type'] = type;
  }
  return { method, path, headers, ...(body !== undefined ? { body } : {}) };
}
