// The environment Marathon 1.4 gives every task (Marathon's TaskBuilder.taskContextEnv and
// EnvironmentHelper): HOST and PORT* (optionally prefixed by --env_vars_prefix), MESOS_TASK_ID,
// MARATHON_APP_*, then the app's own `env`, which wins on collisions.
import { accessSync, constants as fsConstants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { PortAssignment } from './types.ts';

/** The parts of an app that the environment depends on. */
export interface TaskEnvInput {
  appId: string;
  version: string;
  cpus: number;
  mem: number;
  disk: number;
  gpus: number;
  labels?: Record<string, string> | undefined;
  /** App env: string values are used, `{secret: …}` references are skipped. */
  env?: Record<string, unknown> | undefined;
  dockerImage?: string | undefined;
}

const LABEL_PREFIX = 'MARATHON_APP_LABEL_';
/** Marathon drops labels whose variable would be too long: key ≥ 512 - prefix length, value ≥ 512. */
const MAX_LABEL_KEY = 512 - LABEL_PREFIX.length; // 493
const MAX_LABEL_VALUE = 512;

/** Scala/Java Double.toString: "1.0", "128.0", "0.5", "1.0E-4", "1.0E7". */
export function scalaDouble(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity';
  if (n === 0) return Object.is(n, -0) ? '-0.0' : '0.0';
  const abs = Math.abs(n);
  if (abs >= 1e-3 && abs < 1e7) return Number.isInteger(n) ? `${n}.0` : String(n);
  const [mantissa, exp] = n.toExponential().split('e') as [string, string];
  return `${mantissa.includes('.') ? mantissa : `${mantissa}.0`}E${exp.replace('+', '')}`;
}

/** Label key → variable suffix: runs of characters outside [A-Za-z0-9_] become `_`, upper-cased. */
export function sanitizeLabelKey(key: string): string {
  return key.replace(/[^A-Za-z0-9_]+/g, '_').toUpperCase();
}

/** Port name → variable suffix (PORT_<NAME>). */
export function sanitizePortName(name: string): string {
  return name.replace(/[^A-Za-z0-9_]+/g, '_').toUpperCase();
}

/** The port number a task sees for an assignment: its host port, or the container port when none. */
function effectivePort(p: PortAssignment): number {
  return p.hostPort !== 0 ? p.hostPort : (p.containerPort ?? 0);
}

export function taskEnvironment(
  app: TaskEnvInput,
  taskId: string,
  host: string,
  ports: PortAssignment[],
  opts: { envVarsPrefix?: string | undefined } = {},
): Record<string, string> {
  const pre = opts.envVarsPrefix ?? '';
  const env: Record<string, string> = {};
  env[`${pre}HOST`] = host;
  const numbers = ports.map(effectivePort);
  ports.forEach((p, i) => {
    const port = String(numbers[i]);
    env[`${pre}PORT${i}`] = port;
    env[`${pre}PORT_${p.declaredPort !== 0 ? p.declaredPort : numbers[i]}`] = port;
    if (p.name) env[`${pre}PORT_${sanitizePortName(p.name)}`] = port;
  });
  if (numbers.length > 0) {
    env[`${pre}PORT`] = String(numbers[0]);
    env[`${pre}PORTS`] = numbers.join(',');
  }
  env.MESOS_TASK_ID = taskId;
  env.MARATHON_APP_ID = app.appId;
  env.MARATHON_APP_VERSION = app.version;
  if (app.dockerImage) env.MARATHON_APP_DOCKER_IMAGE = app.dockerImage;
  env.MARATHON_APP_RESOURCE_CPUS = scalaDouble(app.cpus);
  env.MARATHON_APP_RESOURCE_MEM = scalaDouble(app.mem);
  env.MARATHON_APP_RESOURCE_DISK = scalaDouble(app.disk);
  env.MARATHON_APP_RESOURCE_GPUS = String(Math.trunc(app.gpus));
  const keys: string[] = [];
  for (const [key, value] of Object.entries(app.labels ?? {})) {
    if (key.length >= MAX_LABEL_KEY || value.length >= MAX_LABEL_VALUE) continue;
    const k = sanitizeLabelKey(key);
    keys.push(k);
    env[`${LABEL_PREFIX}${k}`] = value;
  }
  env.MARATHON_APP_LABELS = keys.join(' ');
  for (const [k, v] of Object.entries(app.env ?? {})) if (typeof v === 'string') env[k] = v;
  return env;
}

/** Variables of the orchestrator's own environment that tasks inherit (the task's env wins). */
export const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'USER', 'LOGNAME', 'SHELL'] as const;

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The environment a task's processes get (the task itself, and its COMMAND health checks): a few
 * variables inherited from `base`, a default PATH when it has none, then the task's own env.
 */
export function taskProcessEnv(specEnv: Record<string, string>, base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of INHERITED_ENV) {
    const v = base[k];
    if (v !== undefined) env[k] = v;
  }
  if (env.PATH === undefined) env.PATH = DEFAULT_PATH;
  return Object.assign(env, specEnv);
}

/** Resolves a program name like execvp does (default PATH when none); undefined when not found or not executable. */
export function resolveProgram(program: string, pathVar: string | undefined): string | undefined {
  const candidates = program.includes('/')
    ? [program]
    : (pathVar ?? DEFAULT_PATH)
        .split(delimiter)
        .filter(Boolean)
        .map((d) => join(d, program));
  for (const c of candidates) {
    try {
      accessSync(c, fsConstants.X_OK);
      return c;
    } catch {
      /* next */
    }
  }
  return undefined;
}
