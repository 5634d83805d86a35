// The collector's resources: what to fetch, keyed by a client-chosen id. Ids are unique (star
// kept two entries for one id; here a second POST with another url is refused and PUT replaces).
// Every add or replace creates a new Resource object, so a fetch that started before a change can
// tell that its result is outdated (identity check) and drop it.
import { parseTarget } from '../shared/targets.ts';

export interface Resource {
  readonly id: string;
  readonly url: string;
}

/** Safe ids: usable in a URL path, a Prometheus label and a file name without escaping. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const ID_RULE = '1 to 128 characters: letters, digits, ".", "_" and "-", starting with a letter or digit';
/** `GET /responses/example` serves star's sample data, so no resource may take that id. */
export const RESERVED_IDS = new Set(['example']);
export const MAX_URL_LENGTH = 2048;

export class ResourceError extends Error {}

/** The message of every 404 for an unknown resource id (GET/DELETE /resources/{id}, GET /responses/{id}). */
export const noResourceMessage = (id: string) => `no resource with id ${JSON.stringify(id)}`;

/** Checks an `id` value; returns it or throws a ResourceError that says what is wrong. */
export function validateId(value: unknown): string {
  if (value === undefined || value === null) throw new ResourceError('field "id" is required');
  if (typeof value !== 'string')
    throw new ResourceError(
      `field "id" must be a string (got ${typeof value === 'object' ? (Array.isArray(value) ? 'an array' : 'an object') : `a ${typeof value}`})`,
    );
  if (!ID_PATTERN.test(value))
    throw new ResourceError(`field "id" ${JSON.stringify(value.length > 140 ? `${value.slice(0, 140)}…` : value)} is not a valid id (${ID_RULE})`);
  if (RESERVED_IDS.has(value)) throw new ResourceError(`id "${value}" is reserved (GET /responses/example serves the sample data)`);
  return value;
}

/** Checks a `url` value: an absolute http:// or https:// URL with a host. */
export function validateUrl(value: unknown): string {
  if (value === undefined || value === null) throw new ResourceError('field "url" is required');
  if (typeof value !== 'string')
    throw new ResourceError(
      `field "url" must be a string (got ${typeof value === 'object' ? (Array.isArray(value) ? 'an array' : 'an object') : `a ${typeof value}`})`,
    );
  if (value.length > MAX_URL_LENGTH) throw new ResourceError(`field "url" is longer than ${MAX_URL_LENGTH} characters`);
  const url = value.trim();
  if (!/^https?:\/\//i.test(url)) throw new ResourceError(`field "url" ${JSON.stringify(value)} must be an http:// or https:// URL`);
  if (!/^https?:\/\/[^/?#\s]/i.test(url)) throw new ResourceError(`field "url" ${JSON.stringify(value)} is not valid: URL has no host`);
  try {
    parseTarget(url);
  } catch (err) {
    throw new ResourceError(`field "url" ${JSON.stringify(value)} is not valid: ${(err as Error).message.replace(/^bad target "[^"]*": /, '')}`);
  }
  return url;
}

/** Validates a `{id, url}` document (extra fields are ignored, as star did). */
export function validateResource(body: unknown): Resource {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ResourceError(
      `expected a JSON object {"id": "…", "url": "http://…"} (got ${body === undefined ? 'no body' : body === null ? 'null' : Array.isArray(body) ? 'an array' : `a ${typeof body}`})`,
    );
  }
  const b = body as Record<string, unknown>;
  return { id: validateId(b.id), url: validateUrl(b.url) };
}

export type Change = { kind: 'added' | 'removed'; resource: Resource } | { kind: 'replaced'; resource: Resource; previous: Resource };

export type PutResult = { outcome: 'created' | 'replaced' | 'unchanged'; resource: Resource };
export type AddResult = { outcome: 'created' | 'unchanged'; resource: Resource } | { outcome: 'conflict'; resource: Resource };

export class ResourceStore {
  readonly #map = new Map<string, Resource>();
  readonly #listeners: ((change: Change) => void)[] = [];
  #list: readonly Resource[] | undefined;

  constructor(initial: readonly Resource[] = []) {
    for (const r of initial) this.#map.set(r.id, { id: r.id, url: r.url });
  }

  onChange(listener: (change: Change) => void): void {
    this.#listeners.push(listener);
  }

  get size(): number {
    return this.#map.size;
  }

  get(id: string): Resource | undefined {
    return this.#map.get(id);
  }

  /** The resources in the order they were added (cached until the next change). */
  list(): readonly Resource[] {
    this.#list ??= [...this.#map.values()];
    return this.#list;
  }

  /** POST semantics: a new id is added; the same pair again is harmless; another url is a conflict. */
  add(resource: Resource): AddResult {
    const existing = this.#map.get(resource.id);
    if (existing) return existing.url === resource.url ? { outcome: 'unchanged', resource: existing } : { outcome: 'conflict', resource: existing };
    const created = { id: resource.id, url: resource.url };
    this.#map.set(created.id, created);
    this.#emit({ kind: 'added', resource: created });
    return { outcome: 'created', resource: created };
  }

  /** PUT semantics: creates or replaces the resource with this id. */
  put(resource: Resource): PutResult {
    const existing = this.#map.get(resource.id);
    if (existing && existing.url === resource.url) return { outcome: 'unchanged', resource: existing };
    const next = { id: resource.id, url: resource.url };
    this.#map.set(next.id, next);
    this.#emit(existing ? { kind: 'replaced', resource: next, previous: existing } : { kind: 'added', resource: next });
    return { outcome: existing ? 'replaced' : 'created', resource: next };
  }

  remove(id: string): Resource | undefined {
    const existing = this.#map.get(id);
    if (!existing) return undefined;
    this.#map.delete(id);
    this.#emit({ kind: 'removed', resource: existing });
    return existing;
  }

  /** True while `resource` is still the current entry for its id (not removed nor replaced). */
  isCurrent(resource: Resource): boolean {
    return this.#map.get(resource.id) === resource;
  }

  #emit(change: Change): void {
    this.#list = undefined;
    for (const l of this.#listeners) l(change);
  }
}
