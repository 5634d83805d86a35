// The orchestrator's isolation flags, entries of its flag table (config.ts; shared/cli.ts says how a
// table is read):
//   --isolation=off|netns   (default off)
//   --netns-subnet=CIDR     private IPv4 subnet of the task network (default 10.213.0.0/24)
//   --netns-prefix=NAME     prefix of every namespace, link and table (default smap; one per orchestrator)
//   --publish-address=IP    where isolated tasks' TCP ports are published on the host (default 127.0.0.1; off: none)
// Bad values exit 2 naming the flag (FlagError from shared/cli.ts).
import { isIP } from 'node:net';
import type { Argv } from 'yargs';
import { FlagError, stringFlag, withFlags, type FlagTable } from '../../shared/cli.ts';
import { parseSubnet } from './ipam.ts';
import { PREFIX_PATTERN } from './names.ts';
import { DEFAULT_PREFIX, DEFAULT_SUBNET } from './netns.ts';

/** An IP address (never a name: nothing is looked up) or `off`. */
export function publishAddressFlag(flag: string) {
  return (value: unknown): string => {
    const s = stringFlag(flag)(value).replace(/^\[(.*)\]$/, '$1');
    if (s !== 'off' && isIP(s) === 0)
      throw new FlagError(`invalid value for --${flag}: ${JSON.stringify(s)} (expected an IP address such as 127.0.0.1 or 0.0.0.0, or off)`);
    return s;
  };
}

export function subnetFlag(flag: string) {
  return (value: unknown): string => {
    const s = stringFlag(flag)(value);
    try {
      return parseSubnet(s).cidr;
    } catch (err) {
      throw new FlagError(`invalid value for --${flag}: ${(err as Error).message}`);
    }
  };
}

export function prefixFlag(flag: string) {
  return (value: unknown): string => {
    const s = stringFlag(flag)(value);
    if (!PREFIX_PATTERN.test(s))
      throw new FlagError(`invalid value for --${flag}: ${JSON.stringify(s)} (expected 2 to 6 lowercase letters or digits, starting with a letter)`);
    return s;
  };
}

/** The four flags, last in the orchestrator's --help (underscore aliases as for Marathon's flags). */
export const ISOLATION_FLAGS = {
  isolation: {
    type: 'string',
    choices: ['off', 'netns'],
    default: 'off',
    describe:
      'netns: every task of an app with ipAddress gets its own network namespace and address on a bridge owned by the orchestrator, with network policies enforced by nftables (needs root, iproute2 and nftables)',
  },
  'netns-subnet': {
    alias: 'netns_subnet',
    type: 'string',
    default: DEFAULT_SUBNET,
    describe: 'private IPv4 subnet of the task network (the host is its first address); nothing is routed outside it',
    coerce: subnetFlag('netns-subnet'),
  },
  'netns-prefix': {
    alias: 'netns_prefix',
    type: 'string',
    default: DEFAULT_PREFIX,
    describe: 'prefix of the namespaces, links and nftables tables this orchestrator creates (and removes at stop and after a crash)',
    coerce: prefixFlag('netns-prefix'),
  },
  'publish-address': {
    alias: 'publish_address',
    type: 'string',
    /** Isolated tasks' TCP ports on the host, loopback only (the collector has no login). */
    default: '127.0.0.1',
    describe:
      "with --isolation=netns: every TCP port in an isolated task's ipAddress.discovery.ports gets a port on the host at this address (the task's `ports`) forwarding to the task; 0.0.0.0 opens them to the network, off publishes none. Forwarded connections come from the host, which ingress policies always accept",
    coerce: publishAddressFlag('publish-address'),
  },
} as const satisfies FlagTable;

/** Adds the isolation flags to a yargs instance. */
export function isolationOptions(y: Argv): Argv {
  return withFlags(y, ISOLATION_FLAGS);
}
