// The cells a scenario's pods observe by what the file says: every pair of the `model:` pods on
// every port, each probe's `probes:` entries (`ns/pod`, `pod:port[/proto]`, `pod:portname`) and
// each collector's `collects:`. Problems name the entry. Pure.
import type { Protocol } from '../../shared/netpol/types.ts';
import type { PodNames } from './matrix.ts';
import type { Problems } from './problems.ts';
import { cellKey, type Cell, type PodSpec } from './resolved.ts';
import { appPod, checkOf } from './scenario-pods.ts';
import type { AppDoc, ModelDoc } from './schema.ts';

const TARGET = /^(?:([a-z0-9-]+)\/)?([a-z0-9-]+)(?::(?:(\d{1,5})(?:\/(tcp|udp|sctp))?|([a-z0-9-]+)))?$/i;

/** The cells a probe's `probes` entries and a collector's `collects` entries stand for. */
export function cellsOf(pods: PodSpec[], apps: AppDoc[], model: ModelDoc | undefined, names: PodNames, problems: Problems): Cell[] {
  const cells = new Map<string, Cell>();
  const add = (from: PodSpec, to: PodSpec, port: number, protocol: Protocol) => {
    const key = cellKey(from.id, to.id, port, protocol);
    if (!cells.has(key)) cells.set(key, { key, from: from.id, to: to.id, port, protocol, check: checkOf(to, port, protocol) });
  };
  const byId = new Map(pods.map((p) => [p.id, p]));
  if (model) {
    const mine = pods.filter((p) => model.namespaces.includes(p.namespace) && model.pods.includes(p.name));
    for (const from of mine) for (const to of mine) if (from !== to) for (const np of to.ports) add(from, to, np.port, np.protocol);
  }
  apps.forEach((a, i) => {
    const from = byId.get(appPod(a).id)!;
    if (a.kind === 'probe') {
      a.probes.forEach((t, j) => {
        const at = `/apps/${i}/probes/${j}`;
        const m = TARGET.exec(t);
        const to = m ? names.resolve(m[1] ? `${m[1]}/${m[2]}` : m[2]!, from.namespace) : undefined;
        if (!m || !to) return problems.add(at, names.unknown(t.split(':')[0]!));
        const target = byId.get(to)!;
        if (m[5]) {
          const np = target.ports.find((p) => p.name === m[5]);
          if (!np) return problems.add(at, `${target.id} declares no port named "${m[5]}"`);
          add(from, target, np.port, np.protocol);
        } else if (m[3]) {
          const port = Number(m[3]);
          if (port < 1 || port > 65535) return problems.add(at, `port ${port} is outside 1-65535`);
          const protocols: Protocol[] = m[4]
            ? [m[4].toUpperCase() as Protocol]
            : [...new Set(target.ports.filter((p) => p.port === port).map((p) => p.protocol))];
          for (const protocol of protocols.length > 0 ? protocols : (['TCP'] as Protocol[])) add(from, target, port, protocol);
        } else for (const np of target.ports) add(from, target, np.port, np.protocol);
      });
    } else if (a.kind === 'collector') {
      a.collects.forEach((t, j) => {
        const to = names.resolve(t, from.namespace);
        const target = to ? byId.get(to) : undefined;
        if (!target) return problems.add(`/apps/${i}/collects/${j}`, names.unknown(t));
        if (target.kind !== 'probe') return problems.add(`/apps/${i}/collects/${j}`, `"${t}" is not a probe`);
        add(from, target, target.apiPort, 'TCP');
      });
    }
  });
  return [...cells.values()];
}
