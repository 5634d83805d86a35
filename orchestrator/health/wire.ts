// Ready-made HealthMonitor callbacks that publish Marathon's events (document 2 names and fields,
// plus Marathon 1.4's instance ids) and feed the scheduler. Use:
//   const health = new HealthMonitor({ logger, ...healthCallbacks({ publish: (t, f, ts) => bus.publish(t, f, ts),
//     setHealth: (id, r) => scheduler.setHealth(id, r), kill: (id, reason) => killById(id, reason),
//     host: (taskId) => hostOf(taskId), slaveId }) });
import type { HealthMonitorOptions } from './monitor.ts';
import type { HealthCheckResult } from './types.ts';

export interface HealthWiring {
  publish: (eventType: string, fields: Record<string, unknown>, timestamp?: string) => unknown;
  setHealth: (taskId: string, results: HealthCheckResult[]) => void;
  /** Kill (and let the scheduler replace) an unhealthy task. */
  kill: (taskId: string, reason: string) => void;
  /** The host a task runs on (an isolated task's own address), or a fixed host for all. */
  host: string | ((taskId: string) => string);
  /** Omitted from the kill events when unset (Marathon's generated writers omit None). */
  slaveId?: string | undefined;
}

export function healthCallbacks(w: HealthWiring): Required<Pick<HealthMonitorOptions, 'onResult' | 'onFailedCheck' | 'onHealthChanged' | 'onInstanceHealthChanged' | 'onKill'>> {
  return {
    onResult: (e) => w.setHealth(e.taskId, e.results),
    onFailedCheck: (e) => w.publish('failed_health_check_event', { appId: e.appId, taskId: e.taskId, instanceId: e.instanceId, healthCheck: e.healthCheck }),
    onHealthChanged: (e) => w.publish('health_status_changed_event', { appId: e.appId, instanceId: e.instanceId, version: e.version, alive: e.alive }),
    onInstanceHealthChanged: (e) => w.publish('instance_health_changed_event', { instanceId: e.instanceId, runSpecId: e.appId, healthy: e.healthy, runSpecVersion: e.version }),
    onKill: (e) => {
      const fields = { appId: e.appId, taskId: e.taskId, version: e.version, reason: e.reason, host: typeof w.host === 'function' ? w.host(e.taskId) : w.host, ...(w.slaveId ? { slaveId: w.slaveId } : {}) };
      // Marathon's timestamp for these is the time of the last failure.
      w.publish('unhealthy_task_kill_event', fields, e.lastFailure);
      w.publish('unhealthy_instance_kill_event', { ...fields, instanceId: e.instanceId }, e.lastFailure);
      w.kill(e.taskId, e.reason);
    },
  };
}
