// The order compiled rules list addresses in (ip-order.ts) must stay exactly the order the
// per-call `localeCompare(b, 'en', { numeric: true })` gave before one collator replaced it
// (issue 34: that call was most of a full compile's time), so that no ruleset text changes.
import { describe, expect, it } from 'vitest';
import { compareIps } from '../../../orchestrator/isolation/ip-order.ts';
import { compileRules } from '../../../orchestrator/isolation/compile.ts';
import type { PodNet } from '../../../orchestrator/isolation/cluster.ts';

/** A deterministic generator (mulberry32), so that a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function addresses(n: number, seed: number): string[] {
  const r = random(seed);
  const byte = () => String(Math.floor(r() * 256));
  const hex = () => Math.floor(r() * 65536).toString(16);
  return Array.from({ length: n }, (_, i) => (i % 3 === 2 ? `fd00:${hex()}::${hex()}:${hex()}` : `10.${byte()}.${r() < 0.5 ? '0' : byte()}.${byte()}`));
}

describe('the order of addresses in compiled rules', () => {
  it('is the order of localeCompare with numeric collation, on random IPv4 and IPv6 addresses', () => {
    for (const seed of [1, 2, 3, 34]) {
      const ips = addresses(500, seed);
      const expected = [...ips].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
      expect([...ips].sort(compareIps)).toEqual(expected);
    }
  });

  it('lists the pods of a peer by number, not by text (10.0.0.9 before 10.0.0.10)', () => {
    const pod = (ip: string, app: string): PodNet => ({
      taskId: `t-${ip}`,
      appId: `/${app}`,
      netns: `ns-${ip}`,
      ip,
      namespace: 'default',
      pod: app,
      labels: { app },
      dialectLabels: {},
      groups: [],
      ports: [],
    });
    const pods = [pod('10.0.0.100', 'client'), pod('10.0.0.10', 'client'), pod('10.0.0.9', 'client'), pod('10.0.0.2', 'server')];
    const rules = compileRules({
      pods,
      namespaces: [{ name: 'default', labels: { 'kubernetes.io/metadata.name': 'default' } }],
      dialect: [],
      policies: [
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: 'p', namespace: 'default' },
          spec: { podSelector: { matchLabels: { app: 'server' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }] }] },
        },
      ],
      gateway: '10.0.0.1',
    });
    const server = rules.find((r) => r.ip === '10.0.0.2')!;
    expect(server.ingress.rules.map((r) => r.peer)).toEqual([
      { kind: 'pods', ips: ['10.0.0.9', '10.0.0.10', '10.0.0.100'], pods: ['default/client', 'default/client', 'default/client'] },
    ]);
  });
});
