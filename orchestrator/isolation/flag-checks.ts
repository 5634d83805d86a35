// The checks of the isolation flags' values (their entries, with their defaults, are in
// orchestrator/config.ts's flag table; scenarios' --netns-* flags use the same checks). Bad values
// throw FlagError from shared/cli.ts, which exits 2 naming the flag.
import { isIP } from 'node:net';
import { FlagError, stringFlag } from '../../shared/cli.ts';
import { parseSubnet } from './ipam.ts';
import { PREFIX_PATTERN } from './names.ts';

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
