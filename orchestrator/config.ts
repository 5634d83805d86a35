// The orchestrator's configuration, declared once: its shape and its defaults. The flag parser
// (flags.ts) fills it from the command line, taking every default from DEFAULTS; buildOrchestrator
// (orchestrator.ts) takes it as it is and hands each module its own slice: the scheduler its port ranges
// and task environment, auth its section, the event routes theirs, the app parsers their defaults,
// /v2/info what Marathon reports. No other module holds a default for these settings.
import { join } from 'node:path';
import { hostname } from 'node:os';

export interface PortRange {
  min: number;
  max: number;
}

export interface OrchestratorConfig {
  /** Folder of the state database, the lock file and task sandboxes. */
  dataDir: string;
  /** Host name that tasks (HOST, task.host) and /v2/info report. */
  hostname: string;
  /** Listen address and port; allowedHosts: --allowed-hosts, the names answered besides the default ones (shared/web-guard.ts). */
  http: { address: string; port: number; allowedHosts: string[] };
  /** Service ports handed out to apps: [min, max). */
  servicePorts: PortRange;
  /** Host ports given to tasks (PORT0…): [min, max]. */
  taskPorts: PortRange;
  /** Prefix of the HOST and PORT* variables given to tasks. */
  envVarsPrefix: string | undefined;
  /** What an app definition that does not say gets. */
  apps: { defaultNetworkName: string | undefined; defaultAcceptedResourceRoles: string[] | undefined };
  auth: { enabled: boolean; adminPassword: string | undefined; tokenLifetimeSeconds: number };
  events: { subscriber: string | undefined; httpEndpoints: string[] };
  /** Reported in /v2/info (there is no Mesos here). */
  mesosRole: string | undefined;
  /** --enable_features: reported in /v2/info; task_killing is also honoured by the scheduler. */
  features: string[];
  /** --isolation=netns: the task network's namespace prefix and subnet, and where tasks' ports are published (none when absent); undefined when off. */
  isolation: { prefix: string; subnet: string; publishAddress?: string | undefined } | undefined;
  log: { file: string | undefined; level: string };
  /**
   * Task processes: the user tasks of apps without `user` run as (--mesos-user; undefined: the
   * orchestrator's own), and the longest grace period a task gets when the orchestrator stops.
   */
  tasks: { defaultUser: string | undefined; stopGracePeriodSeconds: number };
  /** The scheduler's reconcile period (back-off deadlines, deployment progress); not a flag. */
  tickMs: number;
}

export const DEFAULTS = {
  httpAddress: '127.0.0.1',
  httpPort: 8080,
  servicePorts: { min: 10_000, max: 20_000 },
  taskPorts: { min: 31_000, max: 32_000 },
  auth: 'on',
  /** Five days, as DC/OS. */
  tokenLifetimeSeconds: 432_000,
  logLevel: 'info',
  isolation: 'off',
  /** --netns-subnet: the task network's private IPv4 subnet. */
  netnsSubnet: '10.213.0.0/24',
  /** --netns-prefix: the prefix of every namespace, link and table (one per orchestrator). */
  netnsPrefix: 'smap',
  /** --publish-address: isolated tasks' TCP ports on the host, loopback only (the collector has no login). */
  publishAddress: '127.0.0.1',
  tickMs: 200,
  /** --stop-grace-period: a stop of any number of tasks takes about this long, plus the SIGKILL round. */
  stopGracePeriodSeconds: 5,
} as const;

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
