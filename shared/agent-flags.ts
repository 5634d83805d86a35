// The flags the probe and the collector share, as entries of their flag tables (cli.ts): the
// listen address and port, the DNS servers, and the log settings. Each agent spreads them into its
// own table, where they keep their place in --help.
import { addressFlag, LOG_LEVELS, parsedFlag, portFlag } from './cli.ts';
import { parseDnsServers } from './resolver.ts';

/** --http-address (default 0.0.0.0: an agent is reached by others) and --http-port. */
export function listenFlags(port: number) {
  return {
    'http-address': { type: 'string', default: '0.0.0.0', describe: 'listen address', coerce: addressFlag('http-address') },
    'http-port': { default: port, describe: 'listen port (0 picks a free one)', coerce: portFlag('http-port') },
  } as const;
}

export const DNS_SERVERS_FLAG = {
  'dns-servers': {
    type: 'string',
    describe: "DNS servers to ask instead of /etc/resolv.conf's, e.g. 10.96.0.10 or 127.0.0.1:5353 (names in /etc/hosts and localhost never need DNS)",
    coerce: parsedFlag('dns-servers', parseDnsServers),
  },
} as const;

export const LOG_FLAGS = {
  logfile: { type: 'string', describe: 'write logs to this file instead of stdout', coerce: parsedFlag('logfile', (path) => path) },
  'log-level': { type: 'string', default: 'info', choices: LOG_LEVELS, describe: 'log level' },
} as const;
