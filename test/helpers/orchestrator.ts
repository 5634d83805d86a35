/* eslint-disable @typescript-eslint/no-explicit-any */
// Starts an orchestrator (from source, or a built binary) on a free loopback port with a temporary
// data dir, and talks to its API.
import { NODE, freePort, start, tempDir, waitForHttp, type Running } from './process.ts';

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface StartedOrchestrator {
  url: string;
  port: number;
  dataDir: string;
  proc: Running;
  call: <T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<Reply<T>>;
}

export async function startOrchestrator(args: string[] = [], opts: { binary?: string; dataDir?: string; port?: number } = {}): Promise<StartedOrchestrator> {
  const port = opts.port ?? (await freePort());
  const dataDir = opts.dataDir ?? tempDir('orch-');
  const flags = ['--http-address=127.0.0.1', `--http-port=${port}`, `--data-dir=${dataDir}`, '--hostname=127.0.0.1', '--log-level=warn', ...args];
  const proc = opts.binary ? start(opts.binary, flags) : start(NODE, ['orchestrator/main.ts', ...flags]);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/ping`, 20_000);
  const call = async <T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> => {
    const init: RequestInit = { method, headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers } };
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
  return { url, port, dataDir, proc, call };
}
