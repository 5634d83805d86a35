// Room in the kernel's IPv4 neighbour (ARP) table for the tasks' network.
//
// The table is one for the whole machine: every network namespace's entries count against
// net.ipv4.neigh.default.gc_thresh3 (1024 by default). Each task namespace keeps an entry per
// peer it talks to, and the host one per task, so 100 probe pods checking 10 peers each already
// hold ~2,100 entries: past the limit new entries fail ("table full") and the host stops reaching
// tasks at all (found by bench/pod-memory.bench.ts: 100 pods never all answered). Kubernetes nodes
// raise the same limits for the same reason. So before the first task, the limits are raised to
// what the subnet can need (every task talking to every other, capped) and never lowered: the
// setting is machine-wide and other networks may count on it, so it is left raised at exit.
import { readFileSync, writeFileSync } from 'node:fs';

const SYSCTL_DIR = '/proc/sys/net/ipv4/neigh/default';
/** Beyond this the entries themselves (a few hundred bytes each) are the cost, not the limit. */
export const NEIGHBOUR_CAP = 1 << 17;

export interface NeighbourLimits {
  /** Soft limit: past it, entries unused for 5 s are collected. */
  gcThresh2: number;
  /** Hard limit: past it, no new entry. */
  gcThresh3: number;
}

/** The limits a subnet of `addresses` task addresses needs, never below the current ones. Pure. */
export function neededLimits(addresses: number, current: NeighbourLimits): NeighbourLimits {
  const want = Math.min(NEIGHBOUR_CAP, Math.max(1024, addresses * addresses));
  return { gcThresh2: Math.max(current.gcThresh2, Math.ceil(want / 2)), gcThresh3: Math.max(current.gcThresh3, want) };
}

export function readLimits(dir = SYSCTL_DIR): NeighbourLimits {
  const read = (name: string) => Number(readFileSync(`${dir}/${name}`, 'utf8').trim());
  return { gcThresh2: read('gc_thresh2'), gcThresh3: read('gc_thresh3') };
}

/**
 * Raises the machine's neighbour-table limits for `addresses` tasks; returns a line saying what
 * changed, or undefined when they were already enough (or cannot be written: not root, or a
 * kernel without the files; the tasks then work until the table fills, as before).
 */
export function ensureNeighbourRoom(addresses: number, dir = SYSCTL_DIR): string | undefined {
  let current: NeighbourLimits;
  try {
    current = readLimits(dir);
  } catch {
    return undefined;
  }
  const next = neededLimits(addresses, current);
  if (next.gcThresh2 === current.gcThresh2 && next.gcThresh3 === current.gcThresh3) return undefined;
  try {
    // thresh3 first: the kernel keeps thresh2 <= thresh3 meaningful either way, but a reader
    // between the writes then sees a larger hard limit, never a soft one above the hard one.
    writeFileSync(`${dir}/gc_thresh3`, String(next.gcThresh3));
    writeFileSync(`${dir}/gc_thresh2`, String(next.gcThresh2));
  } catch (err) {
    return `isolation: could not raise the neighbour table limits (${(err as Error).message}); past ${current.gcThresh3} entries machine-wide, tasks stop reaching each other`;
  }
  return `isolation: raised net.ipv4.neigh.default.gc_thresh2/3 from ${current.gcThresh2}/${current.gcThresh3} to ${next.gcThresh2}/${next.gcThresh3} (one table for every namespace; ${addresses} task addresses)`;
}
