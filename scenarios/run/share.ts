// Which scenarios of a set share one deployment, and what that deployment is (pure). Deploying a
// set's pods takes most of a scenario's time (the 24 ClusterNetworkPolicy conformance scenarios
// deployed 8-10 pods each, ~20 s a scenario), while upstream runs every test of its suite on one
// set of pods. Scenarios share a deployment when they have the same pods (names, kinds, labels,
// API ports, commands, externals) and timings, whatever their cells: the deployment probes the
// union of their cells and each scenario judges and reports only its own.
//
// Declared container ports may differ (upstream's tests declare the ports each one checks): the
// deployment then serves the union of each pod's ports. That changes nothing a scenario observes
// or computes as long as the ports agree: a port number and protocol has the same name (or none)
// wherever it is declared, a name stands for one port, and no scenario has a cell to a port its
// own pod does not declare that another scenario's pod serves (it would be answered instead of
// refused). Where they do not agree, the scenario goes to another deployment.
import type { NamedPort } from '../../shared/netpol/types.ts';
import type { Cell, PodSpec, ResolvedScenario } from '../model/resolve.ts';

type Sharing = Pick<ResolvedScenario, 'probeSeconds' | 'timeoutSeconds' | 'pods' | 'cells'>;

/** What must be equal for scenarios to share a deployment: timings and the pods without their declared ports. */
export function podsKey(s: Pick<ResolvedScenario, 'probeSeconds' | 'timeoutSeconds' | 'pods'>): string {
  return JSON.stringify([
    s.probeSeconds,
    s.timeoutSeconds,
    // Every field but the ports, so that a field added to PodSpec (hostNetwork, node) keeps pods apart.
    s.pods.map(({ ports: _ports, ...rest }) => rest),
  ]);
}

const portKey = (p: Pick<NamedPort, 'port' | 'protocol'>) => `${p.port}/${p.protocol}`;

/** Each pod's ports over all `scenarios` (first declaration order), or undefined when their names disagree. */
function unionPorts(scenarios: readonly Sharing[]): Map<string, NamedPort[]> | undefined {
  const out = new Map<string, NamedPort[]>();
  for (const pod of scenarios[0]!.pods) {
    const byPort = new Map<string, NamedPort>();
    const byName = new Map<string, string>();
    for (const s of scenarios) {
      for (const port of s.pods.find((p) => p.id === pod.id)!.ports) {
        const k = portKey(port);
        const known = byPort.get(k);
        // An empty name is no name (a manifest's `name: ""`).
        const name = port.name || null;
        if (known && (known.name || null) !== name) return undefined;
        if (name !== null && byName.has(name) && byName.get(name) !== k) return undefined;
        if (!known) byPort.set(k, port);
        if (name !== null) byName.set(name, k);
      }
    }
    out.set(pod.id, [...byPort.values()]);
  }
  return out;
}

/** Whether a cell goes to a port its own pod does not declare (nor is its API port): served in the union, it would be answered. */
function undeclared(c: Cell, pods: ReadonlyMap<string, PodSpec>): boolean {
  const to = pods.get(c.to)!;
  return !(c.protocol === 'TCP' && c.port === to.apiPort) && !to.ports.some((p) => p.port === c.port && p.protocol === c.protocol);
}

/** Whether `scenarios` (same podsKey) can run on one deployment. */
export function canShare(scenarios: readonly Sharing[]): boolean {
  const ports = unionPorts(scenarios);
  if (!ports) return false;
  return scenarios.every((s) => {
    const own = new Map(s.pods.map((p) => [p.id, p]));
    return s.cells.every((c) => !undeclared(c, own) || !ports.get(c.to)!.some((p) => p.port === c.port && p.protocol === c.protocol));
  });
}

/** The scenarios in deployments, in the order each deployment's first scenario appears; each keeps its order. */
export function shareDeployments<S extends Sharing>(scenarios: readonly S[]): S[][] {
  const groups: { key: string; scenarios: S[] }[] = [];
  for (const s of scenarios) {
    const key = podsKey(s);
    const group = groups.find((g) => g.key === key && canShare([...g.scenarios, s]));
    if (group) group.scenarios.push(s);
    else groups.push({ key, scenarios: [s] });
  }
  return groups.map((g) => g.scenarios);
}

/**
 * The scenario a deployment is planned from: the first scenario with every pod serving the union
 * of its ports, the union of the cells (by key, first seen first) and of the namespaces.
 */
export function deploymentScenario(scenarios: readonly ResolvedScenario[]): ResolvedScenario {
  const first = scenarios[0]!;
  if (scenarios.length === 1) return first;
  const ports = unionPorts(scenarios);
  if (!ports) throw new Error(`scenarios ${scenarios.map((s) => s.name).join(', ')} declare ports that disagree: they cannot share a deployment`);
  const cells = new Map<string, Cell>();
  for (const s of scenarios) for (const c of s.cells) if (!cells.has(c.key)) cells.set(c.key, c);
  const namespaces = new Map(first.namespaces.map((n) => [n.name, n]));
  for (const s of scenarios) for (const n of s.namespaces) if (!namespaces.has(n.name)) namespaces.set(n.name, n);
  return {
    ...first,
    pods: first.pods.map((p) => ({ ...p, ports: ports.get(p.id)! })),
    cells: [...cells.values()],
    namespaces: [...namespaces.values()],
  };
}
