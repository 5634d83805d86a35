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
import { EXTERNAL_PREFIX } from '../model/externals.ts';
import { PodNames } from '../model/matrix.ts';
import { nearest } from '../model/nearest.ts';
import type { ResolvedScenario, ResolvedStep } from '../model/resolve.ts';
import { fail, load, loadOptions, manifestOptions, scenarioPositional, scenarioRef } from './options.ts';
import { plannedAddresses, RUN_SUBNET } from '../model/addresses.ts';

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

/**
 * `--to`'s parts: the pod, and a port as number/PROTOCOL or a name. The pod is whatever comes before
 * the last `:` (pod names have none), so a mistyped pod is reported as unknown, and a bad port as
 * a bad port, never the one as the other.
 */
export function parseTo(text: string): { pod: string; port?: { number: number; protocol: Protocol } | { name: string } } {
  // `external:<name>` (model/externals.ts) holds a colon of its own before any port.
  const at = text.lastIndexOf(':');
  if (at < 0 || (text.startsWith(EXTERNAL_PREFIX) && at === EXTERNAL_PREFIX.length - 1)) return { pod: text };
  const pod = text.slice(0, at);
  const port = text.slice(at + 1);
  const numbered = /^(\d{1,5})\/(tcp|udp|sctp)$/i.exec(port);
  if (numbered) {
    const number = Number(numbered[1]);
    if (number < 1 || number > 65535) throw new InspectError(`--to ${text}: port ${number} is not between 1 and 65535`);
    return { pod, port: { number, protocol: numbered[2]!.toUpperCase() as Protocol } };
  }
  if (/^[a-z0-9-]+$/i.test(port) && !/^\d+$/.test(port)) return { pod, port: { name: port } };
  throw new InspectError(`--to ${text}: expected ns/pod, ns/pod:port/PROTOCOL (TCP, UDP or SCTP) or ns/pod:port-name, got the port ${JSON.stringify(port)}`);
}

/**
 * Why one connection is allowed or not. The addresses are those `scenario check` assumes (an
 * isolated run's, model/addresses.ts) unless `addresses` is 'unknown', with --ip's over them.
 */
export function explainConnection(
  s: ResolvedScenario,
  opts: { step: string; from: string; to: string; ips?: readonly string[]; addresses?: 'run' | 'unknown'; subnet?: string },
): string {
  const names = new PodNames(s.pods);
  const step = findStep(s, opts.step);
  const from = names.resolve(opts.from);
  if (!from) throw new InspectError(`--from: ${names.unknown(opts.from)}`);
  const parsed = parseTo(opts.to);
  const to = names.resolve(parsed.pod);
  if (!to) throw new InspectError(`--to: ${names.unknown(parsed.pod)}`);
  const ips = opts.addresses === 'unknown' ? new Map<string, string>() : plannedAddresses(s.pods, opts.subnet ?? RUN_SUBNET);
  for (const [id, ip] of parseIps(opts.ips ?? [], names)) ips.set(id, ip);
  const exp = expectStep(s, step, ips);
  const pod = (id: string) => exp.cluster.pods[s.pods.findIndex((p) => p.id === id)]!;
  const target = pod(to);
  let conns: { port: number; protocol: Protocol }[];
  const port = parsed.port;
  if (port && 'number' in port) conns = [{ port: port.number, protocol: port.protocol }];
  else if (port) {
    const np = target.ports.find((p) => p.name === port.name);
    if (!np) throw new InspectError(`--to: ${to} declares no port named "${port.name}"`);
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
        describe: 'ns/pod=address, for ipBlocks (over --addresses)',
      })
      .option('addresses', {
        choices: ['run', 'unknown'] as const,
        default: 'run' as const,
        describe: 'pod addresses for ipBlocks: run: those an isolated scenario run gives the pods (as scenario check); unknown: none',
      }),
  handler: (a) => {
    try {
      process.stdout.write(
        // Nothing runs: one connection is computed, so the bounds are check's (computed), not a run's.
        `${explainConnection(load(scenarioRef(a.scenario), { ...loadOptions(a), computedOnly: true }), {
          step: String(a.step),
          from: String(a.from),
          to: String(a.to),
          ips: a.ip as string[],
          addresses: a.addresses as 'run' | 'unknown',
        })}\n`,
      );
    } catch (err) {
      if (err instanceof InspectError) fail(`${String(a.scenario)}: ${err.message}`);
      throw err;
    }
  },
};
