// Turns a scenario into a Marathon group: one app per scenario app, under /starmap/<scenario>/<group>/<app>.
// Two layouts:
// - isolated (--isolation=netns): every task has its own address (ipAddress), listens on the
//   scenario's port, and finds the others by name (`<app>.<group>`, written into each task
//   namespace's /etc/hosts by the orchestrator, like a cluster's service names);
// - loopback: no isolation; every app gets a fixed host port on 127.0.0.1 (requirePorts), so
//   the probes' targets are known before anything starts. Policies cannot be enforced there.
import { shortName, type AppDoc, type ScenarioDoc } from './model.ts';

export interface Programs {
  /** Command (argv) that runs the probe, e.g. ['/path/dist/bin/probe'] or [node, 'probe/main.ts']. */
  probe: string[];
  collector: string[];
}

export interface Layout {
  isolated: boolean;
  /** loopback layout: the host port of each app. */
  ports?: Map<string, number>;
}

export interface PlannedApp {
  name: string;
  short: string;
  kind: AppDoc['kind'];
  marathonId: string;
  /** How the runner reaches the app from the host, once the task address is known. */
  port: number;
  /** URL path of its status document (probes: /status; collector: /responses). */
  statusPath: string;
  /** What it checks → the scenario app checked: probes: target URL as configured; collector: resource id. */
  targets: Map<string, string>;
  definition: Record<string, unknown>;
}

export const GROUP_ROOT = '/starmap';

export function groupId(s: ScenarioDoc): string {
  return `${GROUP_ROOT}/${s.name}`;
}

function appId(s: ScenarioDoc, a: AppDoc): string {
  return a.group ? `${groupId(s)}/${a.group}/${a.name}` : `${groupId(s)}/${a.name}`;
}

/** The default port of an app when the scenario does not give one. */
function defaultPort(a: AppDoc): number {
  return a.port ?? (a.kind === 'collector' ? 9001 : a.kind === 'probe' ? 9000 : 8080);
}

/** The name other tasks use for an app in the isolated layout. */
export function hostName(a: AppDoc): string {
  return a.group ? `${a.name}.${a.group}` : a.name;
}

export function planApps(s: ScenarioDoc, programs: Programs, layout: Layout, resourcesFile: (content: string) => string): PlannedApp[] {
  const byName = new Map(s.apps.map((a) => [a.name, a]));
  const portOf = (a: AppDoc) => (layout.isolated ? defaultPort(a) : layout.ports?.get(a.name) ?? defaultPort(a));
  const hostOf = (a: AppDoc) => (layout.isolated ? hostName(a) : '127.0.0.1');
  const statusUrl = (a: AppDoc) => (a.kind === 'app' ? `${hostOf(a)}:${portOf(a)}` : `http://${hostOf(a)}:${portOf(a)}/${a.kind === 'probe' ? 'status' : 'healthz'}`);
  const listen = layout.isolated ? '0.0.0.0' : '127.0.0.1';
  const probeSeconds = s.probeSeconds ?? 1;
  const timeoutSeconds = s.timeoutSeconds ?? 0.5;

  return s.apps.map((a) => {
    const port = portOf(a);
    let argv: string[];
    const targets = new Map<string, string>();
    if (a.kind === 'probe') {
      const urls = a.probes.map((t) => statusUrl(byName.get(t)!));
      a.probes.forEach((t, i) => targets.set(urls[i]!, t));
      argv = [...programs.probe, `--urls=${urls.join(',')}`, `--http-address=${listen}`, `--http-port=${port}`, `--http-probe-seconds=${probeSeconds}`, `--timeout-seconds=${timeoutSeconds}`];
    } else if (a.kind === 'collector') {
      const resources = a.collects.map((t) => ({ id: t, url: statusUrl(byName.get(t)!) }));
      for (const r of resources) targets.set(r.id, r.id);
      const file = resourcesFile(JSON.stringify(resources, null, 2));
      argv = [...programs.collector, `--resources-file=${file}`, `--http-address=${listen}`, `--http-port=${port}`, `--http-request-seconds=${probeSeconds}`, `--timeout-seconds=${Math.max(timeoutSeconds, 0.5)}`];
    } else {
      argv = ['/bin/sh', '-c', a.cmd];
    }
    const labels: Record<string, string> = { ...(a.labels ?? {}), 'starmap.scenario': s.name, 'starmap.app': a.name };
    if (a.group) labels['starmap.group'] = a.group;
    const definition: Record<string, unknown> = {
      id: appId(s, a),
      ...(a.kind === 'app' ? { cmd: a.cmd } : { args: argv }),
      instances: 1,
      cpus: 0.1,
      mem: 64,
      labels,
      backoffSeconds: 1,
      maxLaunchDelaySeconds: 10,
      taskKillGracePeriodSeconds: 2,
      upgradeStrategy: { minimumHealthCapacity: 0, maximumOverCapacity: 0 },
    };
    if (layout.isolated) {
      definition.ipAddress = { groups: [], labels, networkName: 'starmap' };
    } else {
      definition.portDefinitions = [{ port, protocol: 'tcp', name: 'http' }];
      definition.requirePorts = true;
    }
    if (a.kind !== 'app') {
      definition.healthChecks = [
        { protocol: 'HTTP', path: '/healthz', portIndex: 0, ...(layout.isolated ? { port } : {}), gracePeriodSeconds: 10, intervalSeconds: 2, timeoutSeconds: 2, maxConsecutiveFailures: 5 },
      ];
      if (layout.isolated) delete (definition.healthChecks as Record<string, unknown>[])[0]!.portIndex;
    }
    return { name: a.name, short: shortName(a), kind: a.kind, marathonId: appId(s, a), port, statusPath: a.kind === 'probe' ? '/status' : a.kind === 'collector' ? '/responses' : '/', targets, definition };
  });
}

/** The Marathon group document (nested groups per scenario group) for POST/PUT /v2/groups. */
export function groupDocument(s: ScenarioDoc, apps: PlannedApp[]): Record<string, unknown> {
  const root = groupId(s);
  const direct = apps.filter((p) => p.marathonId.split('/').length === root.split('/').length + 1);
  const subgroups = [...new Set(s.apps.filter((a) => a.group).map((a) => a.group!))];
  return {
    id: root,
    apps: direct.map((p) => p.definition),
    groups: subgroups.map((g) => ({ id: `${root}/${g}`, apps: apps.filter((p) => p.marathonId.startsWith(`${root}/${g}/`)).map((p) => p.definition) })),
  };
}
