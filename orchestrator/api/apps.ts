// /v2/apps: create, list (cmd, id, label, embed), group listing, get, versions, update (PUT/PATCH,
// single and array), restart, delete, and the app's tasks (JSON, text/plain, kill).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, canonicalPath, invalidJson, parseApp, toMergeBase, type AppDefinition, type JsonObject, type ParseOptions } from '../state/app-definition.ts';
import { groupNotFound, isWithin, pathId } from '../state/group.ts';
import type { GroupManager } from '../state/group-manager.ts';
import type { TaskTracker } from '../tasks/tracker.ts';
import type { Deployer } from '../deployment/deployer.ts';
import type { EventCatalogue } from '../events/catalogue.ts';
import { textListing } from '../formats/json.ts';
import type { AppInfoService } from './app-info.ts';
import { bool, clientIp, embeds, many, one, parseLabelSelector, q, requireBody, sendDeployment, uriNotFound, wantsText } from './common.ts';

export interface AppsApiOptions {
  groups: GroupManager;
  tasks: TaskTracker;
  info: AppInfoService;
  deployer: Deployer;
  events: Pick<EventCatalogue, 'apiPost'>;
  parseDefaults: Omit<ParseOptions, 'now' | 'pathId'>;
}

function notFound(id: string): ApiError {
  return new ApiError(404, { message: `App '${id}' does not exist` });
}


export async function appsApi(app: FastifyInstance, opts: AppsApiOptions): Promise<void> {
  const { groups: s, tasks: tracker, info, deployer } = opts;
  const listing = (apps: AppDefinition[]) => textListing(apps, (id) => tracker.appTasks(id));
  const parse = (body: unknown, pid?: string) => parseApp(body, { ...opts.parseDefaults, now: new Date().toISOString(), ...(pid !== undefined ? { pathId: pid } : {}) });

  /** The definition a PUT/PATCH asks for: merged onto the existing app (partial update), or as given. */
  const definitionOf = (existing: AppDefinition | undefined, o: JsonObject, id: string, merge: boolean) => (existing && merge ? parse(toMergeBase(existing, o), id) : parse(o, id));

  const apiPost = (req: FastifyRequest, def: AppDefinition) => opts.events.apiPost({ clientIp: clientIp(req), uri: req.url.split('?')[0] ?? req.url, appDefinition: def });

  const list = async (req: FastifyRequest) => {
    const query = q(req);
    const cmd = one(query.cmd)?.toLowerCase();
    const id = one(query.id)?.toLowerCase();
    const label = one(query.label);
    const selector = label ? parseLabelSelector(label) : undefined;
    const want = embeds(many(query.embed)).add('counts').add('deployments');
    const apps = [...s.apps.values()]
      .filter((a) => !cmd || (a.cmd ?? '').toLowerCase().includes(cmd))
      .filter((a) => !id || a.id.toLowerCase().includes(id))
      .filter((a) => !selector || selector(a.labels))
      .sort((a, b) => a.id.localeCompare(b.id));
    return { apps: apps.map((a) => info.info(a, want)) };
  };
  app.get('/v2/apps', list);

  app.post('/v2/apps', async (req, reply) => {
    const body = requireBody(req.body);
    const def = parse(body);
    if (s.apps.has(def.id)) throw new ApiError(409, { message: `An app with id [${def.id}] already exists.` });
    const target = s.versioned(undefined, def);
    const r = deployer.deploy([{ id: def.id, target }], bool(q(req).force));
    const echo: Record<string, unknown> = { ...def, version: target.version };
    apiPost(req, target);
    void reply.header('Location', `/v2/apps${def.id}`).header('Marathon-Deployment-Id', r.deploymentId);
    return reply.code(201).send({ ...echo, tasksStaged: 0, tasksRunning: 0, tasksHealthy: 0, tasksUnhealthy: 0, tasks: [], deployments: [{ id: r.deploymentId }] });
  });

  // PUT/PATCH of many apps: one deployment for all.
  const multi = (patch: boolean) => async (req: FastifyRequest, reply: FastifyReply) => {
    const body = requireBody(req.body);
    if (!Array.isArray(body)) throw invalidJson([{ path: '/', errors: ['error.expected.jsarray'] }]);
    const partial = bool(q(req).partialUpdate, true);
    const version = s.newVersion();
    const changes = body.map((item: unknown, i: number) => {
      if (item === null || typeof item !== 'object' || Array.isArray(item)) throw invalidJson([{ path: `(${i})`, errors: ['error.expected.jsobject'] }]);
      const o = item as JsonObject;
      if (typeof o.id !== 'string') throw invalidJson([{ path: `(${i})/id`, errors: ['error.path.missing'] }]);
      const id = pathId(o.id);
      const existing = s.apps.get(id);
      if (patch && !existing) throw notFound(id);
      const def = definitionOf(existing, o, id, partial || patch);
      return { id, target: s.versioned(existing, def, false, version) };
    });
    const r = deployer.deploy(changes, bool(q(req).force));
    return sendDeployment(reply, r);
  };
  app.put('/v2/apps', multi(false));
  app.patch('/v2/apps', multi(true));

  const route = (rest: string): { kind: string; id: string; extra?: string } => {
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
  };
  const rest = (req: FastifyRequest) => (req.params as { '*': string })['*'];
  /** The apps beneath group path `raw` (`/a/b`, `a/b/`, `` for all), by id. */
  const appsUnder = (raw: string) => {
    const group = canonicalPath(raw) ?? '/';
    return { group, apps: [...s.apps.values()].filter((a) => isWithin(a.id, group) && a.id !== group).sort((a, b) => a.id.localeCompare(b.id)) };
  };

  app.get('/v2/apps/*', async (req, reply) => {
    if (rest(req).replace(/\/+$/, '') === '') return list(req);
    const r = route(rest(req));
    const query = q(req);
    if (r.kind === 'group') {
      const { group, apps } = appsUnder(r.id);
      const want = embeds(many(query.embed)).add('counts').add('deployments');
      if (group !== '/' && apps.length === 0) throw groupNotFound(group);
      // Document 1 and Marathon's REST docs say {apps: […]} (Marathon 1.4's code answered {"*": […]}).
      return { apps: apps.map((a) => info.info(a, want)) };
    }
    if (r.kind === 'tasks' && (r.id === '*' || r.id.endsWith('/*'))) {
      const { apps } = appsUnder(r.id.slice(0, -1));
      if (wantsText(req)) return reply.type('text/plain; charset=utf-8').send(listing(apps));
      return { tasks: apps.flatMap((x) => info.tasksOf(x.id)) };
    }
    const id = pathId(r.id);
    const a = s.apps.get(id);
    if (r.kind === 'app') {
      if (!a) throw notFound(id);
      const want = embeds(many(query.embed)).add('counts').add('tasks').add('lastTaskFailure').add('deployments');
      return { app: info.info(a, want) };
    }
    if (!a) throw notFound(id);
    if (r.kind === 'versions') return { versions: s.versionsOf(id) };
    if (r.kind === 'version') {
      const v = s.appVersion(id, r.extra!);
      if (!v) throw new ApiError(404, { message: `App '${id}' does not exist in version ${r.extra}` });
      return v;
    }
    if (r.kind === 'tasks') {
      if (wantsText(req)) return reply.type('text/plain; charset=utf-8').send(listing([a]));
      return { tasks: info.tasksOf(id) };
    }
    throw uriNotFound(req);
  });

  const update = (patch: boolean) => async (req: FastifyRequest, reply: FastifyReply) => {
    const r = route(rest(req));
    if (r.kind !== 'app') throw uriNotFound(req);
    const id = pathId(r.id);
    const body = requireBody(req.body);
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalidJson([{ path: '/', errors: ['error.expected.jsobject'] }]);
    const o = body as JsonObject;
    const query = q(req);
    const force = bool(query.force);
    const existing = s.apps.get(id);
    if (patch && !existing) throw notFound(id);
    let def: AppDefinition;
    if (existing && typeof o.version === 'string' && !patch) {
      const old = s.appVersion(id, o.version);
      if (!old) throw notFound(id);
      const { versionInfo: _vi, ...rest } = old;
      def = { ...rest, ports: existing.ports ?? rest.ports } as AppDefinition;
    } else def = definitionOf(existing, o, id, patch || bool(query.partialUpdate, true));
    const target = s.versioned(existing, def);
    const result = deployer.deploy([{ id, target }], force);
    apiPost(req, target);
    if (!existing) void reply.header('Location', `/v2/apps${id}`);
    return sendDeployment(reply, result, existing ? 200 : 201);
  };
  app.put('/v2/apps/*', update(false));
  app.patch('/v2/apps/*', update(true));

  app.post('/v2/apps/*', async (req, reply) => {
    const r = route(rest(req));
    if (r.kind !== 'restart') throw uriNotFound(req);
    const id = pathId(r.id);
    const a = s.apps.get(id);
    if (!a) throw notFound(id);
    const target = s.versioned(a, a, true);
    return sendDeployment(reply, deployer.deploy([{ id, target }], bool(q(req).force)));
  });

  app.delete('/v2/apps/*', async (req, reply) => {
    const r = route(rest(req));
    const query = q(req);
    const id = pathId(r.id);
    const a = s.apps.get(id);
    if (r.kind === 'app') {
      if (!a) throw notFound(id);
      return sendDeployment(reply, deployer.deploy([{ id, target: null }], bool(query.force, true)));
    }
    if (!a) throw notFound(id);
    const scale = bool(query.scale);
    const wipe = bool(query.wipe);
    const force = bool(query.force);
    if (scale && wipe) throw new ApiError(400, { message: 'You cannot use scale and wipe at the same time.' });
    if (r.kind === 'tasks') {
      const host = one(query.host);
      const victims = tracker.appTasks(id).filter((t) => !host || host === '*' || t.host === host);
      const snapshot = victims.map((t) => info.task(t));
      const res = deployer.killTasks(victims, { scale, force });
      if (res) return sendDeployment(reply, res);
      return { tasks: snapshot };
    }
    if (r.kind === 'task') {
      const t = tracker.get(r.extra!);
      if (!t || t.appId !== id) throw new ApiError(404, { message: `Task '${r.extra}' does not exist` });
      const snapshot = info.task(t);
      const res = deployer.killTasks([t], { scale, force });
      if (res) return sendDeployment(reply, res);
      return { task: snapshot };
    }
    throw uriNotFound(req);
  });
}
