// A definition read back from the database at start-up. The process must start whatever the
// database holds (a row written by an older version, before a limit existed, or edited by hand):
// each definition is read again as a request would be, so the scheduler only ever sees well-formed
// definitions. One that fails its limits is kept (it shows in the API and can be updated) and its
// app launches nothing (bounds.ts definitionProblem); one that cannot be read at all is left out
// of this run, untouched in the database, and named in the log.
import { readApp, type AppDefinition, type JsonObject } from '../state/app-definition.ts';
import { LIMITS, nestedDeeperThan } from '../state/bounds.ts';
import { withPlainMaps } from '../state/labels.ts';
import { InvalidObject, MalformedJson } from '../errors.ts';

export type RevivedApp = { app: AppDefinition } | { problem: string };

const isTimestamp = (v: unknown): v is string => typeof v === 'string' && !Number.isNaN(Date.parse(v));

export function reviveApp(key: string, stored: unknown): RevivedApp {
  if (stored === null || typeof stored !== 'object' || Array.isArray(stored)) return { problem: 'not a JSON object' };
  // Twice a request's depth: a stored definition is at most a request's app plus what was added.
  if (nestedDeeperThan(stored, LIMITS.jsonDepth * 2)) return { problem: `nested deeper than ${LIMITS.jsonDepth * 2}` };
  const o = stored as JsonObject;
  if (o.id !== key) return { problem: `its id ${JSON.stringify(o.id)} is not its key` };
  const version = isTimestamp(o.version) ? o.version : new Date(0).toISOString();
  // Stored definitions keep `uris` beside the `fetch` made from them; a request may not give both.
  const { uris, ...rest } = o;
  let app: AppDefinition;
  try {
    app = readApp(rest, { pathId: key, now: version }).app;
  } catch (err) {
    const details = err instanceof MalformedJson || err instanceof InvalidObject ? JSON.stringify(err.details) : (err as Error).message;
    return { problem: `not a readable app definition: ${details}` };
  }
  if (Array.isArray(uris) && uris.every((u) => typeof u === 'string')) app.uris = uris as string[];
  const info = o.versionInfo as JsonObject | undefined;
  if (info && isTimestamp(info.lastScalingAt) && isTimestamp(info.lastConfigChangeAt))
    app.versionInfo = { lastScalingAt: info.lastScalingAt, lastConfigChangeAt: info.lastConfigChangeAt };
  else app.versionInfo = { lastScalingAt: version, lastConfigChangeAt: version };
  return { app: withPlainMaps(app) };
}
