// Reading the drop counters of a task namespace: the dynamic sets ingress_drops (source . protocol
// . port . tag) and egress_drops (destination . protocol . port . tag) that render.ts declares (the
// tag names the drop site: drop-tags.ts), as printed by
// `nft -j list table inet starmap`. Pure parsing; the engine runs the command.
import type { Protocol } from '../../shared/netpol/types.ts';
import { DROP_SETS } from './render.ts';

export interface DropCount {
  /** The other end: the source for ingress drops, the destination for egress drops. */
  peer: string;
  port: number;
  protocol: Protocol;
  /** The drop site's tag (drop-tags.ts); undefined in a set without tags. */
  tag?: number;
  packets: number;
}

const PROTOCOL_NUMBERS: Record<string, Protocol> = { '6': 'TCP', '17': 'UDP', '132': 'SCTP', tcp: 'TCP', udp: 'UDP', sctp: 'SCTP' };

interface NftSetElem {
  elem?: { val?: { concat?: unknown[] }; counter?: { packets?: number } };
}

/** The drop counts of both sides from the JSON listing (elements without packets are left out). */
export function parseDropSets(json: string): { ingress: DropCount[]; egress: DropCount[] } {
  const out = { ingress: [] as DropCount[], egress: [] as DropCount[] };
  let doc: { nftables?: { set?: { name?: string; elem?: NftSetElem[] } }[] };
  try {
    doc = JSON.parse(json) as typeof doc;
  } catch {
    return out;
  }
  for (const item of doc.nftables ?? []) {
    const s = item.set;
    const side = s?.name === DROP_SETS.ingress ? out.ingress : s?.name === DROP_SETS.egress ? out.egress : undefined;
    if (!side) continue;
    for (const e of s?.elem ?? []) {
      const [peer, proto, port, tag] = e.elem?.val?.concat ?? [];
      const protocol = PROTOCOL_NUMBERS[String(proto)];
      const packets = e.elem?.counter?.packets ?? 0;
      if (typeof peer === 'string' && protocol && typeof port === 'number' && packets > 0)
        side.push({ peer, port, protocol, ...(typeof tag === 'number' ? { tag } : {}), packets });
    }
  }
  for (const side of [out.ingress, out.egress])
    side.sort((a, b) => b.packets - a.packets || a.peer.localeCompare(b.peer) || a.port - b.port || (a.tag ?? 0) - (b.tag ?? 0));
  return out;
}
