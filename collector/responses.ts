// The latest response per resource, and the `/responses` document served from it. The document
// is kept as bytes ready to send and reassembled (from each entry's cached JSON text) only after a
// change, at most every `coalesceMs` while results stream in, so polling it costs almost nothing.
import type { FetchError, FetchResult } from './fetcher.ts';
import type { Resource, ResourceStore } from './resources.ts';

export interface ResponseEntry {
  /** star's three fields first. */
  url: string;
  statusCode: number | null;
  json: unknown;
  error: FetchError | null;
  fetchedAt: string | null;
  latencyMs: number | null;
  /** When a fetch of this url last succeeded (2xx with a JSON body). */
  lastSuccessAt: string | null;
  /** True until the first fetch of this url has finished. */
  pending: boolean;
}

interface Slot {
  entry: ResponseEntry;
  text: string | undefined;
}

export function pendingEntry(url: string): ResponseEntry {
  return { url, statusCode: null, json: null, error: null, fetchedAt: null, latencyMs: null, lastSuccessAt: null, pending: true };
}

export interface Outcome {
  previous: ResponseEntry;
  current: ResponseEntry;
}

export class ResponseCache {
  readonly #store: ResourceStore;
  readonly #slots = new Map<string, Slot>();
  readonly #coalesceMs: number;
  /** The document up to `generatedAt`, the version it shows and when it was assembled. */
  #built: { prefix: Buffer; version: number; at: number } | undefined;
  #version = 0;

  /**
   * `coalesceMs`: while fetch results stream in (1,000 resources → hundreds per second), the
   * document is reassembled at most once per this many milliseconds; a read in between gets the
   * previous one (with its own ETag). Adding, replacing or removing a resource shows at once.
   */
  constructor(store: ResourceStore, opts: { coalesceMs?: number } = {}) {
    this.#store = store;
    this.#coalesceMs = opts.coalesceMs ?? 0;
    for (const r of store.list()) this.#slots.set(r.id, { entry: pendingEntry(r.url), text: undefined });
    store.onChange((change) => {
      // A new or replaced url starts over as pending; a removed resource leaves nothing behind.
      if (change.kind === 'removed') this.#slots.delete(change.resource.id);
      else this.#slots.set(change.resource.id, { entry: pendingEntry(change.resource.url), text: undefined });
      this.#changed(true);
    });
  }

  /** Increases on every change; usable as an ETag. */
  get version(): number {
    return this.#version;
  }

  get(id: string): ResponseEntry | undefined {
    return this.#slots.get(id)?.entry;
  }

  entries(): [string, ResponseEntry][] {
    return this.#store.list().map((r) => [r.id, this.#slots.get(r.id)?.entry ?? pendingEntry(r.url)]);
  }

  /** Records a fetch result, unless the resource was removed or replaced since the fetch began. */
  record(resource: Resource, result: FetchResult): Outcome | undefined {
    if (!this.#store.isCurrent(resource)) return undefined;
    const slot = this.#slots.get(resource.id);
    if (!slot) return undefined;
    const previous = slot.entry;
    const current: ResponseEntry = {
      url: resource.url,
      statusCode: result.statusCode,
      json: result.json,
      error: result.error,
      fetchedAt: result.fetchedAt,
      latencyMs: result.latencyMs,
      lastSuccessAt: result.error === null ? result.fetchedAt : previous.lastSuccessAt,
      pending: false,
    };
    this.#slots.set(resource.id, { entry: current, text: undefined });
    this.#changed(false);
    return { previous, current };
  }

  /**
   * The whole `GET /responses` document as bytes, and the version it shows (for the ETag). The
   * part before `generatedAt` is assembled from the cached text of each entry and reused until
   * something changes; a read only copies it and appends the current time (a UI's "as of").
   * `body` is a getter: the copy (~2 MiB at 1,000 resources) is made only when it is read, so an
   * answer of 304 Not Modified, which needs only the version, never makes it.
   */
  responsesDocument(now = new Date()): { readonly body: Buffer; version: number } {
    const built = this.#built;
    const reuse = built !== undefined && (built.version === this.#version || now.getTime() - built.at < this.#coalesceMs);
    const doc = reuse ? built : this.#assemble(now);
    return {
      version: doc.version,
      get body() {
        return Buffer.concat([doc.prefix, Buffer.from(`${now.toISOString()}"}`, 'latin1')]);
      },
    };
  }

  /** The document as bytes (see responsesDocument). */
  responsesBody(now = new Date()): Buffer {
    return this.responsesDocument(now).body;
  }

  #assemble(now: Date): { prefix: Buffer; version: number; at: number } {
    const parts: string[] = [];
    for (const r of this.#store.list()) {
      const slot = this.#slots.get(r.id);
      if (!slot) continue;
      slot.text ??= JSON.stringify(slot.entry);
      parts.push(`${JSON.stringify(r.id)}:${slot.text}`);
    }
    this.#built = { prefix: Buffer.from(`{"responses":{${parts.join(',')}},"generatedAt":"`, 'utf8'), version: this.#version, at: now.getTime() };
    return this.#built;
  }

  /** The `GET /responses/{id}` document (`{"response":{"<id>":{…}}}`), or undefined. */
  responseJson(id: string): string | undefined {
    const slot = this.#slots.get(id);
    if (!slot) return undefined;
    slot.text ??= JSON.stringify(slot.entry);
    return `{"response":{${JSON.stringify(id)}:${slot.text}}}`;
  }

  #changed(structural: boolean): void {
    if (structural) this.#built = undefined;
    this.#version++;
  }
}
