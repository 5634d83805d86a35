// What a scenario says without deploying anything (no root needed):
// - `scenario explain FILE --step NAME --from ns/pod --to ns/pod[:port/PROTOCOL]`: the reasons for
//   one connection (or each port the scenario checks between the two), both sides;
// - `scenario check FILE`: every step's computed tables beside the intended ones, and whether the
//   policies say what the scenario intends.
// Pure: text in, text out.
import { verdictText } from '../shared/netpol/explain.ts';
import type { Protocol } from '../shared/netpol/types.ts';
import { expectStep } from './expect.ts';
import { PodNames } from './matrix.ts';
import { nearest } from './nearest.ts';
import { cellResults, failureLine, stepResult } from './report.ts';
import type { ResolvedScenario, ResolvedStep } from './resolve.ts';
import { notRunCells, settleBudgetMs } from './steps.ts';
import { LEGEND } from './tables.ts';
import { plural } from './plural.ts';

export class InspectError extends Error {}

export function findStep(s: ResolvedScenario, name: string): ResolvedStep {
  const step = s.steps.find((st) => st.name === name) ?? (/^\d+$/.test(name) ? s.steps[Number(name) - 1] : undefined);
  if (!step) {
    const names = s.steps.map((st) => st.name);
    const near = nearest(name, names);
    throw new InspectError(`--step: no step ${JSON.stringify(name)} (${near.length > 0 ? `nearest: ${near.join(', ')}` : `steps: ${names.join(', ')}`})`);
  }
  return step;
}

/** `ns/pod=address` entries given with --ip, for ipBlocks that name addresses. */
export function parseIps(entries: readonly string[], names: PodNames): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of entries) {
    const [pod, ip] = e.split('=');
    if (!pod || !ip) throw new InspectError(`--ip: expected ns/pod=address, got ${JSON.stringify(e)}`);
    const id = names.resolve(pod);
    if (!id) throw new InspectError(`--ip ${e}: ${names.unknown(pod)}`);
    out.set(id, ip);
  }
  return out;
}

export function explainConnection(s: ResolvedScenario, opts: { step: string; from: string; to: string; ips?: readonly string[] }): string {
  const names = new PodNames(s.pods);
  const step = findStep(s, opts.step);
  const from = names.resolve(opts.from);
  if (!from) throw new InspectError(`--from: ${names.unknown(opts.from)}`);
  const m = /^(.+?)(?::(?:(\d{1,5})\/(tcp|udp|sctp)|([a-z0-9-]+)))?$/i.exec(opts.to);
  if (!m) throw new InspectError(`--to: expected ns/pod[:port/PROTOCOL], got ${JSON.stringify(opts.to)}`);
  const to = names.resolve(m[1]!);
  if (!to) throw new InspectError(`--to: ${names.unknown(m[1]!)}`);
  const exp = expectStep(s, step, parseIps(opts.ips ?? [], names));
  const pod = (id: string) => exp.cluster.pods.find((p) => `${p.namespace}/${p.name}` === id)!;
  const target = pod(to);
  let conns: { port: number; protocol: Protocol }[];
  if (m[2]) conns = [{ port: Number(m[2]), protocol: m[3]!.toUpperCase() as Protocol }];
  else if (m[4]) {
    const np = target.ports.find((p) => p.name === m[4]);
    if (!np) throw new InspectError(`--to: ${to} declares no port named "${m[4]}"`);
    conns = [{ port: np.port, protocol: np.protocol }];
  } else {
    const checked = s.cells.filter((c) => c.from === from && c.to === to);
    conns = checked.length > 0 ? checked : target.ports;
  }
  const policies = exp.step.policies.map((p) => `${p.metadata.namespace}/${p.metadata.name}`);
  const head = `step ${step.index + 1} ${step.name}: policies in force: ${policies.join(', ') || 'none'}`;
  const body = conns.map(({ port, protocol }) => {
    const conn = { from: pod(from), to: target, port, protocol };
    return verdictText(conn, exp.evaluator.evaluate(conn), exp.evaluator);
  });
  return [head, ...body].join('\n');
}

/** Every step's tables and whether intended = computed; `ok` false on a policy-writing mistake. */
export function checkScenario(s: ResolvedScenario): { ok: boolean; text: string } {
  // Manifests: what was read, ignored and noted comes first.
  const out = [...(s.manifests ? [...s.manifests, ''] : []), LEGEND];
  let ok = true;
  for (const step of s.steps) {
    const exp = expectStep(s, step);
    const cells = cellResults(exp, notRunCells(exp, true));
    const result = stepResult(exp, s.pods, cells, { settled: null, durationMs: null, budgetMs: settleBudgetMs(s), lastFlipMs: null, observed: false });
    const judged = exp.cells.filter((c) => c.intended !== null).length;
    const head = `step ${step.index + 1}/${s.steps.length} ${step.name}`;
    if (exp.mistakes.length > 0) {
      ok = false;
      out.push(
        '',
        `${head}: FAIL: intended != computed at ${plural(exp.mistakes.length, 'cell')} (a policy-writing mistake)`,
        result.tables,
        ...cells.filter((c) => c.status === 'intended != computed').map((c) => `  ${failureLine(c)}`),
      );
    } else
      out.push(
        '',
        `${head}: ${step.intended ? `intended = computed (${plural(judged, 'judged cell')})` : `computed (${plural(exp.cells.length, 'cell')})`}`,
        result.tables,
      );
  }
  out.push('', ok ? `${s.name}: the policies say what every step intends` : `${s.name}: FAIL: intended != computed (a policy-writing mistake)`);
  return { ok, text: out.join('\n') };
}
