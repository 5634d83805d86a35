// `domainNames` peers and the name lookup in the tiered evaluator (shared/netpol/tiers.ts,
// dns.ts): an entry matches an external's names as upstream's DomainName says, and a connection to
// a named external also needs the source's lookup (to kube-system/kube-dns on 53/UDP) under the
// same policies, or it is blocked and the chain says why.
import { describe, expect, it } from 'vitest';
import { validateClusterPolicy, type ClusterPolicy } from '../shared/netpol/cluster-policy.ts';
import { domainMatches, kubeDnsPod } from '../shared/netpol/dns.ts';
import { TierMatrix } from '../shared/netpol/tier-matrix.ts';
import { chainText, TieredEvaluator } from '../shared/netpol/tiers.ts';
import type { NetworkPolicyObject, PodInfo } from '../shared/netpol/types.ts';

const policy = (name: string, priority: number, egress: unknown[]): ClusterPolicy => {
  const r = validateClusterPolicy({
    apiVersion: 'policy.networking.k8s.io/v1alpha2',
    kind: 'ClusterNetworkPolicy',
    metadata: { name },
    spec: { tier: 'Admin', priority, subject: { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'shop' } } }, egress },
  });
  if ('errors' in r) throw new Error(JSON.stringify(r.errors));
  return r.policy;
};

const web: PodInfo = { namespace: 'shop', name: 'web', labels: { app: 'web' }, ip: '10.213.0.2', ports: [] };
const www: PodInfo = { namespace: 'external', name: 'www', labels: {}, ip: '203.0.113.10', ports: [], external: true, names: ['www.example.com'] };
const other: PodInfo = { namespace: 'external', name: 'other', labels: {}, ip: '203.0.113.11', ports: [], external: true, names: ['other.example.org'] };
const bare: PodInfo = { namespace: 'external', name: 'bare', labels: {}, ip: '203.0.113.12', ports: [], external: true };
const dns = kubeDnsPod('10.213.0.53');
const namespaces = ['shop', 'external', 'kube-system'].map((name) => ({ name, labels: { 'kubernetes.io/metadata.name': name } }));
const cluster = (withDns = true) => ({ namespaces, pods: [web, www, other, bare, ...(withDns ? [dns] : [])] });

const acceptWww = policy('allow-www', 10, [{ action: 'Accept', to: [{ domainNames: ['www.example.com'] }] }]);
const acceptDns = policy('allow-dns', 5, [
  {
    action: 'Accept',
    to: [
      {
        pods: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } },
      },
    ],
    protocols: [{ udp: { destinationPort: { number: 53 } } }],
  },
]);
const denyAll = policy('deny-all', 100, [{ action: 'Deny', to: [{ networks: ['0.0.0.0/0'] }] }]);
const to = (dest: PodInfo, port = 80) => ({ from: web, to: dest, port, protocol: 'TCP' as const });

describe('domainNames entries (upstream DomainName)', () => {
  it('match exactly, or with *. one or more whole labels, without case or trailing dot', () => {
    expect(domainMatches('kubernetes.io', 'kubernetes.io')).toBe(true);
    expect(domainMatches('kubernetes.io', 'www.kubernetes.io')).toBe(false);
    expect(domainMatches('blog.kubernetes.io', 'www.kubernetes.io')).toBe(false);
    expect(domainMatches('*.kubernetes.io', 'www.kubernetes.io')).toBe(true);
    expect(domainMatches('*.kubernetes.io', 'latest.blog.kubernetes.io')).toBe(true);
    expect(domainMatches('*.kubernetes.io', 'kubernetes.io')).toBe(false);
    expect(domainMatches('*.kubernetes.io', 'my-kubernetes.io')).toBe(false);
    expect(domainMatches('WWW.Example.COM.', 'www.example.com')).toBe(true);
  });
});

describe('the tiered evaluator with domainNames and DNS', () => {
  it('accepts a named external through a domainNames rule when the lookup is allowed, and only that one', () => {
    const ev = new TieredEvaluator(cluster(), [], [acceptDns, acceptWww, denyAll]);
    const v = ev.evaluate(to(www));
    expect(v.allowed).toBe(true);
    expect(chainText('egress', web, v.egress)).toBe('Admin cnp/allow-www egress rule 0 Accept');
    expect(ev.evaluate(to(other)).allowed).toBe(false);
    expect(ev.evaluate(to(bare)).allowed).toBe(false);
  });

  it('blocks a cell whose lookup its policies block, and the chain names the lookup', () => {
    const ev = new TieredEvaluator(cluster(), [], [acceptWww, denyAll]);
    const v = ev.evaluate(to(www));
    expect(v.allowed).toBe(false);
    expect(v.egress.decidedBy).toBe('dns');
    expect(chainText('egress', web, v.egress)).toBe(
      'Admin cnp/allow-www egress rule 0 Accept -> DNS blocked: shop/web -> kube-system/kube-dns:53/UDP (egress: Admin cnp/deny-all egress rule 0 Deny)',
    );
    // By address, an external with no names needs no lookup: the deny decides as before.
    expect(ev.evaluate(to(bare)).egress.decidedBy).toBe('admin');
  });

  it('blocks the lookup on the DNS pod’s ingress side too (a NetworkPolicy isolating kube-system)', () => {
    const isolate: NetworkPolicyObject = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'deny-in', namespace: 'kube-system' },
      spec: { podSelector: {}, policyTypes: ['Ingress'] },
    };
    const ev = new TieredEvaluator(cluster(), [isolate], [acceptWww]);
    const v = ev.evaluate(to(www));
    expect(v.allowed).toBe(false);
    expect(chainText('egress', web, v.egress)).toBe(
      'Admin cnp/allow-www egress rule 0 Accept -> DNS blocked: shop/web -> kube-system/kube-dns:53/UDP (ingress: NetworkPolicy kube-system/deny-in isolates kube-system/kube-dns for ingress and no rule allows)',
    );
  });

  it('a named external allowed by default still needs the lookup; with no DNS pod it cannot resolve', () => {
    const ev = new TieredEvaluator(cluster(false), [], []);
    const v = ev.evaluate(to(www));
    expect(v.allowed).toBe(false);
    expect(chainText('egress', web, v.egress)).toBe(
      'no NetworkPolicy isolates shop/web for egress -> default: allowed -> DNS blocked: the cluster has no DNS pod (kube-system/kube-dns)',
    );
    expect(new TieredEvaluator(cluster(), [], []).evaluate(to(www)).allowed).toBe(true);
  });

  it('matches domainNames on egress only, in Deny rules as in Accept rules', () => {
    const denyWww = policy('deny-www', 10, [{ action: 'Deny', to: [{ domainNames: ['*.example.com'] }] }]);
    const ev = new TieredEvaluator(cluster(), [], [denyWww]);
    expect(ev.evaluate(to(www)).egress.decidedBy).toBe('admin');
    expect(ev.evaluate(to(www)).allowed).toBe(false);
    expect(ev.evaluate(to(other)).allowed).toBe(true);
  });

  it('TierMatrix gives the tiered evaluator’s verdict for named externals (their names are not in a class)', () => {
    const m = new TierMatrix(cluster(), [], [acceptDns, acceptWww, denyAll]);
    const ev = new TieredEvaluator(cluster(), [], [acceptDns, acceptWww, denyAll]);
    for (const dest of [www, other, bare]) expect(m.evaluate(to(dest)).allowed).toBe(ev.evaluate(to(dest)).allowed);
    expect(m.evaluate(to(www)).allowed).toBe(true);
  });
});
