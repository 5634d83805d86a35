// Readiness checks (`readinessChecks`, at most one): an HTTP(S) check on a named port of the app
// that a restart waits for before it counts a new task as ready.
import type { FieldReader } from './field-reader.ts';
import { appPortNames } from './ports.ts';
import type { AppDefinition, JsonObject, ReadinessCheck } from './types.ts';
import type { Violations } from './violations.ts';

/** Marathon's ReadinessCheck with its defaults (name readinessCheck, HTTP /, port http-api, 30 s / 10 s, [200]). */
export function readReadinessCheck(r: FieldReader, o: JsonObject, p: string): ReadinessCheck {
  return {
    name: r.str(o, 'name', p) ?? 'readinessCheck',
    protocol: (r.str(o, 'protocol', p) ?? 'HTTP') as ReadinessCheck['protocol'],
    path: r.str(o, 'path', p) ?? '/',
    portName: r.str(o, 'portName', p) ?? 'http-api',
    intervalSeconds: r.num(o, 'intervalSeconds', p) ?? 30,
    timeoutSeconds: r.num(o, 'timeoutSeconds', p) ?? 10,
    httpStatusCodesForReady: (r.arr(o, 'httpStatusCodesForReady', p) ?? [200]).map((c, i) =>
      typeof c === 'number' ? c : (r.add(`${p}/httpStatusCodesForReady(${i})`, 'error.expected.jsnumber'), 0),
    ),
    preserveLastResponse: r.bool(o, 'preserveLastResponse', p) ?? false,
  };
}

export function validateReadinessChecks(app: AppDefinition, v: Violations): void {
  if (app.readinessChecks.length > 1) v.add('/readinessChecks', 'must have at most 1 element');
  const portNames = appPortNames(app);
  app.readinessChecks.forEach((rc, i) => {
    const rp = `/readinessChecks(${i})`;
    if (!['HTTP', 'HTTPS'].includes(rc.protocol)) v.add(`${rp}/protocol`, 'is not one of (HTTP, HTTPS)');
    if (!portNames.includes(rc.portName))
      v.add(`${rp}/portName`, `must name a port of the app (${portNames.length ? portNames.join(', ') : 'the app has no named ports'})`);
    if (rc.intervalSeconds <= 0) v.add(`${rp}/intervalSeconds`, `got ${rc.intervalSeconds}, expected more than 0`);
    if (rc.timeoutSeconds <= 0 || rc.timeoutSeconds >= rc.intervalSeconds) v.add(`${rp}/timeoutSeconds`, 'must be more than 0 and less than intervalSeconds');
    if (rc.httpStatusCodesForReady.length === 0 || rc.httpStatusCodesForReady.some((c) => !Number.isInteger(c) || c < 100 || c > 999))
      v.add(`${rp}/httpStatusCodesForReady`, 'must be a non-empty list of HTTP status codes');
  });
}
