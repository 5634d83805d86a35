// Which rule dropped a packet, as the drop counters say it. Every drop in a task's ruleset goes
// through one of its side's drop sites: the default drop of an isolated side (attributable to the
// policies that isolate the pod for that direction) or the network-group limit of ingress. Each site
// marks the packet with a tag (a 32-bit hash of the side and the site's policy set) before the drop
// chain counts it in ingress_drops/egress_drops (peer . protocol . port . mark, render.ts), so a
// counted element names the side AND the policies whose isolation dropped it. The engine remembers
// which tag stands for which policies (DropTags) to say it in GET /v2/starmap/drops.
// Bounded like the drop sets: a side has one or two drop sites per ruleset, and the registry keeps
// the most recent tags only.
// Pure (no I/O); the evaluator is never imported (the renderer and the evaluator stay independent).
import type { Direction } from './compile.ts';

/** The test switch (STARMAP_ISOLATION_TEST_MODE, docs/isolation.md): a data plane that is broken on purpose. */
export type IsolationTestMode = 'accept-all' | 'wrong-rule';

export const TEST_MODES: readonly IsolationTestMode[] = ['accept-all', 'wrong-rule'];

export function parseTestMode(text: string | undefined): IsolationTestMode | undefined | { error: string } {
  if (text === undefined || text === '') return undefined;
  if ((TEST_MODES as readonly string[]).includes(text)) return text as IsolationTestMode;
  return { error: `STARMAP_ISOLATION_TEST_MODE must be one of ${TEST_MODES.join(', ')}, not ${JSON.stringify(text)}` };
}

/** A drop site: the side and the policies (namespace/name; `policy <id>` for the dialect; `groups …` for the group limit). */
export interface DropRule {
  side: Direction;
  policies: string[];
}

/** What the wrong-rule test switch counts every drop under: a rule no policy has. */
export const WRONG_RULE_POLICIES: readonly string[] = ['(test switch: wrong-rule)'];

/** The tag of a drop site: FNV-1a of the side and its sorted policies; never 0 (an unmarked packet). */
export function dropTag(rule: DropRule): number {
  let h = 0x811c9dc5;
  const text = `${rule.side}:${[...rule.policies].sort().join(',')}`;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h === 0 ? 1 : h;
}

/** Tag → drop site, for the most recent `limit` tags (a tag not known any more reads as null). */
export class DropTags {
  readonly #tags = new Map<number, DropRule>();
  readonly #limit: number;

  constructor(limit = 4096) {
    this.#limit = limit;
  }

  remember(tag: number, rule: DropRule): void {
    this.#tags.delete(tag);
    this.#tags.set(tag, { side: rule.side, policies: [...rule.policies].sort() });
    while (this.#tags.size > this.#limit) this.#tags.delete(this.#tags.keys().next().value!);
  }

  lookup(tag: number | undefined): DropRule | undefined {
    return tag === undefined ? undefined : this.#tags.get(tag);
  }
}
