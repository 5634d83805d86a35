// Random clusters and NetworkPolicy sets from a seed, for property tests that compare two
// independent implementations of the semantics (the evaluator and the rendered nftables rules).
// Every feature appears: matchLabels and all four matchExpressions operators, pod and namespace
// selectors alone and together, ipBlock with except (and host bits), numeric, ranged, named and
// protocol-only ports, TCP/UDP/SCTP, policyTypes given or defaulted, empty rule lists and empty
// rules. Labels come from small alphabets so that selectors do match now and then.
import { rng as prng } from '../fuzz/values.ts';
import type {
  LabelSelector,
  LabelSelectorRequirement,
  NamespaceInfo,
  NetworkPolicyObject,
  NetworkPolicyPeer,
  NetworkPolicyPort,
  PodInfo,
  Protocol,
} from '../../shared/netpol/types.ts';

export interface Generated {
  namespaces: NamespaceInfo[];
  pods: PodInfo[];
  policies: NetworkPolicyObject[];
  /** Ports worth asking about: every declared one plus one nobody declares. */
  ports: number[];
}

const KEYS = ['app', 'tier', 'env'];
const VALUES = ['a', 'b', 'c'];
const PROTOCOLS: Protocol[] = ['TCP', 'UDP', 'SCTP'];
const PORTS = [80, 81, 443, 8080];

export function generate(seed: number, size: { namespaces?: number; pods?: number; policies?: number } = {}): Generated {
  const r = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const chance = (p: number) => r() < p;
  const labels = (): Record<string, string> => Object.fromEntries(KEYS.filter(() => chance(0.6)).map((k) => [k, pick(VALUES)]));

  const nsNames = Array.from({ length: size.namespaces ?? 3 }, (_, i) => ['x', 'y', 'z', 'w'][i] ?? `n${i}`);
  const namespaces = nsNames.map((name) => ({ name, labels: { ...labels(), 'kubernetes.io/metadata.name': name } }));
  const pods: PodInfo[] = [];
  nsNames.forEach((ns, n) => {
    for (let i = 0; i < (size.pods ?? 3); i++) {
      const ports = PORTS.filter(() => chance(0.5)).flatMap((port) =>
        PROTOCOLS.filter(() => chance(0.6)).map((protocol) => ({ name: `p${port}-${protocol.toLowerCase()}`, port, protocol })),
      );
      pods.push({ namespace: ns, name: `p${i}`, labels: labels(), ip: `10.213.${n + 1}.${i + 10}`, ports });
    }
  });

  const requirement = (): LabelSelectorRequirement => {
    const operator = pick(['In', 'NotIn', 'Exists', 'DoesNotExist'] as const);
    const key = pick(KEYS);
    return operator === 'In' || operator === 'NotIn'
      ? {
          key,
          operator,
          values: VALUES.filter(() => chance(0.5))
            .concat(pick(VALUES))
            .filter((v, i, a) => a.indexOf(v) === i),
        }
      : { key, operator };
  };
  const selector = (): LabelSelector => {
    const out: LabelSelector = {};
    if (chance(0.5)) out.matchLabels = Object.fromEntries(KEYS.filter(() => chance(0.3)).map((k) => [k, pick(VALUES)]));
    if (chance(0.4)) out.matchExpressions = Array.from({ length: 1 + Math.floor(r() * 2) }, requirement);
    return out;
  };
  const nsSelector = (): LabelSelector => (chance(0.4) ? { matchLabels: { 'kubernetes.io/metadata.name': pick(nsNames) } } : selector());
  const block = (): NetworkPolicyPeer['ipBlock'] => {
    const target = pick(pods);
    const [a, b, c, d] = target.ip!.split('.').map(Number) as [number, number, number, number];
    const prefix = pick([8, 16, 24, 32]);
    // Host bits left set on purpose: the v1 API accepts them and both sides must ignore them.
    const cidr = `${a}.${b}.${c}.${d}/${prefix}`;
    const except = prefix < 24 && chance(0.6) ? [`${a}.${b}.${c}.0/24`] : prefix < 32 && chance(0.4) ? [`${a}.${b}.${c}.${d}/32`] : undefined;
    return except ? { cidr, except } : { cidr };
  };
  const peer = (): NetworkPolicyPeer => {
    const kind = pick(['pod', 'ns', 'both', 'ip'] as const);
    if (kind === 'ip') return { ipBlock: block()! };
    if (kind === 'pod') return { podSelector: selector() };
    if (kind === 'ns') return { namespaceSelector: nsSelector() };
    return { podSelector: selector(), namespaceSelector: nsSelector() };
  };
  const port = (): NetworkPolicyPort => {
    const kind = pick(['number', 'range', 'named', 'protocol'] as const);
    const protocol = chance(0.2) ? undefined : pick(PROTOCOLS);
    const base = protocol ? { protocol } : {};
    if (kind === 'protocol') return { protocol: protocol ?? 'TCP' };
    if (kind === 'range') return { ...base, port: 80, endPort: pick([81, 443, 8080]) };
    if (kind === 'named') return { ...base, port: chance(0.9) ? `p${pick(PORTS)}-${pick(PROTOCOLS).toLowerCase()}` : 'nobody-has-it' };
    return { ...base, port: pick(PORTS) };
  };
  const rule = <K extends 'from' | 'to'>(key: K) => {
    const out: { ports?: NetworkPolicyPort[] } & Partial<Record<K, NetworkPolicyPeer[]>> = {};
    if (chance(0.6)) (out as Record<string, unknown>)[key] = Array.from({ length: 1 + Math.floor(r() * 2) }, peer);
    if (chance(0.6)) out.ports = Array.from({ length: 1 + Math.floor(r() * 2) }, port);
    return out;
  };
  const policies: NetworkPolicyObject[] = [];
  for (let i = 0; i < (size.policies ?? 4); i++) {
    const ingress = chance(0.7) ? Array.from({ length: Math.floor(r() * 3) }, () => rule('from')) : undefined;
    const egress = chance(0.5) ? Array.from({ length: Math.floor(r() * 3) }, () => rule('to')) : undefined;
    const types = pick([undefined, ['Ingress'], ['Egress'], ['Ingress', 'Egress']] as const);
    policies.push({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: `np${i}`, namespace: pick(nsNames) },
      spec: {
        podSelector: chance(0.3) ? {} : selector(),
        ...(ingress ? { ingress } : {}),
        ...(egress ? { egress } : {}),
        ...(types ? { policyTypes: [...types] } : {}),
      },
    });
  }
  return { namespaces, pods, policies, ports: [...PORTS, 9999] };
}
