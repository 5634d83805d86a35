// Ready-made HealthMonitor callbacks that publish Marathon's events (Marathon's names and fields,
// plus Marathon 1.4's instance ids) and feed the scheduler. Use:
//   const health = new HealthMonitor({ logger, ...healthCallbacks({ events: new EventCatalogue(bus),
//     setHealth: (id, r) => scheduler.setHealth(id, r), kill: (id, reason) => killById(id, reason),
//     host: (taskId) => hostOf(taskId), slaveId }) });
import type { EventCatalogue } from '../events/catalogue.ts';
import type { HealthMonitorOptions } from './monitor.ts';
import type { HealthCheckResult } from './types.ts';

export interface HealthWiring {
  events: Pick<EventCatalogue, 'failedHealthCheck' | 'healthStatusChanged' | 'instanceHealthChanged' | 'unhealthyKill'>;
  setHealth: (taskId: string, results: HealthCheckResult[]) => void;
  /** Kill (and let the scheduler replace) an unhealthy task. */
  kill: (taskId: string, reason: string) => void;
  /** The host a task runs on (an isolated task's own address), or a fixed host for all. */
  host: string | ((taskId: string) => string);
  /** Omitted from the kill events when unset (Marathon's generated writers omit None). */
  slaveId?: string | undefined;
}

export function healthCallbacks(
  w: HealthWiring,
): Required<Pick<HealthMonitorOptions, 'onResult' | 'onFailedCheck' | 'onHealthChanged' | 'onInstanceHealthChanged' | 'onKill'>> {
  return {
    onResult: (e) => w.setHealth(e.taskId, e.results),
    onFailedCheck: (e) => w.events.failedHealthCheck({ appId: e.appId, taskId: e.taskId, instanceId: e.instanceId, healthCheck: e.healthCheck }),
    onHealthChanged: (e) => w.events.healthStatusChanged({ appId: e.appId, instanceId: e.instanceId, version: e.version, alive: e.alive }),
    onInstanceHealthChanged: (e) =>
      w.events.instanceHealthChanged({ instanceId: e.instanceId, runSpecId: e.appId, healthy: e.healthy, runSpecVersion: e.version }),
    onKill: (e) => {
      const host = typeof w.host === 'function' ? w.host(e.taskId) : w.host;
      // Marathon's timestamp for these is the time of the last failure.
      w.events.unhealthyKill(
        { appId: e.appId, taskId: e.taskId, instanceId: e.instanceId, version: e.version, reason: e.reason, host, slaveId: w.slaveId },
        e.lastFailure,
      );
      w.kill(e.taskId, e.reason);
    },
  };
}
