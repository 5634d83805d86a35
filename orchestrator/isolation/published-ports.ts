// Published ports (--publish-address): every TCP port an isolated task declares in
// ipAddress.discovery.ports gets a port on the host, at the address the flag names, that forwards
// to the task's address on the bridge, as Marathon gives tasks host ports that forward to them. The
// host ports are reported as the task's `ports`.
//
// Why a forwarder in this process and not nftables DNAT: it works wherever the orchestrator runs
// (loopback included: DNAT of locally generated traffic to 127.0.0.1 needs route_localnet and
// rules in the host's own tables), it needs no NAT on the host (the guards forbid forwarding into
// the bridge), and it is gone with the process. The consequence: a forwarded connection reaches
// the task from the gateway address (the host), which every task's ingress accepts (the host is the
// node, as the kubelet in Kubernetes). So a published port is not subject to ingress policies:
// whoever can reach --publish-address reaches the task. That is why the default is 127.0.0.1.
//
// UDP and SCTP ports are not published. Host ports are picked by the kernel (bind to port 0), so
// they never collide with --task-port-min/max or the service-port range.
import { createServer, connect, type Server, type Socket } from 'node:net';

/** Connections one published port carries at once; more are refused (closed at once). */
const MAX_CONNECTIONS = 256;
/** How long the connection to the task may take before the client's is closed. */
const CONNECT_TIMEOUT_MS = 5000;

export interface PublishedPort {
  /** The port on the host (at the publish address). */
  hostPort: number;
  /** The task's own port. */
  taskPort: number;
}

interface Entry {
  servers: Server[];
  sockets: Set<Socket>;
  ports: PublishedPort[];
}

/** `undefined` or `off`: nothing is published. */
export function publishAddressOf(flag: string | undefined): string | undefined {
  return !flag || flag === 'off' ? undefined : flag;
}

export class PublishedPorts {
  readonly address: string;
  readonly #tasks = new Map<string, Entry>();
  readonly #log: (msg: string, err?: unknown) => void;

  constructor(address: string, log: (msg: string, err?: unknown) => void = () => undefined) {
    this.address = address;
    this.#log = log;
  }

  /**
   * Listens at the publish address for each of the task's TCP ports (in order, duplicates once)
   * and forwards to `ip`. Returns the host ports in the order of `taskPorts`.
   */
  async publish(taskId: string, ip: string, taskPorts: number[]): Promise<PublishedPort[]> {
    await this.release(taskId);
    const entry: Entry = { servers: [], sockets: new Set(), ports: [] };
    this.#tasks.set(taskId, entry);
    try {
      for (const taskPort of [...new Set(taskPorts)]) {
        const server = createServer({ allowHalfOpen: true }, (client) => this.#forward(entry, client, ip, taskPort));
        server.maxConnections = MAX_CONNECTIONS;
        entry.servers.push(server);
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(0, this.address, () => {
            server.off('error', reject);
            resolve();
          });
        });
        server.on('error', (err) => this.#log(`published port of task ${taskId}: ${err.message}`, err));
        entry.ports.push({ hostPort: (server.address() as { port: number }).port, taskPort });
      }
    } catch (err) {
      await this.release(taskId);
      throw new Error(`cannot publish the ports of task ${taskId} on ${this.address}: ${(err as Error).message}`);
    }
    return entry.ports;
  }

  ports(taskId: string): PublishedPort[] {
    return this.#tasks.get(taskId)?.ports ?? [];
  }

  /** Stops listening for the task and closes its open connections. */
  async release(taskId: string): Promise<void> {
    const entry = this.#tasks.get(taskId);
    if (!entry) return;
    this.#tasks.delete(taskId);
    for (const s of entry.sockets) s.destroy();
    await Promise.all(entry.servers.map((s) => new Promise<void>((r) => (s.listening ? s.close(() => r()) : r()))));
  }

  async close(): Promise<void> {
    await Promise.all([...this.#tasks.keys()].map((id) => this.release(id)));
  }

  #forward(entry: Entry, client: Socket, ip: string, port: number): void {
    const upstream = connect({ host: ip, port, allowHalfOpen: true });
    entry.sockets.add(client);
    entry.sockets.add(upstream);
    const timer = setTimeout(() => upstream.destroy(new Error('connect timeout')), CONNECT_TIMEOUT_MS);
    upstream.once('connect', () => clearTimeout(timer));
    const done = () => {
      clearTimeout(timer);
      client.destroy();
      upstream.destroy();
      entry.sockets.delete(client);
      entry.sockets.delete(upstream);
    };
    // Either side failing or closing ends both; pipe() carries back-pressure and half-closes.
    client.once('error', done).once('close', done);
    upstream.once('error', done).once('close', done);
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
