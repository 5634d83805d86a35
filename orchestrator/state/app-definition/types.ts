// The app definition's types: Marathon 1.4's AppDefinition in its normalised form (every default
// filled in), and the shapes the reader works with.

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

/** The `{path, errors}` of a 400 or 422 (errors.ts names it once). */
export type { Violation } from '../../errors.ts';

export interface PortDefinition {
  port: number;
  protocol: string;
  name?: string;
  labels: Record<string, string>;
}

export interface HealthCheck {
  protocol: string;
  path?: string;
  portIndex?: number;
  port?: number;
  command?: { value: string } | null;
  gracePeriodSeconds: number;
  intervalSeconds: number;
  timeoutSeconds: number;
  maxConsecutiveFailures: number;
  ignoreHttp1xx?: boolean;
  delaySeconds?: number;
}

export interface ReadinessCheck {
  name: string;
  protocol: 'HTTP' | 'HTTPS';
  path: string;
  /** Name of the app port the check uses (portDefinitions, portMappings or ipAddress discovery ports). */
  portName: string;
  intervalSeconds: number;
  timeoutSeconds: number;
  httpStatusCodesForReady: number[];
  preserveLastResponse: boolean;
}

export interface PortMapping {
  containerPort: number;
  hostPort: number;
  servicePort: number;
  protocol: string;
  name?: string;
  labels: Record<string, string>;
}

export interface Container {
  type: string;
  volumes: { containerPath: string; hostPath: string; mode: 'RO' | 'RW' }[];
  docker?: {
    image: string;
    network: 'HOST' | 'BRIDGE' | 'USER' | 'NONE';
    portMappings: PortMapping[];
    privileged: boolean;
    parameters: { key: string; value: string }[];
    forcePullImage: boolean;
  };
}

export interface FetchUri {
  uri: string;
  extract: boolean;
  executable: boolean;
  cache: boolean;
  destPath?: string;
}

export interface IpAddress {
  groups: string[];
  labels: Record<string, string>;
  discovery: { ports: JsonObject[] };
  networkName?: string;
}

export interface UpgradeStrategy {
  minimumHealthCapacity: number;
  maximumOverCapacity: number;
}

export interface AppDefinition {
  id: string;
  cmd: string | null;
  args: string[] | null;
  user: string | null;
  env: Record<string, string | { secret: string }>;
  instances: number;
  cpus: number;
  mem: number;
  disk: number;
  gpus: number;
  executor: string;
  constraints: string[][];
  uris: string[];
  fetch: FetchUri[];
  storeUrls: string[];
  backoffSeconds: number;
  backoffFactor: number;
  maxLaunchDelaySeconds: number;
  container: Container | null;
  healthChecks: HealthCheck[];
  readinessChecks: ReadinessCheck[];
  dependencies: string[];
  upgradeStrategy: UpgradeStrategy;
  labels: Record<string, string>;
  ipAddress: IpAddress | null;
  version: string;
  residency: Json;
  secrets: JsonObject;
  taskKillGracePeriodSeconds: number | null;
  unreachableStrategy: Json;
  killSelection: 'YOUNGEST_FIRST' | 'OLDEST_FIRST';
  acceptedResourceRoles?: string[];
  ports?: number[];
  portDefinitions?: PortDefinition[];
  requirePorts?: boolean;
  versionInfo?: { lastScalingAt: string; lastConfigChangeAt: string };
}

export interface ParseOptions {
  /** The id taken from the URL (PUT/PATCH); overrides the body's. */
  pathId?: string;
  /**
   * What relative `dependencies` resolve against: the group for an app inside a group update (as
   * Marathon's GroupUpdate.toApp); by default the app's own id, as Marathon's
   * AppDefinition.withCanonizedIds does for /v2/apps (`../db` in `/shop/web` is `/shop/db`).
   */
  dependencyBase?: string;
  defaultNetworkName?: string | undefined;
  defaultAcceptedResourceRoles?: string[] | undefined;
  now: string;
}
