// The task network: one bridge owned by the orchestrator with the gateway address on the host,
// and per task a network namespace joined to the bridge by a veth pair, with one address from the
// subnet and a route for the subnet only (no default route: nothing is routed anywhere else).
//
// Host-side guard (so that task traffic can never leave the machine, even if the bridge goes):
// - an `unreachable <subnet> metric 4213` route: once the bridge's connected route is gone,
//   packets for the subnet are refused instead of following the default route;
// - an nftables table `inet <prefix>_guard` that drops anything forwarded into or out of the
//   bridge, and any packet for the subnet leaving by an interface other than the bridge.
// ip_forward is never touched; the neighbour table's limits are raised for the subnet (neighbours.ts).
// Everything is named with the prefix (names.ts) so cleanupAll finds it.
//
// Externals (a scenario's hosts outside the cluster, app label starmap.external=<address>): a task
// namespace like the others (its names and a subnet address from the IPAM, which the host reaches
// its API at), whose eth0 also holds the external address as /32, with an on-link route for the
// subnet whose source is that address; every task namespace gets an on-link /32 route to each
// external over its own eth0. So pod ↔ external packets go from veth to veth over the bridge: the
// host never routes them (it has no route for the address), nothing leaves the machine, and once
// the external is gone they die on the bridge. No policy applies to an external (index.ts).
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { GUARD_METRIC, NETNS_ETC, cleanupAll, killNamespacePids, pidAlive, prefixLockFile, prefixOwner, type CleanupReport } from './cleanup.ts';
import { run, tryRun } from './exec.ts';
import { Ipam, contains, gatewayOf, ipToInt, parseSubnet, subnetSize, type Subnet } from './ipam.ts';
import { ensureNeighbourRoom } from './neighbours.ts';
import { checkPrefix, namesFor, type Names } from './names.ts';
import { TASK_TABLE } from './render.ts';
import { DEFAULTS } from '../config.ts';

/** The --netns-subnet and --netns-prefix defaults (written once, in orchestrator/config.ts). */
export const DEFAULT_SUBNET: string = DEFAULTS.netnsSubnet;
export const DEFAULT_PREFIX: string = DEFAULTS.netnsPrefix;

export { prefixLockFile } from './cleanup.ts';

export interface TaskNetworkOptions {
  /** Prefix of every name (2-6 lowercase letters/digits); one per orchestrator instance. */
  prefix?: string;
  /** Task subnet (private IPv4, /16 to /29). */
  subnet?: string;
  log?: (msg: string) => void;
}

export interface TaskAttachment {
  taskId: string;
  netns: string;
  ip: string;
  /** Host end of the veth pair. */
  hostVeth: string;
}

export class TaskNetwork {
  readonly prefix: string;
  readonly subnet: Subnet;
  readonly names: Names;
  readonly #ipam: Ipam;
  readonly #log: (msg: string) => void;
  readonly #attached = new Map<string, TaskAttachment>();
  /** taskId → the external address of the tasks attached as externals. */
  readonly #externals = new Map<string, string>();
  /** The latest hosts entries (writeHosts), also written into externals' namespaces. */
  #hosts: { ip: string; names: string[] }[] = [];
  #started = false;

  constructor(opts: TaskNetworkOptions = {}) {
    this.prefix = checkPrefix(opts.prefix ?? DEFAULT_PREFIX);
    this.subnet = parseSubnet(opts.subnet ?? DEFAULT_SUBNET);
    this.names = namesFor(this.prefix);
    this.#ipam = new Ipam(this.subnet);
    this.#log = opts.log ?? (() => undefined);
  }

  /** The host's address on the bridge: tasks reach the host (orchestrator, browser) there. */
  get gateway(): string {
    return gatewayOf(this.subnet);
  }

  get bridge(): string {
    return this.names.bridge;
  }

  /**
   * Removes what a previous run left (crash), then creates the bridge, the gateway address and
   * the guards. Returns what the cleanup found.
   */
  async start(): Promise<CleanupReport> {
    this.#checkPrefixFree();
    const leftovers = await this.cleanup();
    await this.#checkSubnetFree();
    // Claimed after the cleanup, which removes the owner file of a crashed run.
    mkdirSync(dirname(prefixLockFile(this.prefix)), { recursive: true });
    writeFileSync(prefixLockFile(this.prefix), `${process.pid}\n`);
    const br = this.names.bridge;
    try {
      await run('ip', ['-4', 'route', 'add', 'unreachable', this.subnet.cidr, 'metric', String(GUARD_METRIC)]);
      await run('nft', ['-f', '-'], this.#guardRuleset());
      await run('ip', ['link', 'add', br, 'type', 'bridge']);
      await run('ip', ['addr', 'add', `${this.gateway}/${this.subnet.prefixLength}`, 'dev', br]);
      await run('ip', ['link', 'set', br, 'up']);
    } catch (err) {
      // cleanup() also removes the owner file just written (it is this process').
      await this.cleanup();
      throw err;
    }
    this.#started = true;
    const raised = ensureNeighbourRoom(subnetSize(this.subnet) - 3);
    if (raised) this.#log(raised);
    this.#log(`isolation: bridge ${br} with ${this.gateway}/${this.subnet.prefixLength}; tasks get addresses in ${this.subnet.cidr}`);
    return leftovers;
  }

  /**
   * One live owner per prefix: start() removes everything with the prefix, which must never hit the
   * network of another running orchestrator. The owner's pid is kept in /run/starmap-netns-<prefix>.pid;
   * a pid that no longer runs (kill -9) is a crash to clean up after.
   */
  #checkPrefixFree(): void {
    const pid = prefixOwner(this.prefix);
    if (pid !== undefined && Number.isInteger(pid) && pid > 0 && pid !== process.pid && pidAlive(pid)) {
      throw new Error(
        `the isolation prefix ${this.prefix} is in use by another running process (pid ${pid}, ${prefixLockFile(this.prefix)}): stop it or choose another with --netns-prefix`,
      );
    }
  }

  /** Refuses a subnet that the machine already uses (a route or an address overlapping it). */
  async #checkSubnetFree(): Promise<void> {
    const overlaps = (dst: string): boolean => {
      if (dst === 'default') return false;
      const [net, lenText] = dst.split('/');
      try {
        const len = lenText === undefined ? 32 : Number(lenText);
        const start = ipToInt(net!);
        const size = 2 ** (32 - len);
        const ours = 2 ** (32 - this.subnet.prefixLength);
        return start < this.subnet.base + ours && this.subnet.base < start + size;
      } catch {
        return false;
      }
    };
    const { stdout: routes } = await run('ip', ['-4', 'route', 'show', 'table', 'all']);
    for (const line of routes.split('\n')) {
      const parts = line.trim().split(/\s+/);
      // "unreachable 10.213.0.0/24 …", "local 10.213.0.1 dev …" or "10.0.0.0/8 via …"
      const dst = ['unreachable', 'local', 'broadcast', 'blackhole', 'prohibit', 'throw', 'unicast'].includes(parts[0] ?? '') ? parts[1] : parts[0];
      if (dst && overlaps(dst)) {
        throw new Error(`the task subnet ${this.subnet.cidr} is already in use on this machine (route: ${line.trim()}): choose another with --netns-subnet`);
      }
    }
  }

  #guardRuleset(): string {
    const t = this.names.guardTable;
    const br = this.names.bridge;
    return [
      `table inet ${t}`,
      `delete table inet ${t}`,
      `table inet ${t} {`,
      `  chain forward {`,
      `    type filter hook forward priority -200; policy accept;`,
      `    iifname "${br}" oifname != "${br}" drop`,
      `    oifname "${br}" iifname != "${br}" drop`,
      `  }`,
      `  chain output {`,
      `    type filter hook output priority -200; policy accept;`,
      `    ip daddr ${this.subnet.cidr} oifname != { "${br}", "lo" } drop`,
      `  }`,
      `}`,
      '',
    ].join('\n');
  }

  /**
   * Gives the task its namespace and address (the same ones when called again). The namespace is
   * open until a ruleset is applied: apply the policies (PolicyEngine.sync) before starting the task.
   * `wantedIp`: the address asked for (Ipam.allocate), when free.
   */
  async attachTask(taskId: string, opts: { external?: string; wantedIp?: string } = {}): Promise<{ netns: string; ip: string }> {
    if (!this.#started) throw new Error('isolation network is not started');
    const have = this.#attached.get(taskId);
    if (have) return { netns: have.netns, ip: have.ip };
    const external = opts.external;
    if (external !== undefined) {
      const bad = this.externalProblem(external);
      if (bad) throw new Error(`task ${taskId}: external address ${bad}`);
    }
    const a = this.#ipam.allocate(taskId, opts.wantedIp);
    // Known at once, before any await: a pod being attached meanwhile then routes it itself
    // (below), and a second external cannot take the same address.
    if (external !== undefined) this.#externals.set(taskId, external);
    const ns = this.names.netns(a.index);
    const hostVeth = this.names.hostVeth(a.index);
    const peer = this.names.peerVeth(a.index);
    try {
      // A namespace or veth with this name can only be a leftover of a task that was not
      // detached; looked up in the file system, so the usual case starts no process for it.
      if (existsSync(`/run/netns/${ns}`)) {
        await killNamespacePids(ns);
        await tryRun('ip', ['netns', 'del', ns]);
      }
      if (existsSync(`/sys/class/net/${hostVeth}`)) await tryRun('ip', ['link', 'del', hostVeth]);
      // Two `ip -batch` runs (the host's side, then the namespace's) instead of one process per
      // command: each process the orchestrator starts costs a fork of its whole address space,
      // and ten of them per task were most of a launch (POSTs queued behind them).
      await run(
        'ip',
        ['-batch', '-'],
        [
          `netns add ${ns}`,
          `link add ${hostVeth} type veth peer name ${peer} netns ${ns}`,
          `link set ${hostVeth} master ${this.names.bridge}`,
          `link set ${hostVeth} up`,
          '',
        ].join('\n'),
      );
      const inside = [`link set ${peer} name eth0`];
      if (external === undefined) inside.push(`addr add ${a.ip}/${this.subnet.prefixLength} dev eth0`);
      // An external's subnet address only lets the host reach it; to the pods it is the external address.
      else inside.push(`addr add ${a.ip}/32 dev eth0`, `addr add ${external}/32 dev eth0`);
      inside.push('link set lo up', 'link set eth0 up');
      const routed = new Set(external === undefined ? this.#externals.values() : []);
      for (const address of routed) inside.push(`route replace ${address}/32 dev eth0 scope link`);
      if (external !== undefined) inside.push(`route add ${this.subnet.cidr} dev eth0 scope link src ${external}`);
      await run('ip', ['-n', ns, '-batch', '-'], [...inside, ''].join('\n'));
      if (external === undefined) {
        // Attached from now on: an external that comes later routes into this namespace itself;
        // one that came while this namespace was being made (and did not see it) is routed here.
        this.#attached.set(taskId, { taskId, netns: ns, ip: a.ip, hostVeth });
        for (const address of this.#externals.values())
          if (!routed.has(address)) await run('ip', ['-n', ns, 'route', 'replace', `${address}/32`, 'dev', 'eth0', 'scope', 'link']);
        this.writeHosts(ns, []);
      } else {
        for (const t of this.#attached.values())
          if (!this.#externals.has(t.taskId)) await run('ip', ['-n', t.netns, 'route', 'replace', `${external}/32`, 'dev', 'eth0', 'scope', 'link']);
        this.#writeHostsFile(ns, this.#hosts);
      }
    } catch (err) {
      this.#attached.delete(taskId);
      if (external !== undefined) {
        this.#externals.delete(taskId);
        await this.#dropExternalRoutes(external);
      }
      await tryRun('ip', ['netns', 'del', ns]);
      await tryRun('ip', ['link', 'del', hostVeth]);
      this.#ipam.release(taskId);
      throw err;
    }
    this.#attached.set(taskId, { taskId, netns: ns, ip: a.ip, hostVeth });
    return { netns: ns, ip: a.ip };
  }

  /** Why an address cannot be an external's (inside the subnet, loopback, multicast…, taken), or undefined. */
  externalProblem(address: string): string | undefined {
    let n: number;
    try {
      n = ipToInt(address);
    } catch {
      return `${JSON.stringify(address)} is not an IPv4 address`;
    }
    if (contains(this.subnet, address)) return `${address} is inside the task subnet ${this.subnet.cidr}`;
    const top = n >>> 24;
    if (top === 0 || top === 127 || top >= 224) return `${address} is not a unicast host address (0/8, loopback, multicast or reserved)`;
    for (const [id, other] of this.#externals) if (other === address) return `${address} is already task ${id}'s`;
    return undefined;
  }

  /** The external address of a task attached as an external. */
  externalOf(taskId: string): string | undefined {
    return this.#externals.get(taskId);
  }

  async #dropExternalRoutes(address: string): Promise<void> {
    for (const t of this.#attached.values()) if (!this.#externals.has(t.taskId)) await tryRun('ip', ['-n', t.netns, 'route', 'del', `${address}/32`]);
  }

  /** Kills what still runs in the task's namespace, removes namespace, veth and hosts file, frees the address. */
  async detachTask(taskId: string): Promise<void> {
    const att = this.#attached.get(taskId);
    if (!att) return;
    const external = this.#externals.get(taskId);
    this.#externals.delete(taskId);
    if (external !== undefined) await this.#dropExternalRoutes(external);
    await killNamespacePids(att.netns);
    await tryRun('ip', ['netns', 'del', att.netns]);
    await tryRun('ip', ['link', 'del', att.hostVeth]);
    try {
      rmSync(join(NETNS_ETC, att.netns), { recursive: true, force: true });
    } catch {
      /* nothing to remove */
    }
    this.#attached.delete(taskId);
    this.#ipam.release(taskId);
  }

  attachment(taskId: string): TaskAttachment | undefined {
    return this.#attached.get(taskId);
  }

  attachments(): TaskAttachment[] {
    return [...this.#attached.values()];
  }

  /**
   * Writes the namespace's /etc/hosts (ip netns exec bind-mounts /etc/netns/<ns>/hosts over
   * /etc/hosts). Rewritten in place, so running tasks see updates.
   */
  writeHosts(netns: string, entries: { ip: string; names: string[] }[]): void {
    this.#writeHostsFile(netns, entries);
    // Externals are no task of the policy engine's, which writes the hosts files: they get the
    // same names, so that their probes find the pods.
    if (entries !== this.#hosts && entries.length > 0) {
      this.#hosts = entries;
      for (const [id] of this.#externals) {
        const att = this.#attached.get(id);
        if (att) this.#writeHostsFile(att.netns, entries);
      }
    }
  }

  #writeHostsFile(netns: string, entries: { ip: string; names: string[] }[]): void {
    const dir = join(NETNS_ETC, netns);
    mkdirSync(dir, { recursive: true });
    const lines = ['127.0.0.1\tlocalhost', '::1\tlocalhost ip6-localhost ip6-loopback'];
    for (const e of entries) {
      const names = e.names.filter((n) => /^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/.test(n));
      if (names.length) lines.push(`${e.ip}\t${names.join(' ')}`);
    }
    writeFileSync(join(dir, 'hosts'), `${lines.join('\n')}\n`);
  }

  /** Applies an nftables ruleset inside the task's namespace, atomically (`nft -f -`). */
  async applyRuleset(netns: string, ruleset: string): Promise<void> {
    await run('ip', ['netns', 'exec', netns, 'nft', '-f', '-'], ruleset);
  }

  /** The task namespace's table as JSON (`nft -j list table inet starmap`), for the drop counters. */
  async listRuleset(netns: string): Promise<string> {
    return (await run('ip', ['netns', 'exec', netns, 'nft', '-j', 'list', 'table', 'inet', TASK_TABLE])).stdout;
  }

  /** Removes everything of this prefix (tasks' namespaces and this process' owner file included) and forgets the allocations. */
  async stop(): Promise<CleanupReport> {
    this.#started = false;
    return this.cleanup();
  }

  async cleanup(): Promise<CleanupReport> {
    const report = await cleanupAll({ prefix: this.prefix, subnet: this.subnet.cidr });
    for (const a of this.#attached.values()) this.#ipam.release(a.taskId);
    this.#attached.clear();
    this.#externals.clear();
    return report;
  }
}
