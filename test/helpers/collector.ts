// Starts a collector from source on a free loopback port (or the one given) and waits until it answers.
import { NODE, freePort, start, waitForHttp, type Running } from './process.ts';

export interface StartedCollector {
  url: string;
  port: number;
  proc: Running;
}

export async function startCollector(args: string[], opts: { port?: number } = {}): Promise<StartedCollector> {
  const port = opts.port ?? (await freePort());
  const proc = start(NODE, ['collector/main.ts', '--http-address=127.0.0.1', `--http-port=${port}`, ...args]);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/healthz`);
  return { url, port, proc };
}
