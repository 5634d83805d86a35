// The host side of a run's addresses: where people open the collector UI, and the loopback
// layout's host ports (each free for TCP and UDP when chosen).
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import { RunError } from '../errors.ts';
import type { ResolvedScenario } from '../model/resolve.ts';
import { assignHostPorts, portNumbers } from './deploy-plan.ts';
import type { Located } from './observe.ts';

/**
 * Where people open the collector UI: the port the orchestrator published (--publish-address) when
 * it did, else the task's own address (this machine only). For a loopback address, one line on how
 * to reach it from elsewhere; for 0.0.0.0, this machine's addresses (nothing is looked up).
 */
export function uiAddress(ui: Located, publishAddress: string | undefined): { url: string; note?: string } {
  if (!ui.published || !publishAddress || publishAddress === 'off') return { url: `${ui.base}/` };
  const port = ui.published;
  const host = (a: string) => (a.includes(':') ? `[${a}]` : a);
  if (publishAddress === '0.0.0.0' || publishAddress === '::') {
    const mine = Object.values(networkInterfaces())
      .flatMap((l) => l ?? [])
      .filter((i) => !i.internal && (publishAddress === '::' || i.family === 'IPv4'));
    const others = mine.map((i) => `http://${host(i.address)}:${port}/`);
    return { url: `http://127.0.0.1:${port}/`, note: `open to the network (the collector has no login)${others.length ? `: ${others.join('  ')}` : ''}` };
  }
  const url = `http://${host(publishAddress)}:${port}/`;
  if (publishAddress.startsWith('127.') || publishAddress === '::1') {
    return {
      url,
      note: `this machine only; from another: ssh -L ${port}:${host(publishAddress)}:${port} <user>@<this machine>, then open http://localhost:${port}/ (or npm start -- --publish-address=0.0.0.0 to open it to the network)`,
    };
  }
  return { url };
}

/** Whether a port is free on 127.0.0.1 for both TCP and UDP (a probe serves both on one number). */
async function portFree(port: number): Promise<boolean> {
  const tcp = await new Promise<boolean>((res) => {
    const srv = createServer();
    srv.once('error', () => res(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
  });
  if (!tcp) return false;
  return new Promise<boolean>((res) => {
    const sock = createSocket('udp4');
    sock.once('error', () => (sock.close(), res(false)));
    sock.bind(port, '127.0.0.1', () => sock.close(() => res(true)));
  });
}

/**
 * Host ports for the loopback layout, each free for TCP and UDP when chosen, below Linux's
 * ephemeral range (32768+) so that outgoing connections do not take them meanwhile.
 */
export async function loopbackPorts(s: ResolvedScenario): Promise<Map<string, Map<number, number>>> {
  const taken = new Set<number>();
  const free: number[] = [];
  const needed = s.pods.reduce((n, p) => n + portNumbers(p).length, 0);
  for (let tries = 0; free.length < needed && tries < needed * 20; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!taken.has(port) && (await portFree(port))) free.push(port);
    taken.add(port);
  }
  if (free.length < needed) throw new RunError(`could not find ${needed} free ports on 127.0.0.1 for the loopback layout`);
  return assignHostPorts(s.pods, () => free.shift()!);
}
