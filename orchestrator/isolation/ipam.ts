// Address management over the task subnet (IPv4). The first host address is the gateway (the
// bridge on the host), the others go to tasks. Allocations can be exported and restored so a
// restarted orchestrator knows what it owned.

export interface Subnet {
  /** Network address as a 32-bit number. */
  base: number;
  prefixLength: number;
  /** e.g. "10.213.0.0/24" */
  cidr: string;
}

export function ipToInt(ip: string): number {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(ip);
  if (!m) throw new Error(`not an IPv4 address: ${JSON.stringify(ip)}`);
  const parts = m.slice(1).map(Number);
  if (parts.some((p) => p > 255)) throw new Error(`not an IPv4 address: ${JSON.stringify(ip)}`);
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

export function intToIp(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/** Parses "a.b.c.d/len" (16 ≤ len ≤ 29, a private range, host bits zero). */
export function parseSubnet(cidr: string): Subnet {
  const m = /^([0-9.]+)\/(\d{1,2})$/.exec(cidr.trim());
  if (!m) throw new Error(`invalid subnet ${JSON.stringify(cidr)}: expected a.b.c.d/len`);
  const base = ipToInt(m[1]!);
  const len = Number(m[2]);
  if (len < 16 || len > 29) throw new Error(`invalid subnet ${cidr}: prefix length must be between 16 and 29`);
  const mask = len === 0 ? 0 : (~0 << (32 - len)) >>> 0;
  if ((base & mask) >>> 0 !== base) throw new Error(`invalid subnet ${cidr}: host bits must be zero (did you mean ${intToIp((base & mask) >>> 0)}/${len}?)`);
  const inRange = (net: string, l: number) => (base & ((~0 << (32 - l)) >>> 0)) >>> 0 === ipToInt(net) && len >= l;
  if (!(inRange('10.0.0.0', 8) || inRange('172.16.0.0', 12) || inRange('192.168.0.0', 16))) {
    throw new Error(`invalid subnet ${cidr}: must be inside a private range (10/8, 172.16/12, 192.168/16)`);
  }
  return { base, prefixLength: len, cidr: `${intToIp(base)}/${len}` };
}

export function subnetSize(s: Subnet): number {
  return 2 ** (32 - s.prefixLength);
}

export function gatewayOf(s: Subnet): string {
  return intToIp(s.base + 1);
}

export function contains(s: Subnet, ip: string): boolean {
  const n = ipToInt(ip);
  return n >= s.base && n < s.base + subnetSize(s);
}

/** The offset of `ip` when it is a task address of the subnet (not network, gateway or broadcast). */
function wantedIndex(s: Subnet, ip: string | undefined): number | undefined {
  if (ip === undefined) return undefined;
  let n: number;
  try {
    n = ipToInt(ip.trim());
  } catch {
    return undefined;
  }
  const i = n - s.base;
  return i >= 2 && i < subnetSize(s) - 1 ? i : undefined;
}

export interface Allocation {
  taskId: string;
  ip: string;
  /** Offset of the address in the subnet (also names the task's namespace and veth). */
  index: number;
}

export class Ipam {
  readonly subnet: Subnet;
  readonly #byTask = new Map<string, Allocation>();
  readonly #used = new Set<number>();
  #next = 2;

  constructor(subnet: Subnet) {
    this.subnet = subnet;
  }

  get gateway(): string {
    return gatewayOf(this.subnet);
  }

  /**
   * The task's address (the same one when asked again). `wanted` (the app's `starmap.address`
   * label, which the scenario runner sets so that `scenario check` knows the addresses a run
   * assigns) is handed out when it is a free task address of the subnet; otherwise the next one
   * round-robin. Throws when the subnet is full.
   */
  allocate(taskId: string, wanted?: string): Allocation {
    const have = this.#byTask.get(taskId);
    if (have) return have;
    const size = subnetSize(this.subnet);
    const want = wantedIndex(this.subnet, wanted);
    if (want !== undefined && !this.#used.has(want)) {
      const a: Allocation = { taskId, ip: intToIp(this.subnet.base + want), index: want };
      this.#used.add(want);
      this.#byTask.set(taskId, a);
      return a;
    }
    // Round-robin from the last handed out, so a stopped task's address is not reused at once
    // (other tasks' caches and conntrack entries may still name it).
    for (let tried = 0; tried < size; tried++) {
      const i = this.#next;
      this.#next = this.#next + 1 >= size - 1 ? 2 : this.#next + 1;
      if (!this.#used.has(i)) {
        const a: Allocation = { taskId, ip: intToIp(this.subnet.base + i), index: i };
        this.#used.add(i);
        this.#byTask.set(taskId, a);
        return a;
      }
    }
    throw new Error(`no free address left in ${this.subnet.cidr}`);
  }

  release(taskId: string): void {
    const a = this.#byTask.get(taskId);
    if (!a) return;
    this.#used.delete(a.index);
    this.#byTask.delete(taskId);
  }

  get(taskId: string): Allocation | undefined {
    return this.#byTask.get(taskId);
  }

  all(): Allocation[] {
    return [...this.#byTask.values()];
  }

  /** Restores allocations (e.g. read back from the database). Addresses outside the subnet are ignored. */
  restore(allocations: Allocation[]): void {
    for (const a of allocations) {
      if (!contains(this.subnet, a.ip)) continue;
      const index = ipToInt(a.ip) - this.subnet.base;
      if (index < 2 || index >= subnetSize(this.subnet) - 1 || this.#used.has(index)) continue;
      this.#used.add(index);
      this.#byTask.set(a.taskId, { taskId: a.taskId, ip: a.ip, index });
    }
  }
}
