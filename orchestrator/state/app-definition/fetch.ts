// What a task fetches before it starts: `fetch` entries, or the older `uris` (each becomes an
// entry, archives extracted). Giving both is refused at parse time (400).
import type { FieldReader } from './field-reader.ts';
import type { FetchUri, JsonObject } from './types.ts';

const ARCHIVE = /\.(tgz|tar\.gz|tbz2|tar\.bz2|txz|tar\.xz|zip)$/;

/** The `fetch` entries given (`given` is undefined when the body has no fetch list). */
export function readFetch(r: FieldReader, o: JsonObject): { given: JsonObject[] | undefined; entries: FetchUri[] } {
  const given = r.objArr(o, 'fetch', '');
  const entries = (given ?? []).map((f, i) => {
    const fp = `/fetch(${i})`;
    const uri = r.str(f, 'uri', fp);
    if (uri === undefined) r.add(`${fp}/uri`, 'error.path.missing');
    const destPath = r.str(f, 'destPath', fp);
    return {
      uri: uri ?? '',
      extract: r.bool(f, 'extract', fp) ?? true,
      executable: r.bool(f, 'executable', fp) ?? false,
      cache: r.bool(f, 'cache', fp) ?? false,
      ...(destPath !== undefined ? { destPath } : {}),
    };
  });
  return { given, entries };
}

/** Marathon's parse-time rule (400 on "/"). */
export function checkFetchGiven(r: FieldReader, uris: string[] | undefined, fetchGiven: JsonObject[] | undefined): void {
  if (uris && uris.length > 0 && fetchGiven && fetchGiven.length > 0) r.add('/', 'You cannot specify both uris and fetch fields');
}

/** The fetch list: the entries given, else one entry per uri. */
export function normaliseFetch(entries: FetchUri[], uris: string[]): FetchUri[] {
  return entries.length ? entries : uris.map((uri) => ({ uri, extract: ARCHIVE.test(uri), executable: false, cache: false }));
}
