// /v2/info, /v2/leader, /metrics, /help, /logging (/ping is open: http/ping.ts).
import type { FastifyInstance } from 'fastify';
import type { GroupManager } from '../state/group-manager.ts';
import type { TaskTracker } from '../tasks/tracker.ts';
import type { DeploymentManager } from '../deployment/manager.ts';
import { VERSION } from '../../shared/version.ts';
import { NotFound } from '../errors.ts';

export interface InfoConfig {
  hostname: string;
  httpPort: number;
  localPortMin: number;
  localPortMax: number;
  eventSubscriber: string | undefined;
  httpEndpoints: string[];
  defaultNetworkName: string | undefined;
  mesosRole: string | undefined;
  /** --mesos_user: who tasks run as when their app names no user (unset: the orchestrator's own user). */
  mesosUser: string | undefined;
  envVarsPrefix: string | undefined;
  frameworkId: string;
  features: string[];
}

export class Leadership {
  elected = true;
  #timer: NodeJS.Timeout | undefined;
  /** Steps down; this (only) instance is re-elected after `delayMs`. */
  abdicate(delayMs = 500): void {
    this.elected = false;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => (this.elected = true), delayMs);
    this.#timer.unref();
  }
  close(): void {
    clearTimeout(this.#timer);
  }
}

/** Request timings for /metrics (a small Dropwizard-style timer). */
export class RequestMetrics {
  readonly durations: number[] = [];
  count = 0;
  readonly started = Date.now();
  readonly byStatus = new Map<string, number>();
  record(seconds: number, status: number): void {
    this.count++;
    this.durations.push(seconds);
    if (this.durations.length > 1028) this.durations.shift();
    const k = `${Math.floor(status / 100)}xx`;
    this.byStatus.set(k, (this.byStatus.get(k) ?? 0) + 1);
  }
}

function timer(xs: number[], count: number, started: number): Record<string, number | string> {
  const s = [...xs].sort((a, b) => a - b);
  const pct = (p: number) => (s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))]! : 0);
  const mean = s.length ? s.reduce((a, b) => a + b, 0) / s.length : 0;
  const sd = s.length ? Math.sqrt(s.reduce((a, b) => a + (b - mean) ** 2, 0) / s.length) : 0;
  const rate = count / Math.max(1, (Date.now() - started) / 1000);
  return {
    count,
    max: s.at(-1) ?? 0,
    mean,
    min: s[0] ?? 0,
    p50: pct(0.5),
    p75: pct(0.75),
    p95: pct(0.95),
    p98: pct(0.98),
    p99: pct(0.99),
    p999: pct(0.999),
    stddev: sd,
    m15_rate: rate,
    m1_rate: rate,
    m5_rate: rate,
    mean_rate: rate,
    duration_units: 'seconds',
    rate_units: 'calls/second',
  };
}

const page = (title: string, body: string) =>
  `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>\n`;

/** What /metrics counts: apps, tasks by state, deployments, and the scheduler's counters. */
export interface MetricsSources {
  groups: Pick<GroupManager, 'apps'>;
  tasks: Pick<TaskTracker, 'all'>;
  deployments: Pick<DeploymentManager, 'size'>;
  stats: { readonly launched: number; readonly killed: number; readonly failed: number; readonly deployments: number; readonly statusUpdates: number };
}

export async function miscApi(
  app: FastifyInstance,
  opts: { sources: MetricsSources; config: InfoConfig; leadership: Leadership; metrics: RequestMetrics },
): Promise<void> {
  const { sources: s, config: c, leadership, metrics } = opts;
  const leaderName = () => `${c.hostname}:${c.httpPort}`;

  app.get('/v2/info', async () => ({
    name: 'marathon',
    version: VERSION,
    buildref: 'starmap',
    elected: leadership.elected,
    leader: leadership.elected ? leaderName() : null,
    frameworkId: c.frameworkId,
    marathon_config: {
      access_control_allow_origin: null,
      checkpoint: true,
      decline_offer_duration: 120000,
      default_network_name: c.defaultNetworkName ?? null,
      env_vars_prefix: c.envVarsPrefix ?? null,
      executor: '//cmd',
      failover_timeout: 604800,
      features: c.features,
      framework_name: 'marathon',
      ha: false,
      hostname: c.hostname,
      launch_token: 100,
      launch_token_refresh_interval: 30000,
      leader_proxy_connection_timeout_ms: 5000,
      leader_proxy_read_timeout_ms: 10000,
      local_port_max: c.localPortMax,
      local_port_min: c.localPortMin,
      master: 'local',
      max_instances_per_offer: 5,
      mesos_heartbeat_failure_threshold: 5,
      mesos_heartbeat_interval: 15000,
      mesos_leader_ui_url: null,
      mesos_role: c.mesosRole ?? null,
      mesos_user: c.mesosUser ?? process.env.USER ?? 'root',
      min_revive_offers_interval: 5000,
      offer_matching_timeout: 1000,
      on_elected_prepare_timeout: 180000,
      reconciliation_initial_delay: 15000,
      reconciliation_interval: 600000,
      revive_offers_for_new_apps: true,
      revive_offers_repetitions: 3,
      scale_apps_initial_delay: 15000,
      scale_apps_interval: 300000,
      store_cache: true,
      task_launch_confirm_timeout: 300000,
      task_launch_timeout: 300000,
      task_lost_expunge_initial_delay: 300000,
      task_lost_expunge_interval: 30000,
      task_reservation_timeout: 20000,
      webui_url: null,
    },
    zookeeper_config: {
      zk: 'zk://localhost:2181/marathon',
      zk_compression: true,
      zk_compression_threshold: 65536,
      zk_connection_timeout: 10000,
      zk_max_node_size: 1024000,
      zk_max_versions: 50,
      zk_session_timeout: 10000,
      zk_timeout: 10000,
    },
    event_subscriber: c.eventSubscriber ? { type: c.eventSubscriber, http_endpoints: c.httpEndpoints } : null,
    http_config: { http_port: c.httpPort, https_port: 8443 },
  }));

  app.get('/v2/leader', async () => {
    if (!leadership.elected) throw new NotFound('There is no leader');
    return { leader: leaderName() };
  });
  app.delete('/v2/leader', async () => {
    if (!leadership.elected) throw new NotFound('There is no leader');
    leadership.abdicate();
    return { message: 'Leadership abdicated' };
  });

  app.get('/metrics', async () => {
    const mem = process.memoryUsage();
    const taskStates = new Map<string, number>();
    for (const t of s.tasks.all()) taskStates.set(t.state, (taskStates.get(t.state) ?? 0) + 1);
    const gauges: Record<string, { value: number }> = {
      'service.mesosphere.marathon.app.count': { value: s.groups.apps.size },
      'service.mesosphere.marathon.task.running.count': { value: taskStates.get('TASK_RUNNING') ?? 0 },
      'service.mesosphere.marathon.task.staged.count': { value: (taskStates.get('TASK_STAGING') ?? 0) + (taskStates.get('TASK_STARTING') ?? 0) },
      'service.mesosphere.marathon.deployments.count': { value: s.deployments.size },
      'service.mesosphere.marathon.uptime': { value: Math.round(process.uptime() * 1000) },
      'jvm.memory.heap.used': { value: mem.heapUsed },
      'jvm.memory.heap.committed': { value: mem.heapTotal },
      'jvm.memory.total.used': { value: mem.rss },
    };
    const counters: Record<string, { count: number }> = {
      'service.mesosphere.marathon.tasks.launched': { count: s.stats.launched },
      'service.mesosphere.marathon.tasks.killed': { count: s.stats.killed },
      'service.mesosphere.marathon.tasks.failed': { count: s.stats.failed },
      'service.mesosphere.marathon.deployments.started': { count: s.stats.deployments },
      'service.mesosphere.marathon.statusUpdates': { count: s.stats.statusUpdates },
    };
    const meters: Record<string, Record<string, number | string>> = {};
    for (const [k, v] of metrics.byStatus) {
      const rate = v / Math.max(1, (Date.now() - metrics.started) / 1000);
      meters[`org.eclipse.jetty.servlet.ServletContextHandler.${k}-responses`] = {
        count: v,
        m15_rate: rate,
        m1_rate: rate,
        m5_rate: rate,
        mean_rate: rate,
        units: 'events/second',
      };
    }
    // The histogram is the request timer without its rates.
    const requests = timer(metrics.durations, metrics.count, metrics.started);
    const { count, max, mean, min, p50, p75, p95, p98, p99, p999, stddev } = requests;
    return {
      version: '3.0.0',
      gauges,
      counters,
      histograms: { 'service.mesosphere.marathon.api.requestDurationSeconds': { count, max, mean, min, p50, p75, p95, p98, p99, p999, stddev } },
      meters,
      timers: { 'mesosphere.marathon.api.v2.requests': requests },
    };
  });

  app.get('/help', async (_req, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .send(
        page(
          'Marathon-compatible orchestrator API',
          `<p>Version ${VERSION}. Endpoints:</p><ul>${['/v2/apps', '/v2/tasks', '/v2/deployments', '/v2/queue', '/v2/info', '/v2/leader', '/v2/events', '/v2/eventSubscriptions', '/ping', '/metrics', '/logging'].map((p) => `<li><code>${p}</code></li>`).join('')}</ul>`,
        ),
      ),
  );
  app.get('/logging', async (_req, reply) =>
    reply.type('text/html; charset=utf-8').send(page('Logging', `<p>Log level: <code>${app.log.level}</code>. Logs go to standard output (or --logfile).</p>`)),
  );
}
