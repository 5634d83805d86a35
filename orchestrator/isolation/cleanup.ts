// Removes everything an isolation instance with this prefix created: task namespaces (after
// killing the processes still inside them), veths, the bridge, the host guard table, the
// unreachable route for the subnet and the /etc/netns hosts files. Used when the orchestrator
// stops and again when it starts (after a crash, kill -9, the previous run's leftovers are found
// by their names). Best effort: every step runs even when another failed; the result says what
// was removed and what could not be.
import { readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './exec.ts';
import { checkPrefix, namesFor, ownedName, ownedTable } from './names.ts';

export const NETNS_ETC = '/etc/netns';
/** Metric of the guard route: below every real route for the subnet (the bridge's is 0). */
export const GUARD_METRIC = 4213;

/** Who owns a prefix now (see TaskNetwork.start). */
export function prefixLockFile(prefix: string): string {
  return `/run/starmap-netns-${checkPrefix(prefix)}.pid`;
}

/**
 * The pid written in the prefix's owner file (NaN when it holds no number), or undefined when
 * there is no such file; other read errors are thrown.
 */
export function prefixOwner(prefix: string): number | undefined {
  try {
    return Number(readFileSync(prefixLockFile(prefix), 'utf8').trim());
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface CleanupReport {
  namespaces: string[];
  links: string[];
  tables: string[];
  routes: string[];
  killed: number[];
  errors: string[];
}

export async function namespacePids(ns: string): Promise<number[]> {
  try {
    const { stdout } = await run('ip', ['netns', 'pids', ns]);
    return stdout
      .split(/\s+/)
      .filter(Boolean)
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 1);
  } catch {
    return [];
  }
}

/** SIGKILLs every process inside the namespace (tasks still running there would keep it alive). */
export async function killNamespacePids(ns: string): Promise<number[]> {
  const pids = await namespacePids(ns);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  return pids;
}

export async function listNamespaces(): Promise<string[]> {
  const { stdout } = await run('ip', ['netns', 'list']);
  // Lines look like "name" or "name (id: 3)".
  return stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter(Boolean);
}

export async function listLinks(): Promise<string[]> {
  const { stdout } = await run('ip', ['-o', 'link', 'show']);
  // "7: name@if6: <…" — the part before @ is the name.
  return stdout
    .split('\n')
    .map((l) => /^\d+:\s+([^:@\s]+)/.exec(l)?.[1])
    .filter((n): n is string => !!n);
}

export async function listTables(): Promise<{ family: string; name: string }[]> {
  const { stdout } = await run('nft', ['list', 'tables']);
  return stdout
    .split('\n')
    .map((l) => /^table\s+(\S+)\s+(\S+)/.exec(l.trim()))
    .filter((m): m is RegExpExecArray => !!m)
    .map((m) => ({ family: m[1]!, name: m[2]! }));
}

/** The namespaces of this prefix. */
export async function ownedNamespaces(prefix: string): Promise<string[]> {
  return (await listNamespaces()).filter((n) => ownedName(prefix, n));
}

/** The links (bridge, veths) of this prefix. */
export async function ownedLinks(prefix: string): Promise<string[]> {
  return (await listLinks()).filter((n) => ownedName(prefix, n));
}

/** The nftables tables of this prefix. */
export async function ownedTables(prefix: string): Promise<{ family: string; name: string }[]> {
  return (await listTables()).filter((t) => ownedTable(prefix, t.name));
}

/** The guard routes (type unreachable with our metric); with `subnet`, only that one. */
export async function listGuardRoutes(subnet?: string): Promise<string[]> {
  const { stdout } = await run('ip', ['-4', 'route', 'show', 'type', 'unreachable']);
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => new RegExp(`\\bmetric ${GUARD_METRIC}\\b`).test(l))
    .map((l) => l.split(/\s+/)[1] ?? '')
    .filter((dst) => dst && (subnet === undefined || dst === subnet));
}

export async function cleanupAll(opts: { prefix: string; subnet?: string }): Promise<CleanupReport> {
  const prefix = checkPrefix(opts.prefix);
  const names = namesFor(prefix);
  const report: CleanupReport = { namespaces: [], links: [], tables: [], routes: [], killed: [], errors: [] };
  const attempt = async (what: string, fn: () => Promise<unknown>): Promise<boolean> => {
    try {
      await fn();
      return true;
    } catch (err) {
      report.errors.push(`${what}: ${(err as Error).message}`);
      return false;
    }
  };

  // The subnet of a crashed run: read from the bridge before it goes, when not given.
  let subnet = opts.subnet;
  if (subnet === undefined) {
    try {
      const { stdout } = await run('ip', ['-4', '-o', 'route', 'show', 'dev', names.bridge, 'proto', 'kernel']);
      subnet = stdout.trim().split(/\s+/)[0] || undefined;
    } catch {
      /* no bridge */
    }
  }

  let namespaces: string[] = [];
  await attempt('list namespaces', async () => (namespaces = await ownedNamespaces(prefix)));
  for (const ns of namespaces) {
    report.killed.push(...(await killNamespacePids(ns)));
    if (await attempt(`delete namespace ${ns}`, () => run('ip', ['netns', 'del', ns]))) report.namespaces.push(ns);
  }

  let links: string[] = [];
  await attempt('list links', async () => (links = await ownedLinks(prefix)));
  // veths first, the bridge last (deleting a veth whose peer went with its namespace may fail: gone already).
  links.sort((a, b) => (a === names.bridge ? 1 : 0) - (b === names.bridge ? 1 : 0));
  for (const link of links) {
    // The kernel removes a veth whose peer's namespace was deleted on its own, a moment later: a
    // link listed just before may be gone by now, which is what we wanted.
    const del = () =>
      run('ip', ['link', 'del', link]).catch((err: Error) => {
        if (!/Cannot find device/.test(err.message)) throw err;
      });
    if (await attempt(`delete link ${link}`, del)) report.links.push(link);
  }

  let tables: { family: string; name: string }[] = [];
  await attempt('list nftables tables', async () => (tables = await ownedTables(prefix)));
  for (const t of tables) {
    if (await attempt(`delete table ${t.family} ${t.name}`, () => run('nft', ['delete', 'table', t.family, t.name])))
      report.tables.push(`${t.family} ${t.name}`);
  }

  if (subnet !== undefined) {
    let routes: string[] = [];
    await attempt('list routes', async () => (routes = await listGuardRoutes(subnet)));
    for (const dst of routes) {
      if (await attempt(`delete route ${dst}`, () => run('ip', ['-4', 'route', 'del', 'unreachable', dst, 'metric', String(GUARD_METRIC)])))
        report.routes.push(dst);
    }
  }

  try {
    // The owner file, when it is ours or its process is gone.
    const pid = prefixOwner(prefix);
    if (pid !== undefined && (pid === process.pid || !pidAlive(pid))) rmSync(prefixLockFile(prefix), { force: true });
  } catch {
    /* none */
  }
  try {
    for (const entry of readdirSync(NETNS_ETC)) if (ownedName(prefix, entry)) rmSync(join(NETNS_ETC, entry), { recursive: true, force: true });
    // The folder itself when we made it and nothing else uses it (rmdir refuses a non-empty one).
    if (readdirSync(NETNS_ETC).length === 0) rmdirSync(NETNS_ETC);
  } catch {
    /* no /etc/netns */
  }
  return report;
}

/** What is still on the machine with this prefix (empty lists when clean). For tests and checks. */
export async function leftovers(prefix: string, subnet?: string): Promise<{ namespaces: string[]; links: string[]; tables: string[]; routes: string[] }> {
  return {
    namespaces: await ownedNamespaces(prefix),
    links: await ownedLinks(prefix),
    tables: (await ownedTables(prefix)).map((t) => `${t.family} ${t.name}`),
    routes: subnet === undefined ? [] : await listGuardRoutes(subnet),
  };
}
