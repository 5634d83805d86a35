// Where a task's health and readiness checks reach it: its own address when isolated (else
// 127.0.0.1), and for apps with ipAddress the ports of ipAddress.discovery.ports (such tasks have
// no host ports; health checks' portIndex counts in these).
import { bridgedMappings, type AppDefinition } from '../state/app-definition.ts';
import type { TaskRecord } from '../storage/store.ts';

/** The address checks connect to. */
export function checkHost(t: TaskRecord): string {
  return t.ipAddresses?.[0]?.ipAddress ?? '127.0.0.1';
}

/** The ports a health check's portIndex counts in. */
export function healthCheckPorts(app: AppDefinition, t: TaskRecord): number[] {
  return app.ipAddress ? app.ipAddress.discovery.ports.map((p) => (typeof p.number === 'number' ? p.number : 0)) : t.ports;
}

/** The port a readiness check's portName names, for this task. */
export function readinessPort(app: AppDefinition, t: TaskRecord, portName: string): number | undefined {
  if (app.ipAddress) {
    const p = app.ipAddress.discovery.ports.find((x) => x.name === portName);
    return typeof p?.number === 'number' ? p.number : undefined;
  }
  const names = (bridgedMappings(app) ?? app.portDefinitions ?? []).map((x) => x.name);
  const i = names.indexOf(portName);
  return i < 0 ? undefined : t.ports[i];
}
