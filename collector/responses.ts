// The latest response per resource, and the `/responses` document served from it. star's clients
// (its UI, dashboards written against it) read `responses[id].json.status` after checking only for
// null, so `responses` keeps star's shape exactly: `{url, statusCode, json}` when the latest fetch
// brought JSON, `null` when there is nothing to show (never fetched, failed, not JSON). Starmap's
// detail (error, times, latency, pending) goes to the sibling `details` map, where star's clients
// do not look:
//   {"responses": {"<id>": {url, statusCode, json} | null},
//    "details":   {"<id>": {url, statusCode, error, fetchedAt, latencyMs, lastSuccessAt, pending}},
//    "generatedAt": "<iso>"}
// Each entry's two parts are serialised once, when its result is recorded. The document is kept as
// bytes ready to send, reassembled from those parts only after a change (at most every
// `coalesceMs` while results stream in), and served without copying: the cached bytes, then the
// time of the answer.
import type { FetchError, FetchResult } from './fetcher.ts';
import type { Resource, ResourceStore } from './resources.ts';

/** What star showed for a resource: only when its latest fetch brought JSON. */
export interface StarResponse {
  url: string;
  statusCode: number | null;
  json: unknown;
}

export interface ResponseDetail {
  url: string;
  statusCode: number | null;
  error: FetchError | null;
  fetchedAt: string | null;
  latencyMs: number | null;
  /** When a fetch of this url last succeeded (2xx with a JSON body). */
  lastSuccessAt: string | null;
  /** True until the first fetch of this url has finished. */
  pending: boolean;
}

interface Slot {
  detail: ResponseDetail;
  /** `"<id>":{…}` or `"<id>":null`, as it appears in `responses`. */
  response: Buffer;
  /** `"<id>":{…}`, as it appears in `details`. */
  details: Buffer;
}

export function pendingDetail(url: string): ResponseDetail {
  return { url, statusCode: null, error: null, fetchedAt: null, latencyMs: null, lastSuccessAt: null, pending: true };
}

/** The `responses` entry for a result: star's three fields when it brought JSON, else null. */
export function starResponse(url: string, statusCode: number | null, json: unknown): StarResponse | null {
  return json === null || json === undefined ? null : { url, statusCode, json };
}

/** A resource's two parts as bytes; `json` is the body's JSON text (already compact), if any. */
function slotOf(id: string, detail: ResponseDetail, json: string | null): Slot {
  const key = JSON.stringify(id);
  // Text, not an object: the body's JSON is spliced in as it is, never parsed or serialised again.
  const response =
    json === null || json === 'null' ? 'null' : `{"url":${JSON.stringify(detail.url)},"statusCode":${JSON.stringify(detail.statusCode)},"json":${json}}`;
  return { detail, response: Buffer.from(`${key}:${response}`), details: Buffer.from(`${key}:${JSON.stringify(detail)}`) };
}

export interface Outcome {
  previous: ResponseDetail;
  current: ResponseDetail;
}

const HEAD = Buffer.from('{"responses":{');
const MIDDLE = Buffer.from('},"details":{');
const TAIL = Buffer.from('},"generatedAt":"');
const COMMA = Buffer.from(',');

/** Bytes of a JSON document ending in a time: `prefix`, then the time, then `"}`. */
export interface CachedDocument {
  prefix: Buffer;
  version: number;
}

export class ResponseCache {
  readonly #store: ResourceStore;
  readonly #slots = new Map<string, Slot>();
  readonly #coalesceMs: number;
  /** The document up to `generatedAt`, the version it shows and when it was assembled. */
  #built: (CachedDocument & { at: number }) | undefined;
  #version = 0;

  /**
   * `coalesceMs`: while fetch results stream in (1,000 resources → hundreds per second), the
   * document is reassembled at most once per this many milliseconds; a read in between gets the
   * previous one (with its own ETag). Adding, replacing or removing a resource shows at once.
   */
  constructor(store: ResourceStore, opts: { coalesceMs?: number } = {}) {
    this.#store = store;
    this.#coalesceMs = opts.coalesceMs ?? 0;
    for (const r of store.list()) this.#slots.set(r.id, slotOf(r.id, pendingDetail(r.url), null));
    store.onChange((change) => {
      // A new or replaced url starts over as pending; a removed resource leaves nothing behind.
      if (change.kind === 'removed') this.#slots.delete(change.resource.id);
      else this.#slots.set(change.resource.id, slotOf(change.resource.id, pendingDetail(change.resource.url), null));
      this.#changed(true);
    });
  }

  /** Increases on every change; usable as an ETag. */
  get version(): number {
    return this.#version;
  }

  get(id: string): ResponseDetail | undefined {
    return this.#slots.get(id)?.detail;
  }

  /** Every resource's detail, in the order the resources were added. */
  entries(): [string, ResponseDetail][] {
    return this.#store.list().map((r) => [r.id, this.#slots.get(r.id)?.detail ?? pendingDetail(r.url)]);
  }

  /** Records a fetch result, unless the resource was removed or replaced since the fetch began. */
  record(resource: Resource, result: FetchResult): Outcome | undefined {
    if (!this.#store.isCurrent(resource)) return undefined;
    const slot = this.#slots.get(resource.id);
    if (!slot) return undefined;
    const previous = slot.detail;
    const current: ResponseDetail = {
      url: resource.url,
      statusCode: result.statusCode,
      error: result.error,
      fetchedAt: result.fetchedAt,
      latencyMs: result.latencyMs,
      lastSuccessAt: result.error === null ? result.fetchedAt : previous.lastSuccessAt,
      pending: false,
    };
    this.#slots.set(resource.id, slotOf(resource.id, current, result.json));
    this.#changed(false);
    return { previous, current };
  }

  /**
   * The whole `GET /responses` document up to its time, and the version it shows (for the ETag).
   * Assembled from each entry's cached bytes and reused until something changes.
   */
  responsesDocument(now = Date.now()): CachedDocument {
    const built = this.#built;
    if (built !== undefined && (built.version === this.#version || now - built.at < this.#coalesceMs)) return built;
    const parts: Buffer[] = [HEAD];
    const list = this.#store.list();
    const slots = list.map((r) => this.#slots.get(r.id)).filter((s) => s !== undefined);
    slots.forEach((s, i) => parts.push(...(i === 0 ? [s.response] : [COMMA, s.response])));
    parts.push(MIDDLE);
    slots.forEach((s, i) => parts.push(...(i === 0 ? [s.details] : [COMMA, s.details])));
    parts.push(TAIL);
    this.#built = { prefix: Buffer.concat(parts), version: this.#version, at: now };
    return this.#built;
  }

  /** The whole document as one Buffer (tests and tools; the server sends the parts without copying). */
  responsesBody(now = new Date()): Buffer {
    return Buffer.concat([this.responsesDocument(now.getTime()).prefix, documentEnd(now)]);
  }

  /** The `GET /responses/{id}` document (`{"response":{"<id>":…},"details":{"<id>":{…}}}`), or undefined. */
  responseBody(id: string): Buffer | undefined {
    const slot = this.#slots.get(id);
    if (!slot) return undefined;
    return Buffer.concat([Buffer.from('{"response":{'), slot.response, Buffer.from('},"details":{'), slot.details, Buffer.from('}}')]);
  }

  #changed(structural: boolean): void {
    if (structural) this.#built = undefined;
    this.#version++;
  }
}

/** What follows a cached document's prefix: the time of the answer and the closing `"}`. */
export function documentEnd(now = new Date()): Buffer {
  return Buffer.from(`${now.toISOString()}"}`, 'latin1');
}
