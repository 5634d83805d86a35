// Property test: the evaluator (shared/netpol/evaluate.ts) and the rules the orchestrator renders
// (orchestrator/isolation/, read back by test/helpers/nft-sim.ts) are two independent
// implementations of NetworkPolicy v1; on generated clusters and policy sets they must agree on
// every connection, and the rule the ruleset accepted a packet by must be one the evaluator says
// allows it. A disagreement names the seed, the connection and both verdicts.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Evaluator } from '../shared/netpol/evaluate.ts';
import { reasonLine } from '../shared/netpol/explain.ts';
import type { NamespaceInfo, NetworkPolicyObject, PodInfo, Protocol } from '../shared/netpol/types.ts';
import { validateNetworkPolicy } from '../shared/netpol/validate.ts';
import { generate } from './helpers/netpol-gen.ts';
import { ROOT } from './helpers/process.ts';

/** The renderer's reader, when netpol-enforce's side is present (it lands separately). */
const SIM = join(ROOT, 'test', 'helpers', 'nft-sim.ts');
type Sim = (
  from: string,
  to: string,
  port: number,
  protocol: Protocol,
) => { allowed: boolean; egress: { verdict: string; rule?: string }; ingress: { verdict: string; rule?: string } };
interface SimModule {
  simulateCluster(c: { namespaces: NamespaceInfo[]; pods: PodInfo[]; policies: NetworkPolicyObject[] }): Sim;
}

const SEEDS = 150;

describe('generated policy sets are valid NetworkPolicies', () => {
  it('every generated policy passes validate.ts (so the comparison is about semantics, not input)', () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      for (const p of generate(seed).policies) {
        const r = validateNetworkPolicy(p);
        expect('errors' in r ? { seed, policy: p.metadata.name, errors: r.errors } : 'ok').toBe('ok');
      }
    }
  });
});

describe.skipIf(!existsSync(SIM))(
  `evaluator vs rendered nftables rules${existsSync(SIM) ? '' : ' (skipped: test/helpers/nft-sim.ts is not on this branch yet)'}`,
  () => {
    it(`agree on every connection of ${SEEDS} generated clusters`, async () => {
      const { simulateCluster } = (await import(/* @vite-ignore */ SIM)) as SimModule;
      let cells = 0;
      const disagreements: string[] = [];
      for (let seed = 1; seed <= SEEDS && disagreements.length < 10; seed++) {
        const g = generate(seed);
        const policies = g.policies.map((p) => (validateNetworkPolicy(p) as { policy: NetworkPolicyObject }).policy);
        const ev = new Evaluator(g, policies);
        const sim = simulateCluster({ namespaces: g.namespaces, pods: g.pods, policies });
        for (const from of g.pods)
          for (const to of g.pods) {
            if (from === to) continue;
            for (const port of g.ports)
              for (const protocol of ['TCP', 'UDP', 'SCTP'] as const) {
                cells++;
                const v = ev.evaluate({ from, to, port, protocol });
                const s = sim(`${from.namespace}/${from.name}`, `${to.namespace}/${to.name}`, port, protocol);
                const cell = `seed ${seed}: ${from.namespace}/${from.name} -> ${to.namespace}/${to.name} ${port}/${protocol}`;
                if (v.allowed !== s.allowed)
                  disagreements.push(
                    `${cell}: evaluator ${v.allowed} (${reasonLine(v)}), rules ${s.allowed} (egress ${s.egress.verdict} ${s.egress.rule ?? ''}, ingress ${s.ingress.verdict} ${s.ingress.rule ?? ''})`,
                  );
                // The rule that accepted the packet must be one the evaluator names.
                for (const side of ['egress', 'ingress'] as const) {
                  const m = /^(\S+\/\S+) (ingress|egress) (\d+)$/.exec(s[side].rule ?? '');
                  const verdict = v[side];
                  if (
                    m &&
                    s[side].verdict === 'accept' &&
                    verdict.decision === 'allowed' &&
                    !verdict.allowedBy.some((r) => r.policy === m[1] && r.direction === m[2] && r.rule === Number(m[3]))
                  ) {
                    disagreements.push(`${cell}: the ${side} rules accepted by "${s[side].rule}", which the evaluator does not name (${reasonLine(v)})`);
                  }
                }
              }
          }
      }
      expect(disagreements).toEqual([]);
      expect(cells).toBeGreaterThan(10_000);
    });
  },
);
