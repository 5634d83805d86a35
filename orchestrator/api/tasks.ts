// /v2/tasks: every task (status filter, text/plain listing of running tasks) and POST
// /v2/tasks/delete ({ids}, scale, wipe).
import type { FastifyInstance } from 'fastify';
import type { TaskRecord } from '../storage/store.ts';
import type { GroupManager } from '../group/manager.ts';
import type { TaskTracker } from '../tasks/tracker.ts';
import type { Deployer } from '../deployer.ts';
import { textListing } from '../formats/json.ts';
import type { AppInfoService } from './app-info.ts';
import { bool, many, q, requireBody, sendDeployment, wantsText } from './common.ts';
import { BadRequest, MalformedJson } from '../errors.ts';

const TASK_ID = /^([a-z0-9_.-]+)[._]([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export interface TasksApiOptions {
  groups: Pick<GroupManager, 'apps'>;
  tasks: Pick<TaskTracker, 'all' | 'get' | 'appTasks'>;
  info: AppInfoService;
  deployer: Pick<Deployer, 'killTasks'>;
}

export async function tasksApi(app: FastifyInstance, opts: TasksApiOptions): Promise<void> {
  const { groups, tasks: tracker, info, deployer } = opts;
  app.get('/v2/tasks', async (req, reply) => {
    if (wantsText(req)) {
      const apps = [...groups.apps.values()].sort((a, b) => a.id.localeCompare(b.id));
      return reply.type('text/plain; charset=utf-8').send(textListing(apps, (id) => tracker.appTasks(id)));
    }
    const query = q(req);
    const wanted = [...many(query.status), ...many(query['status[]'])].map((x) => x.toLowerCase()).filter((x) => x === 'running' || x === 'staging');
    const states = new Set(wanted.flatMap((w) => (w === 'running' ? ['TASK_RUNNING'] : ['TASK_STAGING', 'TASK_STARTING'])));
    const tasks = [...tracker.all()].filter((t) => states.size === 0 || states.has(t.state));
    return { tasks: tasks.map((t) => info.task(t)) };
  });

  app.post('/v2/tasks/delete', async (req, reply) => {
    const query = q(req);
    const scale = bool(query.scale);
    const wipe = bool(query.wipe);
    if (scale && wipe) throw new BadRequest('You cannot use scale and wipe at the same time.');
    const body = requireBody(req.body);
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new MalformedJson([{ path: '/', errors: ['error.expected.jsobject'] }]);
    const ids = (body as { ids?: unknown }).ids;
    if (!Array.isArray(ids)) throw new MalformedJson([{ path: '/ids', errors: [ids === undefined ? 'error.path.missing' : 'error.expected.jsarray'] }]);
    // Marathon reads {ids: [string]}: anything else is a type error at its index (String() of
    // {"toString": 1} threw, a 500).
    const notStrings = ids.flatMap((id, i) => (typeof id === 'string' ? [] : [{ path: `/ids(${i})`, errors: ['error.expected.jsstring'] }]));
    if (notStrings.length) throw new MalformedJson(notStrings);
    const found: TaskRecord[] = [];
    for (const id of ids as string[]) {
      if (!TASK_ID.test(id)) throw new BadRequest(`Invalid task id '${id}'. [${id}]`);
      const t = tracker.get(id);
      if (t) found.push(t);
    }
    const snapshot = found.map((t) => info.task(t));
    const res = deployer.killTasks(found, { scale, force: bool(query.force) });
    if (res) return sendDeployment(reply, res);
    return { tasks: snapshot };
  });
}
