// The events endpoints inside the real orchestrator program: an app's life read from a real SSE
// connection and from a callback receiver seeded with --http_endpoints; subscriptions survive a
// restart of the program; without --event_subscriber the subscription calls answer 400.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { createServer as createHttpServer, type Server } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { removeTempDirs, stopAll, tempDir } from './helpers/process.ts';
import { startOrchestrator } from './helpers/orchestrator.ts';
import { waitFor } from './helpers/wait.ts';
import { openSse, type SseClient } from './orchestrator-events-sse-client.ts';

const toClose: (() => void)[] = [];
afterAll(async () => {
  for (const c of toClose) c();
  await stopAll();
  removeTempDirs();
});

async function receiver(): Promise<{ url: string; events: any[] }> {
  const events: any[] = [];
  const server: Server = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      events.push(JSON.parse(body));
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  toClose.push(() => {
    server.closeAllConnections();
    server.close();
  });
  const addr = server.address();
  return { url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/events`, events };
}

describe('events in the orchestrator program', () => {
  it("streams and calls back an app's life; subscriptions survive a restart", async () => {
    const rcv = await receiver();
    const dataDir = tempDir('orch-events-');
    const o = await startOrchestrator(['--event_subscriber=http_callback', `--http_endpoints=${rcv.url}`, '--task-port-min=36000', '--task-port-max=36099'], {
      dataDir,
    });
    const stream: SseClient = await openSse(o.url, '/v2/events', o.authHeaders);
    toClose.push(() => stream.close());
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=UTF-8');
    await waitFor(() => stream.frames.some((f) => f.event === 'event_stream_attached'));
    expect((await o.call('POST', '/v2/apps', { id: '/ev/one', cmd: 'exec sleep 1000', instances: 1 })).status).toBe(201);
    const types = (list: { eventType?: string }[]) => list.map((e) => e.eventType);
    for (const want of ['api_post_event', 'group_change_success', 'deployment_info', 'status_update_event', 'instance_changed_event', 'deployment_success']) {
      await waitFor(() => types(stream.frames.map((f) => f.data as any)).includes(want), { timeoutMs: 20_000, message: `stream has ${want}` });
      await waitFor(() => types(rcv.events).includes(want), { timeoutMs: 5_000, message: `callback has ${want}` });
    }
    const running = stream.frames.map((f) => f.data as any).find((e) => e.eventType === 'status_update_event' && e.taskStatus === 'TASK_RUNNING');
    expect(running).toMatchObject({ appId: '/ev/one', host: expect.any(String), ports: expect.any(Array) });
    expect(rcv.events.find((e) => e.eventType === 'api_post_event')).toMatchObject({ uri: '/v2/apps', appDefinition: { id: '/ev/one' } });
    stream.close();
    await o.proc.stop('SIGTERM');
    // Restarted without --http_endpoints: the seeded URL is still subscribed.
    const again = await startOrchestrator(['--event_subscriber=http_callback', '--task-port-min=36000', '--task-port-max=36099'], { dataDir });
    expect((await again.call('GET', '/v2/eventSubscriptions')).body).toEqual({ callbackUrls: [rcv.url] });
    await again.proc.stop('SIGTERM');
  }, 60_000);

  it('answers 400 to subscription calls without --event_subscriber http_callback', async () => {
    const o = await startOrchestrator([]);
    const r = await o.call('POST', `/v2/eventSubscriptions?callbackUrl=${encodeURIComponent('http://127.0.0.1:9/x')}`);
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/^http event callback system is not running/);
    const nope = await o.call('GET', '/v2/events');
    expect(nope.status).toBe(405);
    await o.proc.stop('SIGTERM');
  }, 30_000);
});
