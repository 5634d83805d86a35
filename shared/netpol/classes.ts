// The parts of the whole-matrix path (matrix.ts) below its class loop: how a rule's result and a
// side's refs are coded, the trie that interns side verdicts, and the table of ipBlocks tested on
// pod addresses. Kept apart so that matrix.ts reads as the algorithm.
import { blockContains, parseAddress, type Address, type Block } from './cidr.ts';
import type { CompiledBlock, CompiledPolicy, CompiledRule, Direction, RuleRef, SideVerdict, Verdict } from './evaluate.ts';
import { objectId, type PodInfo, type Protocol } from './types.ts';

/** A port asked of a destination. */
export interface PortCell {
  port: number;
  protocol: Protocol;
}

// A rule's peer (or port) result for a class, pod or port signature, as one small integer:
/** Nothing matches. */
export const NO_MATCH = -1;
/** The rule has no peers (or no ports): everything matches, and the ref's index is null. */
export const MATCH_ALL = 0x7fff;
/** Index i >= 0: the first matching peer; an undecided first candidate at i is -(i + 2). */
export const undecidedAt = (i: number): number => -(i + 2);

/** A peer of a rule as a test of (class, pod index): 0 no, 1 yes, 2 undecided (an address not known yet). */
export type PeerTest = (c: number, pod: number) => 0 | 1 | 2;

export const LOOPBACK: Verdict = Object.freeze({
  allowed: true,
  egress: Object.freeze({ decision: 'loopback', allowed: true }),
  ingress: Object.freeze({ decision: 'loopback', allowed: true }),
}) as Verdict;
export const NOT_ISOLATED: SideVerdict = Object.freeze({ decision: 'not-isolated', allowed: true });

export interface RuleEntry {
  policy: CompiledPolicy;
  direction: Direction;
  index: number;
  rule: CompiledRule;
  /** Per peer, its ipBlock in the BlockTable, or -1. */
  blockIds: number[];
  hasBlocks: boolean;
}

/** The policies isolating a class for one direction, and their rules in evaluation order. */
export interface IsolationSet {
  index: number;
  isolatedBy: string[];
  rules: RuleEntry[];
  /** Global ids of those rules, for the per-rule result arrays. */
  ruleIds: number[];
  /** The ipBlocks its rules name: what makes its verdicts depend on a peer's address. */
  blockIds: number[];
  root: TrieNode;
}

/** A side verdict is a path of refs from its isolation set's root; the node at its end holds its id. */
export interface TrieNode {
  id: number;
  code: number;
  parent: TrieNode | null;
  next: Map<number, TrieNode> | undefined;
}

export function node(parent: TrieNode | null, code: number): TrieNode {
  return { id: -1, code, parent, next: undefined };
}

export function child(at: TrieNode, code: number): TrieNode {
  let next = at.next?.get(code);
  if (!next) {
    next = node(at, code);
    (at.next ??= new Map()).set(code, next);
  }
  return next;
}

/** One ref as a number: the rule's position j in its set, the peer and port results, and whether the peer is undecided. */
export function refCode(j: number, peer: number, port: number): number {
  const undecided = peer < NO_MATCH;
  const peerIndex = peer === MATCH_ALL ? 0xffff : undecided ? -peer - 2 : peer;
  return ((j * 0x10000 + peerIndex) * 0x10000 + (port === MATCH_ALL ? 0xffff : port)) * 2 + (undecided ? 1 : 0);
}

/** The side verdict a trie path stands for: its refs in the order the evaluator finds them. */
export function sideVerdict(isolatedBy: string[], rules: RuleEntry[], leaf: TrieNode): SideVerdict {
  const codes: number[] = [];
  for (let at: TrieNode | null = leaf; at && at.parent; at = at.parent) codes.push(at.code);
  codes.reverse();
  const allowedBy: RuleRef[] = [];
  const pending: RuleRef[] = [];
  for (const code of codes) {
    const rest = Math.floor(code / 2);
    const port = rest % 0x10000;
    const peer = Math.floor(rest / 0x10000) % 0x10000;
    const entry = rules[Math.floor(rest / 0x100000000)]!;
    const ref: RuleRef = {
      policy: entry.policy.id,
      direction: entry.direction,
      rule: entry.index,
      peer: peer === 0xffff ? null : peer,
      port: port === 0xffff ? null : port,
    };
    (code % 2 === 1 ? pending : allowedBy).push(ref);
  }
  if (allowedBy.length > 0) return Object.freeze({ decision: 'allowed', allowed: true, isolatedBy, allowedBy });
  if (pending.length > 0) return Object.freeze({ decision: 'undecided', allowed: null, isolatedBy, pending });
  return Object.freeze({ decision: 'denied', allowed: false, isolatedBy });
}

export function dedupe(cells: readonly PortCell[]): PortCell[] {
  const seen = new Set<string>();
  return cells.filter((c) => {
    const key = `${c.port}/${c.protocol}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Labels as a key that does not depend on their order. */
export const canonical = (labels: Record<string, string>): string => JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/**
 * Distinct ipBlocks and what each says of each pod's address: the evaluator's blockMatches, with
 * IPv4 on plain numbers (bigint arithmetic made the address tests the slowest part at 10,000 pods),
 * each (block, pod) computed once.
 */
export class BlockTable {
  readonly #blocks: CompiledBlock[] = [];
  readonly #keys = new Map<string, number>();
  readonly #results: (Uint8Array | undefined)[] = [];
  readonly #addresses: (Address | undefined)[];
  readonly #v4: Float64Array;

  constructor(pods: readonly PodInfo[]) {
    // As the evaluator reads a pod's address: by its id, the last pod of that id winning.
    const byId = new Map<string, Address | undefined>();
    for (const p of pods) byId.set(objectId(p), p.ip === undefined ? undefined : parseAddress(p.ip));
    this.#addresses = pods.map((p) => byId.get(objectId(p)) ?? (p.ip === undefined ? undefined : parseAddress(p.ip)));
    this.#v4 = Float64Array.from(this.#addresses, (a) => (a?.family === 4 ? Number(a.value) : NaN));
  }

  add(block: CompiledBlock): number {
    const text = (b: Block | undefined) => (b ? `${b.family}:${b.network}/${b.prefix}` : '?');
    const key = `${text(block.cidr)} ${block.except.map(text).join(' ')}`;
    let i = this.#keys.get(key);
    if (i === undefined) this.#keys.set(key, (i = this.#blocks.push(block) - 1));
    return i;
  }

  /** 0: outside (or in an except), 1: inside, 2: undecided (an address or a templated CIDR not known yet). */
  tri(blockId: number, pod: number): 0 | 1 | 2 {
    let results = this.#results[blockId];
    if (!results) results = this.#results[blockId] = new Uint8Array(this.#addresses.length);
    const cached = results[pod]!;
    if (cached !== 0) return (cached - 1) as 0 | 1 | 2;
    const value = this.#compute(this.#blocks[blockId]!, pod);
    results[pod] = value + 1;
    return value;
  }

  #compute(block: CompiledBlock, pod: number): 0 | 1 | 2 {
    if (!this.#addresses[pod] || !block.cidr) return 2;
    if (!this.#inside(block.cidr, pod)) return 0;
    let unknown = false;
    for (const e of block.except) {
      if (!e) unknown = true;
      else if (this.#inside(e, pod)) return 0;
    }
    return unknown ? 2 : 1;
  }

  #inside(block: Block, pod: number): boolean {
    const v4 = this.#v4[pod]!;
    if (block.family === 4 && !Number.isNaN(v4)) {
      if (block.prefix === 0) return true;
      const unit = 2 ** (32 - block.prefix);
      return Math.floor(v4 / unit) === Number(block.network) / unit;
    }
    return blockContains(block, this.#addresses[pod]!);
  }
}
