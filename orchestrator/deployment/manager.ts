// The deployment manager (Marathon's DeploymentManager): the running deployments, the locks they
// hold on their apps, their steps' progress (start, scale, rolling restart, stop) and events. It
// changes tasks only through the StepActions the scheduler gives it; a cancel returns the
// rollback's changes for the scheduler to deploy rather than deploying from in here.
import { type AppDefinition } from '../state/app-definition.ts';
import type { Store, StoredDeployment, TaskRecord } from '../storage/store.ts';
import { isWithin } from '../state/group.ts';
import type { EventCatalogue } from '../events/catalogue.ts';
import { excessTasks, killOrder, type TaskTracker } from '../tasks/tracker.ts';
import type { Launcher } from '../launch-queue/launcher.ts';
import { configVersionOf } from '../state/app-update.ts';
import { deploymentJson, planJson } from '../formats/json.ts';
import type { AppChange, GroupChangeOptions, StateView } from '../state/app-change.ts';
import { restartStrategy } from './plan.ts';
import { Conflict, NotFound } from '../errors.ts';

/** What the steps ask of the launch queue: tasks to launch, and a restarted app's delay forgotten. */
export type StepLauncher = Pick<Launcher, 'launchUpTo' | 'launchMissing' | 'resetDelay'>;

/** One evaluation of the running deployments (progress()). */
export interface Progress {
  /** The apps they still hold (the reconcile pass leaves them to their deployment). */
  busy: Set<string>;
  /** A next step started: its actions run in another pass, soon, not after the periodic tick. */
  stepStarted: boolean;
}

/** The change that rolls a cancelled deployment back. */
export interface Rollback {
  changes: AppChange[];
  group: GroupChangeOptions;
}

export interface DeploymentManagerOptions {
  /** The current apps and group records (read only: a change is the group manager's). */
  groups: StateView;
  tracker: TaskTracker;
  events: EventCatalogue;
  launcher: StepLauncher;
  /** Kills a task (the scheduler's: TASK_KILLING, the executor); the task stays tracked until it is gone. */
  kill(task: TaskRecord, reason: string): void;
}

const LOCK_MESSAGE = "App is locked by one or more deployments. Override with the option '?force=true'. View details at '/v2/deployments/<DEPLOYMENT_ID>'.";

export class DeploymentManager {
  readonly #deployments = new Map<string, StoredDeployment>();
  readonly #dirty = new Map<string, StoredDeployment | null>();
  /** Event form of running deployments (planJson). */
  readonly #plans = new Map<string, Record<string, unknown>>();
  readonly #groups: StateView;
  readonly #tracker: TaskTracker;
  readonly #events: EventCatalogue;
  readonly #launcher: StepLauncher;
  readonly #kill: (task: TaskRecord, reason: string) => void;
  #stepStarted = false;

  constructor(opts: DeploymentManagerOptions) {
    this.#groups = opts.groups;
    this.#tracker = opts.tracker;
    this.#events = opts.events;
    this.#launcher = opts.launcher;
    this.#kill = opts.kill;
  }

  /** Loads the stored deployments; their rolling restarts are evaluated afresh. */
  load(store: Store): void {
    for (const d of store.loadDeployments()) {
      for (const k of Object.keys(d.restart)) d.restart[k]!.started = false;
      this.#deployments.set(d.id, d);
    }
  }

  get size(): number {
    return this.#deployments.size;
  }

  all(): StoredDeployment[] {
    return [...this.#deployments.values()];
  }

  deploymentsOf(appId: string): StoredDeployment[] {
    return this.all().filter((d) => d.affectedApps.includes(appId));
  }

  get dirty(): boolean {
    return this.#dirty.size > 0;
  }

  /** Writes the deployments that progressed or ended (inside the caller's transaction). */
  flushInto(store: Store): void {
    for (const [id, d] of this.#dirty) {
      if (d) store.putDeployment(d);
      else store.deleteDeployment(id);
    }
    this.#dirty.clear();
  }

  /** Throws the 409 lock error unless forced; with force cancels the conflicting deployments. */
  checkLocks(ids: string[], force: boolean): void {
    const conflicting = this.all().filter((d) => d.affectedApps.some((a) => ids.includes(a)));
    if (conflicting.length === 0) return;
    if (!force) throw new Conflict(LOCK_MESSAGE, { deployments: conflicting.map((d) => ({ id: d.id })) });
    for (const d of conflicting) this.#finish(d, false, 'overridden by a forced change');
  }

  /** Starts a stored plan (one without steps succeeds at once). */
  start(plan: StoredDeployment): void {
    if (plan.steps.length === 0) this.#finish(plan, true);
    else {
      this.#deployments.set(plan.id, plan);
      this.#startStep(plan);
    }
  }

  /** One evaluation of every running deployment: the apps they still hold, and whether a next step started. */
  progress(): Progress {
    const busy = new Set<string>();
    this.#stepStarted = false;
    for (const d of this.all()) {
      this.#progress(d);
      // Every app of a step is among the deployment's affected apps (buildPlan makes both from one list).
      if (this.#deployments.has(d.id)) for (const a of d.affectedApps) busy.add(a);
    }
    return { busy, stepStarted: this.#stepStarted };
  }

  /**
   * DELETE /v2/deployments/{id}: ends it; with force that is all (null), else returns the change
   * that rolls its apps and groups back (the scheduler deploys it).
   */
  cancel(id: string, force: boolean): Rollback | null {
    const d = this.#deployments.get(id);
    if (!d) throw new NotFound(`DeploymentPlan ${id} does not exist`);
    this.#finish(d, false, force ? 'deployment cancelled (force: no rollback)' : 'deployment cancelled: rolled back');
    if (force) return null;
    const changes: AppChange[] = d.affectedApps.map((appId) => ({ id: appId, target: d.original[appId] ?? null }));
    const groups = Object.entries(d.originalGroups ?? {});
    const apps = [...this.#groups.apps.keys()];
    return {
      changes,
      group: {
        ...(d.groupId !== undefined ? { groupId: d.groupId } : {}),
        putGroups: groups.flatMap(([, g]) => (g ? [g] : [])),
        removeGroups: groups.filter(([gid, g]) => g === null && !apps.some((a) => d.original[a] === undefined && isWithin(a, gid))).map(([gid]) => gid),
      },
    };
  }

  /**
   * A deployment as events carry it (Marathon 1.4: the whole root group before and after). Built
   * once per deployment: the trees are as large as the state, and every step event repeats them.
   * Only built while someone receives events (EventCatalogue.listened): with 1,000 apps, building
   * them for every POST was most of its CPU and left garbage that grew the heap
   * (bench/orchestrator-launch-memory.bench.ts); a stream that attaches during a deployment gets
   * trees built then.
   */
  planJson(d: StoredDeployment): Record<string, unknown> {
    const cached = this.#plans.get(d.id);
    if (cached) return { ...cached, steps: d.steps };
    const plan = planJson(d, this.#groups.apps, this.#groups.groups);
    this.#plans.set(d.id, plan);
    return plan;
  }

  /** A running deployment as /v2/deployments shows it. */
  json(d: StoredDeployment): Record<string, unknown> {
    return deploymentJson(d, (appId) => this.readinessOf(appId));
  }

  /** Readiness results of the app's tasks (shown while a deployment of the app runs). */
  readinessOf(appId: string): ReturnType<TaskTracker['readinessOf']> {
    return this.#tracker.readinessOf(appId, this.#groups.apps.get(appId));
  }

  /**
   * Ends a deployment. A cancelled or overridden one (not success) fails its current step. Then,
   * the outcome of the group change (README, Events): group_change_success or _failed.
   */
  #finish(d: StoredDeployment, success: boolean, reason = 'deployment cancelled'): void {
    this.#deployments.delete(d.id);
    this.#dirty.set(d.id, null);
    if (this.#events.listened) {
      const plan = this.planJson(d);
      const step = d.steps[d.currentStep];
      if (!success && step) this.#events.deploymentStepFailure({ plan, currentStep: step });
      if (success) this.#events.deploymentSuccess({ id: d.id, plan });
      else this.#events.deploymentFailed({ id: d.id, plan, reason });
    }
    const groupId = d.groupId ?? '/';
    if (success) this.#events.groupChangeSuccess({ groupId, version: d.version });
    else this.#events.groupChangeFailed({ groupId, version: d.version, reason });
    this.#plans.delete(d.id);
  }

  #progress(d: StoredDeployment): void {
    const step = d.steps[d.currentStep];
    if (!step) return this.#finish(d, true);
    let done = true;
    for (const a of step.actions) {
      const app = this.#groups.apps.get(a.app);
      switch (a.action) {
        case 'StartApplication':
          break;
        case 'ScaleApplication':
          if (app) {
            // As Marathon's scale step: the surplus killed, the rest launched by the launch queue.
            for (const t of excessTasks(this.#tracker.appTasks(app.id), app)) this.#kill(t, 'scaling down');
            this.#launcher.launchMissing(app);
            done = this.#scaled(app) && done;
          }
          break;
        case 'RestartApplication':
          if (app) done = this.#restart(d, app) && done;
          break;
        case 'StopApplication': {
          const ts = this.#tracker.appTasks(a.app);
          for (const t of ts) if (!t.killing) this.#kill(t, 'app stopped');
          if (ts.length > 0) done = false;
          break;
        }
      }
    }
    this.#finishStepIfDone(d, done);
  }

  /**
   * A Scale step's end, as Marathon 1.4's DeploymentActor.scaleApp: exactly `instances` tasks, none
   * being killed (a scale-down waits for its kills, for no health check), and the tasks started for
   * this version of the app healthy and ready (TaskStartActor counts only the tasks it started). The
   * tasks the app already ran are not waited for: one of them unhealthy kept the deployment, and
   * the app's lock, for ever. A scale gives the app a new version and a task keeps the version it
   * was launched with, so the version tells the new tasks (every task of an app the deployment
   * starts).
   */
  #scaled(app: AppDefinition): boolean {
    const tracker = this.#tracker;
    const all = tracker.appTasks(app.id);
    return (
      all.length === app.instances && all.every((t) => !t.killing && (t.version !== app.version || (tracker.isHealthy(t, app) && tracker.isReady(t, app))))
    );
  }

  /** One evaluation of the rolling restart (deployment/plan.ts restartStrategy); true when finished. */
  #restart(d: StoredDeployment, app: AppDefinition): boolean {
    const tracker = this.#tracker;
    const n = app.instances;
    const cfg = configVersionOf(app);
    const all = tracker.appTasks(app.id);
    const isNew = (t: TaskRecord) => t.configVersion === cfg;
    let st = d.restart[app.id];
    if (!st || !st.started) {
      const running = all.filter((t) => !t.killing).length;
      const s = restartStrategy(n, running, app.upgradeStrategy.minimumHealthCapacity, app.upgradeStrategy.maximumOverCapacity);
      const olds = killOrder(
        all.filter((t) => !isNew(t) && !t.killing),
        app,
      );
      for (const t of olds.slice(0, s.killImmediately)) this.#kill(t, 'rolling restart');
      st = {
        maxCapacity: s.maxCapacity,
        readyCounted: all.filter((t) => isNew(t) && tracker.isHealthy(t, app) && tracker.isReady(t, app)).length,
        started: true,
      };
      d.restart[app.id] = st;
      this.#launcher.resetDelay(app.id);
      this.#dirty.set(d.id, d);
    }
    const current = tracker.appTasks(app.id);
    const news = current.filter((t) => isNew(t) && !t.killing);
    const olds = current.filter((t) => !isNew(t));
    const ready = news.filter((t) => tracker.isHealthy(t, app) && tracker.isReady(t, app)).length;
    while (st.readyCounted < ready) {
      st.readyCounted++;
      const victim = killOrder(
        olds.filter((t) => !t.killing),
        app,
      ).reverse()[0];
      if (victim) this.#kill(victim, 'rolling restart: replaced');
    }
    const toStart = Math.min(n - news.length, Math.max(0, st.maxCapacity - olds.length - news.length));
    this.#launcher.launchUpTo(app, toStart);
    if (news.length > n) for (const t of killOrder(news, app).slice(0, news.length - n)) this.#kill(t, 'scaling down');
    return ready === n && news.length === n && tracker.appTasks(app.id).filter((t) => !isNew(t)).length === 0;
  }

  #finishStepIfDone(d: StoredDeployment, done: boolean): void {
    if (!done) return;
    const step = d.steps[d.currentStep]!;
    // No task runs the old version any more: its checks go (Marathon's reconcile by version).
    for (const a of step.actions)
      if (a.action === 'RestartApplication') for (const _hc of d.original[a.app]?.healthChecks ?? []) this.#events.removeHealthCheck({ appId: a.app });
    if (this.#events.listened) this.#events.deploymentStepSuccess({ plan: this.planJson(d), currentStep: step });
    for (const a of step.actions) if (a.action === 'StopApplication') this.#events.appTerminated({ appId: a.app });
    d.currentStep++;
    if (d.currentStep >= d.steps.length) this.#finish(d, true);
    else {
      this.#dirty.set(d.id, d);
      this.#startStep(d);
      // Its actions run in the next pass: soon, not after the periodic tick (up to 200 ms: half
      // the time a new app of 100 instances took to run, issue 17). progress() says so.
      this.#stepStarted = true;
    }
  }

  #startStep(d: StoredDeployment): void {
    const step = d.steps[d.currentStep];
    if (!step) return;
    if (this.#events.listened) this.#events.deploymentInfo({ plan: this.planJson(d), currentStep: step });
    for (const a of step.actions) {
      const app = this.#groups.apps.get(a.app);
      // Checks are registered for the app's new version at each step that gives it one (a scale
      // of a new app is announced by its Start step already), and removed once per check on stop.
      const startedHere = d.steps.some((st) => st.actions.some((x) => x.action === 'StartApplication' && x.app === a.app));
      if (app && (a.action === 'StartApplication' || a.action === 'RestartApplication' || (a.action === 'ScaleApplication' && !startedHere))) {
        for (const hc of app.healthChecks) this.#events.addHealthCheck({ appId: app.id, version: app.version, healthCheck: hc });
      }
      if (a.action === 'StopApplication') for (const _hc of d.original[a.app]?.healthChecks ?? []) this.#events.removeHealthCheck({ appId: a.app });
    }
  }
}
