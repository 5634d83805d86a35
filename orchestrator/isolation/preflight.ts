// Can this machine isolate tasks? Root, iproute2 (`ip`), nftables (`nft`), and permission to make
// a network namespace. Answers with every missing piece at once and how to get it.
import { run } from './exec.ts';

export interface IsolationSupport {
  ok: boolean;
  problems: string[];
}

export async function checkIsolationSupport(opts: { probeNamespace?: string } = {}): Promise<IsolationSupport> {
  const problems: string[] = [];
  if (process.platform !== 'linux') return { ok: false, problems: ['network isolation needs Linux (network namespaces and nftables)'] };
  const root = process.getuid?.() === 0;
  if (!root) problems.push('it needs root (network namespaces, veths and nftables rules need CAP_NET_ADMIN and CAP_SYS_ADMIN): run as root');
  let haveIp = true;
  try {
    await run('ip', ['-V']);
  } catch {
    haveIp = false;
    problems.push('`ip` is missing: apt-get install iproute2');
  }
  let haveNft = true;
  try {
    await run('nft', ['--version']);
  } catch {
    haveNft = false;
    problems.push('`nft` is missing: apt-get install nftables');
  }
  if (root && haveIp) {
    const ns = opts.probeNamespace ?? `smpre-${process.pid}`;
    try {
      await run('ip', ['netns', 'add', ns]);
      try {
        if (haveNft) {
          try {
            await run('ip', ['netns', 'exec', ns, 'nft', 'list', 'tables']);
          } catch (err) {
            problems.push(`nftables does not work inside a network namespace: ${(err as Error).message}`);
          }
        }
      } finally {
        await run('ip', ['netns', 'del', ns]).catch(() => undefined);
      }
    } catch (err) {
      problems.push(`cannot create a network namespace (is this a restricted container?): ${(err as Error).message}`);
    }
  }
  return { ok: problems.length === 0, problems };
}

/** One line for logs and errors: "network isolation (--isolation=netns) is not available: …". */
export function describeProblems(s: IsolationSupport): string {
  return s.ok ? 'network isolation is available' : `network isolation (--isolation=netns) is not available: ${s.problems.join('; ')}`;
}
