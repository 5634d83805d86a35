// Running one health check against a task: HTTP/HTTPS (GET, healthy iff 200-399, no certificate
// verification), TCP (connect succeeds), COMMAND (`sh -c` in the task's sandbox with its
// environment, as the task's user; exit 0 = healthy; its process group is killed at the timeout
// and afterwards).
import { spawn } from 'node:child_process';
import { STATUS_CODES } from 'node:http';
import { checkHttp, checkTcp } from '../../shared/checks.ts';
import { groupLedBy, killGroupNow, procInfo } from '../tasks/process-group.ts';
import { taskProcessEnv } from '../tasks/env.ts';
import { asUser, resolveUser } from '../tasks/users.ts';
import type { CheckOutcome, HealthCheckDefinition } from './types.ts';

export interface CheckTarget {
  host: string;
  /** Host ports of the task in port-definition order. */
  ports: number[];
  env?: Record<string, string> | undefined;
  sandboxDir?: string | undefined;
  /** Run COMMAND checks inside this network namespace (like the task). */
  netns?: string | undefined;
  /** Run COMMAND checks as this user (like the task: its app's `user` or the default one). */
  user?: string | undefined;
}

/** The port a check uses: `port`, else the host port at `portIndex` (default 0). */
export function checkPort(hc: HealthCheckDefinition, ports: number[]): number | undefined {
  if (hc.port !== undefined && hc.port !== null && hc.port !== 0) return hc.port;
  return ports[hc.portIndex ?? 0];
}

export function statusLine(code: number): string {
  const text = STATUS_CODES[code];
  return text ? `${code} ${text}` : String(code);
}

/** The URL of a task's HTTP(S) endpoint (health and readiness checks): IPv6 hosts bracketed, path rooted. */
export function taskUrl(tls: boolean, host: string, port: number, path = '/'): string {
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return `${tls ? 'https' : 'http'}://${shownHost}:${port}${path.startsWith('/') ? path : `/${path}`}`;
}

export async function runCheck(hc: HealthCheckDefinition, target: CheckTarget): Promise<CheckOutcome> {
  const timeoutMs = Math.max(1, hc.timeoutSeconds * 1000);
  const protocol = hc.protocol.toUpperCase();
  if (protocol === 'COMMAND' || protocol === 'MESOS_COMMAND') return runCommand(hc.command?.value ?? '', target, timeoutMs);
  const port = checkPort(hc, target.ports);
  if (port === undefined) return { kind: 'unhealthy', cause: `the task has no port at index ${hc.portIndex ?? 0}` };
  if (protocol === 'TCP' || protocol === 'MESOS_TCP') {
    const r = await checkTcp({ host: target.host, port }, { timeoutMs });
    return r.reachable ? { kind: 'healthy' } : { kind: 'unhealthy', cause: r.message ?? r.reason };
  }
  const tls = protocol === 'HTTPS' || protocol === 'MESOS_HTTPS';
  const url = taskUrl(tls, target.host, port, hc.path || '/');
  const r = await checkHttp(
    { url, href: url, kind: 'http', host: target.host, port, tls },
    { timeoutMs, verifyTls: false, acceptStatus: (c) => c >= 200 && c <= 399 },
  );
  if (r.reachable) return { kind: 'healthy' };
  if (r.statusCode !== undefined) {
    const cause = statusLine(r.statusCode);
    if (r.statusCode >= 100 && r.statusCode <= 199 && hc.ignoreHttp1xx) return { kind: 'ignored', cause };
    return { kind: 'unhealthy', cause };
  }
  return { kind: 'unhealthy', cause: r.message ?? r.reason };
}

/**
 * COMMAND check: `sh -c value`, its own process group, killed at the timeout; nothing is left
 * behind. As the task's user when it has one (the app's command must not get root through its check).
 */
export async function runCommand(command: string, target: CheckTarget, timeoutMs: number): Promise<CheckOutcome> {
  if (!command) return { kind: 'unhealthy', cause: 'no command given' };
  const env = taskProcessEnv(target.env ?? {});
  let file = '/bin/sh';
  let args = ['-c', command];
  if (target.user) {
    const user = await resolveUser(target.user);
    if ('problem' in user) return { kind: 'unhealthy', cause: user.problem };
    const as = asUser(user, file, args, env.PATH);
    if ('problem' in as) return { kind: 'unhealthy', cause: as.problem };
    if (as.command) ({ file, args } = as.command);
  }
  if (target.netns) [file, args] = ['ip', ['netns', 'exec', target.netns, file, ...args]];
  return new Promise((resolve) => {
    let timedOut = false;
    const child = spawn(file, args, { cwd: target.sandboxDir, env, detached: true, stdio: 'ignore' });
    const start = child.pid === undefined ? undefined : procInfo(child.pid)?.start; // before it can be reaped
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid) void killGroupNow(child.pid);
    }, timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      resolve({ kind: 'unhealthy', cause: `command check could not start: ${e.message}` });
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      // Leftovers of the check (background children) must not survive it; once the command is
      // reaped its pid may name another process, whose group is not the check's.
      const group = groupLedBy(child.pid!, start);
      void (group === undefined ? Promise.resolve() : killGroupNow(group)).then(() => {
        if (timedOut) resolve({ kind: 'unhealthy', cause: `command timed out after ${timeoutMs / 1000} s` });
        else if (code === 0) resolve({ kind: 'healthy' });
        else resolve({ kind: 'unhealthy', cause: signal ? `command killed by signal ${signal}` : `command exited with code ${code}` });
      });
    });
  });
}
