// Name resolution for checks and fetches without libuv's thread pool. Node's default (getaddrinfo
// through dns.lookup) runs on that pool's 4 threads: eight names whose lookups never answer held
// all four, and every other check, even of `localhost`, then timed out waiting for a thread. Here
// DNS goes through c-ares (asynchronous sockets, no threads) under a deadline of its own, so a
// name that does not answer costs only the check that asked for it.
//
// What getaddrinfo gave for free is done here, in glibc's order: `localhost` (and `*.localhost`)
// is loopback without DNS; names in /etc/hosts come from there first (the isolated layout names
// every task in its namespace's /etc/hosts; the file is read again when it changes); then DNS,
// with resolv.conf's `search` list and `ndots` (and glibc's LOCALDOMAIN and RES_OPTIONS), which
// c-ares' plain queries do not apply. A and AAAA are asked at once; IPv4 addresses come first.
//
// Each resolution has a c-ares channel of its own. With one channel shared by every lookup (and
// `tries: 1`), one malformed answer made c-ares drop the server's socket with EBADRESP and fail
// every query in flight on it: one hostile name turned every healthy name of the cycle `dns`.
// A resolution takes an idle channel (or makes one) and gives it back when it ends, its queries
// cancelled: no two lookups in flight share one, and a normal cycle makes no channel anew.
import { Resolver } from 'node:dns/promises';
import { readFileSync, statSync } from 'node:fs';
import net from 'node:net';

export interface Address {
  address: string;
  family: 4 | 6;
}

export interface NameResolverOptions {
  /** Deadline of one resolution (every search domain included). */
  timeoutMs: number;
  /** DNS servers (`ip`, `ip:port`, `[v6]:port`) instead of resolv.conf's (none or empty: resolv.conf's). */
  servers?: readonly string[] | undefined;
  hostsPath?: string;
  resolvConfPath?: string;
  /** LOCALDOMAIN (a search list) and RES_OPTIONS (`ndots:N`) override resolv.conf, as in glibc. */
  env?: Record<string, string | undefined>;
}

/** A failed resolution: ENOTFOUND (no such name) or EAI_AGAIN (no usable answer in time). */
export class ResolveError extends Error {
  readonly code: 'ENOTFOUND' | 'EAI_AGAIN';
  readonly hostname: string;
  constructor(code: 'ENOTFOUND' | 'EAI_AGAIN', hostname: string, message: string) {
    super(message);
    this.code = code;
    this.hostname = hostname;
  }
}

/** A file parsed once and again only after it changed; looked at no more than once a second. */
class WatchedFile<T> {
  readonly #path: string;
  readonly #parse: (text: string) => T;
  #value: T;
  #stamp = '';
  #checkedAt = -Infinity;

  constructor(path: string, parse: (text: string) => T) {
    this.#path = path;
    this.#parse = parse;
    this.#value = parse('');
  }

  get(): T {
    const now = performance.now();
    if (now - this.#checkedAt < 1000) return this.#value;
    this.#checkedAt = now;
    let stamp = 'missing';
    try {
      const st = statSync(this.#path);
      stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      /* a missing file reads as empty */
    }
    if (stamp !== this.#stamp) {
      this.#stamp = stamp;
      let text = '';
      try {
        text = readFileSync(this.#path, 'utf8');
      } catch {
        /* missing or unreadable: empty */
      }
      this.#value = this.#parse(text);
    }
    return this.#value;
  }
}

const familyOf = (address: string): 4 | 6 => (net.isIP(address) === 6 ? 6 : 4);

/** /etc/hosts: lower-cased name → its addresses, in file order. */
export function parseHosts(text: string): Map<string, Address[]> {
  const map = new Map<string, Address[]>();
  for (const line of text.split('\n')) {
    const [address, ...names] = line.replace(/#.*/, '').trim().split(/\s+/);
    if (!address || net.isIP(address) === 0) continue;
    for (const name of names) {
      const key = name.toLowerCase();
      const list = map.get(key) ?? [];
      if (!list.some((a) => a.address === address)) list.push({ address, family: familyOf(address) });
      map.set(key, list);
    }
  }
  return map;
}

export interface SearchConfig {
  search: string[];
  ndots: number;
}

/** The parts of resolv.conf that c-ares' queries leave to us: the search list and ndots. */
export function parseResolvConf(text: string, env: Record<string, string | undefined> = {}): SearchConfig {
  let search: string[] = [];
  let ndots = 1;
  for (const line of text.split('\n')) {
    const [key, ...values] = line
      .replace(/[#;].*/, '')
      .trim()
      .split(/\s+/);
    if (key === 'search') search = values;
    else if (key === 'domain' && values[0]) search = [values[0]];
    else if (key === 'options') ndots = ndotsOf(values, ndots);
  }
  if (env.LOCALDOMAIN !== undefined) search = env.LOCALDOMAIN.trim().split(/\s+/).filter(Boolean);
  if (env.RES_OPTIONS !== undefined) ndots = ndotsOf(env.RES_OPTIONS.trim().split(/\s+/), ndots);
  return { search: search.map((d) => d.replace(/\.$/, '')).filter(Boolean), ndots };
}

function ndotsOf(options: string[], current: number): number {
  for (const o of options) {
    const m = /^ndots:(\d+)$/.exec(o);
    if (m) current = Math.min(15, Number(m[1]));
  }
  return current;
}

/** The names to ask DNS for, in glibc's order. */
export function candidates(name: string, config: SearchConfig): string[] {
  if (name.endsWith('.')) return [name.slice(0, -1)];
  const searched = config.search.map((d) => `${name}.${d}`);
  const dots = name.split('.').length - 1;
  return dots >= config.ndots ? [name, ...searched] : [...searched, name];
}

const LOOPBACK: Address[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

/** c-ares error codes that mean "no such name or no such record" rather than "no usable answer". */
const NOT_FOUND = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

/** After one family answered with addresses, how long the other may still take. */
const OTHER_FAMILY_GRACE_MS = 50;

/** Idle c-ares channels kept for the next resolutions (more in flight at once make more). */
const MAX_IDLE_CHANNELS = 256;

export class NameResolver {
  readonly #idle: Resolver[] = [];
  readonly #servers: readonly string[] | undefined;
  readonly #timeoutMs: number;
  readonly #hosts: WatchedFile<Map<string, Address[]>>;
  readonly #config: WatchedFile<SearchConfig>;

  constructor(opts: NameResolverOptions) {
    this.#timeoutMs = opts.timeoutMs;
    this.#servers = opts.servers;
    const env = opts.env ?? process.env;
    this.#hosts = new WatchedFile(opts.hostsPath ?? '/etc/hosts', parseHosts);
    this.#config = new WatchedFile(opts.resolvConfPath ?? '/etc/resolv.conf', (text) => parseResolvConf(text, env));
  }

  /** Every address of `host`, IPv4 first; throws a ResolveError. */
  async resolve(host: string): Promise<Address[]> {
    if (net.isIP(host) !== 0) return [{ address: host, family: familyOf(host) }];
    const name = host.toLowerCase();
    const bare = name.replace(/\.$/, '');
    const fromHosts = this.#hosts.get().get(bare);
    if (fromHosts) return fromHosts;
    if (bare === 'localhost' || bare.endsWith('.localhost')) return LOOPBACK;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new ResolveError('EAI_AGAIN', host, `no DNS answer for ${host} within ${this.#timeoutMs} ms`)), this.#timeoutMs);
    });
    const lookup = { channel: this.#idle.pop() ?? this.#channel(), ended: false };
    try {
      return await Promise.race([this.#search(lookup, host, candidates(name, this.#config.get())), deadline]);
    } finally {
      clearTimeout(timer);
      // Queries still open (the other family after its grace, or all at the deadline) end here,
      // and with them the channel's socket; a search past its deadline asks no further name.
      lookup.ended = true;
      lookup.channel.cancel();
      if (this.#idle.length < MAX_IDLE_CHANNELS) this.#idle.push(lookup.channel);
    }
  }

  /**
   * A `lookup` for net.connect, tls.connect and Node's http and https requests (`all` or the first
   * address, an optional family), in place of dns.lookup.
   */
  readonly lookup = (
    hostname: string,
    options: { family?: number | string; all?: boolean } | number,
    callback: (err: Error | null, address: string | Address[], family?: number) => void,
  ): void => {
    const opts = typeof options === 'number' ? { family: options } : options;
    const want = opts.family === 'IPv4' ? 4 : opts.family === 'IPv6' ? 6 : Number(opts.family ?? 0);
    this.resolve(hostname).then(
      (all) => {
        const list = want === 4 || want === 6 ? all.filter((a) => a.family === want) : all;
        if (list.length === 0) return callback(new ResolveError('ENOTFOUND', hostname, `${hostname} has no IPv${want} address`), '');
        if (opts.all) return callback(null, list);
        return callback(null, list[0]!.address, list[0]!.family);
      },
      (err: Error) => callback(err, ''),
    );
  };

  /** A c-ares channel for one resolution (see the top of this file for why not one for all). */
  #channel(): Resolver {
    // One try per query: the deadline is the check's, too short for a second one to help.
    const channel = new Resolver({ timeout: Math.max(1, Math.round(this.#timeoutMs)), tries: 1 });
    if (this.#servers && this.#servers.length > 0) channel.setServers([...this.#servers]);
    return channel;
  }

  async #search(lookup: { channel: Resolver; ended: boolean }, host: string, names: string[]): Promise<Address[]> {
    let trouble: string | undefined;
    for (const name of names) {
      if (lookup.ended) break;
      const found = await this.#query(lookup.channel, name);
      if (Array.isArray(found)) return found;
      if (found !== 'not-found') trouble ??= `${name}: ${found}`;
    }
    if (trouble !== undefined) throw new ResolveError('EAI_AGAIN', host, `DNS failed for ${trouble}`);
    throw new ResolveError('ENOTFOUND', host, `no such name: ${host}${names.length > 1 ? ` (tried ${names.join(', ')})` : ''}`);
  }

  /** A and AAAA of one name at once: the addresses, 'not-found', or the error code of the trouble. */
  async #query(channel: Resolver, name: string): Promise<Address[] | string> {
    const results: (Address[] | string | undefined)[] = [undefined, undefined];
    let settle: () => void = () => {};
    const enough = new Promise<void>((r) => (settle = r));
    let grace: NodeJS.Timeout | undefined;
    const ask = (index: 0 | 1) =>
      (index === 0 ? channel.resolve4(name) : channel.resolve6(name))
        .then(
          (addresses) => {
            results[index] = addresses.map((address) => ({ address, family: index === 0 ? 4 : 6 }) as Address);
          },
          (err: NodeJS.ErrnoException) => {
            results[index] = NOT_FOUND.has(err.code ?? '') ? 'not-found' : (err.code ?? err.message);
          },
        )
        .then(() => {
          if (results.every((r) => r !== undefined)) settle();
          else if (Array.isArray(results[index]) && results[index].length > 0 && grace === undefined) grace = setTimeout(settle, OTHER_FAMILY_GRACE_MS);
        });
    void ask(0);
    void ask(1);
    await enough;
    clearTimeout(grace);
    const addresses = results.flatMap((r) => (Array.isArray(r) ? r : []));
    if (addresses.length > 0) return addresses;
    return (results.find((r) => typeof r === 'string' && r !== 'not-found') as string | undefined) ?? 'not-found';
  }
}

/** `--dns-servers`: `ip`, `ip:port` or `[v6]:port`, comma-separated (the form c-ares takes). */
export function parseDnsServers(text: string): string[] {
  const servers = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (servers.length === 0) throw new Error('no servers given (e.g. 10.96.0.10 or 127.0.0.1:5353)');
  for (const s of servers) {
    const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(s);
    const v4 = /^([0-9.]+)(?::(\d{1,5}))?$/.exec(s);
    const valid = bracketed ? net.isIPv6(bracketed[1]!) : v4 ? net.isIPv4(v4[1]!) : net.isIPv6(s);
    if (!valid) throw new Error(`${JSON.stringify(s)} is not an IP address with an optional port (10.0.0.10, 10.0.0.10:53, [fd00::10]:53)`);
    const port = (bracketed ?? v4)?.[2];
    if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) throw new Error(`${JSON.stringify(s)}: port ${port} is outside 1-65535`);
  }
  return servers;
}
