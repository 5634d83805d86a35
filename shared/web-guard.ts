// What a web page elsewhere can make a browser do to the orchestrator and the collector, and the two
// rules (shared by both) that stop it:
// - DNS rebinding: a page at http://evil.example:8080/ whose name the attacker then resolves to
//   127.0.0.1 talks to the server as its own origin (it reads every answer); its requests name
//   evil.example in Host. So only Host values in an allow-list are answered, as kubectl proxy
//   (--accept-hosts) and Vite (server.allowedHosts) do: localhost and *.localhost, this machine's
//   host name, the listen address, the names the program is given (--allowed-hosts), and every IP
//   address literal. Any IP address, as Vite allows: a page has an IP address as its origin only
//   when it was served from that address, that is by this server or by what forwards to it (a
//   published port, a NodePort, a tunnel), never by an attacker; so a server on 0.0.0.0 answers
//   at each of its addresses, and through port forwards, without a list of them.
// - Cross-site writes: a page elsewhere can send a POST (a form, `fetch` with a text body) that
//   needs no CORS preflight. Browsers name the page in `Origin` and, lately, say how it relates to
//   the target in `Sec-Fetch-Site`. A write is refused when its Origin is not the server's own
//   (the allowed Host it was sent to) or Sec-Fetch-Site says it comes from another origin. Clients
//   that are not browsers (curl, go-marathon, scripts) send neither header and are not affected.
import type { IncomingHttpHeaders } from 'node:http';
import { isIPv4, isIPv6 } from 'node:net';
import { hostname } from 'node:os';

/** A Host header value: its name (lower case, without a final dot; an IPv6 address without brackets) and port. */
export interface HostValue {
  name: string;
  ip: boolean;
  port: string | undefined;
}

const HOST_RE = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9_.-]+))(?::(\d{1,5}))?$/;
const NAME_RE = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

/** Splits a Host value (`name[:port]`, `[v6][:port]`); undefined when it is not one. */
export function parseHost(value: string): HostValue | undefined {
  const m = HOST_RE.exec(value);
  if (!m) return undefined;
  const port = m[3];
  if (port !== undefined && Number(port) > 65_535) return undefined;
  if (m[1] !== undefined) return isIPv6(m[1]) ? { name: m[1].toLowerCase(), ip: true, port } : undefined;
  const name = m[2]!.toLowerCase().replace(/\.$/, '');
  if (isIPv4(name)) return { name, ip: true, port };
  return NAME_RE.test(name) ? { name, ip: false, port } : undefined;
}

/**
 * Reads the value of --allowed-hosts: comma-separated host names, each alone (`ui.example.com`) or,
 * with a leading dot, a domain with every name under it (`.example.com`). Throws a message naming
 * the entry that is neither. IP addresses are accepted (and always allowed anyway).
 */
export function parseAllowedHosts(text: string): string[] {
  const entries = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new Error('expected comma-separated host names, e.g. ui.example.com,.internal.example');
  for (const entry of entries) {
    const bare = entry.replace(/^\./, '');
    if (/:\d+$/.test(bare) && !isIPv6(bare))
      throw new Error(`${JSON.stringify(entry)}: give the host name without a port (every port of an allowed name is allowed)`);
    if (isIPv6(bare.replace(/^\[(.*)\]$/, '$1'))) continue;
    const parsed = parseHost(bare);
    if (!parsed) throw new Error(`${JSON.stringify(entry)} is not a host name (letters, digits, "-", "_" and dots; a leading dot for a whole domain)`);
  }
  return entries;
}

/** The Host values a server answers to (see the top of this file). */
export class HostAllowList {
  readonly #names = new Set<string>();
  /** Domains given as `.example.com`, kept with their leading dot. */
  readonly #domains: string[] = [];

  /**
   * `listenAddress` is allowed when it is a name (an IP address always is); `names` are
   * --allowed-hosts' entries. This machine's host name is always allowed.
   */
  constructor(opts: { listenAddress?: string | undefined; names?: readonly string[] } = {}) {
    for (const given of [hostname(), opts.listenAddress ?? '', ...(opts.names ?? [])]) {
      const name = given.toLowerCase().replace(/\.$/, '');
      if (name === '' || isIPv4(name) || isIPv6(name.replace(/^\[(.*)\]$/, '$1'))) continue;
      if (name.startsWith('.')) {
        this.#domains.push(name);
        this.#names.add(name.slice(1));
      } else this.#names.add(name);
    }
  }

  /** What is answered, in words: "localhost, *.localhost, IP addresses and vm, .example.com". */
  describe(): string {
    const names = [...this.#names].filter((n) => !this.#domains.includes(`.${n}`)).concat(this.#domains);
    return `localhost, *.localhost, IP addresses${names.length > 0 ? ` and ${names.join(', ')}` : ''}`;
  }

  /** True when `host` (a Host header's value) names a host this server answers to. */
  allows(host: string): boolean {
    const h = parseHost(host);
    if (!h) return false;
    if (h.ip) return true;
    const n = h.name;
    return n === 'localhost' || n.endsWith('.localhost') || this.#names.has(n) || this.#domains.some((d) => n.endsWith(d));
  }
}

/** At most 200 characters of a header's value, quoted as JSON (control characters escaped). */
export function quoted(value: string): string {
  return JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}…` : value);
}

/**
 * Why a request's Host is refused, or undefined when it is answered. A request without Host
 * (HTTP/1.0; a browser always sends one) is answered. `program` names the server in the message,
 * which says how to admit the name.
 */
export function foreignHost(headers: IncomingHttpHeaders, hosts: HostAllowList, program: string): string | undefined {
  const host = headers.host;
  if (host === undefined || hosts.allows(host)) return undefined;
  const parsed = parseHost(host);
  if (!parsed) return `Host ${quoted(host)} is not a host name or address with an optional port`;
  return (
    `Host ${quoted(host)} is not a name this ${program} answers to (a guard against DNS rebinding; it answers to ${hosts.describe()}): ` +
    `start it with --allowed-hosts=${parsed.name} to admit this name`
  );
}

/** The host (and port, unless the scheme's default) of `host` as an origin of `scheme` names it. */
function hostAs(scheme: string, host: string): string | undefined {
  if (!parseHost(host)) return undefined;
  try {
    return new URL(`${scheme}//${host}`).host;
  } catch {
    return undefined;
  }
}

/**
 * Why a write is refused as coming from another site, or undefined when it may go on. An `Origin`
 * must be the server's own: the origin of the Host the request was sent to, and (when `hosts` is
 * given) a Host the allow-list admits; "null" (a sandboxed or opaque page) never is. A
 * Sec-Fetch-Site other than same-origin or none (typed by the user) is refused whatever the Origin.
 * `program` names the server in the message.
 */
export function crossSiteWrite(headers: IncomingHttpHeaders, program: string, hosts?: HostAllowList): string | undefined {
  const site = headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return `Sec-Fetch-Site is ${quoted(site)}`;
  const origin = headers.origin;
  if (origin === undefined) return undefined;
  let theirs: URL | undefined;
  try {
    theirs = new URL(origin);
  } catch {
    theirs = undefined;
  }
  const host = headers.host;
  const scheme = theirs && (theirs.protocol === 'http:' || theirs.protocol === 'https:') ? theirs.protocol : 'http:';
  const ours = host === undefined ? undefined : hostAs(scheme, host);
  const own = ours === undefined ? undefined : `${scheme}//${ours}`;
  const allowed = host !== undefined && (hosts === undefined || hosts.allows(host));
  if (theirs === undefined || theirs.origin === 'null' || theirs.origin !== own || !allowed)
    return `Origin ${quoted(origin)} is not this ${program}'s own (${own ?? 'unknown'})`;
  return undefined;
}
