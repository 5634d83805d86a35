// Admin-tier policies (ClusterNetworkPolicy, policy.networking.k8s.io/v1alpha2) for a generated
// cluster (cluster-gen.ts), seeded: what a platform team writes over its tenants. Admin tier: DNS
// egress to kube-system and monitoring's scrapes accepted everywhere; per org, traffic within the
// org passed down to the teams' NetworkPolicies; dev and staging denied into prod (two policies of
// one priority and one action); the data tier's ports passed from backends and denied from the
// rest; the ingress controller accepted on frontends' named port; the shared namespaces' DNS
// accepted from all and the rest denied from dev namespaces. Baseline tier: per org, ingress
// and egress within the org accepted; then a default deny of ingress to team namespaces and of
// egress to other teams (the shared namespaces accepted). Subjects and peers are
// namespace and pod selectors only (no `networks`, whose subjects the tier matrix takes per
// destination pod). `count` takes the first of that list, the orgs in a seeded order.
import { rng } from '../../test/fuzz/values.ts';

const API = 'policy.networking.k8s.io/v1alpha2';
const NAME = 'kubernetes.io/metadata.name';

type Json = Record<string, unknown>;

const tcp = (port: number | { start: number; end: number }): Json => ({
  tcp: { destinationPort: typeof port === 'number' ? { number: port } : { range: port } },
});

function policy(name: string, tier: 'Admin' | 'Baseline', priority: number, subject: Json, rules: { ingress?: Json[]; egress?: Json[] }): Json {
  return { apiVersion: API, kind: 'ClusterNetworkPolicy', metadata: { name }, spec: { tier, priority, subject, ...rules } };
}

/** Up to `count` ClusterNetworkPolicy manifests (20 at most) over the orgs `orgs`, in a seeded order. */
export function generateClusterPolicies(seed: number, count: number, orgs: readonly string[]): Json[] {
  const r = rng(seed * 31 + 7);
  const order = [...orgs];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const all: Json[] = [
    policy(
      'allow-dns',
      'Admin',
      10,
      { namespaces: {} },
      {
        egress: [
          {
            name: 'dns',
            action: 'Accept',
            to: [{ pods: { namespaceSelector: { matchLabels: { [NAME]: 'kube-system' } }, podSelector: { matchLabels: { app: 'kube-dns' } } } }],
            protocols: [{ udp: { destinationPort: { number: 53 } } }, tcp(53)],
          },
        ],
      },
    ),
    policy(
      'allow-monitoring',
      'Admin',
      20,
      { namespaces: {} },
      {
        ingress: [
          {
            name: 'scrape',
            action: 'Accept',
            from: [{ namespaces: { matchLabels: { purpose: 'monitoring' } } }],
            protocols: [tcp({ start: 9090, end: 9121 })],
          },
        ],
      },
    ),
    ...order.map((org, i) =>
      policy(
        `org-${org}-internal`,
        'Admin',
        30 + i,
        { namespaces: { matchLabels: { org } } },
        {
          ingress: [{ name: 'within-org', action: 'Pass', from: [{ namespaces: { matchLabels: { org } } }] }],
          egress: [{ name: 'within-org', action: 'Pass', to: [{ namespaces: { matchLabels: { org } } }] }],
        },
      ),
    ),
    ...['dev', 'staging'].map((env) =>
      policy(
        `deny-${env}-to-prod`,
        'Admin',
        50,
        { namespaces: { matchLabels: { env: 'prod' } } },
        {
          ingress: [{ name: `from-${env}`, action: 'Deny', from: [{ namespaces: { matchLabels: { env } } }] }],
        },
      ),
    ),
    policy(
      'protect-data',
      'Admin',
      60,
      { pods: { namespaceSelector: {}, podSelector: { matchLabels: { tier: 'data' } } } },
      {
        ingress: [
          { name: 'from-backends', action: 'Pass', from: [{ pods: { namespaceSelector: {}, podSelector: { matchLabels: { tier: 'backend' } } } }] },
          { name: 'others', action: 'Deny', from: [{ namespaces: {} }], protocols: [tcp(5432), tcp(6379)] },
        ],
      },
    ),
    policy(
      'ingress-to-frontends',
      'Admin',
      70,
      { pods: { namespaceSelector: {}, podSelector: { matchLabels: { tier: 'frontend' } } } },
      {
        ingress: [
          { name: 'edge', action: 'Accept', from: [{ namespaces: { matchLabels: { purpose: 'ingress' } } }], protocols: [{ destinationNamedPort: 'http' }] },
        ],
      },
    ),
    policy(
      'shared-services',
      'Admin',
      80,
      { namespaces: { matchExpressions: [{ key: 'purpose', operator: 'Exists' }] } },
      {
        ingress: [
          { name: 'dns', action: 'Accept', from: [{ namespaces: {} }], protocols: [{ udp: { destinationPort: { number: 53 } } }, tcp(53)] },
          { name: 'not-from-dev', action: 'Deny', from: [{ namespaces: { matchLabels: { env: 'dev' } } }] },
        ],
      },
    ),
    ...order.map((org, i) =>
      policy(
        `baseline-org-${org}`,
        'Baseline',
        100 + i,
        { namespaces: { matchLabels: { org } } },
        {
          ingress: [{ name: 'from-org', action: 'Accept', from: [{ namespaces: { matchLabels: { org } } }] }],
          egress: [{ name: 'to-org', action: 'Accept', to: [{ namespaces: { matchLabels: { org } } }] }],
        },
      ),
    ),
    policy(
      'baseline-default-deny',
      'Baseline',
      1000,
      { namespaces: { matchExpressions: [{ key: 'team', operator: 'Exists' }] } },
      {
        ingress: [{ name: 'everything-else', action: 'Deny', from: [{ namespaces: {} }] }],
        egress: [
          { name: 'shared', action: 'Accept', to: [{ namespaces: { matchExpressions: [{ key: 'purpose', operator: 'Exists' }] } }] },
          { name: 'other-teams', action: 'Deny', to: [{ namespaces: { matchExpressions: [{ key: 'team', operator: 'Exists' }] } }] },
        ],
      },
    ),
  ];
  return all.slice(0, count);
}
