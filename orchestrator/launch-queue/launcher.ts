// The launcher (Marathon's LaunchQueue and TaskLauncher on one machine): which apps wait for
// tasks and since when, their back-off delays, placement (constraints, host ports, the launches a
// reconcile pass may make), and launching: a task's record and launch spec are made in the pass,
// written, then started, inside its own network namespace when the app has ipAddress and
// --isolation=netns is on. A terminal task's host ports, sandbox and namespace are released here.
// One piece on purpose (about 460 lines): launching and releasing hold the same resources (host
// ports, sandbox, namespace, published ports), and keeping them side by side is what shows that
// every one taken at launch is given back.
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { v1 as uuidv1 } from 'uuid';
import type { Logger } from '../../shared/logger.ts';
import { safePath, type AppDefinition } from '../state/app-definition.ts';
import { LIMITS, definitionProblem } from '../state/bounds.ts';
import { placementLimit } from '../state/constraints.ts';
import type { DelayRecord, Store, TaskRecord } from '../storage/store.ts';
import { taskEnvironment } from '../tasks/env.ts';
import { HostPortAllocator } from '../tasks/ports.ts';
import { SLAVE_ID } from '../tasks/ids.ts';
import type { TaskTracker } from '../tasks/tracker.ts';
import type { Executor, LaunchSpec, PortAssignment, TaskStatusUpdate } from '../tasks/types.ts';
import { configVersionOf } from '../state/app-update.ts';
import { isDelayed, nextDelay } from './backoff.ts';
import { OfferStatistics, type OfferStats, type OfferedHost } from './offers.ts';

/** What the launcher needs from network isolation (orchestrator/isolation's Isolation provides it). */
export interface TaskIsolation {
  /** Namespace and address for a task about to start, with every task's rules applied; `ports`: its host ports (--publish-address). */
  taskStarting(task: IsolatedTask): Promise<{ netns: string; ip: string; ports?: number[] }>;
  /** Removes the task's namespace (and whatever still runs in it) once the task is terminal. */
  taskStopped(taskId: string): Promise<unknown>;
}

export interface IsolatedTask {
  taskId: string;
  appId: string;
  labels: Record<string, string>;
  groups: string[];
  hostnames: string[];
  /** The app's ipAddress.discovery.ports: its named ports for NetworkPolicy. */
  ports?: unknown;
}

/**
 * Names other isolated tasks use for an app's tasks: the last segment of its id, and that
 * segment with its parent group's (`/starmap/stars/stars/frontend` → `frontend`, `frontend.stars`).
 */
export function taskHostnames(appId: string): string[] {
  const parts = appId.split('/').filter(Boolean);
  const last = parts[parts.length - 1];
  if (!last) return [];
  const parent = parts[parts.length - 2];
  return parent ? [last, `${last}.${parent}`] : [last];
}

/** Ports an app's tasks declare: container port mappings (bridged docker) or port definitions. */
function declaredPorts(app: AppDefinition): { declared: number; name?: string | undefined; protocol: string; containerPort?: number }[] {
  const docker = app.container?.docker;
  const bridged = docker !== undefined && docker.network !== 'HOST';
  return bridged
    ? docker.portMappings.map((m) => ({ declared: m.hostPort, name: m.name, protocol: m.protocol, containerPort: m.containerPort }))
    : (app.portDefinitions ?? []).map((d) => ({ declared: app.requirePorts ? d.port : 0, name: d.name, protocol: d.protocol }));
}

export interface LauncherOptions {
  tracker: TaskTracker;
  executor: Executor;
  logger: Logger;
  hostname: string;
  dataDir: string;
  taskPortMin: number;
  taskPortMax: number;
  envVarsPrefix?: string | undefined;
  isolation?: TaskIsolation | undefined;
  /** Counted for /metrics. */
  stats: { launched: number };
  /** Writes every pending change: a new task's record is on disk before its process starts. */
  persist(): void;
  /** Runs a reconcile pass soon. */
  schedule(): void;
  /** A status the launcher decides itself (a launch that failed, a task killed before it started). */
  onStatus(u: TaskStatusUpdate): void;
}

export class Launcher {
  readonly #o: LauncherOptions;
  readonly #tracker: TaskTracker;
  readonly #delays = new Map<string, DelayRecord>();
  readonly #dirtyDelays = new Map<string, DelayRecord | null>();
  /** When each app began waiting for a task (the queue's `since`). */
  readonly #queueSince = new Map<string, string>();
  /** Each queued app's offers used and declined (the queue's processedOffersSummary). */
  readonly #offers = new OfferStatistics();
  /** Host ports held by live tasks (orchestrator/tasks/ports.ts). */
  readonly #hostPorts: HostPortAllocator;
  /** Environment and sandbox of live tasks (COMMAND health checks run with them). */
  readonly #launchInfo = new Map<string, { env: Record<string, string>; sandboxDir: string }>();
  readonly #pendingLaunches: LaunchSpec[] = [];
  /** Tasks launched in this pass that need their network namespace first (--isolation=netns). */
  readonly #needsNetwork = new Map<string, IsolatedTask>();
  /** Network set-up in progress, per task: the task is launched (or dropped) when it settles. */
  readonly #isolating = new Map<string, Promise<void>>();
  /** Every isolation call in flight (awaited by settled()). */
  readonly #networkOps = new Set<Promise<unknown>>();
  /** Tasks this reconcile pass may still launch (LIMITS.launchesPerPass). */
  #launchBudget = 0;
  readonly #reportedRefusals = new WeakSet<AppDefinition>();
  /** Sandboxes of finished tasks are kept for inspection: the last 5 per app. */
  readonly #finishedSandboxes = new Map<string, string[]>();
  #closed = false;

  constructor(opts: LauncherOptions) {
    this.#o = opts;
    this.#tracker = opts.tracker;
    this.#hostPorts = new HostPortAllocator({ min: opts.taskPortMin, max: opts.taskPortMax, probe: false });
  }

  load(store: Store): void {
    for (const d of store.loadDelays()) this.#delays.set(d.appId, d);
  }

  /** Nothing launches any more; network set-ups still running drop their task. */
  stop(): void {
    this.#closed = true;
  }

  /** Resolves once every isolation call in flight has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#networkOps]);
  }

  delayOf(appId: string): DelayRecord | undefined {
    return this.#delays.get(appId);
  }

  queuedSince(appId: string): string | undefined {
    return this.#queueSince.get(appId);
  }

  /** The app's offer statistics for its current launch attempt (launch-queue/offers.ts). */
  offersOf(appId: string): OfferStats | undefined {
    return this.#offers.of(appId);
  }

  /** The host as a declined offer shows it. */
  get offeredHost(): OfferedHost {
    return { hostname: this.#o.hostname, agentId: SLAVE_ID, portMin: this.#o.taskPortMin, portMax: this.#o.taskPortMax };
  }

  launchInfoOf(taskId: string): { env: Record<string, string>; sandboxDir: string } | undefined {
    return this.#launchInfo.get(taskId);
  }

  /** The network set-up of a task still getting its namespace (a kill waits for it). */
  starting(taskId: string): Promise<void> | undefined {
    return this.#isolating.get(taskId);
  }

  /** Forgets the app's launch delay (written with the next batch); a pass soon may launch at once. */
  resetDelay(appId: string): void {
    this.#delays.delete(appId);
    this.#dirtyDelays.set(appId, null);
    this.#o.schedule();
  }

  /** One more failure of a task of `app` launched with `configVersion`: the next launch waits longer. */
  backOff(app: AppDefinition, configVersion: string): void {
    const delay = nextDelay(app, configVersion, this.#delays.get(app.id), Date.now());
    this.#dirtyDelays.set(delay.appId, delay);
    this.#delays.set(delay.appId, delay);
  }

  /** A removed app: its delay goes (its stored row goes with the app). */
  forgetApp(appId: string): void {
    this.#delays.delete(appId);
    this.#offers.finished(appId);
  }

  get dirty(): boolean {
    return this.#dirtyDelays.size > 0;
  }

  /** Writes changed delays (inside the caller's transaction); only of apps that still exist. */
  flushInto(store: Store, appExists: (appId: string) => boolean): void {
    for (const [appId, d] of this.#dirtyDelays) {
      if (d && appExists(appId)) store.putDelay(d);
      else if (!d) store.deleteDelay(appId);
    }
    this.#dirtyDelays.clear();
  }

  /** A new reconcile pass: its launch budget. */
  newPass(): void {
    this.#launchBudget = LIMITS.launchesPerPass;
  }

  /**
   * Launches what `app` lacks of `app.instances` active tasks (tasks being killed do not count: their
   * replacements start at once), as launchUpTo allows. Killing a surplus is not the launcher's.
   */
  launchMissing(app: AppDefinition): void {
    let active = 0;
    for (const t of this.#tracker.appTasks(app.id)) if (!t.killing) active++;
    this.launchUpTo(app, app.instances - active);
  }

  /** Launches up to `count` tasks of `app`, as placement, back-off and this pass's budget allow. */
  launchUpTo(app: AppDefinition, count: number): void {
    if (count <= 0) return; // the common case in a rolling restart's every pass
    if (this.#refused(app)) return;
    const wanted = count;
    // Constraints are compiled once per definition (only `hostname` is known on this one host).
    count = Math.min(count, placementLimit(app.constraints)(this.#o.hostname) - this.#tracker.countOf(app.id));
    if (!this.#queueSince.has(app.id)) this.#queueSince.set(app.id, new Date().toISOString());
    if (isDelayed(app, this.#delays.get(app.id), Date.now())) return;
    // The host, offered to the app (launch-queue/offers.ts), is declined: its constraints allow no more tasks here.
    if (count <= 0) return this.#offers.declined(app.id, ['UnfulfilledConstraint']);
    const now = Math.min(count, this.#launchBudget);
    if (now === 0) return this.#o.schedule(); // this pass's budget is spent: no offer was made
    let launched = 0;
    while (launched < now && this.#launch(app)) launched++;
    this.#launchBudget -= launched;
    if (launched === 0) this.#offers.declined(app.id, ['InsufficientPorts']);
    else if (launched === wanted) this.#offers.finished(app.id);
    else this.#offers.used(app.id);
    // The rest in the next pass (the event loop serves requests in between); not when a launch
    // could not be made (no free port): that would spin.
    if (launched === now && count > now) this.#o.schedule();
  }

  /**
   * A definition this orchestrator cannot honour (stored before a limit existed, a pattern the
   * constraint engine refuses) launches nothing: its app shows why as lastTaskFailure (TASK_ERROR,
   * Mesos' state for a task that cannot be described) and in the log, once per definition; every
   * other app runs as usual.
   */
  #refused(app: AppDefinition): boolean {
    const problem = definitionProblem(app);
    if (!problem) return false;
    if (!this.#reportedRefusals.has(app)) {
      this.#reportedRefusals.add(app);
      this.#o.logger.error({ appId: app.id, version: app.version, problem }, 'app not launched: its definition cannot be honoured (update it to fix)');
      this.#tracker.recordFailure(app.id, {
        appId: app.id,
        host: this.#o.hostname,
        message: problem,
        state: 'TASK_ERROR',
        taskId: '',
        timestamp: new Date().toISOString(),
        version: app.version,
        slaveId: SLAVE_ID,
      });
    }
    return true;
  }

  /** Makes one task of `app` (record, host ports, launch spec), started by startPending(); false when no port is free. */
  #launch(app: AppDefinition): boolean {
    const docker = app.container?.docker;
    const decl = declaredPorts(app);
    const taskId = `${safePath(app.id)}.${uuidv1()}`;
    let hostPorts: number[] | null;
    try {
      hostPorts = this.#hostPorts.take(
        taskId,
        decl.map((p) => p.declared),
      );
    } catch (err) {
      this.#o.logger.warn({ appId: app.id, err: (err as Error).message }, 'no free host port in the task port range');
      return false;
    }
    if (!hostPorts) return false; // requirePorts: wait until the port is free
    const ports: PortAssignment[] = decl.map((p, i) => ({
      hostPort: hostPorts[i]!,
      declaredPort: p.declared,
      protocol: p.protocol,
      ...(p.name !== undefined ? { name: p.name } : {}),
      ...(p.containerPort !== undefined ? { containerPort: p.containerPort } : {}),
    }));
    const now = new Date().toISOString();
    const t: TaskRecord = {
      id: taskId,
      appId: app.id,
      state: 'TASK_STAGING',
      stagedAt: now,
      startedAt: null,
      version: app.version,
      configVersion: configVersionOf(app),
      host: this.#o.hostname,
      ports: ports.map((p) => p.hostPort),
      servicePorts: app.ports ?? [],
      slaveId: SLAVE_ID,
    };
    this.#tracker.add(t); // written (with the rest of this pass) before the process starts
    this.#queueSince.delete(app.id);
    this.#o.stats.launched++;
    const sandboxDir = join(this.#o.dataDir, 'sandboxes', taskId);
    const spec: LaunchSpec = {
      taskId,
      appId: app.id,
      appVersion: app.version,
      cmd: app.cmd,
      args: app.cmd === null ? (app.args ?? null) : null,
      env: this.#env(app, taskId, ports, sandboxDir),
      ports,
      sandboxDir,
      killGracePeriodSeconds: app.taskKillGracePeriodSeconds,
      ...(app.user ? { user: app.user } : {}),
      ...(docker
        ? {
            docker: {
              image: docker.image,
              network: docker.network,
              privileged: docker.privileged,
              parameters: docker.parameters,
              forcePullImage: docker.forcePullImage,
              volumes: app.container!.volumes,
            },
          }
        : {}),
    };
    if (spec.cmd === null && spec.args === null && !docker) spec.cmd = 'true';
    this.#launchInfo.set(taskId, { env: spec.env, sandboxDir });
    if (app.ipAddress && this.#o.isolation) {
      this.#needsNetwork.set(taskId, {
        taskId,
        appId: app.id,
        labels: app.labels,
        groups: app.ipAddress.groups,
        hostnames: taskHostnames(app.id),
        ports: app.ipAddress.discovery.ports,
      });
    }
    this.#pendingLaunches.push(spec);
    return true;
  }

  #env(app: AppDefinition, taskId: string, ports: PortAssignment[], sandboxDir: string): Record<string, string> {
    const marathon = taskEnvironment(
      {
        appId: app.id,
        version: app.version,
        cpus: app.cpus,
        mem: app.mem,
        disk: app.disk,
        gpus: app.gpus,
        labels: app.labels,
        env: app.env,
        dockerImage: app.container?.docker?.image,
      },
      taskId,
      this.#o.hostname,
      ports,
      { envVarsPrefix: this.#o.envVarsPrefix },
    );
    return { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', MESOS_SANDBOX: sandboxDir, ...marathon };
  }

  /** Starts the tasks created in this pass, once their records are on disk. */
  startPending(): void {
    if (this.#pendingLaunches.length === 0) return;
    this.#o.persist();
    const specs = this.#pendingLaunches.splice(0);
    for (const spec of specs) {
      const isolated = this.#needsNetwork.get(spec.taskId);
      this.#needsNetwork.delete(spec.taskId);
      if (isolated) this.#launchIsolated(spec, isolated);
      else this.#launchNow(spec);
    }
  }

  #launchNow(spec: LaunchSpec): void {
    try {
      this.#o.executor.launch(spec);
    } catch (err) {
      this.#o.onStatus({ taskId: spec.taskId, state: 'TASK_FAILED', message: `launch failed: ${(err as Error).message}`, timestamp: new Date().toISOString() });
    }
  }

  /**
   * --isolation=netns: gives the task its namespace and address (asynchronously: other tasks
   * launch meanwhile; the task stays TASK_STAGING), then launches it inside the namespace with
   * HOST, host and ipAddresses set to its address. A failure fails the task with the reason.
   */
  #launchIsolated(spec: LaunchSpec, task: IsolatedTask): void {
    const iso = this.#o.isolation!;
    const taskId = spec.taskId;
    const now = () => new Date().toISOString();
    const setup = (async () => {
      let net: { netns: string; ip: string; ports?: number[] };
      try {
        net = await iso.taskStarting(task);
      } catch (err) {
        await this.#track(iso.taskStopped(taskId)).catch(() => undefined); // whatever part was made
        this.#o.onStatus({
          taskId,
          state: 'TASK_FAILED',
          message: `network isolation (--isolation=netns) failed for the task: ${(err as Error).message}`,
          timestamp: now(),
        });
        return;
      }
      const t = this.#tracker.get(taskId);
      if (this.#closed || !t || t.killing) {
        await this.#track(iso.taskStopped(taskId)).catch((err: unknown) =>
          this.#o.logger.warn({ err, taskId }, 'isolation: could not remove the network of a task killed before start'),
        );
        if (t) this.#o.onStatus({ taskId, state: 'TASK_KILLED', message: 'Killed before start', timestamp: now() });
        return;
      }
      t.host = net.ip;
      t.netns = net.netns;
      t.ipAddresses = [{ ipAddress: net.ip, protocol: 'IPv4' }];
      if (net.ports) t.ports = net.ports;
      spec.netns = net.netns;
      spec.env[`${this.#o.envVarsPrefix ?? ''}HOST`] = net.ip;
      this.#tracker.changed(t);
      this.#o.persist();
      this.#launchNow(spec);
    })().catch((err: unknown) => this.#o.logger.error({ err, taskId }, 'isolation: launching the task failed'));
    this.#isolating.set(taskId, setup);
    void this.#track(setup).finally(() => this.#isolating.delete(taskId));
  }

  /** A terminal task: its host ports, launch info, network namespace and (beyond the last 5) sandbox go. */
  release(t: TaskRecord): void {
    this.#hostPorts.release(t.id);
    this.#launchInfo.delete(t.id);
    if (t.netns) this.#releaseNetwork(t.id);
    this.#pruneSandboxes(t);
  }

  /** Once a task is terminal: its namespace, veth and address go (and the other tasks' rules are updated). */
  #releaseNetwork(taskId: string): void {
    const iso = this.#o.isolation;
    if (!iso) return;
    void this.#track(iso.taskStopped(taskId)).catch((err: unknown) =>
      this.#o.logger.warn({ err, taskId }, 'isolation: could not remove the network of a stopped task'),
    );
  }

  #track<T>(p: Promise<T>): Promise<T> {
    this.#networkOps.add(p);
    void p.finally(() => this.#networkOps.delete(p)).catch(() => undefined);
    return p;
  }

  #pruneSandboxes(t: TaskRecord): void {
    const list = this.#finishedSandboxes.get(t.appId) ?? [];
    list.push(t.id);
    while (list.length > 5) {
      const old = list.shift()!;
      try {
        rmSync(join(this.#o.dataDir, 'sandboxes', old), { recursive: true, force: true });
      } catch {
        /* best effort */
      }
    }
    this.#finishedSandboxes.set(t.appId, list);
  }
}
