// `--serve=80/tcp,80/udp,…`: ports the probe answers on besides its HTTP API, so that any probe
// pod can be the destination of another probe's checks (as agnhost serve-hostname in the
// Kubernetes network-policy tests). TCP ports accept and close at once (the handshake is the
// answer a TCP check needs); UDP ports echo every datagram back to its sender (a UDP check needs
// its nonce back). Both listen on the probe's --http-address.
//
// An echo never answers a datagram from a privileged port (below 1024) or from one of the UDP
// ports this probe serves, as BSD inetd's check_loop does for its echo service: every scenario
// pod serves the same ports, so one datagram forged from one probe's served port to another's
// started an endless loop between the two (about 37,000 datagrams a second each way). The probe's
// own UDP checks send from ephemeral ports (from 32768 on Linux) and are answered as before.
import dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import net from 'node:net';
import type { Logger } from '../shared/logger.ts';

export type ServeProtocol = 'tcp' | 'udp';

export interface ServedPort {
  port: number;
  protocol: ServeProtocol;
}

/** `80/tcp,80/UDP,81` → the ports to serve (a bare port is TCP, as in Kubernetes); duplicates fold. */
export function parseServeList(text: string): ServedPort[] {
  const out: ServedPort[] = [];
  const seen = new Set<string>();
  for (const raw of text.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const m = /^(\d{1,5})(?:\/([A-Za-z]+))?$/.exec(entry);
    if (!m) throw new Error(`${JSON.stringify(entry)} is not port/protocol (e.g. 80/tcp or 53/udp)`);
    const port = Number(m[1]);
    if (port < 1 || port > 65535) throw new Error(`${JSON.stringify(entry)}: port ${port} is outside 1-65535`);
    const protocol = (m[2] ?? 'tcp').toLowerCase();
    if (protocol === 'sctp') throw new Error(`${JSON.stringify(entry)}: SCTP cannot be served: Node.js has no SCTP sockets`);
    if (protocol !== 'tcp' && protocol !== 'udp') throw new Error(`${JSON.stringify(entry)}: protocol ${JSON.stringify(m[2])} is not tcp or udp`);
    const key = `${port}/${protocol}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ port, protocol });
  }
  if (out.length === 0) throw new Error('no ports given (e.g. --serve=80/tcp,80/udp)');
  return out;
}

export class ServeError extends Error {
  readonly served: ServedPort;
  readonly code: string;
  constructor(served: ServedPort, code: string) {
    super(`cannot serve --serve=${served.port}/${served.protocol}: ${code}`);
    this.served = served;
    this.code = code;
  }
}

export interface Serving {
  close: () => Promise<void>;
}

/** What an echo did with a datagram: answered it, or dropped it as a possible loop. */
export type DatagramOutcome = 'echoed' | 'dropped-loop';

export interface ServeOptions {
  /** Told of each datagram a UDP port received (the probe counts them in its metrics). */
  countDatagram?: (outcome: DatagramOutcome) => void;
}

/** Source ports an echo does not answer: the privileged ones, and every UDP port served here. */
export function loopGuard(ports: readonly ServedPort[]): (sourcePort: number) => boolean {
  const served = new Set(ports.filter((p) => p.protocol === 'udp').map((p) => p.port));
  return (sourcePort) => sourcePort < 1024 || served.has(sourcePort);
}

function serveTcp(host: string, served: ServedPort): Promise<net.Server> {
  // destroy() at once: nothing is read, so nothing a client sends can pile up or hold a socket open.
  const server = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.destroy();
  });
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(new ServeError(served, err.code ?? err.message)));
    server.listen({ host, port: served.port }, () => resolve(server));
  });
}

function serveUdp(
  host: string,
  family: number,
  served: ServedPort,
  mayLoop: (sourcePort: number) => boolean,
  logger: Logger,
  opts: ServeOptions,
): Promise<dgram.Socket> {
  const socket = dgram.createSocket(family === 6 ? 'udp6' : 'udp4');
  socket.on('message', (msg, from) => {
    if (mayLoop(from.port)) {
      // Debug only: a flood of forged datagrams must not become a flood of log lines.
      logger.debug({ port: served.port, from: `${from.address}:${from.port}` }, 'udp echo: not answering a datagram from a served or privileged port');
      opts.countDatagram?.('dropped-loop');
      return;
    }
    opts.countDatagram?.('echoed');
    socket.send(msg, from.port, from.address);
  });
  return new Promise((resolve, reject) => {
    socket.once('error', (err: NodeJS.ErrnoException) => reject(new ServeError(served, err.code ?? err.message)));
    socket.bind({ address: host, port: served.port }, () => {
      socket.removeAllListeners('error');
      // After binding, an error concerns one datagram (a sender gone away): log it, keep serving.
      socket.on('error', (err) => logger.debug({ err, port: served.port }, 'udp echo: send failed'));
      resolve(socket);
    });
  });
}

/**
 * Starts every port on `host`; if one cannot be bound (in use, no permission), closes the others
 * and throws a ServeError that names it.
 */
export async function startServing(host: string, ports: readonly ServedPort[], logger: Logger, opts: ServeOptions = {}): Promise<Serving> {
  // The UDP socket's family must match the address; a name (rare here) is looked up once.
  const family = net.isIP(host) || (await lookup(host)).family;
  const mayLoop = loopGuard(ports);
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    await Promise.all(closers.map((c) => c()));
  };
  try {
    for (const served of ports) {
      if (served.protocol === 'tcp') {
        const server = await serveTcp(host, served);
        closers.push(() => new Promise((r) => server.close(() => r())));
      } else {
        const socket = await serveUdp(host, family, served, mayLoop, logger, opts);
        closers.push(() => new Promise((r) => socket.close(() => r())));
      }
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { close };
}
