// The typed event publishers: names and field sets of Marathon 1.4, undefined fields omitted.
import { describe, expect, it } from 'vitest';
import { EventBus, type MarathonEvent } from '../../../orchestrator/events/bus.ts';
import { EVENT_TYPES, EventCatalogue, NOT_EMITTED, conditionOf } from '../../../orchestrator/events/catalogue.ts';

function setup() {
  const bus = new EventBus();
  const seen: MarathonEvent[] = [];
  bus.subscribe((e) => seen.push(e));
  return { events: new EventCatalogue(bus), seen };
}

const keys = (e: MarathonEvent | undefined) => Object.keys(e ?? {}).sort();

describe('EventCatalogue', () => {
  it('publishes each type with exactly its documented fields plus eventType and timestamp', () => {
    const { events, seen } = setup();
    const plan = { id: 'd1', version: '2026-01-01T00:00:00.000Z', steps: [{ actions: [{ action: 'StartApplication', app: '/a' }] }] };
    const step = { actions: [{ action: 'StartApplication', app: '/a' }] };
    events.apiPost({ clientIp: '127.0.0.1', uri: '/v2/apps', appDefinition: { id: '/a' } });
    events.statusUpdate({
      slaveId: 's',
      taskId: 'a.1',
      taskStatus: 'TASK_RUNNING',
      message: '',
      appId: '/a',
      host: 'h',
      ipAddresses: [{ ipAddress: '127.0.0.1', protocol: 'IPv4' }],
      ports: [1],
      version: 'v',
    });
    events.instanceChanged({ instanceId: 'a.marathon-1', condition: 'Running', runSpecId: '/a', agentId: 's', host: 'h', runSpecVersion: 'v' });
    events.instanceHealthChanged({ instanceId: 'i', runSpecId: '/a', runSpecVersion: 'v', healthy: null });
    events.unknownInstanceTerminated({ instanceId: 'i', runSpecId: '/a', condition: 'Killed' });
    events.appTerminated({ appId: '/a' });
    events.addHealthCheck({ appId: '/a', version: 'v', healthCheck: { protocol: 'HTTP' } });
    events.removeHealthCheck({ appId: '/a' });
    events.failedHealthCheck({ appId: '/a', instanceId: 'i', healthCheck: {} });
    events.healthStatusChanged({ appId: '/a', instanceId: 'i', version: 'v', alive: false });
    events.unhealthyKill({ appId: '/a', taskId: 't', instanceId: 'i', version: 'v', reason: 'r', host: 'h', slaveId: undefined }, '2026-01-01T00:00:01.000Z');
    events.groupChangeSuccess({ groupId: '/', version: 'v' });
    events.groupChangeFailed({ groupId: '/', version: 'v', reason: 'r' });
    events.deploymentInfo({ plan, currentStep: step });
    events.deploymentStepSuccess({ plan, currentStep: step });
    events.deploymentStepFailure({ plan, currentStep: step });
    events.deploymentSuccess({ id: 'd1', plan });
    events.deploymentFailed({ id: 'd1', plan });
    events.subscribe({ clientIp: '127.0.0.1', callbackUrl: 'http://127.0.0.1:1/' });
    events.unsubscribe({ clientIp: '127.0.0.1', callbackUrl: 'http://127.0.0.1:1/' });
    events.streamAttached({ remoteAddress: '127.0.0.1' });
    events.streamDetached({ remoteAddress: '127.0.0.1' });
    const base = ['eventType', 'timestamp'];
    const want: Record<string, string[]> = {
      api_post_event: ['clientIp', 'uri', 'appDefinition'],
      status_update_event: ['slaveId', 'taskId', 'taskStatus', 'message', 'appId', 'host', 'ipAddresses', 'ports', 'version'],
      instance_changed_event: ['instanceId', 'condition', 'runSpecId', 'agentId', 'host', 'runSpecVersion'],
      instance_health_changed_event: ['instanceId', 'runSpecId', 'healthy', 'runSpecVersion'],
      unknown_instance_terminated_event: ['instanceId', 'runSpecId', 'condition'],
      app_terminated_event: ['appId'],
      add_health_check_event: ['appId', 'version', 'healthCheck'],
      remove_health_check_event: ['appId'],
      failed_health_check_event: ['appId', 'instanceId', 'healthCheck'],
      health_status_changed_event: ['appId', 'instanceId', 'version', 'alive'],
      unhealthy_instance_kill_event: ['appId', 'taskId', 'instanceId', 'version', 'reason', 'host'],
      unhealthy_task_kill_event: ['appId', 'taskId', 'version', 'reason', 'host'],
      group_change_success: ['groupId', 'version'],
      group_change_failed: ['groupId', 'version', 'reason'],
      deployment_info: ['plan', 'currentStep'],
      deployment_step_success: ['plan', 'currentStep'],
      deployment_step_failure: ['plan', 'currentStep'],
      deployment_success: ['id', 'plan'],
      deployment_failed: ['id', 'plan'],
      subscribe_event: ['clientIp', 'callbackUrl'],
      unsubscribe_event: ['clientIp', 'callbackUrl'],
      event_stream_attached: ['remoteAddress'],
      event_stream_detached: ['remoteAddress'],
    };
    expect(seen.map((e) => e.eventType).sort()).toEqual([...EVENT_TYPES].sort());
    for (const e of seen) {
      expect(keys(e), e.eventType).toEqual([...base, ...want[e.eventType]!].sort());
      expect(e.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    expect(seen.find((e) => e.eventType === 'unhealthy_task_kill_event')!.timestamp).toBe('2026-01-01T00:00:01.000Z');
    expect(seen.find((e) => e.eventType === 'instance_health_changed_event')!.healthy).toBeNull();
  });

  it('lists what cannot occur here, disjoint from what does', () => {
    for (const t of Object.keys(NOT_EMITTED)) expect(EVENT_TYPES as readonly string[]).not.toContain(t);
    expect(Object.keys(NOT_EMITTED)).toContain('framework_message_event');
    expect(conditionOf('TASK_LOST')).toBe('Gone');
    expect(conditionOf('TASK_WHATEVER')).toBe('Unknown');
  });
});
