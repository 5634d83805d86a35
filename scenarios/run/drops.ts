// Which side, and which rule, dropped a blocked connection, measured: the orchestrator counts the
// packets each task's drop sites drop (GET /v2/starmap/drops, from nftables counters), per peer,
// port, protocol and drop site (the side's default drop under its isolating policies, named by
// them). The counts before and after a step tell which rule dropped the cell's packets during it.
// Never inferred from the evaluator, so a renderer that drops on the wrong side or through the
// wrong rule shows (evidence.ts compares the two).
//
// When the counters are read matters (measureStep): the "before" read is taken before the step's
// policies are written, the "after" read once the step has settled (every judged cell's deciding
// check finished). Reading "before" after the write, as the runner once did, lost the drops of
// checks that ran while the read itself was under way: on a loaded machine reading every task's
// counters takes seconds, longer than a probe cycle (stars: 1 s, 0.5 s timeout, one SYN per check),
// so a step could settle on checks whose only dropped packet was already in "before", and the report
// said `droppedBy: null` for a blocked cell.
import { DROPS_PATH } from './policies.ts';
import { OrchestratorError, type OrchestratorClient } from './orchestrator-client.ts';
import type { Cell } from '../model/resolve.ts';

export type Side = 'egress' | 'ingress';

/** One counted drop element: in `pod`'s namespace, on `side`, for `peer` (an address), through the drop site of `policies`. */
export interface DropEntry {
  side: Side;
  pod: string;
  peer: string;
  port: number;
  protocol: string;
  /** The policies whose drop counted it; null: the orchestrator cannot say (an old one, or a tag it forgot). */
  policies: string[] | null;
  packets: number;
}

export interface DropCounts {
  entries: Map<string, DropEntry>;
  /** Pods whose counters could not be read (their counts are unknown, not zero). */
  unreadable: Set<string>;
}

interface DropsDoc {
  tasks?: {
    namespace?: string;
    pod?: string;
    error?: string;
    egress?: { to?: string; port?: number; protocol?: string; packets?: number; policies?: string[] | null }[];
    ingress?: { from?: string; port?: number; protocol?: string; packets?: number; policies?: string[] | null }[];
  }[];
}

const cellSideKey = (side: Side, pod: string, peer: string, port: number, protocol: string) => `${side}|${pod}|${peer}|${port}/${protocol.toUpperCase()}`;
const entryKey = (e: Omit<DropEntry, 'packets'>) =>
  `${cellSideKey(e.side, e.pod, e.peer, e.port, e.protocol)}|${e.policies === null ? '?' : e.policies.join(',')}`;

export function parseDrops(doc: unknown): DropCounts {
  const out: DropCounts = { entries: new Map(), unreadable: new Set() };
  for (const t of (doc as DropsDoc | null)?.tasks ?? []) {
    const pod = `${t.namespace ?? 'default'}/${t.pod ?? ''}`;
    if (t.error) out.unreadable.add(pod);
    const add = (side: Side, peer: string | undefined, e: { port?: number; protocol?: string; packets?: number; policies?: string[] | null }) => {
      if (!peer || e.port === undefined || !e.protocol) return;
      const policies = Array.isArray(e.policies) ? [...e.policies].sort() : null;
      const entry: DropEntry = { side, pod, peer, port: e.port, protocol: e.protocol.toUpperCase(), policies, packets: 0 };
      const k = entryKey(entry);
      const packets = (out.entries.get(k)?.packets ?? 0) + (e.packets ?? 0);
      out.entries.set(k, { ...entry, packets });
    };
    for (const e of t.egress ?? []) add('egress', e.to, e);
    for (const e of t.ingress ?? []) add('ingress', e.from, e);
  }
  return out;
}

/** The drop counters, or undefined when the orchestrator has no drops endpoint (then nobody says which side dropped). */
export async function readDrops(client: OrchestratorClient): Promise<DropCounts | undefined> {
  try {
    return parseDrops(await client.call('GET', DROPS_PATH));
  } catch (err) {
    if (err instanceof OrchestratorError && (err.status === 404 || err.status === 501)) return undefined;
    throw err;
  }
}

/**
 * Runs a step between two reads of the counters: `before` ahead of anything the step does (its
 * policy write included), `after` once it is over. `read` returning undefined (no counters here)
 * skips the second read. `previous`: the previous step's `after`, when nothing was written since:
 * it is a read from before this step's write, so it serves as `before` (a read takes about a second
 * on a loaded machine, most of a step once the probes are poked; the gap it leaves is shorter than
 * the time a read of its own would take).
 */
export async function measureStep<T>(
  read: () => Promise<DropCounts | undefined>,
  step: () => Promise<T>,
  previous?: DropCounts,
): Promise<{ result: T; before: DropCounts | undefined; after: DropCounts | undefined }> {
  const before = previous ?? (await read());
  const result = await step();
  const after = before ? await read() : undefined;
  return { result, before, after };
}

/** A drop counted for a cell during a step: where, through which rule, and how many packets (the counter's delta). */
export interface CountedDrop {
  side: Side;
  pod: string;
  policies: string[] | null;
  packets: number;
}

/**
 * The drops counted for this cell between `before` and `after`: the source's egress elements for
 * the destination's address and the destination's ingress elements for the source's, by rule. A
 * counter that went down was reset (its element timed out and came back), so its whole value counts.
 */
export function cellDrops(before: DropCounts, after: DropCounts, cell: Cell, ips: ReadonlyMap<string, string>): CountedDrop[] {
  const fromIp = ips.get(cell.from);
  const toIp = ips.get(cell.to);
  if (!fromIp || !toIp) return [];
  const wanted = new Set([cellSideKey('egress', cell.from, toIp, cell.port, cell.protocol), cellSideKey('ingress', cell.to, fromIp, cell.port, cell.protocol)]);
  const out: CountedDrop[] = [];
  for (const [k, a] of after.entries) {
    if (!wanted.has(cellSideKey(a.side, a.pod, a.peer, a.port, a.protocol))) continue;
    const b = before.entries.get(k)?.packets ?? 0;
    const delta = a.packets < b ? a.packets : a.packets - b;
    if (delta > 0) out.push({ side: a.side, pod: a.pod, policies: a.policies, packets: delta });
  }
  return out.sort((x, y) => (x.side === y.side ? y.packets - x.packets : x.side === 'egress' ? -1 : 1));
}

/** The side(s) whose drop counters for this cell grew between `before` and `after`. */
export function droppedBy(before: DropCounts, after: DropCounts, cell: Cell, ips: ReadonlyMap<string, string>): 'egress' | 'ingress' | 'both' | undefined {
  const drops = cellDrops(before, after, cell, ips);
  const egress = drops.some((d) => d.side === 'egress');
  const ingress = drops.some((d) => d.side === 'ingress');
  return egress && ingress ? 'both' : egress ? 'egress' : ingress ? 'ingress' : undefined;
}
