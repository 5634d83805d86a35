// Starts Starmap's own orchestrator for a scenario run (the default when --orchestrator is not
// given): on a free loopback port, with its state in a fresh folder, auth on with a generated
// admin password, and network isolation when this machine can do it.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { getOnce } from '../../shared/get-once.ts';

/** How long one readiness attempt (GET /ping) may take. */
const PING_TIMEOUT_MS = 1000;

export interface Bundled {
  url: string;
  uid: string;
  password: string;
  dataDir: string;
  isolated: boolean;
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });
}

/**
 * Starts the orchestrator and waits until it answers GET /ping (`readyTimeoutMs`, default 30 s;
 * it is killed when it does not).
 */
export async function startBundled(
  command: string[],
  opts: {
    workDir: string;
    isolation: boolean;
    port?: number;
    address?: string;
    publishAddress?: string;
    netnsPrefix?: string | undefined;
    netnsSubnet?: string | undefined;
    readyTimeoutMs?: number;
  },
): Promise<Bundled> {
  const port = opts.port ?? (await freePort());
  const address = opts.address ?? '127.0.0.1';
  const dataDir = join(opts.workDir, 'orchestrator-data');
  const password = randomBytes(18).toString('base64url');
  const args = [
    ...command.slice(1),
    `--http-address=${address}`,
    `--http-port=${port}`,
    `--data-dir=${dataDir}`,
    ...(opts.isolation
      ? [
          '--isolation=netns',
          ...(opts.publishAddress ? [`--publish-address=${opts.publishAddress}`] : []),
          ...(opts.netnsPrefix ? [`--netns-prefix=${opts.netnsPrefix}`] : []),
          ...(opts.netnsSubnet ? [`--netns-subnet=${opts.netnsSubnet}`] : []),
        ]
      : []),
  ];
  // Its own process group: a Ctrl-C in the terminal reaches the runner only, which first removes
  // what it deployed through the orchestrator and then stops it. Should the runner die anyway,
  // the orchestrator is stopped on its way out.
  const child = spawn(command[0]!, args, { env: { ...process.env, STARMAP_ADMIN_PASSWORD: password }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const onExit = () => {
    if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.once('exit', onExit);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const url = `http://${address === '0.0.0.0' ? '127.0.0.1' : address}:${port}`;
  const readyMs = opts.readyTimeoutMs ?? 30_000;
  const end = Date.now() + readyMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the orchestrator exited with code ${child.exitCode}:\n${out.slice(-2000)}`);
    try {
      // Each attempt has its own deadline: a port that accepts but never answers must not hold
      // the wait past its end (the HTTP client alone would wait minutes for the headers).
      const ok = await getOnce(
        new URL(`${url}/ping`),
        { timeoutMs: PING_TIMEOUT_MS, verifyTls: true },
        async (res) => res.statusCode >= 200 && res.statusCode < 300,
      );
      if (ok) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > end) {
      child.kill('SIGKILL');
      throw new Error(`the orchestrator did not answer on ${url} within ${readyMs / 1000} s:\n${out.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    uid: 'admin',
    password,
    dataDir,
    isolated: opts.isolation,
    child,
    output: () => out,
    stop: async () => {
      process.off('exit', onExit);
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(t);
      }
    },
  };
}
