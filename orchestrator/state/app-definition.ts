// The app definition: THE schema of the apps resource. Parses a request body into Marathon 1.4's
// normalised form (defaults filled in, AppDefWrites key order) and validates it with Marathon's
// error shapes: type errors become 400 {message:"Invalid JSON", details:[{path, errors}]}, semantic
// errors 422 {message:"Object is not valid", details:[{path, errors}]} with paths like
// /portDefinitions(0)/port. Every function here is pure; nothing touches state. Limits on counts
// are in bounds.ts, constraints (and their regular expressions) in constraints.ts, comparing and
// merging definitions in app-update.ts. Over 400 lines because it is one schema: every field of
// Marathon's AppDefinition read with its default, and validated, in one place.
import { definitionViolations, idBoundErrors } from './bounds.ts';
import { plainMap } from './labels.ts';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

export interface PortDefinition {
  port: number;
  protocol: string;
  name?: string;
  labels: Record<string, string>;
}

export interface HealthCheck {
  protocol: string;
  path?: string;
  portIndex?: number;
  port?: number;
  command?: { value: string } | null;
  gracePeriodSeconds: number;
  intervalSeconds: number;
  timeoutSeconds: number;
  maxConsecutiveFailures: number;
  ignoreHttp1xx?: boolean;
  delaySeconds?: number;
}

export interface ReadinessCheck {
  name: string;
  protocol: 'HTTP' | 'HTTPS';
  path: string;
  /** Name of the app port the check uses (portDefinitions, portMappings or ipAddress discovery ports). */
  portName: string;
  intervalSeconds: number;
  timeoutSeconds: number;
  httpStatusCodesForReady: number[];
  preserveLastResponse: boolean;
}

export interface PortMapping {
  containerPort: number;
  hostPort: number;
  servicePort: number;
  protocol: string;
  name?: string;
  labels: Record<string, string>;
}

export interface Container {
  type: string;
  volumes: { containerPath: string; hostPath: string; mode: 'RO' | 'RW' }[];
  docker?: {
    image: string;
    network: 'HOST' | 'BRIDGE' | 'USER' | 'NONE';
    portMappings: PortMapping[];
    privileged: boolean;
    parameters: { key: string; value: string }[];
    forcePullImage: boolean;
  };
}

export interface AppDefinition {
  id: string;
  cmd: string | null;
  args: string[] | null;
  user: string | null;
  env: Record<string, string | { secret: string }>;
  instances: number;
  cpus: number;
  mem: number;
  disk: number;
  gpus: number;
  executor: string;
  constraints: string[][];
  uris: string[];
  fetch: { uri: string; extract: boolean; executable: boolean; cache: boolean; destPath?: string }[];
  storeUrls: string[];
  backoffSeconds: number;
  backoffFactor: number;
  maxLaunchDelaySeconds: number;
  container: Container | null;
  healthChecks: HealthCheck[];
  readinessChecks: ReadinessCheck[];
  dependencies: string[];
  upgradeStrategy: { minimumHealthCapacity: number; maximumOverCapacity: number };
  labels: Record<string, string>;
  ipAddress: { groups: string[]; labels: Record<string, string>; discovery: { ports: JsonObject[] }; networkName?: string } | null;
  version: string;
  residency: Json;
  secrets: JsonObject;
  taskKillGracePeriodSeconds: number | null;
  unreachableStrategy: Json;
  killSelection: 'YOUNGEST_FIRST' | 'OLDEST_FIRST';
  acceptedResourceRoles?: string[];
  ports?: number[];
  portDefinitions?: PortDefinition[];
  requirePorts?: boolean;
  versionInfo?: { lastScalingAt: string; lastConfigChangeAt: string };
}

export interface Violation {
  path: string;
  errors: string[];
}

/** A request that fails: status + Marathon's body. Thrown by parsers, mapped by the error handler. */
export class ApiError extends Error {
  readonly statusCode: number;
  readonly body: Record<string, unknown>;
  readonly headers: Record<string, string>;
  constructor(statusCode: number, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    super(typeof body.message === 'string' ? body.message : `HTTP ${statusCode}`);
    this.statusCode = statusCode;
    this.body = body;
    this.headers = headers;
  }
}

export function invalidJson(details: Violation[] | string): ApiError {
  return new ApiError(400, { message: 'Invalid JSON', details });
}

export function notValid(details: Violation[]): ApiError {
  return new ApiError(422, { message: 'Object is not valid', details });
}

const SEGMENT = /^(([a-z0-9]|[a-z0-9][a-z0-9-]*[a-z0-9])\.)*([a-z0-9]|[a-z0-9][a-z0-9-]*[a-z0-9])$/;
const SEGMENT_RE_TEXT = '^(([a-z0-9]|[a-z0-9][a-z0-9\\-]*[a-z0-9])\\.)*([a-z0-9]|[a-z0-9][a-z0-9\\-]*[a-z0-9])|(\\.|\\.\\.)$';
const HEALTH_PROTOCOLS = ['HTTP', 'HTTPS', 'TCP', 'COMMAND', 'MESOS_HTTP', 'MESOS_HTTPS', 'MESOS_TCP'];

/** Scala's Double.toString: 3 → "3.0". */
export function fmtDouble(n: number): string {
  return Number.isInteger(n) ? n.toFixed(1) : String(n);
}

/** Canonical absolute path: resolves `.` and `..` against `base`; returns null if it escapes the root. */
export function canonicalPath(id: string, base = '/'): string | null {
  const parts = id.startsWith('/') ? [] : base.split('/').filter(Boolean);
  for (const seg of id.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (parts.length === 0) return null;
      parts.pop();
    } else parts.push(seg);
  }
  return '/' + parts.join('/');
}

export function idErrors(raw: string): string[] {
  const segs = raw.split('/').filter((s) => s !== '');
  if (segs.length === 0) return ['Path must contain at least one path element'];
  const bound = idBoundErrors(raw);
  if (bound.length) return bound;
  for (const s of segs) {
    if (s === '.' || s === '..') continue;
    if (!SEGMENT.test(s)) return [`must fully match regular expression '${SEGMENT_RE_TEXT}'`];
  }
  return [];
}

export function safePath(appId: string): string {
  return appId.split('/').filter(Boolean).join('_');
}

// ---------------------------------------------------------------------------------------------
// Type-level reading (400 Invalid JSON)

class Reader {
  readonly errors: Violation[] = [];
  add(path: string, error: string): void {
    const found = this.errors.find((e) => e.path === path);
    if (found) {
      if (!found.errors.includes(error)) found.errors.push(error);
    } else this.errors.push({ path, errors: [error] });
  }
  str(o: JsonObject, key: string, path: string): string | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') return void this.add(`${path}/${key}`, 'error.expected.jsstring');
    return v;
  }
  num(o: JsonObject, key: string, path: string, integer = false): number | undefined {
    let v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) v = Number(v);
    if (typeof v !== 'number' || !Number.isFinite(v)) return void this.add(`${path}/${key}`, 'error.expected.jsnumber');
    if (integer && !Number.isInteger(v)) return void this.add(`${path}/${key}`, 'error.expected.int');
    return v;
  }
  bool(o: JsonObject, key: string, path: string): boolean | undefined {
    let v = o[key];
    if (v === undefined || v === null) return undefined;
    if (v === 'true' || v === 'false') v = v === 'true';
    if (typeof v !== 'boolean') return void this.add(`${path}/${key}`, 'error.expected.jsboolean');
    return v;
  }
  obj(o: JsonObject, key: string, path: string): JsonObject | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'object' || Array.isArray(v)) return void this.add(`${path}/${key}`, 'error.expected.jsobject');
    return v;
  }
  arr(o: JsonObject, key: string, path: string): Json[] | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) return void this.add(`${path}/${key}`, 'error.expected.jsarray');
    return v;
  }
  strArr(o: JsonObject, key: string, path: string): string[] | undefined {
    const a = this.arr(o, key, path);
    if (!a) return undefined;
    const out: string[] = [];
    a.forEach((v, i) => {
      if (typeof v !== 'string') this.add(`${path}/${key}(${i})`, 'error.expected.jsstring');
      else out.push(v);
    });
    return out;
  }
  strMap(o: JsonObject, key: string, path: string): Record<string, string> | undefined {
    const m = this.obj(o, key, path);
    if (!m) return undefined;
    // Prototype-free: a label named __proto__ is kept, one named constructor is not inherited.
    const out = plainMap<string>();
    for (const [k, v] of Object.entries(m)) {
      if (typeof v !== 'string') this.add(`${path}/${key}/${k}`, 'error.expected.jsstring');
      else out[k] = v;
    }
    return out;
  }
  objArr(o: JsonObject, key: string, path: string): JsonObject[] | undefined {
    const a = this.arr(o, key, path);
    if (!a) return undefined;
    const out: JsonObject[] = [];
    a.forEach((v, i) => {
      if (v === null || typeof v !== 'object' || Array.isArray(v)) this.add(`${path}/${key}(${i})`, 'error.expected.jsobject');
      else out.push(v);
    });
    return out;
  }
}

export interface ParseOptions {
  /** The id taken from the URL (PUT/PATCH); overrides the body's. */
  pathId?: string;
  defaultNetworkName?: string | undefined;
  defaultAcceptedResourceRoles?: string[] | undefined;
  now: string;
}

/** Parses and validates a full app definition (POST, PUT with partialUpdate=false, merged PUT). */
export function parseApp(body: unknown, opts: ParseOptions): AppDefinition {
  const { app, violations } = readApp(body, opts);
  if (violations.length) throw notValid(violations);
  return app;
}

/**
 * Reads a definition into its normalised form: type errors throw (400 Invalid JSON); semantic
 * violations (422) are returned with the app, which is well-formed either way.
 */
export function readApp(body: unknown, opts: ParseOptions): { app: AppDefinition; violations: Violation[] } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalidJson([{ path: '/', errors: ['error.expected.jsobject'] }]);
  const o = body as JsonObject;
  const r = new Reader();
  const p = '';
  let rawId = opts.pathId ?? r.str(o, 'id', p);
  if (rawId === undefined && o.id === undefined) r.add('/id', 'error.path.missing');
  rawId ??= '';
  const cmd = r.str(o, 'cmd', p);
  const args = r.strArr(o, 'args', p);
  const user = r.str(o, 'user', p);
  const envObj = r.obj(o, 'env', p);
  const env = plainMap<string | { secret: string }>();
  for (const [k, v] of Object.entries(envObj ?? {})) {
    if (typeof v === 'string') env[k] = v;
    else if (v && typeof v === 'object' && !Array.isArray(v) && typeof v.secret === 'string') env[k] = { secret: v.secret };
    else r.add(`/env/${k}`, 'error.expected.jsstring');
  }
  const instances = r.num(o, 'instances', p, true);
  const cpus = r.num(o, 'cpus', p);
  const mem = r.num(o, 'mem', p);
  const disk = r.num(o, 'disk', p);
  const gpus = r.num(o, 'gpus', p, true);
  const executor = r.str(o, 'executor', p);
  const constraintsRaw = r.arr(o, 'constraints', p);
  const constraints: string[][] = [];
  constraintsRaw?.forEach((c, i) => {
    if (!Array.isArray(c) || c.some((x) => typeof x !== 'string')) r.add(`/constraints(${i})`, 'error.expected.jsarray');
    else constraints.push(c as string[]);
  });
  const uris = r.strArr(o, 'uris', p);
  const fetchRaw = r.objArr(o, 'fetch', p);
  const fetch = (fetchRaw ?? []).map((f, i) => {
    const fp = `/fetch(${i})`;
    const uri = r.str(f, 'uri', fp);
    if (uri === undefined) r.add(`${fp}/uri`, 'error.path.missing');
    const destPath = r.str(f, 'destPath', fp);
    return { uri: uri ?? '', extract: r.bool(f, 'extract', fp) ?? true, executable: r.bool(f, 'executable', fp) ?? false, cache: r.bool(f, 'cache', fp) ?? false, ...(destPath !== undefined ? { destPath } : {}) };
  });
  const storeUrls = r.strArr(o, 'storeUrls', p);
  const portsRaw = r.arr(o, 'ports', p);
  const ports: number[] = [];
  portsRaw?.forEach((v, i) => {
    if (typeof v !== 'number' || !Number.isInteger(v)) r.add(`/ports(${i})`, 'error.expected.int');
    else ports.push(v);
  });
  const pdRaw = r.objArr(o, 'portDefinitions', p);
  const portDefinitions: PortDefinition[] | undefined = pdRaw?.map((d, i) => {
    const dp = `/portDefinitions(${i})`;
    const name = r.str(d, 'name', dp);
    return { port: r.num(d, 'port', dp, true) ?? 0, protocol: r.str(d, 'protocol', dp) ?? 'tcp', ...(name !== undefined ? { name } : {}), labels: r.strMap(d, 'labels', dp) ?? {} };
  });
  const requirePorts = r.bool(o, 'requirePorts', p);
  const backoffSeconds = r.num(o, 'backoffSeconds', p);
  const backoffFactor = r.num(o, 'backoffFactor', p);
  const maxLaunchDelaySeconds = r.num(o, 'maxLaunchDelaySeconds', p);
  const containerRaw = r.obj(o, 'container', p);
  let container: Container | null = null;
  if (containerRaw) {
    const type = r.str(containerRaw, 'type', '/container') ?? 'DOCKER';
    const vols = (r.objArr(containerRaw, 'volumes', '/container') ?? []).map((v, i) => {
      const vp = `/container/volumes(${i})`;
      return { containerPath: r.str(v, 'containerPath', vp) ?? '', hostPath: r.str(v, 'hostPath', vp) ?? '', mode: (r.str(v, 'mode', vp) ?? 'RW') as 'RO' | 'RW' };
    });
    container = { type, volumes: vols };
    const d = r.obj(containerRaw, 'docker', '/container');
    if (d) {
      const dp = '/container/docker';
      const pms = (r.objArr(d, 'portMappings', dp) ?? []).map((m, i) => {
        const mp = `${dp}/portMappings(${i})`;
        const name = r.str(m, 'name', mp);
        return { containerPort: r.num(m, 'containerPort', mp, true) ?? 0, hostPort: r.num(m, 'hostPort', mp, true) ?? 0, servicePort: r.num(m, 'servicePort', mp, true) ?? 0, protocol: r.str(m, 'protocol', mp) ?? 'tcp', ...(name !== undefined ? { name } : {}), labels: r.strMap(m, 'labels', mp) ?? {} };
      });
      const params = (r.objArr(d, 'parameters', dp) ?? []).map((x, i) => ({ key: r.str(x, 'key', `${dp}/parameters(${i})`) ?? '', value: r.str(x, 'value', `${dp}/parameters(${i})`) ?? '' }));
      container.docker = {
        image: r.str(d, 'image', dp) ?? '',
        network: (r.str(d, 'network', dp) ?? 'HOST') as 'HOST',
        portMappings: pms,
        privileged: r.bool(d, 'privileged', dp) ?? false,
        parameters: params,
        forcePullImage: r.bool(d, 'forcePullImage', dp) ?? false,
      };
    }
  }
  const hcRaw = r.objArr(o, 'healthChecks', p) ?? [];
  const readinessChecks = (r.objArr(o, 'readinessChecks', p) ?? []).map((rc, i) => readReadinessCheck(r, rc, `/readinessChecks(${i})`));
  const dependencies = r.strArr(o, 'dependencies', p) ?? [];
  const usRaw = r.obj(o, 'upgradeStrategy', p);
  const mhc = usRaw ? r.num(usRaw, 'minimumHealthCapacity', '/upgradeStrategy') : undefined;
  const moc = usRaw ? r.num(usRaw, 'maximumOverCapacity', '/upgradeStrategy') : undefined;
  const labels = r.strMap(o, 'labels', p) ?? {};
  const roles = r.strArr(o, 'acceptedResourceRoles', p);
  const ipRaw = r.obj(o, 'ipAddress', p);
  let ipAddress: AppDefinition['ipAddress'] = null;
  if (ipRaw) {
    const networkName = r.str(ipRaw, 'networkName', '/ipAddress') ?? opts.defaultNetworkName;
    const disc = r.obj(ipRaw, 'discovery', '/ipAddress');
    ipAddress = {
      groups: r.strArr(ipRaw, 'groups', '/ipAddress') ?? [],
      labels: r.strMap(ipRaw, 'labels', '/ipAddress') ?? {},
      discovery: { ports: disc ? (r.objArr(disc, 'ports', '/ipAddress/discovery') ?? []) : [] },
      ...(networkName !== undefined ? { networkName } : {}),
    };
  }
  r.str(o, 'version', p);
  const tkgp = r.num(o, 'taskKillGracePeriodSeconds', p);
  const killSelection = r.str(o, 'killSelection', p);
  const secrets = r.obj(o, 'secrets', p) ?? {};

  // Parse-time filters of Marathon (400 on "/").
  if (uris && uris.length > 0 && fetchRaw && fetchRaw.length > 0) r.add('/', 'You cannot specify both uris and fetch fields');
  if (ipRaw && ((portsRaw && portsRaw.length > 0) || (pdRaw && pdRaw.length > 0))) r.add('/', 'You cannot specify both an IP address and ports');
  if (portsRaw && pdRaw) {
    const same = portsRaw.length === pdRaw.length && ports.every((x, i) => portDefinitions?.[i]?.port === x);
    if (!same) r.add('/', 'You cannot specify both ports and port definitions');
  }
  const nonZero = ports.filter((x) => x !== 0);
  if (new Set(nonZero).size !== nonZero.length) r.add('/', 'Ports must be unique.');
  const healthChecks = hcRaw.map((h, i) => readHealthCheck(r, h, `/healthChecks(${i})`));
  if (r.errors.length) throw invalidJson(r.errors);

  const id = opts.pathId !== undefined ? opts.pathId : rawId;
  const v = new Reader();
  const idErr = idErrors(id);
  for (const e of idErr) v.add('/id', e);
  const canonical = idErr.length ? (id.startsWith('/') ? id : `/${id}`) : (canonicalPath(id) ?? `/${id}`);

  let pds: PortDefinition[] | undefined;
  if (ipAddress) pds = undefined;
  else if (pdRaw) pds = portDefinitions;
  else if (portsRaw) pds = ports.map((port) => ({ port, protocol: 'tcp', labels: {} }));
  else pds = container?.docker && container.docker.network !== 'HOST' ? [] : [{ port: 0, protocol: 'tcp', name: 'default', labels: {} }];

  const app: AppDefinition = {
    id: canonical,
    cmd: cmd ?? null,
    args: args && args.length > 0 ? args : null,
    user: user ?? null,
    env,
    instances: instances ?? 1,
    cpus: cpus ?? 1,
    mem: mem ?? 128,
    disk: disk ?? 0,
    gpus: gpus ?? 0,
    executor: executor ?? '',
    constraints,
    uris: uris ?? [],
    fetch: fetch.length ? fetch : (uris ?? []).map((uri) => ({ uri, extract: /\.(tgz|tar\.gz|tbz2|tar\.bz2|txz|tar\.xz|zip)$/.test(uri), executable: false, cache: false })),
    storeUrls: storeUrls ?? [],
    backoffSeconds: backoffSeconds ?? 1,
    backoffFactor: backoffFactor ?? 1.15,
    maxLaunchDelaySeconds: maxLaunchDelaySeconds ?? 3600,
    container,
    healthChecks: [],
    readinessChecks,
    dependencies: dependencies.map((d) => canonicalPath(d, canonical.split('/').slice(0, -1).join('/') || '/') ?? d),
    upgradeStrategy: { minimumHealthCapacity: mhc ?? 1, maximumOverCapacity: moc ?? 1 },
    labels,
    ipAddress,
    version: opts.now,
    residency: o.residency ?? null,
    secrets,
    taskKillGracePeriodSeconds: tkgp ?? null,
    unreachableStrategy: o.unreachableStrategy ?? { inactiveAfterSeconds: 0, expungeAfterSeconds: 0 },
    killSelection: (killSelection ?? 'YOUNGEST_FIRST') as 'YOUNGEST_FIRST',
  };
  const effectiveRoles = roles ?? opts.defaultAcceptedResourceRoles;
  if (effectiveRoles && effectiveRoles.length > 0) app.acceptedResourceRoles = effectiveRoles;
  if (roles && roles.length === 0) v.add('/acceptedResourceRoles', 'must not be empty');
  if (!ipAddress) {
    app.ports = (pds ?? []).map((d) => d.port);
    app.portDefinitions = pds ?? [];
    app.requirePorts = requirePorts ?? false;
  }
  const portCount = app.container?.docker && app.container.docker.network !== 'HOST' ? app.container.docker.portMappings.length : (app.portDefinitions?.length ?? 0);
  app.healthChecks = healthChecks.map((h) => (h.port === undefined && h.portIndex === undefined && portCount > 0 && ['HTTP', 'HTTPS', 'TCP', 'MESOS_HTTP', 'MESOS_HTTPS', 'MESOS_TCP'].includes(h.protocol) ? { ...h, portIndex: 0 } : h));
  validateApp(app, v, { cmdGiven: cmd !== undefined, argsGiven: args !== undefined && args.length > 0, portCount, killSelection });
  return { app, violations: v.errors };
}

/** Marathon's ReadinessCheck with its defaults (name readinessCheck, HTTP /, port http-api, 30 s / 10 s, [200]). */
function readReadinessCheck(r: Reader, o: JsonObject, p: string): ReadinessCheck {
  return {
    name: r.str(o, 'name', p) ?? 'readinessCheck',
    protocol: (r.str(o, 'protocol', p) ?? 'HTTP') as ReadinessCheck['protocol'],
    path: r.str(o, 'path', p) ?? '/',
    portName: r.str(o, 'portName', p) ?? 'http-api',
    intervalSeconds: r.num(o, 'intervalSeconds', p) ?? 30,
    timeoutSeconds: r.num(o, 'timeoutSeconds', p) ?? 10,
    httpStatusCodesForReady: (r.arr(o, 'httpStatusCodesForReady', p) ?? [200]).map((c, i) => (typeof c === 'number' ? c : (r.add(`${p}/httpStatusCodesForReady(${i})`, 'error.expected.jsnumber'), 0))),
    preserveLastResponse: r.bool(o, 'preserveLastResponse', p) ?? false,
  };
}

function readHealthCheck(r: Reader, h: JsonObject, hp: string): HealthCheck {
  const protocol = r.str(h, 'protocol', hp) ?? 'HTTP';
  const cmdObj = r.obj(h, 'command', hp);
  const command = cmdObj ? { value: r.str(cmdObj, 'value', `${hp}/command`) ?? '' } : null;
  let portIndex: number | undefined;
  if (typeof h.portIndex === 'string' && !/^\d+$/.test(h.portIndex)) portIndex = undefined;
  else portIndex = r.num(h, 'portIndex', hp, true);
  const port = r.num(h, 'port', hp, true);
  const path = r.str(h, 'path', hp);
  const out: HealthCheck = {
    protocol,
    gracePeriodSeconds: r.num(h, 'gracePeriodSeconds', hp) ?? 15,
    intervalSeconds: r.num(h, 'intervalSeconds', hp) ?? 10,
    timeoutSeconds: r.num(h, 'timeoutSeconds', hp) ?? 20,
    maxConsecutiveFailures: r.num(h, 'maxConsecutiveFailures', hp, true) ?? 3,
  };
  if (protocol === 'HTTP' || protocol === 'HTTPS' || protocol === 'MESOS_HTTP' || protocol === 'MESOS_HTTPS') out.path = path ?? '/';
  if (portIndex !== undefined) out.portIndex = portIndex;
  if (port !== undefined) out.port = port;
  if (protocol === 'COMMAND' || protocol === 'Command') {
    out.protocol = 'COMMAND';
    out.command = command;
    out.delaySeconds = r.num(h, 'delaySeconds', hp) ?? 15;
  }
  if (protocol === 'HTTP' || protocol === 'HTTPS') out.ignoreHttp1xx = r.bool(h, 'ignoreHttp1xx', hp) ?? false;
  return out;
}

function validateApp(app: AppDefinition, v: Reader, ctx: { cmdGiven: boolean; argsGiven: boolean; portCount: number; killSelection: string | undefined }): void {
  const hasContainer = app.container !== null;
  if ((ctx.cmdGiven && ctx.argsGiven) || (!ctx.cmdGiven && !ctx.argsGiven && !hasContainer)) {
    v.add('/', "AppDefinition must either contain one of 'cmd' or 'args', and/or a 'container'.");
  }
  if (app.cmd !== null && app.cmd.length === 0) v.add('/cmd', 'must not be empty');
  if (app.instances < 0) v.add('/instances', `got ${app.instances}, expected 0 or more`);
  for (const k of ['cpus', 'mem', 'disk'] as const) if (app[k] < 0) v.add(`/${k}`, `got ${fmtDouble(app[k])}, expected 0.0 or more`);
  if (app.gpus < 0) v.add('/gpus', `got ${app.gpus}, expected 0 or more`);
  if (app.backoffSeconds < 0) v.add('/backoffSeconds', `got ${app.backoffSeconds}, expected 0 or more`);
  if (app.backoffFactor < 1) v.add('/backoffFactor', `got ${fmtDouble(app.backoffFactor)}, expected 1.0 or more`);
  if (app.maxLaunchDelaySeconds < 0) v.add('/maxLaunchDelaySeconds', `got ${app.maxLaunchDelaySeconds}, expected 0 or more`);
  if (app.taskKillGracePeriodSeconds !== null && app.taskKillGracePeriodSeconds < 0) v.add('/taskKillGracePeriodSeconds', `got ${fmtDouble(app.taskKillGracePeriodSeconds)}, expected 0.0 or more`);
  for (const k of ['minimumHealthCapacity', 'maximumOverCapacity'] as const) {
    const x = app.upgradeStrategy[k];
    if (x < 0 || x > 1) v.add(`/upgradeStrategy/${k}`, `got ${fmtDouble(x)}, expected between 0.0 and 1.0`);
  }
  if (!/^((\/\/cmd)|(\/?[^/]+(\/[^/]+)*)|)$/.test(app.executor)) v.add('/executor', "must fully match regular expression '^(//cmd)|(/?[^/]+(/[^/]+)*)|$'");
  if (ctx.killSelection !== undefined && ctx.killSelection !== 'YOUNGEST_FIRST' && ctx.killSelection !== 'OLDEST_FIRST') v.add('/killSelection', 'must be one of YOUNGEST_FIRST, OLDEST_FIRST');
  for (const x of definitionViolations(app)) for (const e of x.errors) v.add(x.path, e);
  const pds = app.portDefinitions ?? [];
  pds.forEach((d, i) => {
    if (d.port < 0 || d.port > 65535) v.add(`/portDefinitions(${i})/port`, `got ${d.port}, expected between 0 and 65535`);
    if (!['tcp', 'udp', 'udp,tcp', 'tcp,udp'].includes(d.protocol)) v.add(`/portDefinitions(${i})/protocol`, 'is not one of (tcp, udp, udp,tcp)');
    if (d.name !== undefined && !/^[a-z0-9-]+$/.test(d.name)) v.add(`/portDefinitions(${i})/name`, "must fully match regular expression '^[a-z0-9-]+$'");
  });
  const nz = pds.map((d) => d.port).filter((x) => x !== 0);
  if (new Set(nz).size !== nz.length) v.add('/portDefinitions', 'Ports must be unique.');
  const names = pds.map((d) => d.name).filter((x) => x !== undefined);
  if (new Set(names).size !== names.length) v.add('/portDefinitions', 'Port names must be unique.');
  if (app.requirePorts && pds.some((d) => d.port === 0)) v.add('/', 'Ports must be non-zero when requirePorts is true.');
  const d = app.container?.docker;
  if (app.container) {
    if (!['DOCKER', 'MESOS'].includes(app.container.type)) v.add('/container/type', 'is not one of (DOCKER, MESOS)');
    if (app.container.type === 'DOCKER' && !d) v.add('/container/docker', 'not defined');
    app.container.volumes.forEach((vol, i) => {
      if (!vol.containerPath) v.add(`/container/volumes(${i})/containerPath`, 'must not be empty');
      if (vol.mode !== 'RO' && vol.mode !== 'RW') v.add(`/container/volumes(${i})/mode`, 'is not one of (RO, RW)');
    });
  }
  if (d) {
    if (!d.image) v.add('/container/docker/image', 'must not be empty');
    if (!['HOST', 'BRIDGE', 'USER', 'NONE'].includes(d.network)) v.add('/container/docker/network', 'is not one of (HOST, BRIDGE, USER, NONE)');
    d.portMappings.forEach((m, i) => {
      const mp = `/container/docker/portMappings(${i})`;
      for (const k of ['containerPort', 'hostPort', 'servicePort'] as const) if (m[k] < 0 || m[k] > 65535) v.add(`${mp}/${k}`, `got ${m[k]}, expected between 0 and 65535`);
      if (!['tcp', 'udp', 'udp,tcp', 'tcp,udp'].includes(m.protocol)) v.add(`${mp}/protocol`, 'is not one of (tcp, udp, udp,tcp)');
    });
  }
  let mesosChecks = 0;
  app.healthChecks.forEach((h, i) => {
    const hp = `/healthChecks(${i})`;
    if (!HEALTH_PROTOCOLS.includes(h.protocol)) v.add(`${hp}/protocol`, `is not one of (${HEALTH_PROTOCOLS.join(', ')})`);
    if (h.protocol === 'COMMAND' || h.protocol.startsWith('MESOS_')) mesosChecks++;
    if (h.protocol === 'COMMAND' && (!h.command || !h.command.value)) v.add(`${hp}/command`, 'not defined');
    for (const k of ['gracePeriodSeconds', 'intervalSeconds', 'timeoutSeconds', 'maxConsecutiveFailures'] as const) if (h[k] < 0) v.add(`${hp}/${k}`, `got ${h[k]}, expected 0 or more`);
    if (h.port !== undefined && (h.port < 0 || h.port > 65535)) v.add(`${hp}/port`, `got ${h.port}, expected between 0 and 65535`);
    if (h.protocol !== 'COMMAND' && h.portIndex !== undefined && (h.portIndex < 0 || h.portIndex >= ctx.portCount)) {
      v.add('/', 'Health check port indices must address an element of the ports array or container port mappings.');
    }
    if (h.protocol !== 'COMMAND' && h.portIndex === undefined && h.port === undefined) v.add('/', 'Health check port indices must address an element of the ports array or container port mappings.');
  });
  if (mesosChecks > 1) v.add('/', 'AppDefinition can contain at most one Mesos health check');
  if (app.readinessChecks.length > 1) v.add('/readinessChecks', 'must have at most 1 element');
  const portNames = appPortNames(app);
  app.readinessChecks.forEach((rc, i) => {
    const rp = `/readinessChecks(${i})`;
    if (!['HTTP', 'HTTPS'].includes(rc.protocol)) v.add(`${rp}/protocol`, 'is not one of (HTTP, HTTPS)');
    if (!portNames.includes(rc.portName)) v.add(`${rp}/portName`, `must name a port of the app (${portNames.length ? portNames.join(', ') : 'the app has no named ports'})`);
    if (rc.intervalSeconds <= 0) v.add(`${rp}/intervalSeconds`, `got ${rc.intervalSeconds}, expected more than 0`);
    if (rc.timeoutSeconds <= 0 || rc.timeoutSeconds >= rc.intervalSeconds) v.add(`${rp}/timeoutSeconds`, 'must be more than 0 and less than intervalSeconds');
    if (rc.httpStatusCodesForReady.length === 0 || rc.httpStatusCodesForReady.some((c) => !Number.isInteger(c) || c < 100 || c > 999)) v.add(`${rp}/httpStatusCodesForReady`, 'must be a non-empty list of HTTP status codes');
  });
  app.dependencies.forEach((dep, i) => {
    if (idErrors(dep).length) v.add(`/dependencies(${i})`, idErrors(dep)[0]!);
  });
  if (app.labels.MARATHON_SINGLE_INSTANCE_APP === 'true' && app.instances > 1) v.add('/', 'Single instance app may only have one instance');
  if (app.upgradeStrategy && app.ipAddress?.networkName === '') v.add('/ipAddress/networkName', 'must not be empty');
}

/** The port mappings a bridged docker app's ports are (undefined: its ports are portDefinitions). */
export function bridgedMappings(app: AppDefinition): PortMapping[] | undefined {
  const d = app.container?.docker;
  return d && d.network !== 'HOST' && d.portMappings.length ? d.portMappings : undefined;
}

/** Names of the app's ports, where readiness checks look their port up. */
export function appPortNames(app: AppDefinition): string[] {
  if (app.ipAddress) return app.ipAddress.discovery.ports.map((p) => p.name).filter((n): n is string => typeof n === 'string');
  return (bridgedMappings(app) ?? app.portDefinitions ?? []).flatMap((p) => (p.name !== undefined ? [p.name] : []));
}

// Comparing and merging definitions (updates) live in app-update.ts; re-exported for existing importers.
export { isConfigChange, keepServicePorts, toMergeBase } from './app-update.ts';
