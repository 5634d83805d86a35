// Peers outside the cluster (issue 29): hosts that no NetworkPolicy selects but whose addresses
// the policies' ipBlocks name. Each external is `external:<name>` in cells, tables and reports; on
// packets it is a namespace of its own with that address, reached only over the run's bridge
// (orchestrator/isolation/netns.ts). It probes every pod's declared ports (the pods' ingress
// cells) and serves its own ports, which every probe pod probes (the pods' egress cells).
//
// Where they come from:
// - `externals:` in the scenario (a list, or {auto, hosts}) and `--external name=ADDRESS[:port/proto,...]`;
// - automatic coverage (unless `externals: {auto: false}`, coverage-externals.ts): for each
//   ipBlock in force in any step, one external inside its CIDR and one inside each `except`, and
//   one inside each admin-tier egress `networks` entry, so that every rule naming addresses has a
//   cell that exercises it (IPv6 ones too: computed, never run, see externalNotRunReason).
// A declared address inside the pod subnet, loopback, 0/8, multicast or reserved is refused: it
// would not be "outside" or could not be given to a namespace. Pure (no I/O).
import { Type, type Static } from '@sinclair/typebox';
import { blockContains, parseAddress, parseBlock } from '../../shared/netpol/cidr.ts';
import { canonicalName, CLUSTER_DOMAIN } from '../../shared/netpol/dns.ts';
import type { NamedPort, PodInfo, Protocol } from '../../shared/netpol/types.ts';
import type { Cell, CheckKind, PodSpec } from './resolved.ts';

/** The run's pod subnet when none is given: the bundled orchestrator's default (orchestrator/isolation/netns.ts). */
export const DEFAULT_POD_SUBNET = '10.213.0.0/24';
/** Ports an external serves when it names none. */
export const DEFAULT_EXTERNAL_PORTS: readonly NamedPort[] = [{ name: '', port: 80, protocol: 'TCP' }];
/** The namespace (Marathon sub-group) externals are deployed under; no pod of the scenario may share one of their ids. */
export const EXTERNAL_NAMESPACE = 'external';
export const EXTERNAL_PREFIX = 'external:';
/** The app label the orchestrator reads an external's address from. */
export const EXTERNAL_APP_LABEL = 'starmap.external';

const NAME = '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$';
// A host name a name server could answer (the DomainName pattern upstream, no wildcard), at most 253 characters.
const HOST_NAME = '^([a-zA-Z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\\.)+[a-zA-Z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\\.?$';
const IPV4 = '^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$';

export const ExternalHost = Type.Object(
  {
    name: Type.String({ pattern: NAME, description: 'lowercase letters, digits and dashes; the peer is external:<name>' }),
    address: Type.String({ pattern: IPV4, description: 'its IPv4 address: outside the pod subnet, not loopback, multicast or reserved' }),
    ports: Type.Optional(
      Type.Array(
        Type.Object(
          {
            port: Type.Integer({ minimum: 1, maximum: 65535 }),
            protocol: Type.Optional(Type.Union([Type.Literal('TCP'), Type.Literal('UDP')])),
          },
          { additionalProperties: false },
        ),
        { minItems: 1, maxItems: 16, description: 'ports it serves (the pods probe them: egress cells); default 80/TCP' },
      ),
    ),
    names: Type.Optional(
      Type.Array(Type.String({ pattern: HOST_NAME, maxLength: 253 }), {
        minItems: 1,
        maxItems: 16,
        description:
          "its DNS names (www.example.com): the run's DNS answers them with its address, ClusterNetworkPolicy domainNames peers match them, and the pods reach it by name",
      }),
    ),
  },
  { additionalProperties: false, description: 'a host outside the pod network: it probes the pods and is probed by them' },
);

export const Externals = Type.Union(
  [
    Type.Array(ExternalHost, { maxItems: 32 }),
    Type.Object(
      {
        auto: Type.Optional(
          Type.Boolean({
            description: 'add one external inside each ipBlock CIDR and each except, and each admin-tier egress network, in force (default true)',
          }),
        ),
        hosts: Type.Optional(Type.Array(ExternalHost, { maxItems: 32 })),
      },
      { additionalProperties: false },
    ),
  ],
  {
    description:
      'hosts outside the pod network (a list, or {auto, hosts}); without `auto: false` one is also added inside each ipBlock CIDR and except, and each admin-tier egress network, in force',
  },
);

export type ExternalHostDoc = Static<typeof ExternalHost>;
export type ExternalsDoc = Static<typeof Externals>;

export interface ExternalSpec {
  name: string;
  address: string;
  ports: NamedPort[];
  /** Its DNS names, lowercase without a trailing dot (externalsOf: `names:`). */
  names?: string[];
  /** Automatic coverage: the block it stands in (`ns/policy /spec/egress/0/to/0/ipBlock/cidr`, `cnp/x /spec/egress/0/to/0/networks/1`). */
  covers?: string;
}

/** What an external's declaration got wrong; `field` is relative to the declaration. */
export interface ExternalProblem {
  field: string;
  message: string;
}

export const RESERVED: { block: string; why: string }[] = [
  { block: '0.0.0.0/8', why: '"this network" (0/8)' },
  { block: '127.0.0.0/8', why: 'loopback' },
  { block: '224.0.0.0/4', why: 'multicast' },
  { block: '240.0.0.0/4', why: 'reserved (240/4)' },
];

/** Why an address cannot be an external's, or undefined when it can. */
export function addressProblem(address: string, podSubnet: string): string | undefined {
  const a = parseAddress(address);
  if (!a || a.family !== 4 || address.includes(':')) return `${JSON.stringify(address)} is not an IPv4 address`;
  for (const r of RESERVED) if (blockContains(parseBlock(r.block)!, a)) return `${address} is ${r.why}, not a host outside the cluster`;
  const pods = parseBlock(podSubnet);
  if (pods && blockContains(pods, a)) return `${address} is inside the run's pod subnet ${podSubnet}: an external is outside the pod network`;
  return undefined;
}

/** `name=ADDRESS[:port/proto,...]` (proto tcp or udp, default tcp), as --external takes it. */
export function parseExternalFlag(text: string): ExternalHostDoc | { error: string } {
  const m = /^([^=]*)=([^:]*)(?::(.*))?$/.exec(text.trim());
  if (!m) return { error: `--external ${JSON.stringify(text)}: expected name=ADDRESS[:port/proto,...]` };
  const [, name, address, portList] = m;
  if (!new RegExp(NAME).test(name!)) return { error: `--external ${JSON.stringify(text)}: the name must be lowercase letters, digits and dashes (at most 63)` };
  const ports: NonNullable<ExternalHostDoc['ports']> = [];
  if (portList !== undefined) {
    for (const item of portList.split(',')) {
      const p = /^(\d{1,5})(?:\/(tcp|udp))?$/i.exec(item.trim());
      const n = p ? Number(p[1]) : 0;
      if (!p || n < 1 || n > 65535) return { error: `--external ${JSON.stringify(text)}: ${JSON.stringify(item)} is not port[/tcp|udp] (1-65535)` };
      ports.push({ port: n, protocol: (p[2]?.toUpperCase() ?? 'TCP') as 'TCP' | 'UDP' });
    }
  }
  return { name: name!, address: address!, ...(ports.length > 0 ? { ports } : {}) };
}

/** The declared externals (file first, then flags), checked; problems carry the field they are about. */
export function declaredExternals(
  hosts: readonly { doc: ExternalHostDoc; at: string }[],
  podSubnet: string,
): { externals: ExternalSpec[]; problems: { at: string; message: string }[] } {
  const problems: { at: string; message: string }[] = [];
  const names = new Map<string, string>();
  const addresses = new Map<string, string>();
  const hostNames = new Map<string, string>();
  const externals: ExternalSpec[] = [];
  for (const { doc, at } of hosts) {
    const bad = addressProblem(doc.address, podSubnet);
    if (bad) problems.push({ at: `${at}/address`, message: bad });
    if (names.has(doc.name)) problems.push({ at: `${at}/name`, message: `duplicate external "${doc.name}" (also ${names.get(doc.name)})` });
    if (addresses.has(doc.address))
      problems.push({ at: `${at}/address`, message: `${doc.address} is also external:${addresses.get(doc.address)}'s: one host per address` });
    names.set(doc.name, at);
    addresses.set(doc.address, doc.name);
    const ports = (doc.ports ?? []).map((p) => ({ name: '', port: p.port, protocol: (p.protocol ?? 'TCP') as Protocol }));
    const unique = [...new Map(ports.map((p) => [`${p.port}/${p.protocol}`, p])).values()];
    const named = (doc.names ?? []).map(canonicalName);
    named.forEach((n, j) => {
      if (n === CLUSTER_DOMAIN || n.endsWith(`.${CLUSTER_DOMAIN}`))
        problems.push({
          at: `${at}/names/${j}`,
          message: `${JSON.stringify(n)} is inside the cluster domain ${CLUSTER_DOMAIN}: the run's DNS answers those for pods and services`,
        });
      else if (hostNames.has(n)) problems.push({ at: `${at}/names/${j}`, message: `the name ${n} is also external:${hostNames.get(n)}'s: one host per name` });
      hostNames.set(n, doc.name);
    });
    externals.push({
      name: doc.name,
      address: doc.address,
      ports: unique.length > 0 ? unique : [...DEFAULT_EXTERNAL_PORTS],
      ...(named.length > 0 ? { names: [...new Set(named)] } : {}),
    });
  }
  return { externals, problems };
}

/** The declarations a scenario's `externals:` holds, with their JSON pointers, and whether auto coverage is on. */
export function externalsOf(doc: ExternalsDoc | undefined): { hosts: { doc: ExternalHostDoc; at: string }[]; auto: boolean } {
  if (doc === undefined) return { hosts: [], auto: true };
  if (Array.isArray(doc)) return { hosts: doc.map((h, i) => ({ doc: h, at: `/externals/${i}` })), auto: true };
  return { hosts: (doc.hosts ?? []).map((h, i) => ({ doc: h, at: `/externals/hosts/${i}` })), auto: doc.auto !== false };
}

/** The pod an external is in the model: a probe with no labels that no policy selects (evaluate.ts: `external`). */
export function externalPod(e: ExternalSpec): PodSpec {
  // Its HTTP API (the runner reads its /status there) on a port it does not serve to the pods.
  let apiPort = 9000;
  while (e.ports.some((p) => p.port === apiPort)) apiPort++;
  return {
    id: `${EXTERNAL_PREFIX}${e.name}`,
    namespace: EXTERNAL_NAMESPACE,
    name: e.name,
    kind: 'probe',
    short: `${EXTERNAL_PREFIX}${e.name}`,
    labels: {},
    apiPort,
    ports: e.ports,
    external: e.address,
    ...(e.names ? { names: e.names } : {}),
    ...(e.covers ? { covers: e.covers } : {}),
  };
}

/**
 * The cells of externals: every probe pod probes every port each external serves (egress cells);
 * each external probes every port of every pod (ingress cells). Never external to external: both
 * ends outside the cluster is nothing a NetworkPolicy judges.
 */
export function externalCells(
  pods: readonly PodSpec[],
  externals: readonly PodSpec[],
  checkOf: (to: PodSpec, port: number, protocol: Protocol) => CheckKind,
): Cell[] {
  const inside = pods.filter((p) => p.external === undefined);
  const cells: Cell[] = [];
  const add = (from: PodSpec, to: PodSpec, np: NamedPort) =>
    cells.push({
      key: `${from.id}>${to.id}@${np.port}/${np.protocol}`,
      from: from.id,
      to: to.id,
      port: np.port,
      protocol: np.protocol,
      check: checkOf(to, np.port, np.protocol),
    });
  for (const e of externals) {
    for (const p of inside) if (p.kind === 'probe') for (const np of e.ports) add(p, e, np);
    for (const p of inside) for (const np of p.ports) add(e, p, np);
  }
  return cells;
}

/** Why a cell of an IPv6 external is not run (unobservableExternals). */
export const IPV6_NOT_RUN = 'not run: IPv6 externals are not supported by this layout';

/** Whether a pod can exist on packets in a run: every pod but an IPv6 external (unobservableExternals). */
export const onPackets = (p: Pick<PodSpec, 'external'>): boolean => p.external === undefined || !p.external.includes(':');

/**
 * The externals (`external:<name>`) that cannot exist on packets here: both layouts of a run give
 * every task one IPv4 address (orchestrator/isolation/netns.ts: the task subnet is IPv4, an
 * external's address an IPv4 /32), so an IPv6 external is never deployed and its cells are
 * computed but not run (IPV6_NOT_RUN), never passed. Read from a step's cluster (expect.ts).
 */
export function unobservableExternals(pods: readonly Pick<PodInfo, 'name' | 'ip' | 'external'>[]): Set<string> {
  return new Set(pods.filter((p) => p.external && p.ip !== undefined && !onPackets({ external: p.ip })).map((p) => `${EXTERNAL_PREFIX}${p.name}`));
}

/** One line per external for `scenario check`: `external:internet 203.0.113.10 serving 443/TCP (automatic: ns/policy /spec/…)`. */
export function externalsSummary(pods: readonly PodSpec[]): string[] {
  return pods
    .filter((p) => p.external !== undefined)
    .map(
      (p) =>
        `${p.id} ${p.external}${p.names ? ` (${p.names.join(', ')})` : ''} serving ${p.ports.map((x) => `${x.port}/${x.protocol}`).join(', ')}${p.covers ? ` (automatic, inside ${p.covers})` : ''}`,
    );
}
