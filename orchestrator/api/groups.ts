// /v2/groups: the namespace tree (get, versions), and changes to a whole group at once: create,
// update (full definitions, scaleBy, rollback to a version), delete; each is one deployment whose
// steps follow the apps' dependencies. dryRun answers with the plan and changes nothing.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ParseOptions } from '../state/app-definition.ts';
import { groupNotFound, groupPathId, parseGroupUpdate, type GroupTree, type GroupUpdate } from '../state/group.ts';
import { treeAsUpdate, type GroupEditor } from '../group/editor.ts';
import type { GroupManager } from '../group/manager.ts';
import type { Deployer, DeploymentResult } from '../deployer.ts';
import type { AppInfoService } from './app-info.ts';
import { bool, embeds, many, q, requireBody, sendDeployment } from './common.ts';
import { Conflict, Unprocessable } from '../errors.ts';

export interface GroupsApiOptions {
  groups: GroupManager;
  info: AppInfoService;
  deployer: Deployer;
  parseDefaults: Omit<ParseOptions, 'now' | 'pathId'>;
}

/** Which parts of a group to show: by default its apps and subgroups; apps bare unless group.apps.* asks. */
function groupEmbeds(values: string[]): { apps: boolean; groups: boolean; app: Set<string> } {
  const list = values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
  if (list.length === 0) return { apps: true, groups: true, app: new Set() };
  return {
    apps: list.some((v) => v === 'group.apps' || v.startsWith('group.apps.')),
    groups: list.includes('group.groups'),
    app: embeds(list.filter((v) => v.startsWith('group.apps.'))),
  };
}

export async function groupsApi(app: FastifyInstance, opts: GroupsApiOptions): Promise<void> {
  const { groups: s, info, deployer } = opts;
  const rest = (req: FastifyRequest) => ((req.params as { '*'?: string })['*'] ?? '').replace(/\/+$/, '');

  const render = (t: GroupTree, want: ReturnType<typeof groupEmbeds>): Record<string, unknown> => ({
    id: t.id,
    dependencies: t.dependencies,
    version: t.version,
    ...(want.apps ? { apps: t.apps.map((a) => (want.app.size ? info.info(a, want.app) : a)) } : {}),
    ...(want.groups ? { groups: t.groups.map((g) => render(g, want)) } : {}),
  });

  const get = async (req: FastifyRequest) => {
    const r = rest(req);
    let m: RegExpMatchArray | null;
    if ((m = r.match(/^(?:(.*)\/)?versions$/))) {
      const id = groupPathId(m[1] ?? '');
      if (!s.groupExists(id)) throw groupNotFound(id);
      return s.groupVersions(id); // a bare array, as Marathon answers
    }
    const want = groupEmbeds(many(q(req).embed));
    if ((m = r.match(/^(?:(.*)\/)?versions\/([^/]+)$/))) {
      const id = groupPathId(m[1] ?? '');
      const version = m[2]!; // decoded by the router already (again: a URIError on `%`)
      const t = Number.isNaN(Date.parse(version)) ? undefined : s.groupVersion(id, new Date(version).toISOString());
      if (!t) throw groupNotFound(id, version);
      return render(t, want);
    }
    const id = groupPathId(r);
    if (!s.groupExists(id)) throw groupNotFound(id);
    return render(s.groupTree(id), want);
  };
  app.get('/v2/groups', get);
  app.get('/v2/groups/*', get);

  const parse = (req: FastifyRequest, base: string, now: string): GroupUpdate => parseGroupUpdate(requireBody(req.body), base, opts.parseDefaults, now);

  /** Runs a change through a GroupEditor and deploys it (or only plans it, for dryRun). */
  const change = (
    groupId: string,
    version: string,
    edit: (e: GroupEditor) => void,
    o: { force: boolean; dryRun?: boolean; snapshot: boolean },
  ): DeploymentResult => {
    return deployer.update([], {
      force: o.force,
      version,
      group: { groupId, edit, ...(o.snapshot ? { snapshotGroup: groupId } : {}), ...(o.dryRun ? { dryRun: true } : {}) },
    });
  };

  /** POST creates a group that does not exist yet (201 + Location); 409 when it, or an app there, does. */
  const create = async (req: FastifyRequest, reply: FastifyReply) => {
    const version = s.newVersion();
    const u = parse(req, groupPathId(rest(req)), version);
    if (s.apps.has(u.id)) throw new Conflict(`An app with the path ${u.id} already exists.`);
    if (s.groupExists(u.id)) throw new Conflict(`Group ${u.id} is already created. Use PUT to change this group.`);
    const r = change(u.id, version, (e) => e.update(u), { force: bool(q(req).force), snapshot: true });
    void reply.header('Location', `/v2/groups${u.id}`);
    return sendDeployment(reply, r, 201);
  };
  app.post('/v2/groups', create);
  app.post('/v2/groups/*', create);

  /** PUT: rollback ({version}) before scaleBy before a normal update, which creates a missing group. */
  const update = async (req: FastifyRequest, reply: FastifyReply) => {
    const query = q(req);
    const version = s.newVersion();
    const u = parse(req, groupPathId(rest(req)), version);
    const force = bool(query.force);
    const dryRun = bool(query.dryRun);
    let edit: (e: GroupEditor) => void;
    if (u.version !== undefined) {
      // A group read with GET and sent back carries its current version: that "rollback" keeps it
      // as it is (Marathon has every root version stored; here only group changes are).
      const current = s.groupExists(u.id) ? s.groupTree(u.id) : undefined;
      const old = current?.version === u.version ? current : s.groupVersion(u.id, u.version);
      if (!old) throw new Unprocessable(`Group '${u.id}' does not exist in version ${u.version}`);
      const restore = treeAsUpdate(old);
      edit = (e) => e.update(restore);
    } else if (u.scaleBy !== undefined) {
      if (!s.groupExists(u.id)) throw groupNotFound(u.id);
      const factor = u.scaleBy;
      edit = (e) => e.scaleBy(u.id, factor);
    } else edit = (e) => e.update(u);
    const r = change(u.id, version, edit, { force, dryRun, snapshot: true });
    if (dryRun) {
      // Document 1 names the key `type`, Marathon 1.4 answers `action`: both are there.
      const steps = (r.plan?.steps ?? []).map((st) => ({ actions: st.actions.map((a) => ({ action: a.action, type: a.action, app: a.app })) }));
      return reply.code(200).send({ steps });
    }
    return sendDeployment(reply, r);
  };
  app.put('/v2/groups', update);
  app.put('/v2/groups/*', update);

  const remove = async (req: FastifyRequest, reply: FastifyReply) => {
    const id = groupPathId(rest(req));
    if (!s.groupExists(id)) throw groupNotFound(id);
    const r = change(id, s.newVersion(), (e) => e.remove(id), { force: bool(q(req).force), snapshot: false });
    return sendDeployment(reply, r);
  };
  app.delete('/v2/groups', remove);
  app.delete('/v2/groups/*', remove);
}
