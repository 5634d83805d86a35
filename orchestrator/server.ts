// Assembles the orchestrator: store, scheduler, executor, event bus and the HTTP API. Other parts
// slot in through the returned handles: the events plugin registers on `app` with `bus`, the auth
// module adds an onRequest hook and its routes.
import { hostname as osHostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { DatabaseSync } from 'node:sqlite';
import Fastify, { LogController } from 'fastify';
import type { Logger } from '../shared/logger.ts';
import { EventBus } from './events/bus.ts';
import { EventCatalogue } from './events/catalogue.ts';
import { openDatabase } from './state/db.ts';
import { Store } from './state/store.ts';
import { SLAVE_ID, Scheduler } from './scheduler.ts';
import { HealthMonitor } from './health/monitor.ts';
import { healthCallbacks } from './health/wire.ts';
import type { Executor } from './tasks/types.ts';
import { ProcessExecutor } from './tasks/executor.ts';
import { registerEvents } from './events/plugin.ts';
import { createAuth, type Auth } from './auth/plugin.ts';
import { installMarathonHttp } from './api/common.ts';
import { holdWritesUntil } from './api/recovery-gate.ts';
import { appsApi } from './api/apps.ts';
import { groupsApi } from './api/groups.ts';
import { tasksApi } from './api/tasks.ts';
import { deploymentsApi } from './api/deployments.ts';
import { queueApi } from './api/queue.ts';
import { Leadership, RequestMetrics, miscApi } from './api/misc.ts';
import { Isolation, IsolationUnavailable, policyPlugin } from './isolation/index.ts';
import { publishAddressOf } from './isolation/published-ports.ts';
import { noPolicyPlugin } from './api/no-isolation.ts';

export interface OrchestratorOptions {
  logger: Logger;
  dataDir: string;
  hostname?: string;
  /** Port reported in /v2/info and /v2/leader (the listening port). */
  httpPort: number;
  localPortMin?: number;
  localPortMax?: number;
  taskPortMin?: number;
  taskPortMax?: number;
  eventSubscriber?: string | undefined;
  httpEndpoints?: string[];
  defaultNetworkName?: string | undefined;
  defaultAcceptedResourceRoles?: string[] | undefined;
  mesosRole?: string | undefined;
  envVarsPrefix?: string | undefined;
  features?: string[];
  executor?: Executor;
  tickMs?: number;
  /** --auth=on: tokens required (login module); off: open. */
  auth?: boolean;
  adminPassword?: string | undefined;
  /** Lifetime of authorization tokens (default 5 days). */
  tokenLifetimeSeconds?: number;
  /**
   * --isolation=netns: tasks of apps with ipAddress get their own network namespace, and the
   * policy endpoint is served. Throws IsolationUnavailable (naming what is missing) when it cannot start.
   */
  isolation?: { prefix: string; subnet: string; publishAddress?: string | undefined } | undefined;
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

export async function buildOrchestrator(opts: OrchestratorOptions): Promise<Orchestrator> {
  const db = openDatabase(opts.dataDir);
  let isolation: Isolation | undefined;
  if (opts.isolation) {
    const log = opts.logger.child({ module: 'isolation' });
    try {
      // Checks root, iproute2 and nftables, removes what a crashed run left, creates the bridge.
      isolation = await Isolation.open({ prefix: opts.isolation.prefix, subnet: opts.isolation.subnet, publishAddress: publishAddressOf(opts.isolation.publishAddress), db, log: (msg, err) => (err ? log.warn({ err }, msg) : log.info(msg)) });
    } catch (err) {
      db.close();
      if (err instanceof IsolationUnavailable) throw err;
      throw new IsolationUnavailable(`network isolation (--isolation=netns) could not start: ${(err as Error).message}`);
    }
    const left = isolation.leftovers;
    if (left && Object.values(left).some((v) => Array.isArray(v) && v.length > 0)) log.warn({ removed: left }, 'isolation: removed what a previous run left (crash)');
  }
  const store = new Store(db);
  const bus = new EventBus(opts.logger);
  const hostname = opts.hostname ?? osHostname();
  const executor = opts.executor ?? new ProcessExecutor({ logger: opts.logger, cgroups: { scope: opts.dataDir } });
  let frameworkId = store.meta('frameworkId');
  if (!frameworkId) {
    frameworkId = `${crypto.randomUUID()}-0000`;
    store.putMeta('frameworkId', frameworkId);
  }
  const localPortMin = opts.localPortMin ?? 10000;
  const localPortMax = opts.localPortMax ?? 20000;
  const healthMonitor = new HealthMonitor({
    logger: opts.logger,
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
    store, bus, executor, logger: opts.logger, hostname, dataDir: opts.dataDir, localPortMin, localPortMax,
    taskPortMin: opts.taskPortMin ?? 31000, taskPortMax: opts.taskPortMax ?? 32000, envVarsPrefix: opts.envVarsPrefix, tickMs: opts.tickMs ?? 200,
    isolation,
    taskKilling: (opts.features ?? []).includes('task_killing'),
  });
  // Like shared/server.ts createServer, but with Marathon's own 404 and error shapes.
  const app = Fastify({
    loggerInstance: opts.logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 8 * 1024 * 1024,
    forceCloseConnections: true,
    return503OnClosing: true,
  }) as unknown as FastifyInstance;
  installMarathonHttp(app);
  holdWritesUntil(app, scheduler.recovered);
  const metrics = new RequestMetrics();
  app.addHook('onResponse', async (_req, reply) => metrics.record(reply.elapsedTime / 1000, reply.statusCode));
  const leadership = new Leadership();
  const config = {
    hostname, httpPort: opts.httpPort, localPortMin, localPortMax, eventSubscriber: opts.eventSubscriber, httpEndpoints: opts.httpEndpoints ?? [],
    defaultNetworkName: opts.defaultNetworkName, mesosRole: opts.mesosRole, envVarsPrefix: opts.envVarsPrefix, frameworkId, features: opts.features ?? [],
  };
  // Always built, so that --auth=off is logged as a warning; its hook then lets everything through.
  const authModule = await createAuth({
    db, dataDir: opts.dataDir, logger: opts.logger, enabled: opts.auth ?? false, adminPassword: opts.adminPassword,
    ...(opts.tokenLifetimeSeconds ? { tokenLifetimeSeconds: opts.tokenLifetimeSeconds } : {}),
  });
  const auth: Auth | undefined = authModule.enabled ? authModule : undefined;
  if (auth) {
    app.addHook('onRequest', auth.hook);
    await app.register(auth.plugin);
  }
  registerEvents(app, { bus, db, logger: opts.logger, eventSubscriber: opts.eventSubscriber, httpEndpoints: opts.httpEndpoints });
  const parseDefaults = { defaultNetworkName: opts.defaultNetworkName, defaultAcceptedResourceRoles: opts.defaultAcceptedResourceRoles };
  await app.register(appsApi, { scheduler, parseDefaults });
  await app.register(groupsApi, { scheduler, parseDefaults });
  await app.register(tasksApi, { scheduler });
  await app.register(deploymentsApi, { scheduler });
  await app.register(queueApi, { scheduler });
  await app.register(miscApi, { scheduler, config, leadership, metrics });
  // /v2/starmap/policies and /v2/starmap/network (behind the auth hook like every API route).
  if (isolation) await app.register(policyPlugin, { engine: isolation.engine });
  else await app.register(noPolicyPlugin);
  let closed = false;
  return {
    app, bus, db, store, scheduler, leadership, auth, isolation,
    setHttpPort: (port) => (config.httpPort = port),
    start: () => scheduler.start(),
    close: async () => {
      if (closed) return;
      closed = true;
      leadership.close();
      await app.close();
      await scheduler.close();
      // After every task is gone: namespaces, veths, bridge, rules, routes and hosts files.
      if (isolation) {
        try {
          await isolation.close();
        } catch (err) {
          opts.logger.error({ err }, 'isolation: cleanup at stop failed (the next start removes what is left)');
        }
      }
      db.close();
    },
  };
}
