// The collector's resource store and response cache without the network: id and url rules,
// POST/PUT/DELETE semantics, results of outdated fetches dropped, and the cached document.
import { describe, expect, it } from 'vitest';
import type { FetchResult } from '../collector/fetcher.ts';
import { ResponseCache } from '../collector/responses.ts';
import { ResourceError, ResourceStore, validateId, validateUrl } from '../collector/resources.ts';

const ok = (json: unknown): FetchResult => ({ statusCode: 200, json: JSON.stringify(json), error: null, latencyMs: 1, fetchedAt: new Date().toISOString() });

describe('resource rules', () => {
  it('accepts safe ids and http(s) urls only', () => {
    for (const id of ['a', 'A-1', 'probe_9.x', 'x'.repeat(128), '0']) expect(validateId(id)).toBe(id);
    for (const id of ['', '-a', '.a', 'a b', 'a/b', 'é', 'x'.repeat(129), 'example', 'a%20b']) expect(() => validateId(id), id).toThrow(ResourceError);
    for (const url of ['http://a/status', 'https://[::1]:8443/x?y=1', 'HTTP://A:80/']) expect(validateUrl(url)).toBe(url);
    for (const url of ['ftp://a/', 'a:80', 'tcp://a:80', 'http://', 'http:///x', 'http://a:0/', 'http://u:p@a/', `http://a/${'x'.repeat(2048)}`]) {
      expect(() => validateUrl(url), url).toThrow(ResourceError);
    }
  });
});

describe('ResourceStore and ResponseCache', () => {
  it('POST semantics: created, unchanged, conflict; PUT replaces; DELETE removes', () => {
    const store = new ResourceStore();
    expect(store.add({ id: 'a', url: 'http://a/' }).outcome).toBe('created');
    expect(store.add({ id: 'a', url: 'http://a/' }).outcome).toBe('unchanged');
    expect(store.add({ id: 'a', url: 'http://b/' })).toEqual({ outcome: 'conflict', resource: { id: 'a', url: 'http://a/' } });
    expect(store.put({ id: 'a', url: 'http://b/' }).outcome).toBe('replaced');
    expect(store.put({ id: 'a', url: 'http://b/' }).outcome).toBe('unchanged');
    expect(store.put({ id: 'c', url: 'http://c/' }).outcome).toBe('created');
    expect(store.list().map((r) => r.id)).toEqual(['a', 'c']);
    expect(store.remove('a')).toEqual({ id: 'a', url: 'http://b/' });
    expect(store.remove('a')).toBeUndefined();
    expect(store.list().map((r) => r.id)).toEqual(['c']);
  });

  it('drops the result of a fetch that began before the resource was replaced or removed', () => {
    const store = new ResourceStore([{ id: 'a', url: 'http://a/' }]);
    const cache = new ResponseCache(store);
    const old = store.get('a')!;
    store.put({ id: 'a', url: 'http://b/' });
    expect(cache.record(old, ok({ stale: true }))).toBeUndefined();
    expect(cache.get('a')).toMatchObject({ url: 'http://b/', pending: true, error: null });
    const current = store.get('a')!;
    store.remove('a');
    expect(cache.record(current, ok({}))).toBeUndefined();
    expect(cache.get('a')).toBeUndefined();
    expect(JSON.parse(cache.responsesBody().toString()).responses).toEqual({});
  });

  it('keeps lastSuccessAt across failures and the document follows every change', () => {
    const store = new ResourceStore([{ id: 'a', url: 'http://a/' }]);
    const cache = new ResponseCache(store);
    const r = store.get('a')!;
    const at = new Date('2026-01-01T00:00:00.000Z');
    const v0 = cache.version;
    const first = cache.responsesBody(at);
    expect(JSON.parse(first.toString())).toEqual({ responses: { a: null }, details: { a: cache.get('a') }, generatedAt: at.toISOString() });
    expect(cache.version).toBe(v0);
    const good = ok({ n: 1 });
    cache.record(r, good);
    expect(cache.version).toBe(v0 + 1);
    const second = cache.responsesBody(at);
    expect(second.equals(first)).toBe(false);
    expect(JSON.parse(second.toString()).responses.a).toEqual({ url: 'http://a/', statusCode: 200, json: { n: 1 } });
    expect(JSON.parse(second.toString()).details.a).toMatchObject({ lastSuccessAt: good.fetchedAt, pending: false, error: null });
    cache.record(r, {
      statusCode: null,
      json: null,
      error: { reason: 'timeout', message: 'no answer' },
      latencyMs: 2000,
      fetchedAt: new Date(Date.now() + 1000).toISOString(),
    });
    expect(cache.get('a')).toMatchObject({ error: { reason: 'timeout' }, lastSuccessAt: good.fetchedAt });
    expect(JSON.parse(cache.responseBody('a')!.toString())).toEqual({ response: { a: null }, details: { a: cache.get('a') } });
  });

  it('coalesces reassembly while results stream in, but shows added and removed resources at once', () => {
    const store = new ResourceStore([{ id: 'a', url: 'http://a/' }]);
    const cache = new ResponseCache(store, { coalesceMs: 1000 });
    const t0 = Date.parse('2026-01-01T00:00:00.000Z');
    const doc = (ms: number) => JSON.parse(cache.responsesBody(new Date(t0 + ms)).toString());
    const first = cache.responsesDocument(t0);
    expect(doc(0)).toEqual({
      responses: { a: null },
      details: { a: { url: 'http://a/', statusCode: null, error: null, fetchedAt: null, latencyMs: null, lastSuccessAt: null, pending: true } },
      generatedAt: new Date(t0).toISOString(),
    });
    cache.record(store.get('a')!, ok({ n: 1 }));
    expect(cache.responsesDocument(t0 + 10)).toBe(first);
    expect(doc(10).details.a.pending).toBe(true);
    expect(doc(10).generatedAt).toBe(new Date(t0 + 10).toISOString());
    const later = cache.responsesDocument(t0 + 1001);
    expect(later.version).toBeGreaterThan(first.version);
    expect(doc(1001).responses.a.json).toEqual({ n: 1 });
    store.add({ id: 'b', url: 'http://b/' });
    expect(Object.keys(doc(1002).responses)).toEqual(['a', 'b']);
    expect(Object.keys(doc(1002).details)).toEqual(['a', 'b']);
    store.remove('a');
    expect(Object.keys(doc(1003).responses)).toEqual(['b']);
  });
});
