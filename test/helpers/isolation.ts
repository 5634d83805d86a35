// Whether this machine can run the network-isolation tests (root, iproute2, nftables), and why not.
import { execFileSync } from 'node:child_process';

function have(cmd: string): boolean {
  try {
    execFileSync(cmd, cmd === 'ip' ? ['-V'] : ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** undefined when the isolation tests can run; otherwise the reason they are skipped. */
export function isolationSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  if (!have('ip')) return '`ip` missing (apt-get install iproute2)';
  if (!have('nft')) return '`nft` missing (apt-get install nftables)';
  return undefined;
}

/** Computes the reason once and prints it, visibly, when the tests of `file` are skipped. */
export function isolationSkip(file: string): string | undefined {
  const reason = isolationSkipReason();
  if (reason) console.warn(`${file} tests skipped: ${reason} (they need root, iproute2 and nftables; CI runs them)`);
  return reason;
}

/**
 * What an isolated run with names under `prefix` left behind: network namespaces, links, nftables
 * tables, and routes that mention one of `routes` (a subnet, an external's address). Empty when it
 * cleaned up.
 */
export function isolationLeftovers(prefix: string, routes: readonly string[] = []): string[] {
  const lines = (cmd: string) => execFileSync('sh', ['-c', cmd], { encoding: 'utf8' }).split('\n');
  return [
    ...lines('ip netns list').filter((l) => l.startsWith(`${prefix}-`)),
    ...lines('ip -o link show').filter((l) => l.includes(` ${prefix}-`)),
    ...lines('nft list tables').filter((l) => l.includes(` ${prefix}_`)),
    ...(routes.length > 0 ? lines('ip -4 route show table all').filter((l) => routes.some((r) => l.includes(r))) : []),
  ];
}
