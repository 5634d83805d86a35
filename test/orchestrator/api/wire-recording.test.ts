// The orchestrator's answers on a fixed request set, compared with a recording
// (test/fixtures/orchestrator-wire/requests.json): status, the headers a client reads, and the body
// bytes, with only the values that vary per run replaced (test/helpers/wire.ts lists them). It holds
// a refactoring of the API, the group manager or the scheduler to "no change on the wire".
// STARMAP_RECORD=1 writes the recording instead of comparing (docs/architecture.md, "The wire recording").
/* eslint-disable @typescript-eslint/no-explicit-any */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ROOT, stopAll } from '../../helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { waitFor } from '../../helpers/wait.ts';
import { Placeholders, normaliseBody } from '../../helpers/wire.ts';

const RECORDING = join(ROOT, 'test', 'fixtures', 'orchestrator-wire', 'requests.json');
const RECORD = process.env.STARMAP_RECORD === '1';
/** The headers compared (a client reads them); the others (date, content-length, connection) are transport. */
const HEADERS = ['content-type', 'location', 'marathon-deployment-id', 'cache-control', 'pragma', 'expires'] as const;

interface Exchange {
  name: string;
  method: string;
  path: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

let o: StartedOrchestrator;
const names = new Placeholders();
const exchanges: Exchange[] = [];

beforeAll(async () => {
  o = await startOrchestrator(['--local-port-min=12000', '--local-port-max=12100', '--task-port-min=33000', '--task-port-max=33500']);
}, 30_000);
afterAll(async () => {
  await o?.proc.stop('SIGTERM');
  await stopAll();
});

/** Sends one request of the set and keeps its normalised answer; returns the parsed body. */
async function send(name: string, method: string, path: string, body?: unknown): Promise<any> {
  const r = await o.call(method, path, body);
  const headers: Record<string, string> = {};
  for (const h of HEADERS) {
    const v = r.headers.get(h);
    if (v === null) continue;
    headers[h] = h === 'marathon-deployment-id' ? names.name('deployment', v) : v;
  }
  exchanges.push({ name, method, path: path.replace(/\/tasks\/[^/?]+/, '/tasks/{task}'), status: r.status, headers, body: normaliseBody(r.text, names) });
  return r.body;
}

/** Waits (unrecorded) until no deployment runs and every app has its instances running. */
async function settled(): Promise<void> {
  await waitFor(
    async () => {
      const deployments = (await o.call('GET', '/v2/deployments')).body as any[];
      if (deployments.length > 0) return false;
      const apps = (await o.call('GET', '/v2/apps?embed=apps.tasks')).body.apps as any[];
      return apps.every((a) => a.tasks.length === a.instances && a.tasks.every((t: any) => t.state === 'TASK_RUNNING'));
    },
    { timeoutMs: 30_000, message: 'deployments done and tasks running' },
  );
}

it('answers the recorded request set as recorded', async () => {
  await send('info', 'GET', '/v2/info');
  await send('no apps', 'GET', '/v2/apps');
  await send('create an app', 'POST', '/v2/apps', { id: '/wire/web', cmd: 'sleep 1000', instances: 2, labels: { tier: 'front' } });
  await settled();
  await send('create it again: 409', 'POST', '/v2/apps', { id: '/wire/web', cmd: 'sleep 1' });
  await send('an invalid app: 422', 'POST', '/v2/apps', { id: '/wire/bad', cmd: 'sleep 1', cpus: -1, instances: -2 });
  await send('malformed JSON: 400', 'POST', '/v2/apps', '{"id": ');
  await send('no body: 400', 'POST', '/v2/apps', 'null');
  await send('get the app', 'GET', '/v2/apps/wire/web');
  await send('list with embeds', 'GET', '/v2/apps?embed=apps.tasks&embed=apps.counts&embed=apps.deployments&embed=apps.lastTaskFailure&embed=apps.taskStats');
  await send('list by label', 'GET', '/v2/apps?label=tier==front');
  await send('a bad label selector: 422', 'GET', '/v2/apps?label=tier=front');
  await send('no such app: 404', 'GET', '/v2/apps/wire/nope');
  await send('versions', 'GET', '/v2/apps/wire/web/versions');
  await send('the app tasks', 'GET', '/v2/apps/wire/web/tasks');
  await send('all tasks', 'GET', '/v2/tasks');
  await send('scale up', 'PUT', '/v2/apps/wire/web', { instances: 3 });
  await settled();
  await send('change the config (PATCH)', 'PATCH', '/v2/apps/wire/web', { labels: { tier: 'front', rev: '2' } });
  await settled();
  await send('the app after its changes', 'GET', '/v2/apps/wire/web');
  await send('PATCH of a missing app: 404', 'PATCH', '/v2/apps/wire/nope', { instances: 1 });
  await send('create a group', 'POST', '/v2/groups', { id: '/wire/grp', apps: [{ id: 'db', cmd: 'sleep 1000', instances: 1 }] });
  await settled();
  await send('create the group again: 409', 'POST', '/v2/groups', { id: '/wire/grp' });
  await send('a group where an app is: 409', 'POST', '/v2/groups', { id: '/wire/web' });
  await send('get a group with its apps', 'GET', '/v2/groups/wire?embed=group.apps&embed=group.groups');
  await send('get the root group', 'GET', '/v2/groups');
  await send('scale a group', 'PUT', '/v2/groups/wire/grp', { scaleBy: 2 });
  await settled();
  await send('a group change, dry run', 'PUT', '/v2/groups/wire/grp?dryRun=true', { apps: [{ id: 'db', cmd: 'sleep 2000', instances: 1 }] });
  await send('no such group: 404', 'GET', '/v2/groups/wire/nope');
  await send('an invalid group: 422', 'PUT', '/v2/groups/wire/grp', { apps: [{ id: 'db', cmd: 'sleep 1', mem: -5 }] });
  await send('group versions', 'GET', '/v2/groups/wire/grp/versions');

  // A deployment that cannot finish (no host matches), to see it, the queue, a lock and a force.
  await send('create an app nowhere to run', 'POST', '/v2/apps', { id: '/wire/stuck', cmd: 'sleep 1000', constraints: [['hostname', 'LIKE', 'nowhere']] });
  await waitFor(async () => ((await o.call('GET', '/v2/queue')).body.queue as any[]).length === 1, { message: 'the stuck app queued' });
  await send('the running deployment', 'GET', '/v2/deployments');
  await send('the queue', 'GET', '/v2/queue');
  await send('the queue with offers', 'GET', '/v2/queue?embed=lastUnusedOffers');
  await send('change a locked app: 409', 'PUT', '/v2/apps/wire/stuck', { instances: 2 });
  await send('force it', 'PUT', '/v2/apps/wire/stuck?force=true', { instances: 0 });
  await settled();
  await send('reset a delay', 'DELETE', '/v2/queue/wire/stuck/delay');
  await send('no such deployment: 404', 'DELETE', '/v2/deployments/nope');

  // Kills: one task (replaced), one with scale (a deployment), and the 400 of scale with wipe.
  const tasks = (await o.call('GET', '/v2/apps/wire/web/tasks')).body.tasks as any[];
  await send('kill a task', 'DELETE', `/v2/apps/wire/web/tasks/${tasks[0].id}`);
  await waitFor(async () => !((await o.call('GET', '/v2/apps/wire/web/tasks')).body.tasks as any[]).some((t) => t.id === tasks[0].id), {
    message: 'the killed task gone',
  });
  await settled();
  await send('kill a task and scale', 'DELETE', `/v2/apps/wire/web/tasks/${tasks[1].id}?scale=true`);
  await settled();
  await send('scale and wipe: 400', 'DELETE', '/v2/apps/wire/web/tasks?scale=true&wipe=true');
  await send('kill a missing task: 404', 'DELETE', '/v2/apps/wire/web/tasks/wire_web.nope');
  await send('the app after the kills', 'GET', '/v2/apps/wire/web');

  await send('update many apps', 'PUT', '/v2/apps', [
    { id: '/wire/web', instances: 1 },
    { id: '/wire/other', cmd: 'sleep 1000', instances: 1 },
  ]);
  await settled();
  await send('PATCH many with a missing app: 404', 'PATCH', '/v2/apps', [{ id: '/wire/none', instances: 1 }]);
  await send('PUT many, not an array: 400', 'PUT', '/v2/apps', { id: '/wire/web' });
  await send('restart an app', 'POST', '/v2/apps/wire/other/restart');
  await settled();
  await send('the apps beneath a group', 'GET', '/v2/apps/wire/*');
  await send('delete an app', 'DELETE', '/v2/apps/wire/web');
  await settled();
  await send('delete a group', 'DELETE', '/v2/groups/wire');
  await settled();
  await send('delete a missing app: 404', 'DELETE', '/v2/apps/wire/web');
  await send('no apps again', 'GET', '/v2/apps');
  await send('the root group at the end', 'GET', '/v2/groups');
  await send('no deployments', 'GET', '/v2/deployments');

  if (RECORD) {
    mkdirSync(dirname(RECORDING), { recursive: true });
    writeFileSync(RECORDING, `${JSON.stringify(exchanges, null, 2)}\n`);
    return;
  }
  expect(existsSync(RECORDING), `${RECORDING} missing: record it with STARMAP_RECORD=1`).toBe(true);
  const recorded = JSON.parse(readFileSync(RECORDING, 'utf8')) as Exchange[];
  expect(exchanges.map((e) => e.name)).toEqual(recorded.map((e) => e.name));
  // Every answer that differs by name first, then the first difference in full.
  expect(exchanges.filter((e, i) => !isDeepStrictEqual(e, recorded[i])).map((e) => e.name)).toEqual([]);
  for (const [i, e] of exchanges.entries()) expect(e, e.name).toEqual(recorded[i]);
}, 240_000);
