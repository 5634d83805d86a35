// Reading a body into an app definition, in three passes: type-level reading of every section
// (Play JSON's errors, collected and thrown together as 400 Invalid JSON), normalisation (defaults
// that depend on other fields: ports, health check ports, fetch from uris, dependencies resolved
// against the app's id or its group, ParseOptions.dependencyBase), then validation (validate.ts: 422 Object is not valid). The order in
// which fields are read is the order of Marathon's error details, and is kept on purpose.
import { InvalidObject, MalformedJson } from '../../errors.ts';
import { plainMap } from '../labels.ts';
import { readContainer } from './container.ts';
import { checkFetchGiven, normaliseFetch, readFetch } from './fetch.ts';
import { FieldReader } from './field-reader.ts';
import { normaliseHealthChecks, readHealthCheck } from './health-checks.ts';
import { canonicalPath, idErrors } from './ids.ts';
import { readIpAddress } from './ip-address.ts';
import { applyPorts, checkPortsGiven, normalisePortDefinitions, portCount, readPorts } from './ports.ts';
import { readReadinessCheck } from './readiness-checks.ts';
import type { AppDefinition, JsonObject, ParseOptions, Violation } from './types.ts';
import { readUpgradeStrategy } from './upgrade-strategy.ts';
import { validateApp } from './validate.ts';
import { Violations } from './violations.ts';

/** Parses and validates a full app definition (POST, PUT with partialUpdate=false, merged PUT). */
export function parseApp(body: unknown, opts: ParseOptions): AppDefinition {
  const { app, violations } = readApp(body, opts);
  if (violations.length) throw new InvalidObject(violations);
  return app;
}

/**
 * Reads a definition into its normalised form: type errors throw (400 Invalid JSON); semantic
 * violations (422) are returned with the app, which is well-formed either way.
 */
export function readApp(body: unknown, opts: ParseOptions): { app: AppDefinition; violations: Violation[] } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new MalformedJson([{ path: '/', errors: ['error.expected.jsobject'] }]);
  const o = body as JsonObject;
  const r = new FieldReader();
  const p = '';
  let rawId = opts.pathId ?? r.str(o, 'id', p);
  if (rawId === undefined && o.id === undefined) r.add('/id', 'error.path.missing');
  rawId ??= '';
  const cmd = r.str(o, 'cmd', p);
  const args = r.strArr(o, 'args', p);
  const user = r.str(o, 'user', p);
  const env = readEnv(r, o);
  const instances = r.num(o, 'instances', p, true);
  const cpus = r.num(o, 'cpus', p);
  const mem = r.num(o, 'mem', p);
  const disk = r.num(o, 'disk', p);
  const gpus = r.num(o, 'gpus', p, true);
  const executor = r.str(o, 'executor', p);
  const constraints = readConstraints(r, o);
  const uris = r.strArr(o, 'uris', p);
  const fetch = readFetch(r, o);
  const storeUrls = r.strArr(o, 'storeUrls', p);
  const ports = readPorts(r, o);
  const backoffSeconds = r.num(o, 'backoffSeconds', p);
  const backoffFactor = r.num(o, 'backoffFactor', p);
  const maxLaunchDelaySeconds = r.num(o, 'maxLaunchDelaySeconds', p);
  const container = readContainer(r, o);
  const healthChecksGiven = r.objArr(o, 'healthChecks', p) ?? [];
  const readinessChecks = (r.objArr(o, 'readinessChecks', p) ?? []).map((rc, i) => readReadinessCheck(r, rc, `/readinessChecks(${i})`));
  const dependencies = r.strArr(o, 'dependencies', p) ?? [];
  const upgradeStrategy = readUpgradeStrategy(r, o);
  const labels = r.strMap(o, 'labels', p) ?? {};
  const roles = r.strArr(o, 'acceptedResourceRoles', p);
  const ipAddress = readIpAddress(r, o, opts.defaultNetworkName);
  r.str(o, 'version', p);
  const taskKillGracePeriodSeconds = r.num(o, 'taskKillGracePeriodSeconds', p);
  const killSelection = r.str(o, 'killSelection', p);
  const secrets = r.obj(o, 'secrets', p) ?? {};
  // Marathon's parse-time rules (400 on "/"), then the health checks (their errors come last).
  checkFetchGiven(r, uris, fetch.given);
  checkPortsGiven(r, ports, ipAddress !== null);
  const healthChecks = healthChecksGiven.map((h, i) => readHealthCheck(r, h, `/healthChecks(${i})`));
  if (r.errors.length) throw new MalformedJson(r.errors);

  const id = opts.pathId !== undefined ? opts.pathId : rawId;
  const v = new Violations();
  const idErr = idErrors(id);
  for (const e of idErr) v.add('/id', e);
  const canonical = idErr.length ? (id.startsWith('/') ? id : `/${id}`) : canonicalPath(id);

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
    fetch: normaliseFetch(fetch.entries, uris ?? []),
    storeUrls: storeUrls ?? [],
    backoffSeconds: backoffSeconds ?? 1,
    backoffFactor: backoffFactor ?? 1.15,
    maxLaunchDelaySeconds: maxLaunchDelaySeconds ?? 3600,
    container,
    healthChecks: [],
    readinessChecks,
    dependencies: dependencies.map((d) => canonicalPath(d, opts.dependencyBase ?? canonical)),
    upgradeStrategy,
    labels,
    ipAddress,
    version: opts.now,
    residency: o.residency ?? null,
    secrets,
    taskKillGracePeriodSeconds: taskKillGracePeriodSeconds ?? null,
    unreachableStrategy: o.unreachableStrategy ?? { inactiveAfterSeconds: 0, expungeAfterSeconds: 0 },
    killSelection: (killSelection ?? 'YOUNGEST_FIRST') as 'YOUNGEST_FIRST',
  };
  const effectiveRoles = roles ?? opts.defaultAcceptedResourceRoles;
  if (effectiveRoles && effectiveRoles.length > 0) app.acceptedResourceRoles = effectiveRoles;
  if (roles && roles.length === 0) v.add('/acceptedResourceRoles', 'must not be empty');
  applyPorts(app, normalisePortDefinitions(ports, ipAddress !== null, container), ports.requirePorts);
  const count = portCount(app);
  app.healthChecks = normaliseHealthChecks(healthChecks, count);
  validateApp(app, v, { cmdGiven: cmd !== undefined, argsGiven: args !== undefined && args.length > 0, portCount: count, killSelection });
  return { app, violations: v.errors };
}

/** `env`: strings, or references to a secret ({secret: name}). */
function readEnv(r: FieldReader, o: JsonObject): Record<string, string | { secret: string }> {
  const given = r.obj(o, 'env', '');
  const env = plainMap<string | { secret: string }>();
  for (const [k, v] of Object.entries(given ?? {})) {
    if (typeof v === 'string') env[k] = v;
    else if (v && typeof v === 'object' && !Array.isArray(v) && typeof v.secret === 'string') env[k] = { secret: v.secret };
    else r.add(`/env/${k}`, 'error.expected.jsstring');
  }
  return env;
}

/** `constraints`: lists of strings (their rules are checked in constraints.ts). */
function readConstraints(r: FieldReader, o: JsonObject): string[][] {
  const constraints: string[][] = [];
  r.arr(o, 'constraints', '')?.forEach((c, i) => {
    if (!Array.isArray(c) || c.some((x) => typeof x !== 'string')) r.add(`/constraints(${i})`, 'error.expected.jsarray');
    else constraints.push(c as string[]);
  });
  return constraints;
}
