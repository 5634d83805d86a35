// The pods a scenario file declares: the `model:` shorthand expanded (every pod in every namespace
// serving every port) and each of `apps:` as one pod, with their checks (duplicate ids, port
// names, short labels). How a cell to a pod is observed (checkOf) is decided here too. Pure.
import type { NamedPort, Protocol } from '../../shared/netpol/types.ts';
import type { Problems } from './problems.ts';
import type { CheckKind, PodSpec } from './resolved.ts';
import type { AppDoc, ModelDoc } from './schema.ts';

const DEFAULT_PORT = { probe: 9000, collector: 9001, app: 8080 } as const;

export function modelPods(m: ModelDoc): PodSpec[] {
  const ports: NamedPort[] = m.ports.flatMap((port) => m.protocols.map((protocol) => ({ name: `serve-${port}-${protocol.toLowerCase()}`, port, protocol })));
  let apiPort = DEFAULT_PORT.probe;
  while (m.ports.includes(apiPort)) apiPort++;
  return m.namespaces.flatMap((namespace) =>
    m.pods.map((name) => ({
      id: `${namespace}/${name}`,
      namespace,
      name,
      kind: 'probe' as const,
      short: `${namespace}/${name}`,
      labels: { pod: name },
      apiPort,
      ports,
    })),
  );
}

export function appPod(a: AppDoc): PodSpec {
  const namespace = a.namespace ?? a.group ?? 'default';
  const apiPort = a.port ?? DEFAULT_PORT[a.kind];
  const ports = a.ports
    ? a.ports.map((p) => ({ name: p.name ?? '', port: p.port, protocol: p.protocol ?? 'TCP' }))
    : [{ name: 'http', port: apiPort, protocol: 'TCP' as const }];
  return {
    id: `${namespace}/${a.name}`,
    namespace,
    name: a.name,
    kind: a.kind,
    short: a.short ?? (namespace === 'default' ? a.name : `${namespace}/${a.name}`),
    labels: { ...(a.labels ?? {}) },
    apiPort,
    ports,
    ...(a.kind === 'app' ? { cmd: a.cmd } : {}),
    ...(a.hostNetwork ? { hostNetwork: true } : {}),
    ...(a.node !== undefined ? { node: a.node } : {}),
  };
}

export function checkOf(to: PodSpec, port: number, protocol: Protocol): CheckKind {
  if (protocol === 'SCTP') return 'sctp';
  if (protocol === 'UDP') return 'udp';
  return port === to.apiPort && to.kind !== 'app' ? 'http' : 'tcp';
}

/** Pods of the same id, ports of the same name, short labels shared by two pods; `modelCount` pods came from `model:`. */
export function checkPods(pods: readonly PodSpec[], modelCount: number, apps: readonly AppDoc[], problems: Problems): Map<string, string> {
  const seen = new Map<string, string>();
  pods.forEach((p, i) => {
    const at = i < modelCount ? '/model' : i < modelCount + apps.length ? `/apps/${i - modelCount}` : '/manifests';
    if (seen.has(p.id)) problems.add(at, `duplicate pod "${p.id}" (also ${seen.get(p.id)})`);
    seen.set(p.id, at);
    const names = new Set<string>();
    p.ports.forEach((np, j) => {
      if (np.name && names.has(np.name)) problems.add(`${at}/ports/${j}/name`, `duplicate port name "${np.name}"`);
      names.add(np.name);
    });
  });
  apps.forEach((a, i) => problems.labels(`/apps/${i}/labels`, a.labels));
  const shorts = new Map<string, string>();
  pods.forEach((p) => {
    if (shorts.has(p.short) && shorts.get(p.short) !== p.id) problems.add('/apps', `duplicate short label "${p.short}" (${shorts.get(p.short)} and ${p.id})`);
    shorts.set(p.short, p.id);
  });
  return seen;
}
