// The group: THE schema of the groups resource. A group is a node of the namespace tree (`/` is
// the root): its own record holds only its dependencies and version; its apps and subgroups are
// the apps and groups whose parent path it is. This module parses a group update body (Marathon's
// GroupUpdate: {id?, apps?, groups?, dependencies?, scaleBy?, version?}) with Marathon's error
// shapes and resolves relative ids. Pure: nothing here touches state.
import {
  canonicalPath,
  idErrors,
  NO_PATH_ELEMENT,
  parseApp,
  type AppDefinition,
  type Json,
  type JsonObject,
  type ParseOptions,
  type Violation,
} from './app-definition.ts';
import { InvalidObject, MalformedJson, NotFound } from '../errors.ts';

export interface GroupRecord {
  id: string;
  /** Absolute paths of apps or groups every app in this group depends on. */
  dependencies: string[];
  version: string;
}

/** A group with everything beneath it, as stored for rollback and shown by the API. */
export interface GroupTree {
  id: string;
  dependencies: string[];
  version: string;
  apps: AppDefinition[];
  groups: GroupTree[];
}

/** A parsed group update: absent lists keep what the group has; given lists replace it. */
export interface GroupUpdate {
  id: string;
  apps?: AppDefinition[];
  groups?: GroupUpdate[];
  dependencies?: string[];
  scaleBy?: number;
  version?: string;
}

export function parentOf(id: string): string {
  if (id === '/') return '/';
  const cut = id.lastIndexOf('/');
  return cut <= 0 ? '/' : id.slice(0, cut);
}

/** True when `id` is `group` or lies beneath it. */
export function isWithin(id: string, group: string): boolean {
  return group === '/' || id === group || id.startsWith(`${group}/`);
}

/** Every group on the way from the root to `id`'s parent, root first (`/a/b/c` → `/`, `/a`, `/a/b`). */
export function ancestorsOf(id: string): string[] {
  const out = ['/'];
  const parts = id.split('/').filter(Boolean);
  for (let i = 1; i < parts.length; i++) out.push(`/${parts.slice(0, i).join('/')}`);
  return id === '/' ? [] : out;
}

export function groupNotFound(id: string, version?: string): NotFound {
  return new NotFound(version ? `Group '${id}' does not exist in version ${version}` : `Group '${id}' does not exist`);
}

/** Canonical app or group id from a URL path (422 when malformed). */
export function pathId(raw: string): string {
  const trimmed = raw.replace(/\/+$/, '');
  const errs = idErrors(trimmed);
  if (errs.length) throw new InvalidObject([{ path: '/id', errors: errs }]);
  return canonicalPath(trimmed);
}

/** Canonical group id of a URL path (`''` is the root); 422 when malformed. */
export function groupPathId(raw: string): string {
  const trimmed = raw.replace(/^\/+|\/+$/g, '');
  return trimmed === '' ? '/' : pathId(trimmed);
}

type AppParse = Omit<ParseOptions, 'now' | 'pathId'>;

/**
 * Parses a group update for the group at `base` (the id in the URL). The body's own id, when given,
 * is resolved against `base`; the ids of nested apps and groups against their group, and each must
 * be a direct child of it ("Identifier is not child of /g. Hint: use relative paths.").
 */
export function parseGroupUpdate(body: unknown, base: string, parse: AppParse, now: string): GroupUpdate {
  const typeErrors: Violation[] = [];
  const semantic: Violation[] = [];
  const add = (list: Violation[], path: string, error: string) => {
    const found = list.find((v) => v.path === path);
    if (found) found.errors.push(error);
    else list.push({ path: path || '/', errors: [error] });
  };
  const read = (raw: Json | undefined, at: string, path: string, expectParent: string | null): GroupUpdate => {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      add(typeErrors, path, 'error.expected.jsobject');
      return { id: at };
    }
    const o = raw as JsonObject;
    let id = at;
    if (o.id !== undefined && o.id !== null) {
      if (typeof o.id !== 'string') add(typeErrors, `${path}/id`, 'error.expected.jsstring');
      else if (o.id.replace(/\/+/g, '') !== '') {
        const base = expectParent ?? at;
        const resolved = canonicalPath(o.id, base);
        // A group id that resolves to the root (`/a/..`, `..` climbing above it) names the root
        // group, as `/` does: no "Path must contain at least one path element" for groups.
        const errs = idErrors(o.id, base).filter((e) => resolved !== '/' || e !== NO_PATH_ELEMENT);
        if (errs.length) add(semantic, `${path}/id`, errs[0]!);
        else id = resolved;
      } else if (o.id.startsWith('/')) id = '/';
    } else if (expectParent !== null) add(typeErrors, `${path}/id`, 'error.path.missing');
    if (expectParent !== null && (id === '/' || parentOf(id) !== expectParent) && !semantic.some((v) => v.path === `${path}/id`)) {
      add(semantic, `${path}/id`, `Identifier is not child of ${expectParent}. Hint: use relative paths.`);
    }
    const out: GroupUpdate = { id };
    if (o.dependencies !== undefined && o.dependencies !== null) {
      if (!Array.isArray(o.dependencies)) add(typeErrors, `${path}/dependencies`, 'error.expected.jsarray');
      else {
        out.dependencies = [];
        o.dependencies.forEach((d, i) => {
          if (typeof d !== 'string') return add(typeErrors, `${path}/dependencies(${i})`, 'error.expected.jsstring');
          const errs = idErrors(d, id);
          if (errs.length) return add(semantic, `${path}/dependencies(${i})`, errs[0]!);
          const resolved = canonicalPath(d, id);
          out.dependencies!.push(resolved);
        });
      }
    }
    if (o.scaleBy !== undefined && o.scaleBy !== null) {
      const n = typeof o.scaleBy === 'string' && o.scaleBy.trim() !== '' ? Number(o.scaleBy) : o.scaleBy;
      if (typeof n !== 'number' || !Number.isFinite(n)) add(typeErrors, `${path}/scaleBy`, 'error.expected.jsnumber');
      else if (n < 0) add(semantic, `${path}/scaleBy`, `got ${n}, expected 0 or more`);
      else out.scaleBy = n;
    }
    if (o.version !== undefined && o.version !== null) {
      if (typeof o.version !== 'string') add(typeErrors, `${path}/version`, 'error.expected.jsstring');
      else if (Number.isNaN(Date.parse(o.version))) add(semantic, `${path}/version`, `not a timestamp: ${o.version}`);
      else out.version = new Date(o.version).toISOString();
    }
    if (o.apps !== undefined && o.apps !== null) {
      if (!Array.isArray(o.apps)) add(typeErrors, `${path}/apps`, 'error.expected.jsarray');
      else out.apps = o.apps.flatMap((a, i) => readApp(a, id, `${path}/apps(${i})`));
    }
    if (o.groups !== undefined && o.groups !== null) {
      if (!Array.isArray(o.groups)) add(typeErrors, `${path}/groups`, 'error.expected.jsarray');
      else out.groups = o.groups.map((g, i) => read(g, id, `${path}/groups(${i})`, id));
    }
    return out;
  };
  // Nested apps: the id resolves against the group; parseApp's error paths get the app's prefix.
  const readApp = (raw: Json, group: string, path: string): AppDefinition[] => {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      add(typeErrors, path, 'error.expected.jsobject');
      return [];
    }
    const o = raw as JsonObject;
    if (typeof o.id !== 'string') {
      add(typeErrors, `${path}/id`, o.id === undefined || o.id === null ? 'error.path.missing' : 'error.expected.jsstring');
      return [];
    }
    const errs = idErrors(o.id, group);
    const resolved = canonicalPath(o.id, group);
    if (errs.length) {
      add(semantic, `${path}/id`, errs[0]!);
      return [];
    }
    if (parentOf(resolved) !== group) add(semantic, `${path}/id`, `Identifier is not child of ${group}. Hint: use relative paths.`);
    // Dependencies written relative to the group resolve the same way for the app (its parent).
    try {
      return [parseApp(o, { ...parse, now, pathId: resolved, dependencyBase: group })];
    } catch (err) {
      if (!(err instanceof MalformedJson || err instanceof InvalidObject) || !Array.isArray(err.details)) throw err;
      const list = err instanceof MalformedJson ? typeErrors : semantic;
      for (const v of err.details) for (const e of v.errors) add(list, `${path}${v.path === '/' ? '' : v.path}`, e);
      return [];
    }
  };
  const update = read(body as Json, base, '', null);
  if (typeErrors.length) throw new MalformedJson(typeErrors);
  if (semantic.length) throw new InvalidObject(semantic);
  return update;
}
