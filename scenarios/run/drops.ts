// Which side dropped a blocked connection, measured: the orchestrator counts the packets each
// task's drop rules drop (GET /v2/starmap/drops, from nftables counters), per peer, port and
// protocol. The counts before and after a step tell whether the source's egress or the
// destination's ingress dropped the cell's packets during it. Never inferred from the evaluator,
// so a renderer that drops on the wrong side shows.
import { DROPS_PATH } from './policies.ts';
import { OrchestratorError, type OrchestratorClient } from './orchestrator-client.ts';
import type { Cell } from '../model/resolve.ts';

export type DropCounts = Map<string, number>;

interface DropsDoc {
  tasks?: {
    namespace?: string;
    pod?: string;
    egress?: { to?: string; port?: number; protocol?: string; packets?: number }[];
    ingress?: { from?: string; port?: number; protocol?: string; packets?: number }[];
  }[];
}

const key = (side: 'egress' | 'ingress', pod: string, peer: string, port: number, protocol: string) =>
  `${side}|${pod}|${peer}|${port}/${protocol.toUpperCase()}`;

export function parseDrops(doc: unknown): DropCounts {
  const out: DropCounts = new Map();
  for (const t of (doc as DropsDoc | null)?.tasks ?? []) {
    const pod = `${t.namespace ?? 'default'}/${t.pod ?? ''}`;
    const add = (k: string, n: number | undefined) => out.set(k, (out.get(k) ?? 0) + (n ?? 0));
    for (const e of t.egress ?? []) if (e.to && e.port !== undefined && e.protocol) add(key('egress', pod, e.to, e.port, e.protocol), e.packets);
    for (const e of t.ingress ?? []) if (e.from && e.port !== undefined && e.protocol) add(key('ingress', pod, e.from, e.port, e.protocol), e.packets);
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
 * The side(s) whose drop counters for this cell grew between `before` and `after`. A counter that
 * went down was reset (its ruleset was replaced), so its whole value counts as growth.
 */
export function droppedBy(before: DropCounts, after: DropCounts, cell: Cell, ips: ReadonlyMap<string, string>): 'egress' | 'ingress' | 'both' | undefined {
  const fromIp = ips.get(cell.from);
  const toIp = ips.get(cell.to);
  if (!fromIp || !toIp) return undefined;
  const grew = (k: string) => {
    const a = after.get(k) ?? 0;
    const b = before.get(k) ?? 0;
    return a < b ? a > 0 : a > b;
  };
  const egress = grew(key('egress', cell.from, toIp, cell.port, cell.protocol));
  const ingress = grew(key('ingress', cell.to, fromIp, cell.port, cell.protocol));
  return egress && ingress ? 'both' : egress ? 'egress' : ingress ? 'ingress' : undefined;
}
