// What one request or one app definition may ask for. Marathon 1.4 bounds none of these counts;
// on one machine an unbounded one is a way to take the orchestrator down (`instances: 1e9` ran it
// out of memory, and again at every restart), so each has a limit here, refused with Marathon's
// 422 shape ({path, errors}, wix-accord wording) before anything is stored. Pure: no state.
import type { AppDefinition, Json, Violation } from './app-definition.ts';
import { constraintProblems } from './constraints.ts';
import { nulViolations } from './app-definition/label-rules.ts';

export const LIMITS = {
  /** Arrays and objects inside one another in a request body (a group nests 2 levels per subgroup). */
  jsonDepth: 64,
  /** Path ids: characters and segments (groups nested deeper than this cannot be named). */
  idLength: 512,
  idSegments: 32,
  /** Instances of one app, and of all apps together (each is a process on this machine). */
  instances: 10_000,
  totalInstances: 10_000,
  /** Ports of one app: portDefinitions, ports, docker portMappings, ipAddress discovery ports. */
  ports: 100,
  healthChecks: 16,
  /** Entries of one label map (the app's, a port's, ipAddress's). */
  labels: 256,
  env: 1_000,
  secrets: 100,
  constraints: 32,
  /** Characters of a constraint's value (LIKE/UNLIKE regular expressions among them). */
  constraintValue: 512,
  args: 1_000,
  /** fetch, uris and storeUrls entries. */
  fetch: 100,
  dependencies: 256,
  roles: 64,
  volumes: 100,
  dockerParameters: 100,
  networkGroups: 64,
  /** Tasks launched in one reconcile pass: a large scale-up goes out in slices, the API keeps answering. */
  launchesPerPass: 32,
} as const;

/** wix-accord's wording for a collection that is too large. */
function tooMany(n: number, max: number): string {
  return `has size ${n}, expected ${max} or less`;
}

/**
 * True when `value` nests arrays and objects deeper than `max`. Iterative: a body nested
 * 10,000 deep must cost a loop, not the stack (JSON.stringify and every recursive walk over
 * such a value would throw RangeError).
 */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, Json>)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** Problems of a path id beyond its segments' grammar: its length and depth. */
export function idBoundErrors(id: string): string[] {
  if (id.length > LIMITS.idLength) return [`got an id of ${id.length} characters, expected ${LIMITS.idLength} or less`];
  const segments = id.split('/').filter((s) => s !== '').length;
  if (segments > LIMITS.idSegments) return [`got an id of ${segments} segments, expected ${LIMITS.idSegments} or less`];
  return [];
}

/** Every count of a parsed definition beyond its limit, with Marathon's paths. */
export function boundViolations(app: AppDefinition): Violation[] {
  const out: Violation[] = [];
  const add = (path: string, error: string) => out.push({ path, errors: [error] });
  const size = (path: string, n: number, max: number) => {
    if (n > max) add(path, tooMany(n, max));
  };
  const labels = (path: string, m: Record<string, string> | undefined) => size(path, m ? Object.keys(m).length : 0, LIMITS.labels);
  if (app.instances > LIMITS.instances) add('/instances', `got ${app.instances}, expected ${LIMITS.instances} or less`);
  size('/args', app.args?.length ?? 0, LIMITS.args);
  size('/env', Object.keys(app.env).length, LIMITS.env);
  size('/secrets', Object.keys(app.secrets).length, LIMITS.secrets);
  labels('/labels', app.labels);
  size('/constraints', app.constraints.length, LIMITS.constraints);
  size('/fetch', app.fetch.length, LIMITS.fetch);
  size('/uris', app.uris.length, LIMITS.fetch);
  size('/storeUrls', app.storeUrls.length, LIMITS.fetch);
  size('/dependencies', app.dependencies.length, LIMITS.dependencies);
  size('/acceptedResourceRoles', app.acceptedResourceRoles?.length ?? 0, LIMITS.roles);
  size('/healthChecks', app.healthChecks.length, LIMITS.healthChecks);
  size('/portDefinitions', app.portDefinitions?.length ?? 0, LIMITS.ports);
  size('/ports', app.ports?.length ?? 0, LIMITS.ports);
  (app.portDefinitions ?? []).forEach((p, i) => labels(`/portDefinitions(${i})/labels`, p.labels));
  const docker = app.container?.docker;
  if (app.container) size('/container/volumes', app.container.volumes.length, LIMITS.volumes);
  if (docker) {
    size('/container/docker/portMappings', docker.portMappings.length, LIMITS.ports);
    size('/container/docker/parameters', docker.parameters.length, LIMITS.dockerParameters);
    docker.portMappings.forEach((m, i) => labels(`/container/docker/portMappings(${i})/labels`, m.labels));
  }
  if (app.ipAddress) {
    size('/ipAddress/groups', app.ipAddress.groups.length, LIMITS.networkGroups);
    labels('/ipAddress/labels', app.ipAddress.labels);
    size('/ipAddress/discovery/ports', app.ipAddress.discovery.ports.length, LIMITS.ports);
  }
  return out;
}

/** Instances after a change, against the per-app and whole-machine limits (scaleBy results included). */
export function instanceViolations(before: ReadonlyMap<string, AppDefinition>, after: ReadonlyMap<string, AppDefinition>): Violation[] {
  const total = (m: ReadonlyMap<string, AppDefinition>) => {
    let n = 0;
    for (const a of m.values()) n += a.instances;
    return n;
  };
  const errors: string[] = [];
  for (const [id, app] of after) {
    const had = before.get(id)?.instances ?? 0;
    // A count that was already too high (stored before these limits) may still go down.
    if (app.instances > LIMITS.instances && app.instances > had)
      errors.push(`${id} would have ${app.instances} instances, expected ${LIMITS.instances} or less`);
  }
  const was = total(before);
  const will = total(after);
  if (will > LIMITS.totalInstances && will > was) errors.push(`all apps would have ${will} instances together, expected ${LIMITS.totalInstances} or less`);
  return errors.length ? [{ path: '/instances', errors }] : [];
}

/**
 * Constraints (compiled only when their count is within bounds: each costs a compile), bounds,
 * then NUL in labels and env (no task of the app could start: app-definition/label-rules.ts).
 */
export function definitionViolations(app: AppDefinition): Violation[] {
  const bounds = [...boundViolations(app), ...nulViolations(app)];
  return app.constraints.length <= LIMITS.constraints ? [...constraintProblems(app.constraints), ...bounds] : bounds;
}

const problems = new WeakMap<AppDefinition, string | null>();

/**
 * Why a stored definition cannot be honoured (launched) any more, or undefined. Definitions
 * stored before a limit existed, or whose regular expression this engine refuses, fail their own
 * app (visibly) instead of the process. Computed once per definition object.
 */
export function definitionProblem(app: AppDefinition): string | undefined {
  let p = problems.get(app);
  if (p === undefined) {
    const vs = definitionViolations(app);
    p = vs.length ? `app definition cannot be honoured: ${vs.map((v) => `${v.path} ${v.errors.join(', ')}`).join('; ')}` : null;
    problems.set(app, p);
  }
  return p ?? undefined;
}
