// The probe's flags: star's (same names and defaults) plus timeout, concurrency and status rules.
import { readFileSync } from 'node:fs';
import { numberFlag, parsedFlag, parseFlags, type FlagTable, type FlagValues } from '../shared/cli.ts';
import { DNS_SERVERS_FLAG, listenFlags, LOG_FLAGS } from '../shared/agent-flags.ts';
import { parseStatusRule } from '../shared/checks.ts';
import { parseTargetList, type Target } from '../shared/targets.ts';
import { parseServeList } from './serve.ts';

/** Reads a --urls-file: targets separated by commas or new lines; `#` starts a comment. */
export function readTargetsFile(path: string): Target[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const list = text
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter(Boolean)
    .join(',');
  try {
    return parseTargetList(list);
  } catch (err) {
    throw new Error(`${path}: ${(err as Error).message}`);
  }
}

/** The probe's flags, in --help order (shared/cli.ts: the yargs options, ProbeFlags and the defaults come from it). */
export const PROBE_FLAGS = {
  urls: {
    type: 'string',
    describe: 'comma-delimited list of targets: host:port, tcp://host:port, udp://host:port, [v6]:port, http(s)://… (required unless --urls-file)',
    coerce: parsedFlag('urls', parseTargetList),
  },
  'urls-file': {
    type: 'string',
    describe: 'read the targets from this file instead (separated by commas or new lines; # starts a comment); for lists too long for a command line',
    coerce: parsedFlag('urls-file', readTargetsFile),
  },
  ...listenFlags(9000),
  'http-probe-seconds': {
    default: 5,
    describe: 'seconds between checks of each target',
    coerce: numberFlag('http-probe-seconds', 0.05, 86_400),
  },
  'timeout-seconds': {
    default: 1,
    describe: 'deadline of each check (connect, TLS and response headers)',
    coerce: numberFlag('timeout-seconds', 0.01, 600),
  },
  concurrency: { default: 1000, describe: 'most checks in flight at once', coerce: numberFlag('concurrency', 1, 100_000, true) },
  'expect-status': {
    type: 'string',
    describe: 'HTTP status codes that count as reachable, e.g. 200-399 (default: any response, as star)',
    coerce: parsedFlag('expect-status', parseStatusRule),
  },
  insecure: { type: 'boolean', default: false, describe: 'do not verify TLS certificates of https targets' },
  serve: {
    type: 'string',
    describe: 'also serve these ports on --http-address, e.g. 80/tcp,80/udp: TCP accepts and closes, UDP echoes, so other probes can check this one',
    coerce: parsedFlag('serve', parseServeList),
  },
  ...DNS_SERVERS_FLAG,
  ...LOG_FLAGS,
} as const satisfies FlagTable;

export type ProbeFlags = FlagValues<typeof PROBE_FLAGS>;

export function parseProbeFlags(argv: string[]): ProbeFlags & { targets: Target[] } {
  const flags = parseFlags(
    {
      name: 'probe',
      description:
        'Checks, over and over, whether each target can be reached and serves the latest answer at GET /status ' +
        '(star-compatible). host:port and tcp://host:port targets get a TCP connect check; udp://host:port targets ' +
        "get a datagram that an echo service (another probe's --serve) must send back; http:// and https:// " +
        'targets get an HTTP GET, where any HTTP response counts as reachable unless --expect-status says otherwise.',
      examples: [
        ['probe --urls=http://frontend/status,backend:6379', 'one HTTP and one TCP target, every 5 s'],
        ['probe --urls=[::1]:8080 --http-probe-seconds=1', 'an IPv6 target, every second'],
        ['probe --urls=udp://backend:53,backend:80 --serve=80/tcp,80/udp', 'UDP and TCP targets; answers on port 80 itself'],
      ],
      epilogue: 'Endpoints: GET /status, GET /healthz, GET /metrics (Prometheus). Docs: docs/probe.md.',
      flags: PROBE_FLAGS,
      refine: (y) =>
        y.conflicts('urls', 'urls-file').check((argv) => {
          if (argv.urls === undefined && argv['urls-file'] === undefined)
            throw new Error('missing targets: give --urls=host:port,http://host:port/path,… (or --urls-file)');
          return true;
        }),
    },
    argv,
  );
  return { ...flags, targets: (flags.urls ?? flags.urlsFile)! };
}
