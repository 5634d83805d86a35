// The probe's flags: star's (same names and defaults) plus timeout, concurrency and status rules.
import { readFileSync } from 'node:fs';
import { addressFlag, LOG_LEVELS, numberFlag, parsedFlag, parseFlags, portFlag } from '../shared/cli.ts';
import { parseStatusRule } from '../shared/checks.ts';
import { parseDnsServers } from '../shared/resolver.ts';
import { parseTargetList, type Target } from '../shared/targets.ts';
import { parseServeList, type ServedPort } from './serve.ts';

export interface ProbeFlags {
  urls: Target[] | undefined;
  urlsFile: Target[] | undefined;
  httpAddress: string;
  httpPort: number;
  httpProbeSeconds: number;
  timeoutSeconds: number;
  concurrency: number;
  expectStatus: ((code: number) => boolean) | undefined;
  insecure: boolean;
  serve: ServedPort[] | undefined;
  dnsServers: string[] | undefined;
  logfile: string | undefined;
  logLevel: string;
}

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

export function parseProbeFlags(argv: string[]): ProbeFlags & { targets: Target[] } {
  const flags = parseFlags<ProbeFlags>(
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
      options: (y) =>
        y
          .option('urls', {
            type: 'string',
            describe: 'comma-delimited list of targets: host:port, tcp://host:port, udp://host:port, [v6]:port, http(s)://… (required unless --urls-file)',
            coerce: parsedFlag('urls', parseTargetList),
          })
          .option('urls-file', {
            type: 'string',
            describe: 'read the targets from this file instead (separated by commas or new lines; # starts a comment); for lists too long for a command line',
            coerce: parsedFlag('urls-file', readTargetsFile),
          })
          .conflicts('urls', 'urls-file')
          .check((argv) => {
            if (argv.urls === undefined && argv['urls-file'] === undefined)
              throw new Error('missing targets: give --urls=host:port,http://host:port/path,… (or --urls-file)');
            return true;
          })
          .option('http-address', { type: 'string', default: '0.0.0.0', describe: 'listen address', coerce: addressFlag('http-address') })
          .option('http-port', { default: 9000, describe: 'listen port (0 picks a free one)', coerce: portFlag('http-port') })
          .option('http-probe-seconds', {
            default: 5,
            describe: 'seconds between checks of each target',
            coerce: numberFlag('http-probe-seconds', 0.05, 86_400),
          })
          .option('timeout-seconds', {
            default: 1,
            describe: 'deadline of each check (connect, TLS and response headers)',
            coerce: numberFlag('timeout-seconds', 0.01, 600),
          })
          .option('concurrency', { default: 1000, describe: 'most checks in flight at once', coerce: numberFlag('concurrency', 1, 100_000, true) })
          .option('expect-status', {
            type: 'string',
            describe: 'HTTP status codes that count as reachable, e.g. 200-399 (default: any response, as star)',
            coerce: parsedFlag('expect-status', parseStatusRule),
          })
          .option('insecure', { type: 'boolean', default: false, describe: 'do not verify TLS certificates of https targets' })
          .option('serve', {
            type: 'string',
            describe: 'also serve these ports on --http-address, e.g. 80/tcp,80/udp: TCP accepts and closes, UDP echoes, so other probes can check this one',
            coerce: parsedFlag('serve', parseServeList),
          })
          .option('dns-servers', {
            type: 'string',
            describe: "DNS servers to ask instead of /etc/resolv.conf's, e.g. 10.96.0.10 or 127.0.0.1:5353 (names in /etc/hosts and localhost never need DNS)",
            coerce: parsedFlag('dns-servers', parseDnsServers),
          })
          .option('logfile', { type: 'string', describe: 'write logs to this file instead of stdout', coerce: parsedFlag('logfile', (path) => path) })
          .option('log-level', { type: 'string', default: 'info', choices: LOG_LEVELS, describe: 'log level' }) as never,
    },
    argv,
  );
  return { ...flags, targets: (flags.urls ?? flags.urlsFile)! };
}
