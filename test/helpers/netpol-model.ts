// The upstream e2e model in memory, for unit tests of the evaluator: namespaces x, y, z with pods
// a, b, c, each labelled pod=<name> and declaring serve-<port>-<proto> container ports; addresses
// 10.0.<ns>.<pod> (IPv4) or fd00::<ns>:<pod> (IPv6). Plus a small truth-table builder in the style
// of the e2e tests' Reachability (default allowed, then ExpectPeer-like overrides).
import { Evaluator } from '../../shared/netpol/evaluate.ts';
import type { NamespaceInfo, NetworkPolicyObject, NetworkPolicySpec, PodInfo, Protocol } from '../../shared/netpol/types.ts';

export const NAMESPACES = ['x', 'y', 'z'];
export const PODS = ['a', 'b', 'c'];

export function modelCluster(opts: { ports?: number[]; protocols?: Protocol[]; ipv6?: boolean; noIps?: boolean } = {}): {
  namespaces: NamespaceInfo[];
  pods: PodInfo[];
} {
  const ports = opts.ports ?? [80, 81];
  const protocols = opts.protocols ?? ['TCP', 'UDP', 'SCTP'];
  const namespaces = NAMESPACES.map((name) => ({ name, labels: { 'kubernetes.io/metadata.name': name } }));
  const pods: PodInfo[] = [];
  NAMESPACES.forEach((ns, n) =>
    PODS.forEach((name, p) =>
      pods.push({
        namespace: ns,
        name,
        labels: { pod: name },
        ...(opts.noIps ? {} : { ip: opts.ipv6 ? `fd00::${n + 1}:${p + 1}` : `10.0.${n + 1}.${p + 1}` }),
        ports: ports.flatMap((port) => protocols.map((protocol) => ({ name: `serve-${port}-${protocol.toLowerCase()}`, port, protocol }))),
      }),
    ),
  );
  return { namespaces, pods };
}

export function np(namespace: string, name: string, spec: Partial<NetworkPolicySpec>): NetworkPolicyObject {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { namespace, name }, spec: { podSelector: {}, ...spec } };
}

export const pod = (name: string): { matchLabels: Record<string, string> } => ({ matchLabels: { pod: name } });
export const nsName = (name: string): { matchLabels: Record<string, string> } => ({ matchLabels: { 'kubernetes.io/metadata.name': name } });

type PeerPattern = { ns?: string; pod?: string };
const matches = (id: string, p: PeerPattern) => {
  const [ns, name] = id.split('/');
  return (p.ns === undefined || p.ns === ns) && (p.pod === undefined || p.pod === name);
};

/** Expected reachability of one port/protocol, as the e2e tests build it. */
export class Reachability {
  readonly #cells = new Map<string, boolean>();
  constructor(ids: string[], initial: boolean) {
    for (const f of ids) for (const t of ids) this.#cells.set(`${f}>${t}`, initial);
  }
  expectPeer(from: PeerPattern, to: PeerPattern, allowed: boolean): this {
    for (const k of this.#cells.keys()) {
      const [f, t] = k.split('>') as [string, string];
      if (matches(f, from) && matches(t, to)) this.#cells.set(k, allowed);
    }
    return this;
  }
  expect(from: string, to: string, allowed: boolean): this {
    this.#cells.set(`${from}>${to}`, allowed);
    return this;
  }
  /** Everything into `to` (the e2e tests' ExpectAllIngress). */
  allIngress(to: string, allowed: boolean): this {
    const [ns, name] = to.split('/');
    return this.expectPeer({}, { ns, pod: name }, allowed);
  }
  allEgress(from: string, allowed: boolean): this {
    const [ns, name] = from.split('/');
    return this.expectPeer({ ns, pod: name }, {}, allowed);
  }
  /** Cells without loopback (ignored, as upstream does), as "from>to" → allowed. */
  cells(): Record<string, boolean> {
    return Object.fromEntries([...this.#cells].filter(([k]) => k.split('>')[0] !== k.split('>')[1]));
  }
}

/** The evaluator's table for one port and protocol, in the same shape as Reachability.cells(). */
export function computed(
  cluster: { namespaces: NamespaceInfo[]; pods: PodInfo[] },
  policies: NetworkPolicyObject[],
  port: number,
  protocol: Protocol,
): Record<string, boolean | null> {
  const ev = new Evaluator(cluster, policies);
  const out: Record<string, boolean | null> = {};
  for (const from of cluster.pods)
    for (const to of cluster.pods) {
      if (from === to) continue;
      out[`${from.namespace}/${from.name}>${to.namespace}/${to.name}`] = ev.evaluate({ from, to, port, protocol }).allowed;
    }
  return out;
}

export const allIds = (): string[] => NAMESPACES.flatMap((ns) => PODS.map((p) => `${ns}/${p}`));
