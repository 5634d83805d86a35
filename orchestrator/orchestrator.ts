// Assembles the orchestrator: store, scheduler, executor, event bus and the HTTP API. The routes
// are in two fastify contexts (http/contexts.ts): the open one (/ping, the login, the JWKS, the
// home page) and the authenticated one (everything else), where alone the auth hook is. The web
// guard (http/web-guard.ts: Host allow-list, cross-site writes, JSON bodies only) is on every
// route, the API also under /marathon/.
import type { FastifyInstance } from 'fastify';
import type { DatabaseSync } from 'node:sqlite';
import Fastify, { LogController } from 'fastify';
import { schemaController } from '../shared/http-server.ts';
import type { Logger } from '../shared/logger.ts';
import type { OrchestratorConfig } from './config.ts';
import { EventBus } from './events/bus.ts';
import { EventCatalogue } from './events/catalogue.ts';
import { openDatabase } from './storage/db.ts';
import { Store } from './storage/store.ts';
import { Scheduler } from './scheduler.ts';
import type { Deployer } from './deployer.ts';
import { SLAVE_ID } from './tasks/ids.ts';
import { HealthMonitor } from './health/monitor.ts';
import { healthCallbacks } from './health/wire.ts';
import type { Executor } from './tasks/types.ts';
import { ProcessExecutor } from './tasks/executor.ts';
import { registerEvents } from './events/routes.ts';
import { createAuth, type Auth } from './auth/routes.ts';
import { installMarathonHttp } from './api/common.ts';
import { HostAllowList } from '../shared/web-guard.ts';
import { withoutAdminRouterPrefix } from './http/admin-router.ts';
import { homePageRoute } from './http/home-page.ts';
import { registerRouteContexts } from './http/contexts.ts';
import { pingRoute } from './http/ping.ts';
import { guardHosts, guardWrites } from './http/web-guard.ts';
import { holdWritesUntil } from './api/recovery-gate.ts';
import { AppInfoService } from './api/app-info.ts';
import { appsApi } from './api/apps.ts';
import { groupsApi } from './api/groups.ts';
import { tasksApi } from './api/tasks.ts';
import { deploymentsApi } from './api/deployments.ts';
import { queueApi } from './api/queue.ts';
import { Leadership, RequestMetrics, miscApi } from './api/misc.ts';
import { Isolation, IsolationUnavailable, policyPlugin, useCommandRunner } from './isolation/index.ts';
import { noPolicyPlugin } from './api/no-isolation.ts';

/** What the orchestrator is built with besides its configuration. */
export interface OrchestratorParts {
  logger: Logger;
  /** Runs the task processes (default: a ProcessExecutor on this machine). */
  executor?: Executor;
}

export interface Orchestrator {
  app: FastifyInstance;
  bus: EventBus;
  db: DatabaseSync;
  store: Store;
  scheduler: Scheduler;
  leadership: Leadership;
  auth: Auth | undefined;
  /** The task network and policy engine with --isolation=netns. */
  isolation: Isolation | undefined;
  /** Sets the port shown in /v2/info once listening on port 0. */
  setHttpPort(port: number): void;
  /**
   * Starts the scheduler: loads the state at once (reads are served from it), then stops what a
   * previous run left and starts the reconcile loop; the promise resolves when that is done and
   * writes are held until then. Call after registering extra plugins, before listening.
   */
  start(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Builds the orchestrator from its configuration (config.ts). With `isolation` set, tasks of apps
 * with ipAddress get their own network namespace and the policy endpoints are served; that throws
 * IsolationUnavailable (naming what is missing) when it cannot start.
 */
export async function buildOrchestrator(config: OrchestratorConfig, parts: OrchestratorParts): Promise<Orchestrator> {
  const { logger } = parts;
  const db = openDatabase(config.dataDir);
  let isolation: Isolation | undefined;
  if (config.isolation) {
    const log = logger.child({ module: 'isolation' });
    try {
      // Checks root, iproute2 and nftables, removes what a crashed run left, creates the bridge.
      isolation = await Isolation.open({
        prefix: config.isolation.prefix,
        subnet: config.isolation.subnet,
        publishAddress: config.isolation.publishAddress,
        db,
        log: (msg, err) => (err ? log.warn({ err }, msg) : log.info(msg)),
      });
    } catch (err) {
      db.close();
      if (err instanceof IsolationUnavailable) throw err;
      throw new IsolationUnavailable(`network isolation (--isolation=netns) could not start: ${(err as Error).message}`);
    }
    const left = isolation.leftovers;
    if (left && Object.values(left).some((v) => Array.isArray(v) && v.length > 0))
      log.warn({ removed: left }, 'isolation: removed what a previous run left (crash)');
  }
  const store = new Store(db);
  const bus = new EventBus(logger);
  const { hostname } = config;
  const executor =
    parts.executor ??
    new ProcessExecutor({
      logger,
      cgroups: { scope: config.dataDir },
      defaultUser: config.tasks.defaultUser,
      stopGracePeriodSeconds: config.tasks.stopGracePeriodSeconds,
    });
  // The isolation's `ip` and `nft` run in the task spawner once it is up (isolation/exec.ts says why).
  if (isolation && executor instanceof ProcessExecutor) useCommandRunner(executor.commandRunner);
  let frameworkId = store.meta('frameworkId');
  if (!frameworkId) {
    frameworkId = `${crypto.randomUUID()}-0000`;
    store.putMeta('frameworkId', frameworkId);
  }
  const healthMonitor = new HealthMonitor({
    logger,
    ...healthCallbacks({
      events: new EventCatalogue(bus),
      setHealth: (taskId, results) => scheduler.setHealth(taskId, results),
      kill: (taskId, reason) => {
        const t = scheduler.tasks.get(taskId);
        if (t) void scheduler.killTask(t, `unhealthy: ${reason}`);
      },
      host: (taskId) => scheduler.tasks.get(taskId)?.host ?? hostname,
      slaveId: SLAVE_ID,
    }),
  });
  const scheduler: Scheduler = new Scheduler({
    healthMonitor,
    store,
    bus,
    executor,
    logger,
    hostname,
    dataDir: config.dataDir,
    localPortMin: config.servicePorts.min,
    localPortMax: config.servicePorts.max,
    taskPortMin: config.taskPorts.min,
    taskPortMax: config.taskPorts.max,
    envVarsPrefix: config.envVarsPrefix,
    tickMs: config.tickMs,
    isolation,
    taskKilling: config.features.includes('task_killing'),
    defaultTaskUser: config.tasks.defaultUser,
  });
  // Like shared/http-server.ts createServer, but with Marathon's own 404 and error shapes.
  const app = Fastify({
    schemaController,
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 8 * 1024 * 1024,
    forceCloseConnections: true,
    return503OnClosing: true,
    // The API under /marathon/ too, as DC/OS's admin router serves it (http/admin-router.ts).
    rewriteUrl: withoutAdminRouterPrefix,
  }) as unknown as FastifyInstance;
  installMarathonHttp(app);
  // Before the auth hook: a Host outside the allow-list (DNS rebinding) is refused first.
  const hosts = new HostAllowList({ listenAddress: config.http.address, names: [hostname, ...config.http.allowedHosts] });
  guardHosts(app, hosts);
  guardWrites(app, hosts);
  holdWritesUntil(app, scheduler.recovered);
  const metrics = new RequestMetrics();
  app.addHook('onResponse', async (_req, reply) => metrics.record(reply.elapsedTime / 1000, reply.statusCode));
  const leadership = new Leadership();
  // What /v2/info reports (the port is the listening one, set once known).
  const info = {
    hostname,
    httpPort: config.http.port,
    localPortMin: config.servicePorts.min,
    localPortMax: config.servicePorts.max,
    eventSubscriber: config.events.subscriber,
    httpEndpoints: config.events.httpEndpoints,
    defaultNetworkName: config.apps.defaultNetworkName,
    mesosRole: config.mesosRole,
    mesosUser: config.tasks.defaultUser,
    envVarsPrefix: config.envVarsPrefix,
    frameworkId,
    features: config.features,
  };
  // Always built, so that --auth=off is logged as a warning; the app then has no token hook.
  const authModule = await createAuth({ db, dataDir: config.dataDir, logger, ...config.auth });
  const auth: Auth | undefined = authModule.enabled ? authModule : undefined;
  const parseDefaults = config.apps;
  // Each resource is given the parts it reads, and the scheduler only as the Deployer of its changes.
  const { groups, tasks, deployments, launcher } = scheduler;
  const appInfo = new AppInfoService(tasks, deployments);
  const deployer: Deployer = scheduler;
  await registerRouteContexts(app, {
    authenticate: auth?.authenticate,
    open: async (open) => {
      pingRoute(open);
      homePageRoute(open, { authenticate: auth?.authenticate });
      if (auth) await open.register(auth.publicRoutes);
    },
    authenticated: async (guarded) => {
      if (auth) await guarded.register(auth.accountRoutes);
      registerEvents(guarded, { bus, db, logger, eventSubscriber: config.events.subscriber, httpEndpoints: config.events.httpEndpoints });
      await guarded.register(appsApi, { groups, tasks, info: appInfo, deployer, events: scheduler.events, parseDefaults });
      await guarded.register(groupsApi, { groups, info: appInfo, deployer, parseDefaults });
      await guarded.register(tasksApi, { groups, tasks, info: appInfo, deployer });
      await guarded.register(deploymentsApi, { deployments, deployer });
      await guarded.register(queueApi, { groups, tasks, deployments, launcher, deployer });
      await guarded.register(miscApi, { sources: { groups, tasks, deployments, stats: scheduler.stats }, config: info, leadership, metrics });
      // /v2/starmap/policies and /v2/starmap/network.
      if (isolation) await guarded.register(policyPlugin, { engine: isolation.engine });
      else await guarded.register(noPolicyPlugin);
    },
  });
  let closed = false;
  return {
    app,
    bus,
    db,
    store,
    scheduler,
    leadership,
    auth,
    isolation,
    setHttpPort: (port) => (info.httpPort = port),
    start: () => scheduler.start(),
    close: async () => {
      if (closed) return;
      closed = true;
      leadership.close();
      await app.close();
      await scheduler.close();
      // After every task is gone: namespaces, veths, bridge, rules, routes and hosts files.
      if (isolation) {
        useCommandRunner(undefined);
        try {
          await isolation.close();
        } catch (err) {
          logger.error({ err }, 'isolation: cleanup at stop failed (the next start removes what is left)');
        }
      }
      db.close();
    },
  };
}
