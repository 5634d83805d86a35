// /v2/apps: create, list (cmd, id, label, embed), group listing, get, versions, update (PUT/PATCH,
// single and array), restart, delete, and the app's tasks (JSON, text/plain, kill). One named
// handler per path; see appPath() for why the paths under an app id share one route per method.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { canonicalPath, parseApp, toMergeBase, type AppDefinition, type JsonObject, type ParseOptions } from '../state/app-definition.ts';
import { groupNotFound, isWithin, pathId } from '../state/group.ts';
import type { GroupManager } from '../group/manager.ts';
import type { TaskTracker } from '../tasks/tracker.ts';
import type { Deployer, DeploymentResult } from '../deployer.ts';
import type { EventCatalogue } from '../events/catalogue.ts';
import { textListing } from '../formats/json.ts';
import type { AppInfoService } from './app-info.ts';
import { AppsListing } from './apps-listing.ts';
import { bool, clientIp, embeds, many, one, parseLabelSelector, q, requireBody, sendDeployment, uriNotFound, wantsText } from './common.ts';
import { BadRequest, Conflict, MalformedJson, NotFound } from '../errors.ts';

export interface AppsApiOptions {
  groups: GroupManager;
  tasks: TaskTracker;
  info: AppInfoService;
  deployer: Deployer;
  events: Pick<EventCatalogue, 'apiPost'>;
  parseDefaults: Omit<ParseOptions, 'now' | 'pathId'>;
}

/** What a path under /v2/apps/ names: an app (or group) id and the resource beneath it. */
export interface AppPath {
  kind: 'app' | 'versions' | 'version' | 'tasks' | 'task' | 'restart' | 'group';
  id: string;
  /** The version of `version`, the task id of `task`. */
  extra?: string;
}

/**
 * Splits the path after /v2/apps/. App ids span segments (`/a/b/c`) and fastify's router matches
 * no fixed suffix after a wildcard, so each method has one `/v2/apps/*` route that splits the
 * path here and calls the handler named for it.
 */
export function appPath(rest: string): AppPath {
  const r = rest.replace(/\/+$/, '');
  let m: RegExpMatchArray | null;
  if (r === '*' || r.endsWith('/*')) return { kind: 'group', id: r.slice(0, -1) };
  if ((m = r.match(/^(.*)\/versions\/([^/]+)$/))) return { kind: 'version', id: m[1]!, extra: m[2]! };
  if ((m = r.match(/^(.*)\/versions$/))) return { kind: 'versions', id: m[1]! };
  // The router has decoded the path already: decoding again broke on a task id `%` (URIError, a 500).
  if ((m = r.match(/^(.*)\/tasks\/([^/]+)$/))) return { kind: 'task', id: m[1]!, extra: m[2]! };
  if ((m = r.match(/^(.*)\/tasks$/))) return { kind: 'tasks', id: m[1]! };
  if ((m = r.match(/^(.*)\/restart$/))) return { kind: 'restart', id: m[1]! };
  return { kind: 'app', id: r };
}

/** `*` or `/a/b/*`: every app beneath a group. */
function isGroupWildcard(id: string): boolean {
  return id === '*' || id.endsWith('/*');
}

/** The one app a change of one app made, as versioned (before service ports are given). */
function versionedTarget(r: DeploymentResult): AppDefinition {
  const target = r.changes?.[0]?.target;
  if (!target) throw new Error('a change of one app answered without its definition');
  return target;
}

function notFound(id: string): NotFound {
  return new NotFound(`App '${id}' does not exist`);
}

const TEXT = 'text/plain; charset=utf-8';
/** What fastify sends with an object it serialises. */
const JSON_TYPE = 'application/json; charset=utf-8';

export async function appsApi(app: FastifyInstance, opts: AppsApiOptions): Promise<void> {
  const { groups, tasks, info, deployer } = opts;
  const answers = new AppsListing();
  const parse = (body: unknown, pid?: string) =>
    parseApp(body, { ...opts.parseDefaults, now: new Date().toISOString(), ...(pid !== undefined ? { pathId: pid } : {}) });
  /** The definition a PUT/PATCH asks for: merged onto the existing app (partial update), or as given. */
  const definitionOf = (existing: AppDefinition | undefined, o: JsonObject, id: string, merge: boolean) =>
    existing && merge ? parse(toMergeBase(existing, o), id) : parse(o, id);
  const apiPost = (req: FastifyRequest, def: AppDefinition) =>
    opts.events.apiPost({ clientIp: clientIp(req), uri: req.url.split('?')[0] ?? req.url, appDefinition: def });
  const listing = (apps: AppDefinition[]) => textListing(apps, (id) => tasks.appTasks(id));
  const rest = (req: FastifyRequest) => (req.params as { '*': string })['*'];
  /** The app at a path id (422 when the id is malformed, 404 when there is none). */
  const existingApp = (raw: string): AppDefinition => {
    const id = pathId(raw);
    const a = groups.apps.get(id);
    if (!a) throw notFound(id);
    return a;
  };
  /** The apps beneath group path `raw` (`/a/b`, `a/b/`, `` for all), by id. */
  const appsUnder = (raw: string) => {
    const group = canonicalPath(raw);
    return { group, apps: [...groups.apps.values()].filter((a) => isWithin(a.id, group) && a.id !== group).sort((a, b) => a.id.localeCompare(b.id)) };
  };

  // ---- /v2/apps

  /** GET /v2/apps: every app, filtered by cmd, id and label, with what embed asks for (as bytes: apps-listing.ts). */
  const listApps = async (req: FastifyRequest, reply: FastifyReply) => {
    const query = q(req);
    const cmd = one(query.cmd)?.toLowerCase();
    const id = one(query.id)?.toLowerCase();
    const label = one(query.label);
    const selector = label ? parseLabelSelector(label) : undefined;
    const want = embeds(many(query.embed)).add('counts').add('deployments');
    const apps = [...groups.apps.values()]
      .filter((a) => !cmd || (a.cmd ?? '').toLowerCase().includes(cmd))
      .filter((a) => !id || a.id.toLowerCase().includes(id))
      .filter((a) => !selector || selector(a.labels))
      .sort((a, b) => a.id.localeCompare(b.id));
    return reply.type(JSON_TYPE).send(answers.body(JSON.stringify([cmd, id, label, [...want]]), apps, (a) => info.extras(a, want)));
  };

  /** POST /v2/apps: a new app (409 when its id is taken), 201 with the app as created. */
  const createApp = async (req: FastifyRequest, reply: FastifyReply) => {
    const body = requireBody(req.body);
    const def = parse(body);
    if (groups.apps.has(def.id)) throw new Conflict(`An app with id [${def.id}] already exists.`);
    const r = deployer.update([{ id: def.id, target: def }], { force: bool(q(req).force) });
    const echo: Record<string, unknown> = { ...def, version: r.version };
    apiPost(req, versionedTarget(r));
    void reply.header('Location', `/v2/apps${def.id}`).header('Marathon-Deployment-Id', r.deploymentId);
    return reply
      .code(201)
      .send({ ...echo, tasksStaged: 0, tasksRunning: 0, tasksHealthy: 0, tasksUnhealthy: 0, tasks: [], deployments: [{ id: r.deploymentId }] });
  };

  /** PUT/PATCH /v2/apps: many apps at once, one deployment for all. */
  const updateApps = (patch: boolean) => async (req: FastifyRequest, reply: FastifyReply) => {
    const body = requireBody(req.body);
    if (!Array.isArray(body)) throw new MalformedJson([{ path: '/', errors: ['error.expected.jsarray'] }]);
    const partial = bool(q(req).partialUpdate, true);
    const edits = body.map((item: unknown, i: number) => {
      if (item === null || typeof item !== 'object' || Array.isArray(item)) throw new MalformedJson([{ path: `(${i})`, errors: ['error.expected.jsobject'] }]);
      const o = item as JsonObject;
      if (typeof o.id !== 'string') throw new MalformedJson([{ path: `(${i})/id`, errors: ['error.path.missing'] }]);
      const id = pathId(o.id);
      const existing = groups.apps.get(id);
      if (patch && !existing) throw notFound(id);
      return { id, target: definitionOf(existing, o, id, partial || patch) };
    });
    const r = deployer.update(edits, { force: bool(q(req).force) });
    return sendDeployment(reply, r);
  };

  // ---- /v2/apps/{group}/* and /v2/apps/{group}/*/tasks

  /** GET /v2/apps/{group}/*: the apps beneath a group. */
  const listGroupApps = (req: FastifyRequest, reply: FastifyReply, raw: string) => {
    const { group, apps } = appsUnder(raw);
    const want = embeds(many(q(req).embed))
      .add('counts')
      .add('deployments');
    if (group !== '/' && apps.length === 0) throw groupNotFound(group);
    // Document 1 and Marathon's REST docs say {apps: […]} (Marathon 1.4's code answered {"*": […]}).
    return reply.type(JSON_TYPE).send(answers.body(JSON.stringify([group, [...want]]), apps, (a) => info.extras(a, want)));
  };

  /** GET /v2/apps/{group}/*\/tasks: the tasks of every app beneath a group (JSON or text). */
  const listGroupTasks = (req: FastifyRequest, reply: FastifyReply, raw: string) => {
    const { apps } = appsUnder(raw);
    if (wantsText(req)) return reply.type(TEXT).send(listing(apps));
    return { tasks: apps.flatMap((x) => info.tasksOf(x.id)) };
  };

  // ---- /v2/apps/{id}...

  /** GET /v2/apps/{id}: the app with its counts, tasks, last failure and deployments (and what embed adds). */
  const getApp = (req: FastifyRequest, a: AppDefinition) => {
    const want = embeds(many(q(req).embed))
      .add('counts')
      .add('tasks')
      .add('lastTaskFailure')
      .add('deployments');
    return { app: info.info(a, want) };
  };

  /** GET /v2/apps/{id}/versions */
  const listVersions = (a: AppDefinition) => ({ versions: groups.versionsOf(a.id) });

  /** GET /v2/apps/{id}/versions/{version} */
  const getVersion = (a: AppDefinition, version: string) => {
    const v = groups.appVersion(a.id, version);
    if (!v) throw new NotFound(`App '${a.id}' does not exist in version ${version}`);
    return v;
  };

  /** GET /v2/apps/{id}/tasks (JSON or text). */
  const listAppTasks = (req: FastifyRequest, reply: FastifyReply, a: AppDefinition) => {
    if (wantsText(req)) return reply.type(TEXT).send(listing([a]));
    return { tasks: info.tasksOf(a.id) };
  };

  /** PUT/PATCH /v2/apps/{id}: update (or create) one app; a PUT of {version} rolls back to that version. */
  const updateApp = (patch: boolean) => async (req: FastifyRequest, reply: FastifyReply, id: string) => {
    const body = requireBody(req.body);
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new MalformedJson([{ path: '/', errors: ['error.expected.jsobject'] }]);
    const o = body as JsonObject;
    const query = q(req);
    const force = bool(query.force);
    const existing = groups.apps.get(id);
    if (patch && !existing) throw notFound(id);
    let def: AppDefinition;
    if (existing && typeof o.version === 'string' && !patch) {
      const old = groups.appVersion(id, o.version);
      if (!old) throw notFound(id);
      const { versionInfo: _vi, ...rest } = old;
      def = { ...rest, ports: existing.ports ?? rest.ports } as AppDefinition;
    } else def = definitionOf(existing, o, id, patch || bool(query.partialUpdate, true));
    const result = deployer.update([{ id, target: def }], { force });
    apiPost(req, versionedTarget(result));
    if (!existing) void reply.header('Location', `/v2/apps${id}`);
    return sendDeployment(reply, result, existing ? 200 : 201);
  };

  /** POST /v2/apps/{id}/restart: a rolling restart (a new version of the same definition). */
  const restartApp = (req: FastifyRequest, reply: FastifyReply, a: AppDefinition) => {
    return sendDeployment(reply, deployer.update([{ id: a.id, target: a, restart: true }], { force: bool(q(req).force) }));
  };

  /** DELETE /v2/apps/{id}: stops and removes the app (force by default: Marathon's). */
  const deleteApp = (req: FastifyRequest, reply: FastifyReply, a: AppDefinition) =>
    sendDeployment(reply, deployer.update([{ id: a.id, target: null }], { force: bool(q(req).force, true) }));

  /** The kill options of DELETE .../tasks[/{taskId}] (400 for scale with wipe). */
  const killOptions = (req: FastifyRequest) => {
    const query = q(req);
    const scale = bool(query.scale);
    const wipe = bool(query.wipe);
    if (scale && wipe) throw new BadRequest('You cannot use scale and wipe at the same time.');
    return { scale, force: bool(query.force) };
  };

  /** DELETE /v2/apps/{id}/tasks: kills the app's tasks (on one host with ?host=); with scale, a deployment. */
  const killAppTasks = (req: FastifyRequest, reply: FastifyReply, a: AppDefinition, kill: { scale: boolean; force: boolean }) => {
    const host = one(q(req).host);
    const victims = tasks.appTasks(a.id).filter((t) => !host || host === '*' || t.host === host);
    const snapshot = victims.map((t) => info.task(t));
    const res = deployer.killTasks(victims, kill);
    if (res) return sendDeployment(reply, res);
    return { tasks: snapshot };
  };

  /** DELETE /v2/apps/{id}/tasks/{taskId} */
  const killAppTask = (reply: FastifyReply, a: AppDefinition, taskId: string, kill: { scale: boolean; force: boolean }) => {
    const t = tasks.get(taskId);
    if (!t || t.appId !== a.id) throw new NotFound(`Task '${taskId}' does not exist`);
    const snapshot = info.task(t);
    const res = deployer.killTasks([t], kill);
    if (res) return sendDeployment(reply, res);
    return { task: snapshot };
  };

  // ---- Routes

  app.get('/v2/apps', listApps);
  app.post('/v2/apps', createApp);
  app.put('/v2/apps', updateApps(false));
  app.patch('/v2/apps', updateApps(true));

  app.get('/v2/apps/*', async (req, reply) => {
    if (rest(req).replace(/\/+$/, '') === '') return listApps(req, reply);
    const p = appPath(rest(req));
    if (p.kind === 'group') return listGroupApps(req, reply, p.id);
    if (p.kind === 'tasks' && isGroupWildcard(p.id)) return listGroupTasks(req, reply, p.id.slice(0, -1));
    const a = existingApp(p.id);
    if (p.kind === 'app') return getApp(req, a);
    if (p.kind === 'versions') return listVersions(a);
    if (p.kind === 'version') return getVersion(a, p.extra!);
    if (p.kind === 'tasks') return listAppTasks(req, reply, a);
    throw uriNotFound(req);
  });

  const update = (patch: boolean) => {
    const handler = updateApp(patch);
    return async (req: FastifyRequest, reply: FastifyReply) => {
      const p = appPath(rest(req));
      if (p.kind !== 'app') throw uriNotFound(req);
      return handler(req, reply, pathId(p.id));
    };
  };
  app.put('/v2/apps/*', update(false));
  app.patch('/v2/apps/*', update(true));

  app.post('/v2/apps/*', async (req, reply) => {
    const p = appPath(rest(req));
    if (p.kind !== 'restart') throw uriNotFound(req);
    return restartApp(req, reply, existingApp(p.id));
  });

  app.delete('/v2/apps/*', async (req, reply) => {
    const p = appPath(rest(req));
    const a = existingApp(p.id);
    if (p.kind === 'app') return deleteApp(req, reply, a);
    const kill = killOptions(req);
    if (p.kind === 'tasks') return killAppTasks(req, reply, a, kill);
    if (p.kind === 'task') return killAppTask(reply, a, p.extra!, kill);
    throw uriNotFound(req);
  });
}
