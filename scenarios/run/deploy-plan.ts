// Turns a resolved scenario into a Marathon group: one app per pod, under
// /starmap/<scenario>/<namespace>/<pod>, carrying the labels the orchestrator reads a pod from
// (starmap.namespace, starmap.pod) beside the pod's own, and its named container ports as
// ipAddress.discovery.ports. Two layouts:
// - isolated (--isolation=netns): every task has its own address, listens on its real ports, and
//   finds the others by name (`<pod>.<namespace>`, written into each task namespace's /etc/hosts
//   by the orchestrator, like a cluster's service names);
// - loopback: no isolation; every port of every pod is mapped to its own port on 127.0.0.1, so
//   that nine pods can all "serve 80". Policies cannot be enforced there.
// Externals (model/externals.ts) are probes under /starmap/<scenario>/external/<name> with the label
// starmap.external=<address>, which makes the orchestrator give the task that address outside the
// pod subnet (orchestrator/isolation/netns.ts); the pods reach them at that address, not by name.
// An IPv6 external cannot exist in either layout (model/externals.ts onPackets): it is not
// deployed and nothing probes it (its cells are not run). Nor is a hostNetwork pod yet: the run has
// no node namespace for it (issue 31; run/steps.ts HOST_NETWORK_NOT_RUN says so in its cells).
// Pure: the caller writes the collector's resources file.
import { EXTERNAL_APP_LABEL, onPackets } from '../model/externals.ts';
import type { Cell, PodSpec, ResolvedScenario } from '../model/resolve.ts';

export interface Programs {
  /** Command (argv) that runs the probe, e.g. ['/path/dist/bin/probe'] or [node, 'probe/main.ts']. */
  probe: string[];
  collector: string[];
}

export interface Layout {
  isolated: boolean;
  /** loopback layout: host port of each pod's port number (`ns/pod` → number → host port). */
  hostPorts?: Map<string, Map<number, number>>;
  /** isolated layout: the address to ask for per pod (model/addresses.ts), as the app label starmap.address. */
  addresses?: ReadonlyMap<string, string>;
  /** isolated layout: the name other pods reach a pod by (default hostName; a cluster's DNS name in run/kubernetes-manifests.ts). */
  hostName?: (p: PodSpec) => string;
}

export interface PlannedApp {
  pod: PodSpec;
  marathonId: string;
  /** Where the runner reaches its HTTP API from the host, once the task address is known (isolated) or at once (loopback). */
  port: number;
  /** URL path of its status document (probes: /status; collector: /responses). */
  statusPath: string;
  /** What it checks → the cell: probes: target URL as configured; collector: resource id. */
  targets: Map<string, Cell>;
  definition: Record<string, unknown>;
}

export const GROUP_ROOT = '/starmap';

export function groupId(s: Pick<ResolvedScenario, 'name'>): string {
  return `${GROUP_ROOT}/${s.name}`;
}

/** The name other tasks use for a pod in the isolated layout (the orchestrator's /etc/hosts). */
export function hostName(p: PodSpec): string {
  return `${p.name}.${p.namespace}`;
}

/** The port numbers a pod listens on: its API port and every declared port. */
export function portNumbers(p: PodSpec): number[] {
  return [...new Set([p.apiPort, ...p.ports.map((x) => x.port)])];
}

/** Loopback host ports for every pod's port numbers, from `next()`. */
export function assignHostPorts(pods: readonly PodSpec[], next: () => number): Map<string, Map<number, number>> {
  return new Map(pods.map((p) => [p.id, new Map(portNumbers(p).map((n) => [n, next()]))]));
}

/** The ports a probe serves besides its HTTP API (TCP accept, UDP echo; SCTP it cannot), as --serve wants them. */
function serveList(p: PodSpec, portOf: (n: number) => number): string[] {
  return p.ports
    .filter((x) => x.protocol !== 'SCTP' && !(x.protocol === 'TCP' && x.port === p.apiPort))
    .map((x) => `${portOf(x.port)}/${x.protocol.toLowerCase()}`);
}

export function planApps(s: ResolvedScenario, programs: Programs, layout: Layout, resourcesFile: (content: string) => string): PlannedApp[] {
  const byId = new Map(s.pods.map((p) => [p.id, p]));
  const portOf = (p: PodSpec, n: number) => (layout.isolated ? n : (layout.hostPorts?.get(p.id)?.get(n) ?? n));
  const hostOf = (p: PodSpec) => (layout.isolated ? (p.external ?? (layout.hostName ?? hostName)(p)) : '127.0.0.1');
  const urlOf = (c: Cell): string | undefined => {
    const to = byId.get(c.to)!;
    const where = `${hostOf(to)}:${portOf(to, c.port)}`;
    if (c.check === 'http') return `http://${where}/${to.kind === 'probe' ? 'status' : 'healthz'}`;
    if (c.check === 'tcp') return `tcp://${where}`;
    if (c.check === 'udp') return `udp://${where}`;
    return undefined; // SCTP: the probe cannot check it (see run.ts)
  };
  const listen = layout.isolated ? '0.0.0.0' : '127.0.0.1';
  const names = new Map<string, number>();
  for (const p of s.pods) names.set(p.name, (names.get(p.name) ?? 0) + 1);
  const resourceId = (p: PodSpec) => (names.get(p.name) === 1 ? p.name : hostName(p));

  const deployed = (p: PodSpec) => onPackets(p) && !p.hostNetwork;
  return s.pods.filter(deployed).map((p) => {
    const port = portOf(p, p.apiPort);
    const targets = new Map<string, Cell>();
    let argv: string[] = [];
    const mine = s.cells.filter((c) => c.from === p.id && deployed(byId.get(c.to)!));
    if (p.kind === 'probe') {
      for (const c of mine) {
        const url = urlOf(c);
        if (url) targets.set(url, c);
      }
      const serve = serveList(p, (n) => portOf(p, n));
      argv = [
        ...programs.probe,
        // An empty --urls is refused by the probe; a probe that only serves checks itself.
        `--urls=${[...targets.keys()].join(',') || `http://${hostOf(p)}:${port}/healthz`}`,
        ...(serve.length > 0 ? [`--serve=${serve.join(',')}`] : []),
        `--http-address=${listen}`,
        `--http-port=${port}`,
        `--http-probe-seconds=${s.probeSeconds}`,
        `--timeout-seconds=${s.timeoutSeconds}`,
      ];
    } else if (p.kind === 'collector') {
      const resources = mine.map((c) => ({ id: resourceId(byId.get(c.to)!), url: urlOf(c)!, cell: c }));
      for (const r of resources) targets.set(r.id, r.cell);
      const file = resourcesFile(
        JSON.stringify(
          resources.map(({ id, url }) => ({ id, url })),
          null,
          2,
        ),
      );
      argv = [
        ...programs.collector,
        `--resources-file=${file}`,
        `--http-address=${listen}`,
        `--http-port=${port}`,
        `--http-request-seconds=${s.probeSeconds}`,
        `--timeout-seconds=${Math.max(s.timeoutSeconds, 0.5)}`,
      ];
    }
    const want = layout.isolated ? layout.addresses?.get(p.id) : undefined;
    const labels: Record<string, string> = {
      ...p.labels,
      'starmap.scenario': s.name,
      'starmap.namespace': p.namespace,
      'starmap.pod': p.name,
      ...(want ? { 'starmap.address': want } : {}),
      ...(p.external !== undefined ? { [EXTERNAL_APP_LABEL]: p.external } : {}),
    };
    const marathonId = `${groupId(s)}/${p.namespace}/${p.name}`;
    const definition: Record<string, unknown> = {
      id: marathonId,
      ...(p.kind === 'app' ? { cmd: p.cmd } : { args: argv }),
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
      const ports = p.ports.map((x) => ({ number: x.port, protocol: x.protocol.toLowerCase(), ...(x.name ? { name: x.name } : {}) }));
      definition.ipAddress = { groups: [], labels, networkName: 'starmap', discovery: { ports } };
    } else {
      definition.portDefinitions = [{ port, protocol: 'tcp', name: 'http' }];
      definition.requirePorts = true;
    }
    if (p.kind !== 'app') {
      definition.healthChecks = [
        {
          protocol: 'HTTP',
          path: '/healthz',
          ...(layout.isolated ? { port } : { portIndex: 0 }),
          gracePeriodSeconds: 10,
          intervalSeconds: 2,
          timeoutSeconds: 2,
          maxConsecutiveFailures: 5,
        },
      ];
    }
    return { pod: p, marathonId, port, statusPath: p.kind === 'probe' ? '/status' : p.kind === 'collector' ? '/responses' : '/', targets, definition };
  });
}

/** The Marathon group document (a sub-group per namespace) for PUT /v2/groups. */
export function groupDocument(s: ResolvedScenario, apps: PlannedApp[]): Record<string, unknown> {
  const root = groupId(s);
  const namespaces = [...new Set(apps.map((a) => a.pod.namespace))];
  return {
    id: root,
    apps: [],
    groups: namespaces.map((ns) => ({ id: `${root}/${ns}`, apps: apps.filter((a) => a.pod.namespace === ns).map((a) => a.definition) })),
  };
}
