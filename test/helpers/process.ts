// Real child processes for end-to-end tests: started, read, and always cleaned up.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { waitFor } from './wait.ts';

export const ROOT = resolve(import.meta.dirname, '..', '..');
/**
 * The project's Node 24 runtime (the `node` devDependency). npm scripts put it first on PATH, but
 * vitest may have been started by another Node, so child processes name it explicitly.
 */
export const NODE = existsSync(join(ROOT, 'node_modules', '.bin', 'node')) ? join(ROOT, 'node_modules', '.bin', 'node') : process.execPath;

export interface Running {
  child: ChildProcess;
  output: () => string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
  stop: (signal?: NodeJS.Signals) => Promise<number | string>;
}

const running = new Set<Running>();

export function start(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Running {
  const child = spawn(cmd, args, { cwd: opts.cwd ?? ROOT, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string>((res) => child.once('exit', (code, signal) => res(code ?? signal ?? -1)));
  const r: Running = {
    child,
    output: () => out,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, signal);
        } catch {
          /* already gone */
        }
        const t = setTimeout(() => {
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            /* gone */
          }
        }, 5000);
        await exited;
        clearTimeout(t);
      }
      running.delete(r);
      return exited;
    },
  };
  running.add(r);
  return r;
}

/** Stops every process started by this test file (call from afterAll/afterEach). */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((r) => r.stop('SIGKILL')));
  removeTempDirs();
}

/** Runs a command to completion and returns its exit code and output. */
export async function runToEnd(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ code: number | string; output: string }> {
  const r = start(cmd, args, opts);
  const timer = setTimeout(() => void r.stop('SIGKILL'), opts.timeoutMs ?? 20_000);
  const code = await r.exited;
  clearTimeout(timer);
  running.delete(r);
  return { code, output: r.output() };
}

/**
 * A loopback port nothing listens on, for targets that must be refused: a privileged port that no
 * test binds and that the kernel never hands out, neither to listen(0) nor as a connection's source
 * port. A port freePort() found free can meanwhile be taken by another test's server (seen once: a
 * "closed" target was reachable in a full run).
 */
export const CLOSED_PORT = 1;

/** A port that was free a moment ago on the given loopback address. */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, host, () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });
}

/** Waits until an HTTP GET of `url` answers (any status), returning the response. */
export function waitForHttp(url: string, timeoutMs = 15_000): Promise<Response> {
  return waitFor(() => fetch(url), { timeoutMs, message: `no answer from ${url}` });
}

const tempDirs = new Set<string>();

/** A fresh temporary folder, removed by stopAll(). */
export function tempDir(prefix = 'starmap-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

/** Removes the folders made by tempDir(). */
export function removeTempDirs(): void {
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
  tempDirs.clear();
}

/** Pids of the processes whose command line contains `pattern` (pgrep -f): tasks a test made carry a unique marker. */
export function pidsMatching(pattern: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

/** SIGKILL to each pid that still exists (a test's own leftovers, found by their marker). */
export function killPids(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}
