// `scenario explain FILE --step NAME --from ns/pod --to ns/pod[:port/PROTOCOL]`: the reasons for
// one connection (or each port the scenario checks between the two), both sides, without
// deploying anything (no root needed). Pure apart from the command's own output.
import type { Argv, CommandModule } from 'yargs';
import { reasonLine, verdictText } from '../../shared/netpol/explain.ts';
import type { Connection } from '../../shared/netpol/evaluate.ts';
import { chainText, type TieredEvaluator } from '../../shared/netpol/tiers.ts';
import { objectId, type Protocol } from '../../shared/netpol/types.ts';
import { InspectError } from '../errors.ts';
import { expectStep } from '../model/expect.ts';
import { PodNames } from '../model/matrix.ts';
import { nearest } from '../model/nearest.ts';
import type { ResolvedScenario, ResolvedStep } from '../model/resolve.ts';
import { fail, load, loadOptions, manifestOptions, scenarioPositional, scenarioRef } from './options.ts';

export { InspectError };

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
  const policies = [...exp.step.policies.map((p) => `${p.metadata.namespace}/${p.metadata.name}`), ...(exp.step.clusterPolicies ?? []).map((p) => p.id)];
  const head = `step ${step.index + 1} ${step.name}: policies in force: ${policies.join(', ') || 'none'}`;
  const body = conns.map(({ port, protocol }) => {
    const conn = { from: pod(from), to: target, port, protocol };
    return exp.tiered ? tieredText(conn, exp.tiered) : verdictText(conn, exp.evaluator.evaluate(conn), exp.evaluator);
  });
  return [head, ...body].join('\n');
}

/**
 * One connection with admin-tier policies in force: the verdict, then each side's chain (Admin tier
 * -> NetworkPolicy -> Baseline tier -> default), then what the NetworkPolicy tier alone says.
 */
export function tieredText(conn: Connection, tiered: TieredEvaluator): string {
  const v = tiered.evaluate(conn);
  const word = v.allowed === true ? 'allowed' : v.allowed === false ? 'blocked' : 'undecided (depends on addresses not known yet)';
  const order = [...new Set([...(v.egress.orderDependsOn ?? []), ...(v.ingress.orderDependsOn ?? [])])];
  return [
    `${objectId(conn.from)} -> ${objectId(conn.to)} ${conn.port}/${conn.protocol}: ${word}`,
    `  egress of ${objectId(conn.from)}: ${chainText('egress', conn.from, v.egress)}`,
    `  ingress of ${objectId(conn.to)}: ${chainText('ingress', conn.to, v.ingress)}`,
    `  the NetworkPolicy tier alone: ${reasonLine(tiered.networkPolicies.evaluate(conn))}`,
    ...(order.length > 0 ? [`  note: the verdict depends on the order of ${order.join(', ')}: same tier and priority, which upstream leaves undefined`] : []),
  ].join('\n');
}

export const explainCommand: CommandModule = {
  command: 'explain <scenario>',
  describe: 'print why one connection is allowed or blocked at a step: both sides, the isolating policies and the rule that allows it (no deployment, no root)',
  builder: (y: Argv) =>
    y
      .positional('scenario', scenarioPositional)
      .options(manifestOptions)
      .option('step', { type: 'string', demandOption: true, describe: 'step name (or number, from 1)' })
      .option('from', { type: 'string', demandOption: true, describe: 'source pod: ns/pod (or its short label)' })
      .option('to', {
        type: 'string',
        demandOption: true,
        describe: 'destination: ns/pod, ns/pod:port/PROTOCOL or ns/pod:port-name; without a port, every port the scenario checks',
      })
      .option('ip', {
        type: 'string',
        array: true,
        default: [] as string[],
        describe: 'ns/pod=address, for ipBlocks (addresses are otherwise known only once deployed)',
      }),
  handler: (a) => {
    try {
      process.stdout.write(
        `${explainConnection(load(scenarioRef(a.scenario), loadOptions(a)), { step: String(a.step), from: String(a.from), to: String(a.to), ips: a.ip as string[] })}\n`,
      );
    } catch (err) {
      if (err instanceof InspectError) fail(`${String(a.scenario)}: ${err.message}`);
      throw err;
    }
  },
};
