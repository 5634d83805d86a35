// IPv4 and IPv6 addresses and CIDR blocks as the evaluator needs them: parse, mask, contain.
// Written here rather than taken from node:net's BlockList so that the evaluator's idea of
// "inside a block" is its own (the nftables renderer leaves it to the kernel), and because a
// block's host bits must be ignored the way the Kubernetes v1 API accepted them (10.1.2.3/8 is
// 10.0.0.0/8), which is simplest to state on plain integers.

export interface Address {
  family: 4 | 6;
  value: bigint;
}

export interface Block {
  family: 4 | 6;
  /** The network address with the host bits cleared. */
  network: bigint;
  prefix: number;
}

const BITS = { 4: 32, 6: 128 } as const;

function parseV4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const p of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > 255) return undefined;
    value = (value << 8n) | BigInt(p);
  }
  return value;
}

function parseV6(text: string): bigint | undefined {
  if (!/^[0-9A-Fa-f:.]+$/.test(text)) return undefined;
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (half: string): number[] | undefined => {
    if (half === '') return [];
    const out: number[] = [];
    const parts = half.split(':');
    for (const [i, p] of parts.entries()) {
      // An embedded IPv4 address may only end the address (::ffff:10.0.0.1).
      if (p.includes('.') && i === parts.length - 1) {
        const v4 = parseV4(p);
        if (v4 === undefined) return undefined;
        out.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
      } else if (/^[0-9A-Fa-f]{1,4}$/.test(p)) out.push(parseInt(p, 16));
      else return undefined;
    }
    return out;
  };
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  let value = 0n;
  for (const g of [...head, ...Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail]) value = (value << 16n) | BigInt(g);
  return value;
}

export function parseAddress(text: string): Address | undefined {
  if (text.includes(':')) {
    const value = parseV6(text);
    return value === undefined ? undefined : { family: 6, value };
  }
  const value = parseV4(text);
  return value === undefined ? undefined : { family: 4, value };
}

/** `10.1.2.3/8` → 10.0.0.0/8: host bits are accepted and cleared. Undefined when it does not parse. */
export function parseBlock(text: string): Block | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const addr = parseAddress(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!addr || !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  const bits = BITS[addr.family];
  if (prefix > bits) return undefined;
  return { family: addr.family, network: addr.value & mask(bits, prefix), prefix };
}

function mask(bits: number, prefix: number): bigint {
  const all = (1n << BigInt(bits)) - 1n;
  return all ^ ((1n << BigInt(bits - prefix)) - 1n);
}

/** Whether the block holds the address; an IPv4 address is never inside an IPv6 block or the reverse. */
export function blockContains(block: Block, addr: Address): boolean {
  if (block.family !== addr.family) return false;
  return (addr.value & mask(BITS[block.family], block.prefix)) === block.network;
}
