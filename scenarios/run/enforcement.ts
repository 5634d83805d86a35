// Whether this machine can enforce policies (root, iproute2 and nftables), and the one command that
// makes it so. A run that cannot enforce says so before anything starts and never reports a pass for
// a cell the policies block (report/results.ts: "not proven").
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Where a command is found: the PATH, then where Debian puts administration tools (off an ordinary user's PATH). */
export function findCommand(cmd: string, path = process.env.PATH ?? ''): string | undefined {
  const dirs = [...path.split(delimiter).filter(Boolean), '/usr/local/sbin', '/usr/sbin', '/sbin'];
  for (const dir of dirs) {
    const file = join(dir, cmd);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/** Why this machine cannot isolate tasks, or undefined when it can; `fix` is the one command that would. */
export function isolationMissing(opts: { uid?: number; path?: string } = {}): string | undefined {
  return isolationGap(opts)?.why;
}

/** Why this machine cannot isolate tasks and the command that fixes it, or undefined when it can. */
export function isolationGap(opts: { uid?: number; path?: string } = {}): { why: string; fix: string } | undefined {
  const missing = ['ip', 'nft'].filter((cmd) => findCommand(cmd, opts.path) === undefined);
  const packages = missing.map((m) => (m === 'ip' ? 'iproute2' : 'nftables'));
  const install = `sudo apt-get install ${packages.join(' ')}`;
  if ((opts.uid ?? process.getuid?.()) !== 0)
    return {
      why: `it needs root${missing.length > 0 ? ` and ${packages.join(' and ')}` : ''}`,
      fix: missing.length > 0 ? `${install}, then ${rootCommand()}` : rootCommand(),
    };
  if (missing.length > 0)
    return { why: `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} missing (apt-get install ${packages.join(' ')})`, fix: install };
  return undefined;
}

/** The command line that runs this again as root: `sudo npm start` under npm start. */
function rootCommand(): string {
  if (process.env.npm_lifecycle_event === 'start') return 'sudo npm start';
  return `sudo ${[process.execPath, ...process.argv.slice(1)].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`)).join(' ')}`;
}
