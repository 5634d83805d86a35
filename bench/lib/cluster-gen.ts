// Realistic clusters of a given size from a seed, for the evaluator at scale (bench/netpol-scale.bench.ts)
// and its property test: anyone can rerun a figure with the same seed and size.
//
// The shape follows what teams deploy: a few shared namespaces (kube-system with DNS, monitoring
// with Prometheus, ingress-nginx) and one namespace per team, labelled with its team, org and env;
// in each, Deployments from a small catalogue (web, api, worker, postgres, redis) whose replicas
// share their labels (app, tier, team, version, pod-template-hash; a Deployment halfway through a
// rollout has two template hashes) and declare named container ports; pod addresses from per-node
// /24s of 10.244.0.0/16. Policies per team namespace: a default deny first (ingress, or both
// directions), then allow policies drawn from the kinds teams write: within the namespace by tier
// (matchExpressions In, named ports), from the ingress controller (namespace and pod selectors),
// monitoring scraping the metrics port (namespaceSelector by label, Exists), DNS egress to
// kube-system (UDP and TCP 53), egress to the internet (ipBlock 0.0.0.0/0 except the private
// ranges, 443 and a port range), from partner teams of the same org (matchExpressions NotIn) and
// from a node range (ipBlock with except, so verdicts depend on addresses).
// Cluster-wide admin policies (ClusterNetworkPolicy): `adminPolicies` of them when the size asks
// (cluster-policies-gen.ts), none by default.
import { stringify } from 'yaml';
import { rng } from '../../test/fuzz/values.ts';
import { generateClusterPolicies } from './cluster-policies-gen.ts';
import type {
  LabelSelector,
  NamedPort,
  NamespaceInfo,
  NetworkPolicyEgressRule,
  NetworkPolicyIngressRule,
  NetworkPolicyObject,
  NetworkPolicySpec,
  PodInfo,
} from '../../shared/netpol/types.ts';

export interface ClusterSize {
  /** Namespaces in all, the 3 shared ones included (at least 4). */
  namespaces: number;
  pods: number;
  policies: number;
  /** Pods per node, each node a /24 of pod addresses (default 100; fewer make ipBlocks on node ranges split more Deployments). */
  podsPerNode?: number;
  /** ClusterNetworkPolicies (Admin and Baseline tiers, cluster-policies-gen.ts; 20 at most), default none. */
  adminPolicies?: number;
}

export interface Deployment {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  replicas: number;
  ports: NamedPort[];
}

export interface GeneratedCluster {
  namespaces: NamespaceInfo[];
  deployments: Deployment[];
  pods: PodInfo[];
  policies: NetworkPolicyObject[];
  /** Cluster-wide admin tiers: ClusterNetworkPolicy manifests (cluster-policies-gen.ts). */
  adminPolicies: Record<string, unknown>[];
}

interface App {
  app: string;
  tier: string;
  ports: NamedPort[];
}

const CATALOGUE: App[] = [
  {
    app: 'web',
    tier: 'frontend',
    ports: [
      { name: 'http', port: 8080, protocol: 'TCP' },
      { name: 'metrics', port: 9090, protocol: 'TCP' },
    ],
  },
  {
    app: 'api',
    tier: 'backend',
    ports: [
      { name: 'http', port: 8080, protocol: 'TCP' },
      { name: 'grpc', port: 50051, protocol: 'TCP' },
      { name: 'metrics', port: 9090, protocol: 'TCP' },
    ],
  },
  { app: 'worker', tier: 'backend', ports: [{ name: 'metrics', port: 9091, protocol: 'TCP' }] },
  { app: 'postgres', tier: 'data', ports: [{ name: 'postgres', port: 5432, protocol: 'TCP' }] },
  {
    app: 'redis',
    tier: 'data',
    ports: [
      { name: 'redis', port: 6379, protocol: 'TCP' },
      { name: 'metrics', port: 9121, protocol: 'TCP' },
    ],
  },
];
const SHARED: { namespace: string; labels: Record<string, string>; app: App }[] = [
  {
    namespace: 'kube-system',
    labels: { purpose: 'system' },
    app: {
      app: 'kube-dns',
      tier: 'system',
      ports: [
        { name: 'dns', port: 53, protocol: 'UDP' },
        { name: 'dns-tcp', port: 53, protocol: 'TCP' },
      ],
    },
  },
  {
    namespace: 'monitoring',
    labels: { purpose: 'monitoring' },
    app: { app: 'prometheus', tier: 'system', ports: [{ name: 'web', port: 9090, protocol: 'TCP' }] },
  },
  {
    namespace: 'ingress-nginx',
    labels: { purpose: 'ingress' },
    app: {
      app: 'ingress-nginx',
      tier: 'edge',
      ports: [
        { name: 'http', port: 80, protocol: 'TCP' },
        { name: 'https', port: 443, protocol: 'TCP' },
      ],
    },
  },
];
const ORGS = ['payments', 'search', 'media', 'identity', 'growth', 'platform'];
const ENVS = ['prod', 'prod', 'staging', 'dev'];
const NAME = 'kubernetes.io/metadata.name';

export function generateCluster(seed: number, size: ClusterSize): GeneratedCluster {
  if (size.namespaces < SHARED.length + 1) throw new Error(`generateCluster: at least ${SHARED.length + 1} namespaces (${SHARED.length} shared and a team)`);
  const r = rng(seed);
  const int = (n: number) => Math.floor(r() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const chance = (p: number) => r() < p;
  const hash = () => int(0x100000000).toString(16).padStart(8, '0').slice(0, 6);

  const teams = size.namespaces - SHARED.length;
  const teamInfo = Array.from({ length: teams }, (_, i) => ({ name: `team-${String(i).padStart(4, '0')}`, org: pick(ORGS), env: pick(ENVS) }));
  const namespaces: NamespaceInfo[] = [
    ...SHARED.map((s) => ({ name: s.namespace, labels: { ...s.labels, [NAME]: s.namespace } })),
    ...teamInfo.map((t) => ({ name: t.name, labels: { team: t.name, org: t.org, env: t.env, [NAME]: t.name } })),
  ];

  // Pods: 2 per shared namespace, the rest spread over the teams (each at least one).
  const deployments: Deployment[] = [];
  const deploy = (namespace: string, app: App, replicas: number, extra: Record<string, string>) => {
    if (replicas <= 0) return;
    const base = { app: app.app, tier: app.tier, ...extra };
    // A Deployment halfway through a rollout runs two template hashes at once.
    const hashes = replicas > 1 && chance(0.15) ? [hash(), hash()] : [hash()];
    hashes.forEach((h, i) => {
      const n = i === 0 ? Math.ceil(replicas / hashes.length) : Math.floor(replicas / hashes.length);
      const version = i === 0 ? 'v1' : 'v2';
      deployments.push({ namespace, name: app.app, labels: { ...base, version, 'pod-template-hash': h }, replicas: n, ports: app.ports });
    });
  };
  const sharedPods = Math.min(size.pods, SHARED.length * 2);
  SHARED.forEach((s, i) => deploy(s.namespace, s.app, Math.floor(sharedPods / SHARED.length) + (i < sharedPods % SHARED.length ? 1 : 0), {}));
  const teamPods = size.pods - sharedPods;
  teamInfo.forEach((t, i) => {
    let left = Math.floor(teamPods / teams) + (i < teamPods % teams ? 1 : 0);
    const apps = CATALOGUE.filter(() => chance(0.6));
    if (apps.length === 0) apps.push(CATALOGUE[0]!);
    apps.forEach((app, k) => {
      const n = k === apps.length - 1 ? left : Math.min(left, 1 + int(Math.max(1, Math.ceil((left * 2) / (apps.length - k)))));
      deploy(t.name, app, n, { team: t.name });
      left -= n;
    });
  });

  const pods: PodInfo[] = [];
  const nodes = Math.max(1, Math.ceil(size.pods / (size.podsPerNode ?? 100)));
  const used = new Array<number>(nodes).fill(0);
  for (const d of deployments)
    for (let i = 0; i < d.replicas; i++) {
      let n = int(nodes);
      while (used[n]! >= 250) n = (n + 1) % nodes;
      const ip = `10.244.${n % 256}.${++used[n]!}`;
      pods.push({ namespace: d.namespace, name: `${d.name}-${d.labels['pod-template-hash']}-${hash().slice(0, 5)}`, labels: d.labels, ip, ports: d.ports });
    }

  // Policies: a default deny per team namespace first, then allow policies, round robin over the
  // teams until the count is reached (a team that runs out of kinds gets no more).
  const policies: NetworkPolicyObject[] = [];
  const policy = (namespace: string, name: string, spec: NetworkPolicySpec): NetworkPolicyObject => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { namespace, name },
    spec,
  });
  const pod = (labels: Record<string, string>): LabelSelector => ({ matchLabels: labels });
  const kinds: ((t: (typeof teamInfo)[number]) => NetworkPolicyObject)[] = [
    (t) =>
      chance(0.3)
        ? policy(t.name, 'default-deny-all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] })
        : policy(t.name, 'default-deny-ingress', { podSelector: {}, policyTypes: ['Ingress'] }),
    (t) =>
      policy(t.name, 'allow-within-by-tier', {
        podSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['backend', 'data'] }] },
        ingress: [
          {
            from: [{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['frontend', 'backend'] }] } }],
            ports: named('http', 'grpc', 'postgres', 'redis'),
          },
        ],
      }),
    (t) =>
      policy(t.name, 'allow-from-ingress', {
        podSelector: pod({ app: 'web' }),
        ingress: [{ from: [{ namespaceSelector: pod({ [NAME]: 'ingress-nginx' }), podSelector: pod({ app: 'ingress-nginx' }) }], ports: named('http') }],
      }),
    (t) =>
      policy(t.name, 'allow-monitoring', {
        podSelector: { matchExpressions: [{ key: 'app', operator: 'Exists' }] },
        ingress: [{ from: [{ namespaceSelector: pod({ purpose: 'monitoring' }) }], ports: named('metrics') }],
      }),
    (t) =>
      policy(t.name, 'allow-dns-and-own-namespace', {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [
          {
            to: [{ namespaceSelector: pod({ [NAME]: 'kube-system' }), podSelector: pod({ app: 'kube-dns' }) }],
            ports: [
              { protocol: 'UDP', port: 53 },
              { protocol: 'TCP', port: 53 },
            ],
          },
          { to: [{ podSelector: {} }] },
        ],
      }),
    (t) =>
      policy(t.name, 'allow-internet-egress', {
        podSelector: pod({ app: 'api' }),
        policyTypes: ['Egress'],
        egress: [
          {
            to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'] } }],
            ports: [
              { protocol: 'TCP', port: 443 },
              { protocol: 'TCP', port: 30000, endPort: 32767 },
            ],
          },
        ],
      }),
    (t) =>
      policy(t.name, 'allow-partner-teams', {
        podSelector: pod({ tier: 'backend' }),
        ingress: [
          {
            from: [
              {
                namespaceSelector: {
                  matchLabels: { org: t.org },
                  matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }],
                },
                podSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['frontend', 'backend'] }] },
              },
            ],
            ports: [{ port: 'grpc' }, { protocol: 'TCP', port: 8000, endPort: 8999 }],
          },
        ],
      }),
    (t) => {
      const n = int(Math.max(1, nodes));
      const block = (n >> 2) << 2;
      return policy(t.name, 'allow-from-node-range', {
        podSelector: pod({ app: pick(CATALOGUE).app }),
        ingress: [{ from: [{ ipBlock: { cidr: `10.244.${block % 256}.0/22`, except: [`10.244.${n % 256}.0/24`] } }], ports: named('http', 'metrics') }],
      });
    },
  ];
  const order = teamInfo.map(() => [
    0,
    ...shuffle(
      kinds.slice(1).map((_, i) => i + 1),
      r,
    ),
  ]);
  for (let round = 0; round < kinds.length && policies.length < size.policies; round++)
    for (const [i, t] of teamInfo.entries()) {
      if (policies.length >= size.policies) break;
      policies.push(kinds[order[i]![round]!]!(t));
    }
  // Past every kind in every team: more of the same shape under other names.
  for (let extra = 0; policies.length < size.policies; extra++) {
    const t = teamInfo[extra % teams]!;
    const p = kinds[1 + (extra % (kinds.length - 1))]!(t);
    policies.push({ ...p, metadata: { ...p.metadata, name: `${p.metadata.name}-${Math.floor(extra / teams) + 2}` } });
  }
  const adminPolicies = size.adminPolicies ? generateClusterPolicies(seed, size.adminPolicies, ORGS) : [];
  return { namespaces, deployments, pods, policies, adminPolicies };
}

function named(...names: string[]): NetworkPolicyIngressRule['ports'] & NetworkPolicyEgressRule['ports'] {
  return names.map((port) => ({ protocol: 'TCP', port }));
}

function shuffle<T>(xs: T[], r: () => number): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

/** The cluster as Kubernetes manifests (Namespaces, Deployments, NetworkPolicies), one YAML stream. */
export function clusterYaml(c: GeneratedCluster): string {
  const docs: unknown[] = [
    ...c.namespaces.map((n) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: n.name, labels: n.labels } })),
    ...c.deployments.map((d) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { namespace: d.namespace, name: `${d.name}-${d.labels['pod-template-hash']}` },
      spec: {
        replicas: d.replicas,
        selector: { matchLabels: d.labels },
        template: {
          metadata: { labels: d.labels },
          spec: {
            containers: [
              {
                name: d.name,
                image: 'registry.example/starmap-probe:latest',
                ports: d.ports.map((p) => ({ name: p.name, containerPort: p.port, protocol: p.protocol })),
              },
            ],
          },
        },
      },
    })),
    ...c.policies,
    ...c.adminPolicies,
  ];
  return docs.map((d) => stringify(d)).join('---\n');
}
