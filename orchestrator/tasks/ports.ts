// Host ports for tasks (Marathon's rule): `requirePorts=false` → random ports from the range (random
// start, walking the range), `requirePorts=true` → exactly the declared ports or a clear failure.
// A port is handed out only when no other task holds it; allocate() and require() also check that a
// short bind on the probe addresses succeeds (something outside the orchestrator may listen there),
// while take(), the scheduler's synchronous choice in its launch pass, cannot wait for that.
import net from 'node:net';
import { DEFAULTS } from '../config.ts';

export class PortsUnavailableError extends Error {
  readonly ports: number[];
  constructor(message: string, ports: number[]) {
    super(message);
    this.name = 'PortsUnavailableError';
    this.ports = ports;
  }
}

export interface HostPortAllocatorOptions {
  /** Inclusive range. Default config.ts's task ports (Mesos' default agent port resource, [31000-32000]). */
  min?: number;
  max?: number;
  /** Addresses the bind test uses (default 127.0.0.1; a listener on 0.0.0.0 conflicts with it too). */
  probeHosts?: string[];
  /** Disable the bind test (ports are then only checked against other tasks). */
  probe?: boolean;
  random?: () => number;
}

/** True when a TCP listener could be opened on port at every host (EAFNOSUPPORT etc. count as free). */
export function portBindable(port: number, hosts: string[]): Promise<boolean> {
  return hosts.reduce<Promise<boolean>>(
    (acc, host) =>
      acc.then(
        (ok) =>
          ok &&
          new Promise<boolean>((resolve) => {
            const s = net.createServer();
            s.unref();
            s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code !== 'EADDRINUSE' && e.code !== 'EACCES'));
            s.listen({ port, host, exclusive: true }, () => s.close(() => resolve(true)));
          }),
      ),
    Promise.resolve(true),
  );
}

export class HostPortAllocator {
  readonly min: number;
  readonly max: number;
  readonly #byTask = new Map<string, number[]>();
  readonly #used = new Set<number>();
  readonly #hosts: string[];
  readonly #probe: boolean;
  readonly #random: () => number;

  constructor(opts: HostPortAllocatorOptions = {}) {
    this.min = opts.min ?? DEFAULTS.taskPortMin;
    this.max = opts.max ?? DEFAULTS.taskPortMax;
    if (!(Number.isInteger(this.min) && Number.isInteger(this.max) && this.min >= 1 && this.max <= 65535 && this.min <= this.max)) {
      throw new Error(`invalid host port range ${this.min}-${this.max}`);
    }
    this.#hosts = opts.probeHosts ?? ['127.0.0.1'];
    this.#probe = opts.probe ?? true;
    this.#random = opts.random ?? Math.random;
  }

  /** Ports currently held by tasks. */
  inUse(): number[] {
    return [...this.#used].sort((a, b) => a - b);
  }

  /** Marks ports as held (tasks adopted after a restart). */
  reserve(taskId: string, ports: number[]): void {
    const held = [...(this.#byTask.get(taskId) ?? []), ...ports];
    this.#byTask.set(taskId, held);
    for (const p of ports) this.#used.add(p);
  }

  release(taskId: string): void {
    for (const p of this.#byTask.get(taskId) ?? []) this.#used.delete(p);
    this.#byTask.delete(taskId);
  }

  /**
   * The scheduler's choice, in one synchronous pass and without the bind test: for each declared
   * port, 0 takes a random free port from the range and any other number exactly that port.
   * Returns null (holding nothing) while a fixed port is held by another task (requirePorts waits
   * for it); throws PortsUnavailableError when the range has too few free ports.
   */
  take(taskId: string, declared: number[]): number[] | null {
    const fixed = declared.filter((p) => p !== 0);
    if (fixed.some((p, i) => this.#used.has(p) || fixed.indexOf(p) !== i)) return null;
    const dynamic = declared.length - fixed.length;
    const free: number[] = [];
    for (const port of this.#unheld()) {
      if (free.length >= dynamic) break;
      if (!fixed.includes(port)) free.push(port);
    }
    if (free.length < dynamic)
      throw new PortsUnavailableError(`not enough free host ports in ${this.min}-${this.max}: needed ${dynamic}, found ${free.length}`, []);
    const ports = declared.map((p) => (p !== 0 ? p : free.shift()!));
    this.reserve(taskId, ports);
    return ports;
  }

  /** The range's ports no task holds, once round from a random start (held-ness read as it goes). */
  *#unheld(): Generator<number> {
    const span = this.max - this.min + 1;
    const start = Math.floor(this.#random() * span);
    for (let i = 0; i < span; i++) {
      const port = this.min + ((start + i) % span);
      if (!this.#used.has(port)) yield port;
    }
  }

  /** `n` distinct random free ports from the range, held for `taskId` (with the bind test). */
  async allocate(taskId: string, n: number): Promise<number[]> {
    if (n <= 0) return [];
    const picked: number[] = [];
    for (const port of this.#unheld()) {
      if (picked.length >= n) break;
      // Hold it before the async probe so concurrent allocations do not pick it too.
      this.#used.add(port);
      if (this.#probe && !(await portBindable(port, this.#hosts))) {
        this.#used.delete(port);
        continue;
      }
      picked.push(port);
    }
    if (picked.length < n) {
      for (const p of picked) this.#used.delete(p);
      throw new PortsUnavailableError(`not enough free host ports in ${this.min}-${this.max}: needed ${n}, found ${picked.length}`, []);
    }
    this.reserve(taskId, picked);
    return picked;
  }

  /** Exactly `ports` (requirePorts): fails naming the ports that are taken. Need not be in the range. */
  async require(taskId: string, ports: number[]): Promise<number[]> {
    const dup = ports.filter((p, i) => ports.indexOf(p) !== i);
    if (dup.length) throw new PortsUnavailableError(`host ports requested twice: ${[...new Set(dup)].join(', ')}`, dup);
    const taken: number[] = [];
    for (const p of ports) if (this.#used.has(p)) taken.push(p);
    if (taken.length === 0) {
      for (const p of ports) this.#used.add(p);
      for (const p of ports) if (!(await this.#probeOne(p))) taken.push(p);
      for (const p of ports) this.#used.delete(p);
    }
    if (taken.length)
      throw new PortsUnavailableError(
        `required host port${taken.length > 1 ? 's' : ''} ${taken.join(', ')} ${taken.length > 1 ? 'are' : 'is'} already in use`,
        taken,
      );
    this.reserve(taskId, ports);
    return [...ports];
  }

  async #probeOne(port: number): Promise<boolean> {
    return !this.#probe || portBindable(port, this.#hosts);
  }
}
