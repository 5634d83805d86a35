// Starts a probe (from source, or a built binary) on a free loopback port and reads its /status.
import { NODE, freePort, start, waitForHttp, type Running } from './process.ts';

export interface TargetStatus {
  reachable: boolean;
  url: string;
  reason: string | null;
  message: string | null;
  latencyMs: number | null;
  statusCode: number | null;
  checkedAt: string | null;
  changedAt: string | null;
}

export interface StartedProbe {
  url: string;
  port: number;
  proc: Running;
  status: () => Promise<TargetStatus[]>;
}

export async function startProbe(args: string[], opts: { binary?: string; port?: number } = {}): Promise<StartedProbe> {
  const port = opts.port ?? (await freePort());
  const flags = ['--http-address=127.0.0.1', `--http-port=${port}`, ...args];
  const proc = opts.binary ? start(opts.binary, flags) : start(NODE, ['probe/main.ts', ...flags]);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/healthz`);
  return {
    url,
    port,
    proc,
    status: async () => ((await (await fetch(`${url}/status`)).json()) as { status: { targets: TargetStatus[] } }).status.targets,
  };
}
