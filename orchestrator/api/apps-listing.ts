// GET /v2/apps answered from ready bytes. With 1,000 apps the answer is ~1 MB: built as objects,
// one JSON string and its UTF-8 copy per request, it left megabytes of garbage in the old
// generation after every burst of reads (bench/orchestrator-launch-memory.bench.ts). Here each app
// definition is serialised once per definition object (a change makes a new object) and the
// whole answer is kept as bytes, which a request reuses when nothing in it changed.
//
// Nothing is invalidated from outside, so nothing can be forgotten: every request computes what can
// change without a new definition (counts, deployments, tasks, ... as "extras", small) and
// compares it, with the definitions' identities, to what the kept bytes were made of.
import type { AppDefinition } from '../state/app-definition.ts';

const PREFIX = Buffer.from('{"apps":[');
const SUFFIX = Buffer.from(']}');
const EMPTY = Buffer.alloc(0);
/** Answers kept, one per distinct query (embed and filters): the real clients ask a few. */
const MAX_KEPT = 4;

interface Kept {
  apps: AppDefinition[];
  tails: string[];
  body: Buffer;
}

/**
 * The bytes of `{"apps":[...]}` where each element is `{...app, ...extras(app)}` as JSON.stringify
 * writes it, byte for byte.
 */
export class AppsListing {
  /** An app's JSON without its closing brace, per definition object. */
  readonly #heads = new WeakMap<AppDefinition, Buffer>();
  readonly #kept = new Map<string, Kept>();

  /**
   * The answer for `apps` (in order) with each app's `extras`; `key` names the query (answers of
   * one key replace each other).
   */
  body(key: string, apps: AppDefinition[], extras: (app: AppDefinition) => Record<string, unknown>): Buffer {
    const tails = apps.map((a) => tailOf(a, extras(a)));
    const kept = this.#kept.get(key);
    if (kept && sameList(kept.apps, apps) && sameList(kept.tails, tails)) return kept.body;
    const heads = apps.map((a, i) => (tails[i]![0] === '{' ? EMPTY : this.#head(a)));
    let length = PREFIX.length + SUFFIX.length + Math.max(0, apps.length - 1);
    for (let i = 0; i < apps.length; i++) length += heads[i]!.length + Buffer.byteLength(tails[i]!);
    const body = Buffer.allocUnsafeSlow(length);
    body.set(PREFIX, 0);
    let at = PREFIX.length;
    for (let i = 0; i < apps.length; i++) {
      if (i > 0) body[at++] = 0x2c; // ,
      body.set(heads[i]!, at);
      at += heads[i]!.length;
      at += body.write(tails[i]!, at);
    }
    body.set(SUFFIX, at);
    this.#kept.delete(key);
    this.#kept.set(key, { apps, tails, body });
    if (this.#kept.size > MAX_KEPT) this.#kept.delete(this.#kept.keys().next().value!);
    return body;
  }

  #head(app: AppDefinition): Buffer {
    let head = this.#heads.get(app);
    if (!head) {
      head = Buffer.from(JSON.stringify(app).slice(0, -1));
      this.#heads.set(app, head);
    }
    return head;
  }
}

/**
 * What follows the app's own fields (an app has at least its id): `,"k":v,...}`. The whole element
 * instead (it starts with `{`) when an extra has the name of a field of the app: the spread keeps
 * that field's place.
 */
function tailOf(app: AppDefinition, extras: Record<string, unknown>): string {
  for (const k of Object.keys(extras)) if (Object.hasOwn(app, k)) return JSON.stringify({ ...app, ...extras });
  const json = JSON.stringify(extras);
  if (json === '{}') return '}';
  return `,${json.slice(1)}`;
}

function sameList<T>(a: readonly T[], b: readonly T[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
