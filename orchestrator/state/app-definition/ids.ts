// Path ids of apps and groups (`/group/app`): Marathon's segment rule, canonical forms (`.` and
// `..` resolved) and the bound on their size (bounds.ts).
import { idBoundErrors } from '../bounds.ts';

/** Marathon's message for an id with no segment left once canonical. */
export const NO_PATH_ELEMENT = 'Path must contain at least one path element';
const SEGMENT = /^(([a-z0-9]|[a-z0-9][a-z0-9-]*[a-z0-9])\.)*([a-z0-9]|[a-z0-9][a-z0-9-]*[a-z0-9])$/;
/** The segment rule as Marathon's message prints it. */
const SEGMENT_RE_TEXT = '^(([a-z0-9]|[a-z0-9][a-z0-9\\-]*[a-z0-9])\\.)*([a-z0-9]|[a-z0-9][a-z0-9\\-]*[a-z0-9])|(\\.|\\.\\.)$';

/**
 * Canonical absolute path: resolves `.` and `..` against `base`. As Marathon's
 * `PathId.canonicalPath`, a `..` at the root stays at the root (`/a/../../b` is `/b`, `/a/../..` is
 * `/`), so an id that climbs above the root is then refused as empty (`idErrors`) or as not a child
 * of its group, never kept raw.
 */
export function canonicalPath(id: string, base = '/'): string {
  const parts = id.startsWith('/') ? [] : base.split('/').filter(Boolean);
  for (const seg of id.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') parts.pop();
    else parts.push(seg);
  }
  return '/' + parts.join('/');
}

/**
 * What is wrong with an id (empty when nothing): Marathon validates the canonical id, so one that
 * resolves to the root (`/`, `/a/..`, `/a/../..`) has no path element.
 */
export function idErrors(raw: string, base = '/'): string[] {
  const segs = raw.split('/').filter((s) => s !== '');
  if (segs.length === 0) return [NO_PATH_ELEMENT];
  const bound = idBoundErrors(raw);
  if (bound.length) return bound;
  for (const s of segs) {
    if (s === '.' || s === '..') continue;
    if (!SEGMENT.test(s)) return [`must fully match regular expression '${SEGMENT_RE_TEXT}'`];
  }
  return canonicalPath(raw, base) === '/' ? [NO_PATH_ELEMENT] : [];
}

/** The id as one file-name segment (`/g/a` → `g_a`). */
export function safePath(appId: string): string {
  return appId.split('/').filter(Boolean).join('_');
}
