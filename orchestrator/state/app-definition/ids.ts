// Path ids of apps and groups (`/group/app`): Marathon's segment rule, canonical forms (`.` and
// `..` resolved) and the bound on their size (bounds.ts).
import { idBoundErrors } from '../bounds.ts';

const SEGMENT = /^(([a-z0-9]|[a-z0-9][a-z0-9-]*[a-z0-9])\.)*([a-z0-9]|[a-z0-9][a-z0-9-]*[a-z0-9])$/;
/** The segment rule as Marathon's message prints it. */
const SEGMENT_RE_TEXT = '^(([a-z0-9]|[a-z0-9][a-z0-9\\-]*[a-z0-9])\\.)*([a-z0-9]|[a-z0-9][a-z0-9\\-]*[a-z0-9])|(\\.|\\.\\.)$';

/** Canonical absolute path: resolves `.` and `..` against `base`; returns null if it escapes the root. */
export function canonicalPath(id: string, base = '/'): string | null {
  const parts = id.startsWith('/') ? [] : base.split('/').filter(Boolean);
  for (const seg of id.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (parts.length === 0) return null;
      parts.pop();
    } else parts.push(seg);
  }
  return '/' + parts.join('/');
}

/** What is wrong with an id (empty when nothing). */
export function idErrors(raw: string): string[] {
  const segs = raw.split('/').filter((s) => s !== '');
  if (segs.length === 0) return ['Path must contain at least one path element'];
  const bound = idBoundErrors(raw);
  if (bound.length) return bound;
  for (const s of segs) {
    if (s === '.' || s === '..') continue;
    if (!SEGMENT.test(s)) return [`must fully match regular expression '${SEGMENT_RE_TEXT}'`];
  }
  return [];
}

/** The id as one file-name segment (`/g/a` → `g_a`). */
export function safePath(appId: string): string {
  return appId.split('/').filter(Boolean).join('_');
}
