// Comparing and merging app definitions: what an update keeps (service ports, fields given as
// null), and whether a change is a configuration change or only a scale. Pure.
import type { AppDefinition, JsonObject } from './app-definition.ts';

/** The version of an app's configuration: its last config change (a scale keeps it). */
export function configVersionOf(app: AppDefinition): string {
  return app.versionInfo?.lastConfigChangeAt ?? app.version;
}

/** A definition that asks for service port 0 keeps the port its app already has at that index. */
export function keepServicePorts(before: AppDefinition, next: AppDefinition): AppDefinition {
  const kept = (given: number, i: number, had: number[]) => (given === 0 && had[i] !== undefined ? had[i]! : given);
  const out: AppDefinition = { ...next };
  const d = next.container?.docker;
  const bd = before.container?.docker;
  if (d && bd && d.portMappings.length) {
    out.container = {
      ...next.container!,
      docker: {
        ...d,
        portMappings: d.portMappings.map((m, i) => ({
          ...m,
          servicePort: kept(
            m.servicePort,
            i,
            bd.portMappings.map((x) => x.servicePort),
          ),
        })),
      },
    };
  } else if (next.portDefinitions && !next.requirePorts) {
    const had = before.portDefinitions?.map((p) => p.port) ?? [];
    out.portDefinitions = next.portDefinitions.map((p, i) => ({ ...p, port: kept(p.port, i, had) }));
    out.ports = out.portDefinitions.map((p) => p.port);
  }
  return out;
}

/** Keys that make a change a configuration change (not only scaling). */
export function isConfigChange(a: AppDefinition, b: AppDefinition): boolean {
  const strip = (x: AppDefinition) => {
    const { instances: _i, version: _v, versionInfo: _vi, ...rest } = x;
    return sortedJson(rest);
  };
  return strip(a) !== strip(b);
}

/**
 * JSON with every object's keys sorted: the same definition read back from the database (whose
 * objects may list their keys in another order) is the same text. Definitions are bounded in
 * depth (bounds.ts), so the recursion is too.
 */
function sortedJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(sortedJson).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${sortedJson(o[k])}`)
    .join(',')}}`;
}

/**
 * The stored definition with a partial update merged onto it (top level only, as Marathon's
 * AppUpdate). A field given as `null` keeps its current value, as in Marathon 1.4 (go-marathon
 * scales with `{"instances": 3, "ports": null, "dependencies": null}`): it is no reset.
 */
export function toMergeBase(app: AppDefinition, given: JsonObject): JsonObject {
  const update: JsonObject = {};
  for (const [k, v] of Object.entries(given))
    if (v !== null) Object.defineProperty(update, k, { value: v, enumerable: true, writable: true, configurable: true });
  const base = JSON.parse(JSON.stringify(app)) as JsonObject;
  const has = (k: string) => Object.hasOwn(update, k);
  delete base.version;
  delete base.versionInfo;
  if (has('cmd')) base.args = null;
  if (has('args')) base.cmd = null;
  if (has('portDefinitions')) delete base.ports;
  if (has('ports')) delete base.portDefinitions;
  if (has('fetch')) delete base.uris;
  if (has('uris')) delete base.fetch;
  if (has('ipAddress')) {
    delete base.ports;
    delete base.portDefinitions;
  }
  if (has('container')) {
    const c = update.container as JsonObject;
    const d = c && typeof c === 'object' && !Array.isArray(c) ? (c.docker as JsonObject | undefined) : undefined;
    if (d && typeof d === 'object' && d.network !== undefined && d.network !== 'HOST' && !has('portDefinitions') && !has('ports')) {
      delete base.ports;
      delete base.portDefinitions;
    }
  }
  // Fields the stored form spells differently from the input.
  delete base.uris;
  if (Array.isArray(base.fetch) && base.fetch.length === 0) delete base.fetch;
  return { ...base, ...update };
}
