// Events follow every state change: the stream (/v2/events) shows api_post_event,
// group_change_success, deployment_info/step_success/success, status_update_event,
// instance_changed_event (through TASK_KILLING with --enable_features task_killing) and
// app_terminated_event for an app's life.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopAll } from '../../helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { waitFor } from '../../helpers/wait.ts';
import { openSse } from '../../orchestrator-events-sse-client.ts';

let o: StartedOrchestrator;
beforeAll(async () => {
  o = await startOrchestrator(['--task-port-min=39000', '--task-port-max=39100', '--enable_features=task_killing']);
}, 30_000);
afterAll(async () => {
  await o?.proc.stop('SIGTERM');
  await stopAll();
});

describe('events', () => {
  it('publishes the events of create, run and delete in order', async () => {
    const stream = await openSse(o.url, '/v2/events', o.authHeaders);
    expect(stream.status).toBe(200);
    const events: any[] = stream.frames.map((f) => f.data);
    stream.onFrame = (f) => events.push(f.data);
    await waitFor(() => events.some((e) => e.eventType === 'event_stream_attached'), { timeoutMs: 5000 });
    const r = await o.call('POST', '/v2/apps', { id: '/ev', cmd: 'exec sleep 1000', instances: 1 });
    const dep = r.body.deployments[0].id;
    await waitFor(() => events.some((e) => e.eventType === 'deployment_success' && e.id === dep), { timeoutMs: 15_000, message: 'deployment_success' });
    await o.call('DELETE', '/v2/apps/ev');
    await waitFor(() => events.some((e) => e.eventType === 'app_terminated_event' && e.appId === '/ev'), {
      timeoutMs: 15_000,
      message: 'app_terminated_event',
    });
    stream.close();
    const types = events.map((e) => e.eventType);
    const at = (t: string) => types.indexOf(t);
    expect(at('api_post_event')).toBeGreaterThanOrEqual(0);
    expect(events[at('api_post_event')].appDefinition.id).toBe('/ev');
    expect(at('deployment_info')).toBeLessThan(at('deployment_step_success'));
    expect(at('deployment_step_success')).toBeLessThan(at('deployment_success'));
    // Document 1: the group change's outcome is signalled when its deployment ends.
    expect(at('deployment_success')).toBeLessThan(at('group_change_success'));
    expect(events[at('group_change_success')]).toMatchObject({ groupId: '/', version: events[at('deployment_success')].plan.version });
    const running = events.find((e) => e.eventType === 'status_update_event' && e.taskStatus === 'TASK_RUNNING');
    expect(running).toMatchObject({ appId: '/ev', host: '127.0.0.1', slaveId: expect.any(String), version: expect.any(String) });
    expect(events.find((e) => e.eventType === 'deployment_info').currentStep.actions[0]).toEqual({ action: 'StartApplication', app: '/ev' });
    // --enable_features task_killing: a killed task passes through TASK_KILLING (condition Killing).
    const statuses = events.filter((e) => e.eventType === 'status_update_event' && e.appId === '/ev').map((e) => e.taskStatus);
    expect(statuses.slice(-3)).toEqual(['TASK_RUNNING', 'TASK_KILLING', 'TASK_KILLED']);
    expect(events.some((e) => e.eventType === 'instance_changed_event' && e.condition === 'Killing')).toBe(true);
    expect(events.some((e) => e.eventType === 'instance_changed_event' && e.condition === 'Running' && e.runSpecId === '/ev')).toBe(true);
    expect(events.find((e) => e.eventType === 'deployment_success').plan.steps.length).toBe(2);
  }, 30_000);
});
