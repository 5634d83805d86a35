// Target parsing: turns the strings users give (`host:port`, `tcp://host:port`, `udp://host:port`,
// `http(s)://…`) into checkable targets. The original string is kept verbatim because star-compatible clients
// match targets by the exact `url` they configured.

export type TargetKind = 'tcp' | 'udp' | 'http';

export interface Target {
  /** The string exactly as given: what `/status` reports as `url`. */
  readonly url: string;
  readonly kind: TargetKind;
  /** Host name or address, without IPv6 brackets. */
  readonly host: string;
  readonly port: number;
  /** For http targets: the full URL to GET. */
  readonly href?: string;
  readonly tls: boolean;
}

export class TargetError extends Error {
  readonly entry: string;
  constructor(entry: string, reason: string) {
    super(`bad target ${JSON.stringify(entry)}: ${reason}`);
    this.name = 'TargetError';
    this.entry = entry;
  }
}

function parsePort(entry: string, text: string): number {
  if (!/^\d{1,5}$/.test(text)) throw new TargetError(entry, `port ${JSON.stringify(text)} is not a number`);
  const port = Number(text);
  if (port < 1 || port > 65535) throw new TargetError(entry, `port ${port} is outside 1-65535`);
  return port;
}

function parseHostPort(entry: string, text: string): { host: string; port: number } {
  // `[v6]:port` or `host:port`; a bare IPv6 literal without brackets is ambiguous and rejected.
  const v6 = /^\[([0-9A-Fa-f:.%a-zA-Z]+)\]:(.*)$/.exec(text);
  if (v6) return { host: v6[1]!, port: parsePort(entry, v6[2]!) };
  const idx = text.lastIndexOf(':');
  if (idx <= 0) throw new TargetError(entry, 'expected host:port');
  const host = text.slice(0, idx);
  if (host.includes(':')) throw new TargetError(entry, 'IPv6 addresses must be written in brackets, as [::1]:80');
  if (!/^[A-Za-z0-9._-]+$/.test(host)) throw new TargetError(entry, `host ${JSON.stringify(host)} is not a valid name or address`);
  return { host, port: parsePort(entry, text.slice(idx + 1)) };
}

/** Parses one target; throws a TargetError that names the entry when it is not valid. */
export function parseTarget(raw: string): Target {
  const entry = raw.trim();
  if (entry === '') throw new TargetError(raw, 'empty entry');
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(entry)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    return { url: entry, kind: 'tcp', ...parseHostPort(entry, entry), tls: false };
  }
  if (scheme === 'tcp' || scheme === 'udp') {
    const rest = entry.slice(`${scheme}://`.length).replace(/\/$/, '');
    if (rest.includes('/')) throw new TargetError(entry, `a ${scheme}:// target takes no path`);
    return { url: entry, kind: scheme, ...parseHostPort(entry, rest), tls: false };
  }
  if (scheme === 'sctp') {
    throw new TargetError(entry, 'SCTP cannot be probed: Node.js has no SCTP sockets (use tcp:// or udp://)');
  }
  if (scheme === 'http' || scheme === 'https') {
    let parsed: URL;
    try {
      parsed = new URL(entry);
    } catch {
      throw new TargetError(entry, 'not a valid URL');
    }
    if (parsed.hostname === '') throw new TargetError(entry, 'URL has no host');
    if (parsed.username || parsed.password) throw new TargetError(entry, 'credentials in target URLs are not supported');
    const tls = scheme === 'https';
    const port = parsed.port === '' ? (tls ? 443 : 80) : Number(parsed.port);
    // The URL parser takes port 0 (nothing can be reached there); the same rule as host:port.
    if (port < 1) throw new TargetError(entry, `port ${port} is outside 1-65535`);
    const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    return { url: entry, kind: 'http', host, port, href: parsed.href, tls };
  }
  throw new TargetError(entry, `unsupported scheme "${scheme}://" (use host:port, tcp://, udp://, http:// or https://)`);
}

class ListError extends Error {}

/**
 * Parses a comma-separated list (the `--urls` flag). Empty entries (`a:80,`, `a:80,,b:80`) are
 * skipped, as star did; every bad entry is reported by its position, not just the first.
 */
export function parseTargetList(list: string): Target[] {
  const entries = list.split(',').map((s) => s.trim());
  if (entries.every((e) => e === '')) throw new ListError('no targets given');
  const errors: string[] = [];
  const targets: Target[] = [];
  entries.forEach((entry, index) => {
    if (entry === '') return;
    try {
      targets.push(parseTarget(entry));
    } catch (err) {
      errors.push(`entry ${index + 1} ${(err as Error).message}`);
    }
  });
  if (errors.length > 0) throw new ListError(errors.join('; '));
  return targets;
}

/**
 * A key that identifies where a URL points (scheme, host, port), so that `http://a:80/status`
 * and `http://A/status` are recognised as the same endpoint. Used to match probe targets to
 * collector resources.
 */
export function endpointKey(raw: string): string | undefined {
  try {
    const t = parseTarget(raw);
    const host = t.host.toLowerCase();
    const scheme = t.kind === 'http' ? (t.tls ? 'https' : 'http') : t.kind;
    return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${t.port}`;
  } catch {
    return undefined;
  }
}
