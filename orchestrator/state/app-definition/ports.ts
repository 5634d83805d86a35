// The app's ports: `ports` (numbers) and `portDefinitions` on the host, a bridged docker
// container's `portMappings` (container.ts reads them), or none when the app has its own IP
// address. Reading, Marathon's parse-time rules (400), the normalised `portDefinitions`, and the
// semantic checks (422).
import type { FieldReader } from './field-reader.ts';
import type { AppDefinition, Container, Json, JsonObject, PortDefinition, PortMapping } from './types.ts';
import type { Violations } from './violations.ts';

const PROTOCOLS = ['tcp', 'udp', 'udp,tcp', 'tcp,udp'];

/** The port fields as given in a body (raw lists kept: the parse-time rules look at what was given). */
export interface PortsGiven {
  portsRaw: Json[] | undefined;
  ports: number[];
  pdRaw: JsonObject[] | undefined;
  portDefinitions: PortDefinition[] | undefined;
  requirePorts: boolean | undefined;
}

export function readPorts(r: FieldReader, o: JsonObject): PortsGiven {
  const portsRaw = r.arr(o, 'ports', '');
  const ports: number[] = [];
  portsRaw?.forEach((v, i) => {
    if (typeof v !== 'number' || !Number.isInteger(v)) r.add(`/ports(${i})`, 'error.expected.int');
    else ports.push(v);
  });
  const pdRaw = r.objArr(o, 'portDefinitions', '');
  const portDefinitions = pdRaw?.map((d, i) => {
    const dp = `/portDefinitions(${i})`;
    const name = r.str(d, 'name', dp);
    return {
      port: r.num(d, 'port', dp, true) ?? 0,
      protocol: r.str(d, 'protocol', dp) ?? 'tcp',
      ...(name !== undefined ? { name } : {}),
      labels: r.strMap(d, 'labels', dp) ?? {},
    };
  });
  return { portsRaw, ports, pdRaw, portDefinitions, requirePorts: r.bool(o, 'requirePorts', '') };
}

/** Marathon's parse-time rules on ports (400 on "/"). */
export function checkPortsGiven(r: FieldReader, given: PortsGiven, hasIpAddress: boolean): void {
  const { portsRaw, ports, pdRaw, portDefinitions } = given;
  if (hasIpAddress && ((portsRaw && portsRaw.length > 0) || (pdRaw && pdRaw.length > 0))) r.add('/', 'You cannot specify both an IP address and ports');
  if (portsRaw && pdRaw) {
    const same = portsRaw.length === pdRaw.length && ports.every((x, i) => portDefinitions?.[i]?.port === x);
    if (!same) r.add('/', 'You cannot specify both ports and port definitions');
  }
  const nonZero = ports.filter((x) => x !== 0);
  if (new Set(nonZero).size !== nonZero.length) r.add('/', 'Ports must be unique.');
}

/**
 * The app's port definitions: none with an IP address; those given, or `ports` as definitions;
 * else one `default` port on the host (none for a bridged container, whose ports are its mappings).
 */
export function normalisePortDefinitions(given: PortsGiven, hasIpAddress: boolean, container: Container | null): PortDefinition[] | undefined {
  if (hasIpAddress) return undefined;
  if (given.pdRaw) return given.portDefinitions;
  if (given.portsRaw) return given.ports.map((port) => ({ port, protocol: 'tcp', labels: {} }));
  return container?.docker && container.docker.network !== 'HOST' ? [] : [{ port: 0, protocol: 'tcp', name: 'default', labels: {} }];
}

/** Sets ports, portDefinitions and requirePorts (absent when the app has an IP address). */
export function applyPorts(app: AppDefinition, pds: PortDefinition[] | undefined, requirePorts: boolean | undefined): void {
  if (app.ipAddress) return;
  app.ports = (pds ?? []).map((d) => d.port);
  app.portDefinitions = pds ?? [];
  app.requirePorts = requirePorts ?? false;
}

/** How many ports health checks may address by index: a bridged container's mappings, else the definitions. */
export function portCount(app: AppDefinition): number {
  return app.container?.docker && app.container.docker.network !== 'HOST' ? app.container.docker.portMappings.length : (app.portDefinitions?.length ?? 0);
}

export function validatePortDefinitions(app: AppDefinition, v: Violations): void {
  const pds = app.portDefinitions ?? [];
  pds.forEach((d, i) => {
    if (d.port < 0 || d.port > 65535) v.add(`/portDefinitions(${i})/port`, `got ${d.port}, expected between 0 and 65535`);
    if (!PROTOCOLS.includes(d.protocol)) v.add(`/portDefinitions(${i})/protocol`, 'is not one of (tcp, udp, udp,tcp)');
    if (d.name !== undefined && !/^[a-z0-9-]+$/.test(d.name)) v.add(`/portDefinitions(${i})/name`, "must fully match regular expression '^[a-z0-9-]+$'");
  });
  const nz = pds.map((d) => d.port).filter((x) => x !== 0);
  if (new Set(nz).size !== nz.length) v.add('/portDefinitions', 'Ports must be unique.');
  const names = pds.map((d) => d.name).filter((x) => x !== undefined);
  if (new Set(names).size !== names.length) v.add('/portDefinitions', 'Port names must be unique.');
  if (app.requirePorts && pds.some((d) => d.port === 0)) v.add('/', 'Ports must be non-zero when requirePorts is true.');
}

/** A port mapping's checks (container.ts calls it for each mapping). */
export function validatePortMapping(m: PortMapping, mp: string, v: Violations): void {
  for (const k of ['containerPort', 'hostPort', 'servicePort'] as const)
    if (m[k] < 0 || m[k] > 65535) v.add(`${mp}/${k}`, `got ${m[k]}, expected between 0 and 65535`);
  if (!PROTOCOLS.includes(m.protocol)) v.add(`${mp}/protocol`, 'is not one of (tcp, udp, udp,tcp)');
}

/** The port mappings a bridged docker app's ports are (undefined: its ports are portDefinitions). */
export function bridgedMappings(app: AppDefinition): PortMapping[] | undefined {
  const d = app.container?.docker;
  return d && d.network !== 'HOST' && d.portMappings.length ? d.portMappings : undefined;
}

/** Names of the app's ports, where readiness checks look their port up. */
export function appPortNames(app: AppDefinition): string[] {
  if (app.ipAddress) return app.ipAddress.discovery.ports.map((p) => p.name).filter((n): n is string => typeof n === 'string');
  return (bridgedMappings(app) ?? app.portDefinitions ?? []).flatMap((p) => (p.name !== undefined ? [p.name] : []));
}
