// The orchestrator's flags. Marathon's startup options are accepted in both spellings
// (--event_subscriber and --event-subscriber). The parser returns the configuration the
// orchestrator is built from (config.ts), with config.ts's defaults.
import { addressFlag, LOG_LEVELS, numberFlag, parseFlags, portFlag, stringFlag } from '../shared/cli.ts';
import { DEFAULTS, defaultDataDir, defaultHostname, type OrchestratorConfig } from './config.ts';
import { callbackUrlProblem } from './events/subscriptions.ts';
import { isolationOptions, type IsolationFlags } from './isolation/flags.ts';
import { publishAddressOf } from './isolation/published-ports.ts';

/** The flags as yargs reads them (camel-cased). */
interface OrchestratorFlags extends IsolationFlags {
  httpAddress: string;
  httpPort: number;
  dataDir: string;
  hostname: string;
  localPortMin: number;
  localPortMax: number;
  taskPortMin: number;
  taskPortMax: number;
  auth: 'on' | 'off';
  adminPassword: string | undefined;
  tokenLifetime: number;
  eventSubscriber: string | undefined;
  httpEndpoints: string[];
  defaultNetworkName: string | undefined;
  defaultAcceptedResourceRoles: string[] | undefined;
  mesosRole: string | undefined;
  envVarsPrefix: string | undefined;
  enableFeatures: string[];
  logfile: string | undefined;
  logLevel: string;
  mesosUser: string | undefined;
  stopGracePeriod: number;
}

const list = (flag: string) => (v: unknown) =>
  v === undefined
    ? undefined
    : stringFlag(flag)(v)
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);

/** --http_endpoints: each URL must be one /v2/eventSubscriptions would accept. */
const callbackUrls = (v: unknown): string[] | undefined => {
  const urls = list('http-endpoints')(v);
  for (const url of urls ?? []) {
    const problem = callbackUrlProblem(url);
    if (problem) throw new Error(`invalid value for --http-endpoints: ${problem}`);
  }
  return urls;
};

export function parseOrchestratorFlags(argv: string[]): OrchestratorConfig {
  const f = parseFlags<OrchestratorFlags & Record<string, unknown>>(
    {
      name: 'orchestrator',
      description:
        'A Marathon-compatible scheduler for one machine, no cluster: apps, tasks (real processes on this host), ' +
        'deployments with rolling restarts, launch queue with back-off, health checks, events. Speaks the Marathon ' +
        '1.4 REST API (/v2/apps, /v2/tasks, /v2/deployments, /v2/queue, /v2/info, /v2/leader, /ping, /metrics). ' +
        'State lives in an SQLite database in --data-dir; every acknowledged change is on disk before the answer.',
      examples: [
        ['orchestrator --http-port=8080 --data-dir=/var/lib/starmap', 'serve on 127.0.0.1:8080'],
        ['orchestrator --event_subscriber http_callback --http_endpoints http://127.0.0.1:9000/cb', 'with HTTP callbacks'],
        [
          'sudo orchestrator --isolation=netns --netns-subnet=10.213.0.0/24',
          'tasks of apps with ipAddress in their own network namespaces, with network policies (root, iproute2, nftables)',
        ],
      ],
      epilogue: 'Marathon startup options are accepted with underscores or dashes. Docs: docs/orchestrator.md.',
      options: (y) =>
        // The isolation flags (--isolation, --netns-subnet, --netns-prefix, --publish-address) come last in --help.
        isolationOptions(
          y
            .option('http-address', {
              alias: 'http_address',
              type: 'string',
              default: DEFAULTS.httpAddress,
              describe: 'listen address',
              coerce: addressFlag('http-address'),
            })
            .option('http-port', {
              alias: 'http_port',
              default: DEFAULTS.httpPort,
              describe: 'listen port (0 picks a free one)',
              coerce: portFlag('http-port'),
            })
            .option('data-dir', {
              alias: 'data_dir',
              type: 'string',
              default: defaultDataDir(),
              describe:
                'folder for the state database, the lock file and task sandboxes (default $XDG_STATE_HOME/starmap/orchestrator, else ~/.local/state/starmap/orchestrator)',
              coerce: stringFlag('data-dir'),
            })
            .option('hostname', {
              type: 'string',
              default: defaultHostname(),
              describe: 'host name that tasks (HOST, task.host) and /v2/info report',
              coerce: stringFlag('hostname'),
            })
            .option('local-port-min', {
              alias: 'local_port_min',
              default: DEFAULTS.servicePorts.min,
              describe: 'lowest service port handed out to apps',
              coerce: portFlag('local-port-min'),
            })
            .option('local-port-max', {
              alias: 'local_port_max',
              default: DEFAULTS.servicePorts.max,
              describe: 'end (exclusive) of the service port range',
              coerce: portFlag('local-port-max'),
            })
            .option('task-port-min', {
              alias: 'task_port_min',
              default: DEFAULTS.taskPorts.min,
              describe: 'lowest host port given to tasks (PORT0…)',
              coerce: portFlag('task-port-min'),
            })
            .option('task-port-max', {
              alias: 'task_port_max',
              default: DEFAULTS.taskPorts.max,
              describe: 'highest host port given to tasks',
              coerce: portFlag('task-port-max'),
            })
            .option('auth', {
              type: 'string',
              default: DEFAULTS.auth,
              choices: ['on', 'off'],
              describe:
                'on (default): every endpoint except /ping, the login and the JWKS needs a token (Authorization: token=…, from POST /acs/api/v1/auth/login); off: everything open, for local experiments only (logged as a warning)',
            })
            .option('token-lifetime', {
              alias: 'token_lifetime',
              default: DEFAULTS.tokenLifetimeSeconds,
              describe: 'seconds an authorization token stays valid (default 5 days)',
              coerce: numberFlag('token-lifetime', 60, 31_536_000, true),
            })
            .option('admin-password', {
              alias: 'admin_password',
              type: 'string',
              describe:
                'password of the first account "admin" with --auth=on (else $STARMAP_ADMIN_PASSWORD, else a random one written to <data-dir>/admin-password)',
            })
            .option('event-subscriber', {
              alias: 'event_subscriber',
              type: 'string',
              describe: 'event subscriber module: http_callback enables /v2/eventSubscriptions',
              coerce: (v: unknown) => (v === undefined ? undefined : stringFlag('event-subscriber')(v)),
            })
            .option('http-endpoints', {
              alias: 'http_endpoints',
              type: 'string',
              describe: 'comma-separated callback URLs subscribed at start (with --event_subscriber http_callback)',
              coerce: callbackUrls,
            })
            .option('default-network-name', {
              alias: 'default_network_name',
              type: 'string',
              describe: 'network name given to ipAddress definitions without one',
            })
            .option('default-accepted-resource-roles', {
              alias: 'default_accepted_resource_roles',
              type: 'string',
              describe: 'comma-separated roles used when an app has no acceptedResourceRoles',
              coerce: list('default-accepted-resource-roles'),
            })
            .option('mesos-role', { alias: 'mesos_role', type: 'string', describe: 'role reported in /v2/info (no Mesos here)' })
            .option('env-vars-prefix', { alias: 'env_vars_prefix', type: 'string', describe: 'prefix for the HOST and PORT* variables given to tasks' })
            .option('enable-features', {
              alias: 'enable_features',
              type: 'string',
              describe: 'comma-separated feature names (reported in /v2/info)',
              coerce: list('enable-features'),
            })
            .option('mesos-user', {
              alias: 'mesos_user',
              type: 'string',
              describe: "user that tasks of apps without a `user` run as (needs root); default: the orchestrator's own",
              coerce: (v: unknown) => (v === undefined ? undefined : stringFlag('mesos-user')(v)),
            })
            .option('stop-grace-period', {
              type: 'number',
              default: DEFAULTS.stopGracePeriodSeconds,
              describe:
                "at the orchestrator's stop, the longest a task is given between SIGTERM and SIGKILL, in seconds (its own killGracePeriodSeconds when shorter)",
              coerce: numberFlag('stop-grace-period', 0, 300),
            })
            .option('master', { type: 'string', describe: 'accepted for compatibility with Marathon command lines; ignored (no Mesos)' })
            .option('zk', { type: 'string', describe: 'accepted for compatibility; ignored (state is in --data-dir)' })
            .option('framework-name', { alias: 'framework_name', type: 'string', describe: 'accepted for compatibility; ignored' })
            .option('logfile', { type: 'string', describe: 'write logs to this file instead of stdout' })
            .option('log-level', { alias: 'log_level', type: 'string', default: DEFAULTS.logLevel, choices: LOG_LEVELS, describe: 'log level' })
            .check((a) => {
              if ((a['local-port-min'] as number) >= (a['local-port-max'] as number))
                throw new Error('invalid value for --local-port-min: must be below --local-port-max');
              if ((a['task-port-min'] as number) > (a['task-port-max'] as number))
                throw new Error('invalid value for --task-port-min: must not exceed --task-port-max');
              return true;
            }),
        ) as never,
    },
    argv,
  );
  return {
    dataDir: f.dataDir,
    hostname: f.hostname,
    http: { address: f.httpAddress, port: f.httpPort },
    servicePorts: { min: f.localPortMin, max: f.localPortMax },
    taskPorts: { min: f.taskPortMin, max: f.taskPortMax },
    envVarsPrefix: f.envVarsPrefix,
    apps: { defaultNetworkName: f.defaultNetworkName, defaultAcceptedResourceRoles: f.defaultAcceptedResourceRoles },
    auth: { enabled: f.auth === 'on', adminPassword: f.adminPassword, tokenLifetimeSeconds: f.tokenLifetime },
    events: { subscriber: f.eventSubscriber, httpEndpoints: (f.httpEndpoints as string[] | undefined) ?? [] },
    mesosRole: f.mesosRole,
    features: (f.enableFeatures as string[] | undefined) ?? [],
    isolation: f.isolation === 'netns' ? { prefix: f.netnsPrefix, subnet: f.netnsSubnet, publishAddress: publishAddressOf(f.publishAddress) } : undefined,
    log: { file: f.logfile, level: f.logLevel },
    tasks: { defaultUser: f.mesosUser, stopGracePeriodSeconds: f.stopGracePeriod },
    tickMs: DEFAULTS.tickMs,
  };
}
