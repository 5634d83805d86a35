// The event catalogue (the README's Events section, with Marathon 1.4's field names): one typed
// publisher per event type, so every producer emits the same fields in the same shape.
//
//   const events = new EventCatalogue(bus);
//   events.statusUpdate({ slaveId, taskId, taskStatus: 'TASK_RUNNING', message: '', appId, host, ipAddresses: [], ports, version });
//
// Every event also gets `eventType` and `timestamp` (ISO, milliseconds) from the bus. Fields that
// are optional here are omitted when undefined (Marathon's generated writers omit None options).
import type { EventBus, MarathonEvent } from './bus.ts';
import type { TaskState } from '../tasks/types.ts';

/** Event types this orchestrator can emit (Marathon's catalogue minus the ones listed in NOT_EMITTED). */
export const EVENT_TYPES = [
  'api_post_event',
  'status_update_event',
  'instance_changed_event',
  'instance_health_changed_event',
  'unknown_instance_terminated_event',
  'app_terminated_event',
  'add_health_check_event',
  'remove_health_check_event',
  'failed_health_check_event',
  'health_status_changed_event',
  'unhealthy_task_kill_event',
  'unhealthy_instance_kill_event',
  'group_change_success',
  'group_change_failed',
  'deployment_info',
  'deployment_step_success',
  'deployment_step_failure',
  'deployment_success',
  'deployment_failed',
  'subscribe_event',
  'unsubscribe_event',
  'event_stream_attached',
  'event_stream_detached',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Event types of Marathon's catalogue that cannot occur here, and why (for the README and /help). */
export const NOT_EMITTED: Record<string, string> = {
  pod_created_event: 'there are no pods: the pod endpoints are not part of this orchestrator',
  pod_updated_event: 'there are no pods',
  pod_deleted_event: 'there are no pods',
  framework_message_event: 'tasks run as local processes, not under a Mesos executor, so no executor ever sends a framework message',
  scheduler_registered_event: 'there is no Mesos master to register with: the orchestrator is its own resource manager',
  scheduler_reregistered_event: 'there is no Mesos master to re-register with',
  scheduler_disconnected_event: 'there is no Mesos master to lose',
};

export type InstanceCondition =
  | 'Reserved'
  | 'Created'
  | 'Error'
  | 'Failed'
  | 'Finished'
  | 'Killed'
  | 'Killing'
  | 'Running'
  | 'Staging'
  | 'Starting'
  | 'Unreachable'
  | 'UnreachableInactive'
  | 'Gone'
  | 'Dropped'
  | 'Unknown';

/** Marathon 1.4's TaskCondition mapping from task status to instance condition. */
const CONDITIONS: Readonly<Record<string, InstanceCondition>> = {
  TASK_STAGING: 'Staging',
  TASK_STARTING: 'Starting',
  TASK_RUNNING: 'Running',
  TASK_KILLING: 'Killing',
  TASK_FINISHED: 'Finished',
  TASK_FAILED: 'Failed',
  TASK_KILLED: 'Killed',
  TASK_LOST: 'Gone',
  TASK_ERROR: 'Error',
  TASK_DROPPED: 'Dropped',
  TASK_UNREACHABLE: 'Unreachable',
  TASK_GONE: 'Gone',
  TASK_UNKNOWN: 'Unknown',
};

/** Marathon's instance condition for a task status. */
export function conditionOf(status: string): InstanceCondition {
  return CONDITIONS[status] ?? 'Unknown';
}

type Json = Record<string, unknown>;

/** A deployment plan as events carry it (1.4: full plan with original and target root groups). */
export interface PlanJson {
  id: string;
  version: string;
  steps: { actions: DeploymentAction[] }[];
  original?: Json;
  target?: Json;
  [field: string]: unknown;
}

/** `action`, never `type` (Marathon 1.4's field name). */
export interface DeploymentAction {
  action: 'StartApplication' | 'StopApplication' | 'ScaleApplication' | 'RestartApplication' | 'ResolveArtifacts' | string;
  app: string;
  readinessCheckResults?: unknown[];
}

export interface CurrentStep {
  actions: DeploymentAction[];
}

export interface ApiPost {
  clientIp: string;
  uri: string;
  appDefinition: object;
}
export interface StatusUpdate {
  slaveId: string;
  taskId: string;
  taskStatus: TaskState | string;
  message: string;
  appId: string;
  host: string;
  ipAddresses: { ipAddress: string; protocol: 'IPv4' | 'IPv6' }[];
  ports: number[];
  version: string;
}
export interface InstanceChanged {
  instanceId: string;
  condition: InstanceCondition;
  runSpecId: string;
  agentId: string;
  host: string;
  runSpecVersion: string;
}
export interface InstanceHealthChanged {
  instanceId: string;
  runSpecId: string;
  runSpecVersion: string;
  healthy: boolean | null;
}
export interface UnknownInstanceTerminated {
  instanceId: string;
  runSpecId: string;
  condition: InstanceCondition;
}
export interface AppTerminated {
  appId: string;
}
export interface AddHealthCheck {
  appId: string;
  version: string;
  healthCheck: object;
}
export interface RemoveHealthCheck {
  appId: string;
}
export interface FailedHealthCheck {
  appId: string;
  instanceId: string;
  healthCheck: object;
  taskId?: string | undefined;
}
export interface HealthStatusChanged {
  appId: string;
  instanceId: string;
  version: string;
  alive: boolean;
}
export interface UnhealthyTaskKill {
  appId: string;
  taskId: string;
  version: string;
  reason: string;
  host: string;
  slaveId?: string | undefined;
}
export interface UnhealthyInstanceKill extends UnhealthyTaskKill {
  instanceId: string;
}
export interface GroupChangeSuccess {
  groupId: string;
  version: string;
}
export interface GroupChangeFailed {
  groupId: string;
  version: string;
  reason: string;
}
export interface DeploymentStepEvent {
  plan: PlanJson | Json;
  currentStep: CurrentStep;
}
export interface DeploymentEnd {
  id: string;
  plan: PlanJson | Json;
}
export interface DeploymentFailed extends DeploymentEnd {
  reason?: string | undefined;
}
export interface Subscription {
  clientIp: string;
  callbackUrl: string;
}
export interface StreamAttach {
  remoteAddress: string;
}

function defined(fields: object): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) out[k] = v;
  return out;
}

/** Typed publishers for every event type the orchestrator emits. Each returns the published event. */
export class EventCatalogue {
  readonly #bus: EventBus;

  constructor(bus: EventBus) {
    this.#bus = bus;
  }

  /**
   * Whether anyone receives events now (an SSE stream, a callback URL). An event nobody receives is
   * dropped by the bus: a publisher may skip building a costly one (the deployment events carry
   * the whole root group twice).
   */
  get listened(): boolean {
    return this.#bus.listenerCount > 0;
  }

  #emit(type: EventType, fields: object, timestamp?: string): MarathonEvent {
    return this.#bus.publish(type, defined(fields), timestamp); // undefined → the bus's default, now
  }

  /** POST /v2/apps, PUT/PATCH /v2/apps/{id} (not DELETE, not multi-app PUT, not groups). */
  apiPost(f: ApiPost): MarathonEvent {
    return this.#emit('api_post_event', f);
  }
  /** Every task status change. */
  statusUpdate(f: StatusUpdate): MarathonEvent {
    return this.#emit('status_update_event', f);
  }
  /** Every instance condition change (goes with statusUpdate). */
  instanceChanged(f: InstanceChanged): MarathonEvent {
    return this.#emit('instance_changed_event', f);
  }
  /** Health flips (healthy null = unknown yet). */
  instanceHealthChanged(f: InstanceHealthChanged): MarathonEvent {
    return this.#emit('instance_health_changed_event', f);
  }
  /** A terminal status for an instance the orchestrator does not know (e.g. found after a restart). */
  unknownInstanceTerminated(f: UnknownInstanceTerminated): MarathonEvent {
    return this.#emit('unknown_instance_terminated_event', f);
  }
  /** An app was removed and its last task stopped. */
  appTerminated(f: AppTerminated): MarathonEvent {
    return this.#emit('app_terminated_event', f);
  }
  /** Health check registered for an app version (deployment start). */
  addHealthCheck(f: AddHealthCheck): MarathonEvent {
    return this.#emit('add_health_check_event', f);
  }
  /** Checks of an app removed: `appId` only. */
  removeHealthCheck(f: RemoveHealthCheck): MarathonEvent {
    return this.#emit('remove_health_check_event', f);
  }
  /** A counted health check failure. 1.4 sends instanceId; `taskId` is kept for clients of Marathon ≤ 1.3. */
  failedHealthCheck(f: FailedHealthCheck): MarathonEvent {
    return this.#emit('failed_health_check_event', f);
  }
  /** Alive flips. */
  healthStatusChanged(f: HealthStatusChanged): MarathonEvent {
    return this.#emit('health_status_changed_event', f);
  }
  /**
   * A health kill: emits unhealthy_task_kill_event (Marathon ≤ 1.3 clients) and
   * unhealthy_instance_kill_event (1.4) together. `timestamp` = the last failure's time, like Marathon.
   */
  unhealthyKill(f: UnhealthyInstanceKill, timestamp?: string): MarathonEvent[] {
    const { instanceId, ...task } = f;
    return [this.#emit('unhealthy_task_kill_event', task, timestamp), this.#emit('unhealthy_instance_kill_event', { ...task, instanceId }, timestamp)];
  }
  /** A group change's deployment ended well (the outcome, not the acceptance: the README's Events section). */
  groupChangeSuccess(f: GroupChangeSuccess): MarathonEvent {
    return this.#emit('group_change_success', f);
  }
  groupChangeFailed(f: GroupChangeFailed): MarathonEvent {
    return this.#emit('group_change_failed', f);
  }
  /** A deployment step starts. */
  deploymentInfo(f: DeploymentStepEvent): MarathonEvent {
    return this.#emit('deployment_info', f);
  }
  deploymentStepSuccess(f: DeploymentStepEvent): MarathonEvent {
    return this.#emit('deployment_step_success', f);
  }
  deploymentStepFailure(f: DeploymentStepEvent): MarathonEvent {
    return this.#emit('deployment_step_failure', f);
  }
  deploymentSuccess(f: DeploymentEnd): MarathonEvent {
    return this.#emit('deployment_success', f);
  }
  /** A deployment failed or was cancelled. */
  deploymentFailed(f: DeploymentFailed): MarathonEvent {
    return this.#emit('deployment_failed', f);
  }
  subscribe(f: Subscription): MarathonEvent {
    return this.#emit('subscribe_event', f);
  }
  unsubscribe(f: Subscription): MarathonEvent {
    return this.#emit('unsubscribe_event', f);
  }
  streamAttached(f: StreamAttach): MarathonEvent {
    return this.#emit('event_stream_attached', f);
  }
  streamDetached(f: StreamAttach): MarathonEvent {
    return this.#emit('event_stream_detached', f);
  }
}
