// The orchestrator's isolation flags on their own (a yargs instance with only them). Their entries,
// defaults included, are in orchestrator/config.ts's flag table, the one place a default is
// written; their checks are in flag-checks.ts:
//   --isolation=off|netns   (default off)
//   --netns-subnet=CIDR     private IPv4 subnet of the task network (default 10.213.0.0/24)
//   --netns-prefix=NAME     prefix of every namespace, link and table (default smap; one per orchestrator)
//   --publish-address=IP    where isolated tasks' TCP ports are published on the host (default 127.0.0.1; off: none)
// Bad values exit 2 naming the flag (FlagError from shared/cli.ts).
import type { Argv } from 'yargs';
import { withFlags } from '../../shared/cli.ts';
import { ISOLATION_FLAGS } from '../config.ts';

export { prefixFlag, publishAddressFlag, subnetFlag } from './flag-checks.ts';

/** Adds the isolation flags to a yargs instance. */
export function isolationOptions(y: Argv): Argv {
  return withFlags(y, ISOLATION_FLAGS);
}
