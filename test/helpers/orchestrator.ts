/* eslint-disable @typescript-eslint/no-explicit-any */
// Starts an orchestrator (from source, or a built binary) on a free loopback port with a temporary
// data dir, and talks to its API.
import { TaskCgroups } from '../../orchestrator/tasks/cgroups.ts';
import { NODE, freePort, start, tempDir, waitForHttp, type Running } from './process.ts';

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface StartedOrchestrator {
  url: string;
  /** Authorization token of the admin account (auth is on by default), or undefined with --auth given explicitly. */
  token: string | undefined;
  /** `{authorization: 'token=…'}` for requests made without `call` (SSE, raw fetch); empty when there is no token. */
  authHeaders: Record<string, string>;
  port: number;
  dataDir: string;
  proc: Running;
  call: <T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<Reply<T>>;
}

export async function startOrchestrator(args: string[] = [], opts: { binary?: string; dataDir?: string; port?: number } = {}): Promise<StartedOrchestrator> {
  const port = opts.port ?? (await freePort());
  const dataDir = opts.dataDir ?? tempDir('orch-');
  // Auth is on by default, as for users: unless a test sets --auth itself, the helper gives admin a
  // password, logs in, and `call` sends the token.
  const autoLogin = !args.some((a) => a === '--auth' || a.startsWith('--auth='));
  const password = `test-admin-${Math.random().toString(36).slice(2)}`;
  const flags = [
    '--http-address=127.0.0.1',
    `--http-port=${port}`,
    `--data-dir=${dataDir}`,
    '--hostname=127.0.0.1',
    '--log-level=warn',
    ...(autoLogin ? [`--admin-password=${password}`] : []),
    ...args,
  ];
  const proc = opts.binary ? start(opts.binary, flags) : start(NODE, ['orchestrator/main.ts', ...flags]);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/ping`, 20_000);
  let token: string | undefined;
  if (autoLogin) {
    const res = await fetch(`${url}/acs/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uid: 'admin', password }),
    });
    if (res.status !== 200) throw new Error(`login to the test orchestrator failed: HTTP ${res.status} ${await res.text()}`);
    token = ((await res.json()) as { token: string }).token;
  }
  const authHeaders: Record<string, string> = token ? { authorization: `token=${token}` } : {};
  const call = async <T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> => {
    const init: RequestInit = { method, headers: { ...authHeaders, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers } };
    if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
    const res = await fetch(url + path, init);
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  };
  return { url, token, authHeaders, port, dataDir, proc, call };
}

/**
 * Ends the tasks an orchestrator left and removes their cgroups (its data dir's scope: orchestrator/tasks/cgroups.ts),
 * for a test whose tasks outlived it: a stopped orchestrator leaves its tasks running, as Marathon does,
 * and only its next start on that data dir would tidy their cgroups away.
 */
export async function removeTaskCgroups(dataDir: string): Promise<void> {
  const cgroups = TaskCgroups.open(dataDir);
  if ('unavailable' in cgroups) return;
  for (const cgroup of cgroups.all().values()) {
    await cgroup.kill(); // members still exiting keep a cgroup busy
    cgroup.remove();
  }
  cgroups.close();
}
