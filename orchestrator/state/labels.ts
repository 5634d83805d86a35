// Labels (and env) as prototype-free maps. In a plain object, `labels.constructor` is inherited
// (a selector `constructor` matched apps without labels) and `labels.__proto__ = v` sets the
// prototype instead of a key (a `__proto__` label vanished). In a map made by Object.create(null)
// every key, these included, is a plain key. JSON.parse and spreads keep `__proto__` as an own
// key, but give back ordinary objects: definitions read from the database or deep-copied through
// JSON pass through withPlainMaps.
import type { AppDefinition } from './app-definition.ts';

/** An empty map without prototype, or one with these entries. */
export function plainMap<V>(from?: Record<string, V>): Record<string, V> {
  const out = Object.create(null) as Record<string, V>;
  if (from) for (const k of Object.keys(from)) out[k] = from[k]!;
  return out;
}

/** True when `map` has `key` itself (never through a prototype). */
export function hasLabel(map: Record<string, string>, key: string): boolean {
  return Object.hasOwn(map, key);
}

/** The definition with its label maps and env as prototype-free maps (a shallow copy where needed). */
export function withPlainMaps(app: AppDefinition): AppDefinition {
  const out: AppDefinition = { ...app, labels: plainMap(app.labels), env: plainMap(app.env) };
  if (app.portDefinitions) out.portDefinitions = app.portDefinitions.map((p) => ({ ...p, labels: plainMap(p.labels) }));
  const docker = app.container?.docker;
  if (app.container && docker)
    out.container = { ...app.container, docker: { ...docker, portMappings: docker.portMappings.map((m) => ({ ...m, labels: plainMap(m.labels) })) } };
  if (app.ipAddress) out.ipAddress = { ...app.ipAddress, labels: plainMap(app.ipAddress.labels) };
  return out;
}
