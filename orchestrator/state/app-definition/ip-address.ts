// The app's own IP address (`ipAddress`: groups, labels, discovery ports, network name): an app
// with one has no host ports. The network name defaults to the orchestrator's
// --default-network-name.
import type { FieldReader } from './field-reader.ts';
import type { AppDefinition, IpAddress, JsonObject } from './types.ts';
import type { Violations } from './violations.ts';

export function readIpAddress(r: FieldReader, o: JsonObject, defaultNetworkName: string | undefined): IpAddress | null {
  const raw = r.obj(o, 'ipAddress', '');
  if (!raw) return null;
  const networkName = r.str(raw, 'networkName', '/ipAddress') ?? defaultNetworkName;
  const disc = r.obj(raw, 'discovery', '/ipAddress');
  return {
    groups: r.strArr(raw, 'groups', '/ipAddress') ?? [],
    labels: r.strMap(raw, 'labels', '/ipAddress') ?? {},
    discovery: { ports: disc ? (r.objArr(disc, 'ports', '/ipAddress/discovery') ?? []) : [] },
    ...(networkName !== undefined ? { networkName } : {}),
  };
}

export function validateIpAddress(app: AppDefinition, v: Violations): void {
  if (app.ipAddress?.networkName === '') v.add('/ipAddress/networkName', 'must not be empty');
}
