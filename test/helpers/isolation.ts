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
