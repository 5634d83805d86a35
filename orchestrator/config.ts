// The orchestrator's configuration, declared once. ORCHESTRATOR_FLAGS is one entry a flag (name,
// Marathon's underscore alias, type, default, help text, coerce: shared/cli.ts reads the table);
// from it come the yargs options (flags.ts), the type of the parsed flags, and DEFAULTS. Every
// default is written here, the isolation flags' too (ISOLATION_FLAGS).
// configFrom puts each parsed flag in the slice of the configuration its module receives, and the
// type of the configuration is what configFrom returns: no interface repeats a field.
// buildOrchestrator (orchestrator.ts) takes the configuration as it is and hands each module its
// own slice: the scheduler its port ranges and task environment, auth its section, the event
// routes theirs, the app parsers their defaults, /v2/info what Marathon reports. No other module
// holds a default for these settings.
import { join } from 'node:path';
import { hostname } from 'node:os';
import { addressFlag, flagDefaults, LOG_LEVELS, numberFlag, parsedFlag, portFlag, stringFlag, type FlagTable, type FlagValues } from '../shared/cli.ts';
import { parseAllowedHosts } from '../shared/web-guard.ts';
import { callbackUrlProblem } from './events/subscriptions.ts';
import { prefixFlag, publishAddressFlag, subnetFlag } from './isolation/flag-checks.ts';
import { publishAddressOf } from './isolation/published-ports.ts';

/** A comma-separated list flag: undefined when absent, else its non-empty items. */
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

/** An optional string flag that, when given, must not be empty. */
const optionalString = (flag: string) => (v: unknown) => (v === undefined ? undefined : stringFlag(flag)(v));

/**
 * The isolation flags (docs/isolation.md), last in --help, with underscore aliases as for
 * Marathon's flags. Their defaults are written here only: isolation/netns.ts falls back to them,
 * isolation/flags.ts gives a yargs instance these entries.
 */
export const ISOLATION_FLAGS = {
  isolation: {
    type: 'string',
    choices: ['off', 'netns'],
    default: 'off',
    describe:
      'netns: every task of an app with ipAddress gets its own network namespace and address on a bridge owned by the orchestrator, with network policies enforced by nftables (needs root, iproute2 and nftables)',
  },
  'netns-subnet': {
    alias: 'netns_subnet',
    type: 'string',
    default: '10.213.0.0/24',
    describe: 'private IPv4 subnet of the task network (the host is its first address); nothing is routed outside it',
    coerce: subnetFlag('netns-subnet'),
  },
  'netns-prefix': {
    alias: 'netns_prefix',
    type: 'string',
    default: 'smap',
    describe: 'prefix of the namespaces, links and nftables tables this orchestrator creates (and removes at stop and after a crash)',
    coerce: prefixFlag('netns-prefix'),
  },
  'publish-address': {
    alias: 'publish_address',
    type: 'string',
    /** Isolated tasks' TCP ports on the host, loopback only (the collector has no login). */
    default: '127.0.0.1',
    describe:
      "with --isolation=netns: every TCP port in an isolated task's ipAddress.discovery.ports gets a port on the host at this address (the task's `ports`) forwarding to the task; 0.0.0.0 opens them to the network, off publishes none. Forwarded connections come from the host, which ingress policies always accept",
    coerce: publishAddressFlag('publish-address'),
  },
} as const satisfies FlagTable;

/** Every flag, in --help order; the isolation flags come last. */
export const ORCHESTRATOR_FLAGS = {
  'http-address': { alias: 'http_address', type: 'string', default: '127.0.0.1', describe: 'listen address', coerce: addressFlag('http-address') },
  'http-port': { alias: 'http_port', default: 8080, describe: 'listen port (0 picks a free one)', coerce: portFlag('http-port') },
  /** The names answered besides the default ones (shared/web-guard.ts). */
  'allowed-hosts': {
    alias: 'allowed_hosts',
    type: 'string',
    describe:
      "comma-separated host names answered besides localhost, *.localhost, IP addresses, this machine's host name, --hostname and --http-address (a leading dot admits a whole domain: .example.com); a request with another Host gets 403, a guard against DNS rebinding",
    coerce: parsedFlag('allowed-hosts', parseAllowedHosts),
  },
  'data-dir': {
    alias: 'data_dir',
    type: 'string',
    default: defaultDataDir(),
    describe:
      'folder for the state database, the lock file and task sandboxes (default $XDG_STATE_HOME/starmap/orchestrator, else ~/.local/state/starmap/orchestrator)',
    coerce: stringFlag('data-dir'),
  },
  hostname: {
    type: 'string',
    default: defaultHostname(),
    describe: 'host name that tasks (HOST, task.host) and /v2/info report',
    coerce: stringFlag('hostname'),
  },
  /** Service ports handed out to apps: [min, max). */
  'local-port-min': { alias: 'local_port_min', default: 10_000, describe: 'lowest service port handed out to apps', coerce: portFlag('local-port-min') },
  'local-port-max': { alias: 'local_port_max', default: 20_000, describe: 'end (exclusive) of the service port range', coerce: portFlag('local-port-max') },
  /** Host ports given to tasks (PORT0…): [min, max]. */
  'task-port-min': { alias: 'task_port_min', default: 31_000, describe: 'lowest host port given to tasks (PORT0…)', coerce: portFlag('task-port-min') },
  'task-port-max': { alias: 'task_port_max', default: 32_000, describe: 'highest host port given to tasks', coerce: portFlag('task-port-max') },
  auth: {
    type: 'string',
    default: 'on',
    choices: ['on', 'off'],
    describe:
      'on (default): every endpoint except /ping, the login and the JWKS needs a token (Authorization: token=…, from POST /acs/api/v1/auth/login); off: everything open, for local experiments only (logged as a warning)',
  },
  /** Five days, as DC/OS. */
  'token-lifetime': {
    alias: 'token_lifetime',
    default: 432_000,
    describe: 'seconds an authorization token stays valid (default 5 days)',
    coerce: numberFlag('token-lifetime', 60, 31_536_000, true),
  },
  'admin-password': {
    alias: 'admin_password',
    type: 'string',
    describe: 'password of the first account "admin" with --auth=on (else $STARMAP_ADMIN_PASSWORD, else a random one written to <data-dir>/admin-password)',
  },
  'event-subscriber': {
    alias: 'event_subscriber',
    type: 'string',
    describe: 'event subscriber module: http_callback enables /v2/eventSubscriptions',
    coerce: optionalString('event-subscriber'),
  },
  'http-endpoints': {
    alias: 'http_endpoints',
    type: 'string',
    describe: 'comma-separated callback URLs subscribed at start (with --event_subscriber http_callback)',
    coerce: callbackUrls,
  },
  'default-network-name': { alias: 'default_network_name', type: 'string', describe: 'network name given to ipAddress definitions without one' },
  'default-accepted-resource-roles': {
    alias: 'default_accepted_resource_roles',
    type: 'string',
    describe: 'comma-separated roles used when an app has no acceptedResourceRoles',
    coerce: list('default-accepted-resource-roles'),
  },
  /** Reported in /v2/info (there is no Mesos here). */
  'mesos-role': { alias: 'mesos_role', type: 'string', describe: 'role reported in /v2/info (no Mesos here)' },
  'env-vars-prefix': { alias: 'env_vars_prefix', type: 'string', describe: 'prefix for the HOST and PORT* variables given to tasks' },
  /** Reported in /v2/info; task_killing is also honoured by the scheduler. */
  'enable-features': {
    alias: 'enable_features',
    type: 'string',
    describe: 'comma-separated feature names (reported in /v2/info)',
    coerce: list('enable-features'),
  },
  'mesos-user': {
    alias: 'mesos_user',
    type: 'string',
    describe: "user that tasks of apps without a `user` run as (needs root); default: the orchestrator's own",
    coerce: optionalString('mesos-user'),
  },
  /** A stop of any number of tasks takes about this long, plus the SIGKILL round. */
  'stop-grace-period': {
    type: 'number',
    default: 5,
    describe: "at the orchestrator's stop, the longest a task is given between SIGTERM and SIGKILL, in seconds (its own killGracePeriodSeconds when shorter)",
    coerce: numberFlag('stop-grace-period', 0, 300),
  },
  master: { type: 'string', describe: 'accepted for compatibility with Marathon command lines; ignored (no Mesos)' },
  zk: { type: 'string', describe: 'accepted for compatibility; ignored (state is in --data-dir)' },
  'framework-name': { alias: 'framework_name', type: 'string', describe: 'accepted for compatibility; ignored' },
  logfile: { type: 'string', describe: 'write logs to this file instead of stdout' },
  'log-level': { alias: 'log_level', type: 'string', default: 'info', choices: LOG_LEVELS, describe: 'log level' },
  ...ISOLATION_FLAGS,
} as const satisfies FlagTable;

/** The flags as the parser returns them (camel-cased, coerced). */
export type OrchestratorFlags = FlagValues<typeof ORCHESTRATOR_FLAGS>;

/** Every flag's default (camel-cased), and the one setting that is not a flag. */
export const DEFAULTS = {
  ...flagDefaults(ORCHESTRATOR_FLAGS),
  /** The scheduler's reconcile period (back-off deadlines, deployment progress). */
  tickMs: 200,
};

/** The configuration the orchestrator is built from, in the slices its modules receive. */
export function configFrom(f: OrchestratorFlags) {
  return {
    /** Folder of the state database, the lock file and task sandboxes. */
    dataDir: f.dataDir,
    /** Host name that tasks (HOST, task.host) and /v2/info report. */
    hostname: f.hostname,
    http: { address: f.httpAddress, port: f.httpPort, allowedHosts: f.allowedHosts ?? [] },
    servicePorts: { min: f.localPortMin, max: f.localPortMax },
    taskPorts: { min: f.taskPortMin, max: f.taskPortMax },
    envVarsPrefix: f.envVarsPrefix,
    /** What an app definition that does not say gets. */
    apps: { defaultNetworkName: f.defaultNetworkName, defaultAcceptedResourceRoles: f.defaultAcceptedResourceRoles },
    auth: { enabled: f.auth === 'on', adminPassword: f.adminPassword, tokenLifetimeSeconds: f.tokenLifetime },
    events: { subscriber: f.eventSubscriber, httpEndpoints: f.httpEndpoints ?? [] },
    mesosRole: f.mesosRole,
    features: f.enableFeatures ?? [],
    /** --isolation=netns: the task network's namespace prefix and subnet, and where tasks' ports are published (none when absent); undefined when off. */
    isolation: f.isolation === 'netns' ? { prefix: f.netnsPrefix, subnet: f.netnsSubnet, publishAddress: publishAddressOf(f.publishAddress) } : undefined,
    log: { file: f.logfile, level: f.logLevel },
    /**
     * Task processes: the user tasks of apps without `user` run as (--mesos-user; undefined: the
     * orchestrator's own), and the longest grace period a task gets when the orchestrator stops.
     */
    tasks: { defaultUser: f.mesosUser, stopGracePeriodSeconds: f.stopGracePeriod },
    tickMs: DEFAULTS.tickMs,
  };
}

export type OrchestratorConfig = ReturnType<typeof configFrom>;

/**
 * $XDG_STATE_HOME/starmap/orchestrator, else ~/.local/state/starmap/orchestrator (the XDG default):
 * never the current folder, which is often a clone of this repository.
 */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME || (env.HOME ? join(env.HOME, '.local', 'state') : undefined);
  return state ? join(state, 'starmap', 'orchestrator') : join('data', 'orchestrator');
}

/** This machine's host name. */
export function defaultHostname(): string {
  return hostname();
}
