// GET /v2/apps served from kept bytes (orchestrator/api/apps-listing.ts): the bytes are those
// JSON.stringify writes for the objects, and a GET after each kind of change sees the change.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppsListing } from '../../../orchestrator/api/apps-listing.ts';
import type { AppDefinition } from '../../../orchestrator/state/app-definition.ts';
import { stopAll } from '../../helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { waitFor } from '../../helpers/wait.ts';

const appOf = (fields: Record<string, unknown>) => fields as unknown as AppDefinition;

describe('AppsListing', () => {
  const expected = (apps: AppDefinition[], extras: (a: AppDefinition) => Record<string, unknown>) =>
    JSON.stringify({ apps: apps.map((a) => ({ ...a, ...extras(a) })) });

  it('writes the bytes JSON.stringify writes: escapes, non-ASCII, undefined fields, no extras, an extra named like a field', () => {
    const apps = [
      appOf({ id: '/a', cmd: 'echo "ü ✓ 😀"\n\t\\', labels: { 'k\u0001': 'v\u2028' }, args: null, gone: undefined, n: 1.5e-7 }),
      appOf({ id: '/b', deployments: ['kept in place'], instances: 0 }),
      appOf({ id: '/c' }),
    ];
    const extras = (a: AppDefinition) =>
      a.id === '/c' ? {} : { tasksStaged: 0, tasksRunning: 2, deployments: [{ id: 'd-1' }], lastTaskFailure: undefined, note: 'ñ' };
    const listing = new AppsListing();
    expect(listing.body('q', apps, extras).toString()).toBe(expected(apps, extras));
    expect(listing.body('empty', [], extras).toString()).toBe('{"apps":[]}');
  });

  it('reuses the bytes only while the definitions and the extras are the same', () => {
    const listing = new AppsListing();
    const a = appOf({ id: '/a', instances: 1 });
    let running = 0;
    const extras = () => ({ tasksRunning: running });
    const first = listing.body('q', [a], extras);
    expect(listing.body('q', [a], extras)).toBe(first);
    running = 1;
    const second = listing.body('q', [a], extras);
    expect(second).not.toBe(first);
    expect(second.toString()).toBe(expected([a], extras));
    const b = appOf({ id: '/a', instances: 2 }); // a change makes a new definition object
    expect(listing.body('q', [b], extras).toString()).toBe(expected([b], extras));
    expect(listing.body('q', [], extras).toString()).toBe('{"apps":[]}');
    // Another query does not take the first one's bytes.
    expect(listing.body('other', [a], () => ({})).toString()).toBe(expected([a], () => ({})));
  });
});

describe('GET /v2/apps after each kind of change', () => {
  let o: StartedOrchestrator;
  beforeAll(async () => {
    o = await startOrchestrator(['--local-port-min=12200', '--local-port-max=12300', '--task-port-min=33600', '--task-port-max=33900']);
  }, 30_000);
  afterAll(async () => {
    await o?.proc.stop('SIGTERM');
    await stopAll();
  });

  /** GET /v2/apps (or another listing path): checks the bytes are JSON.stringify's, returns the apps by id. */
  const list = async (path = '/v2/apps'): Promise<Map<string, any>> => {
    const r = await o.call('GET', path);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(r.headers.get('cache-control')).toBe('no-cache, no-store, must-revalidate');
    expect(r.text).toBe(JSON.stringify(r.body));
    return new Map((r.body.apps as any[]).map((a) => [a.id, a]));
  };
  const settled = (id: string) =>
    waitFor(async () => (await list()).get(id)?.deployments.length === 0, { timeoutMs: 15_000, message: `deployments of ${id} done` });

  it('sees creation, update, scaling, task counts, deployments, task kills and deletion', async () => {
    expect((await list()).size).toBe(0);
    await list(); // a second read of the same state (the kept bytes)

    const created = await o.call('POST', '/v2/apps', { id: '/l/one', cmd: 'sleep 1000', instances: 0, labels: { tier: 'a' } });
    expect(created.status).toBe(201);
    expect((await list()).get('/l/one')).toMatchObject({ cmd: 'sleep 1000', instances: 0, labels: { tier: 'a' } });
    await settled('/l/one');

    expect((await o.call('PUT', '/v2/apps/l/one', { cmd: 'sleep 2000' })).status).toBe(200);
    expect((await list()).get('/l/one').cmd).toBe('sleep 2000');
    await settled('/l/one');

    expect((await o.call('PATCH', '/v2/apps/l/one', { labels: { tier: 'b' } })).status).toBe(200);
    expect((await list()).get('/l/one').labels).toEqual({ tier: 'b' });
    expect((await list('/v2/apps?label=tier==b')).has('/l/one')).toBe(true);
    expect((await list('/v2/apps?label=tier==a')).has('/l/one')).toBe(false);
    await settled('/l/one');

    // Scaling: the deployment shows while it runs, the counts follow the tasks.
    const scaled = await o.call('PUT', '/v2/apps/l/one', { instances: 2 });
    expect(scaled.status).toBe(200);
    const during = (await list()).get('/l/one');
    expect(during.instances).toBe(2);
    if (during.tasksRunning < 2) expect(during.deployments).toEqual([{ id: scaled.body.deploymentId }]);
    await waitFor(async () => (await list()).get('/l/one').tasksRunning === 2, { timeoutMs: 15_000, message: 'two tasks running in the listing' });
    await settled('/l/one');
    const withTasks = (await list('/v2/apps?embed=apps.tasks')).get('/l/one');
    expect(withTasks.tasks).toHaveLength(2);
    expect((await list('/v2/apps/l/*')).get('/l/one').tasksRunning).toBe(2);

    // A task killed with scale: one fewer, in the plain listing and the group's.
    const taskId = withTasks.tasks[0].id as string;
    expect((await o.call('DELETE', `/v2/apps/l/one/tasks/${taskId}?scale=true`)).status).toBe(200);
    await waitFor(async () => (await list()).get('/l/one').tasksRunning === 1, { timeoutMs: 15_000, message: 'one task left in the listing' });
    expect((await list()).get('/l/one').instances).toBe(1);
    await waitFor(async () => (await list('/v2/apps/l/*')).get('/l/one').tasksRunning === 1, { timeoutMs: 15_000, message: 'one task in the group listing' });

    // A second app, then deleting the first.
    expect((await o.call('POST', '/v2/apps', { id: '/l/two', cmd: 'sleep 1000', instances: 0 })).status).toBe(201);
    expect([...(await list()).keys()]).toEqual(['/l/one', '/l/two']);
    expect((await o.call('DELETE', '/v2/apps/l/one')).status).toBe(200);
    expect((await list()).get('/l/one')).toBeUndefined();
    await waitFor(async () => (await o.call('GET', '/v2/tasks')).body.tasks.length === 0, { timeoutMs: 15_000, message: 'tasks of /l/one gone' });
    expect([...(await list()).keys()]).toEqual(['/l/two']);
    expect([...(await list('/v2/apps/l/*')).keys()]).toEqual(['/l/two']);
  }, 60_000);
});
