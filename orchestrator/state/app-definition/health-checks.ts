// Health checks (`healthChecks`): read with Marathon's defaults per protocol, given the first port
// when they name none, then checked (known protocol, a command for COMMAND, a port that exists,
// at most one check run by Mesos).
import type { FieldReader } from './field-reader.ts';
import type { HealthCheck, JsonObject } from './types.ts';
import type { Violations } from './violations.ts';

const PROTOCOLS = ['HTTP', 'HTTPS', 'TCP', 'COMMAND', 'MESOS_HTTP', 'MESOS_HTTPS', 'MESOS_TCP'];
const PORT_PROTOCOLS = ['HTTP', 'HTTPS', 'TCP', 'MESOS_HTTP', 'MESOS_HTTPS', 'MESOS_TCP'];
const PORT_INDEX_MESSAGE = 'Health check port indices must address an element of the ports array or container port mappings.';

export function readHealthCheck(r: FieldReader, h: JsonObject, hp: string): HealthCheck {
  const protocol = r.str(h, 'protocol', hp) ?? 'HTTP';
  const cmdObj = r.obj(h, 'command', hp);
  const command = cmdObj ? { value: r.str(cmdObj, 'value', `${hp}/command`) ?? '' } : null;
  let portIndex: number | undefined;
  if (typeof h.portIndex === 'string' && !/^\d+$/.test(h.portIndex)) portIndex = undefined;
  else portIndex = r.num(h, 'portIndex', hp, true);
  const port = r.num(h, 'port', hp, true);
  const path = r.str(h, 'path', hp);
  const out: HealthCheck = {
    protocol,
    gracePeriodSeconds: r.num(h, 'gracePeriodSeconds', hp) ?? 15,
    intervalSeconds: r.num(h, 'intervalSeconds', hp) ?? 10,
    timeoutSeconds: r.num(h, 'timeoutSeconds', hp) ?? 20,
    maxConsecutiveFailures: r.num(h, 'maxConsecutiveFailures', hp, true) ?? 3,
  };
  if (protocol === 'HTTP' || protocol === 'HTTPS' || protocol === 'MESOS_HTTP' || protocol === 'MESOS_HTTPS') out.path = path ?? '/';
  if (portIndex !== undefined) out.portIndex = portIndex;
  if (port !== undefined) out.port = port;
  if (protocol === 'COMMAND' || protocol === 'Command') {
    out.protocol = 'COMMAND';
    out.command = command;
    out.delaySeconds = r.num(h, 'delaySeconds', hp) ?? 15;
  }
  if (protocol === 'HTTP' || protocol === 'HTTPS') out.ignoreHttp1xx = r.bool(h, 'ignoreHttp1xx', hp) ?? false;
  return out;
}

/** A check that needs a port and names none uses the app's first port (when it has one). */
export function normaliseHealthChecks(checks: HealthCheck[], portCount: number): HealthCheck[] {
  return checks.map((h) =>
    h.port === undefined && h.portIndex === undefined && portCount > 0 && PORT_PROTOCOLS.includes(h.protocol) ? { ...h, portIndex: 0 } : h,
  );
}

export function validateHealthChecks(checks: HealthCheck[], portCount: number, v: Violations): void {
  let mesosChecks = 0;
  checks.forEach((h, i) => {
    const hp = `/healthChecks(${i})`;
    if (!PROTOCOLS.includes(h.protocol)) v.add(`${hp}/protocol`, `is not one of (${PROTOCOLS.join(', ')})`);
    if (h.protocol === 'COMMAND' || h.protocol.startsWith('MESOS_')) mesosChecks++;
    if (h.protocol === 'COMMAND' && (!h.command || !h.command.value)) v.add(`${hp}/command`, 'not defined');
    for (const k of ['gracePeriodSeconds', 'intervalSeconds', 'timeoutSeconds', 'maxConsecutiveFailures'] as const)
      if (h[k] < 0) v.add(`${hp}/${k}`, `got ${h[k]}, expected 0 or more`);
    if (h.port !== undefined && (h.port < 0 || h.port > 65535)) v.add(`${hp}/port`, `got ${h.port}, expected between 0 and 65535`);
    if (h.protocol !== 'COMMAND' && h.portIndex !== undefined && (h.portIndex < 0 || h.portIndex >= portCount)) v.add('/', PORT_INDEX_MESSAGE);
    if (h.protocol !== 'COMMAND' && h.portIndex === undefined && h.port === undefined) v.add('/', PORT_INDEX_MESSAGE);
  });
  if (mesosChecks > 1) v.add('/', 'AppDefinition can contain at most one Mesos health check');
}
