// `scenario`: runs network-policy scenarios end to end.
//   scenario run <file, directory, built-in or built-in set> [--orchestrator URL …] [--report-json F] [--report-junit F] [--report-html F]
//   scenario check <file>      the computed tables, intended = computed, without deploying
//   scenario explain <file> --step S --from ns/pod --to ns/pod[:port/PROTO]   why one connection is allowed or not
//   scenario list              the built-in scenarios
//   scenario schema | report-schema   the JSON Schemas of scenario files and reports
import { isIP } from 'node:net';
import yargs from 'yargs';
import { runMain } from '../shared/multicall.ts';
import { VERSION } from '../shared/version.ts';
import { DEFAULTS } from '../orchestrator/config.ts';
import { prefixFlag, subnetFlag } from '../orchestrator/isolation/flags.ts';
import { BUILTIN, builtinNames } from './builtin.ts';
import { checkScenario, explainConnection, InspectError } from './inspect.ts';
import { loadScenario, type LoadOptions } from './load.ts';
import { Scenario, ScenarioError } from './model.ts';
import { Report } from './report-schema.ts';
import type { ResolvedScenario } from './resolve.ts';
import { isolationMissing, run, RunError, type RunArgs } from './run-command.ts';
import { plural } from './plural.ts';

function fail(message: string): never {
  process.stderr.write(`scenario: error: ${message}\n`);
  process.exit(2);
}

/** Options of every command that takes manifests. */
const manifestOptions = {
  namespace: { type: 'string', alias: 'n', describe: 'manifests: the namespace of objects that name none (default: default), as kubectl -n' },
  replicas: {
    type: 'boolean',
    default: false,
    describe: 'manifests: as many pods as each workload asks for, named <workload>-<n> (default: one per workload)',
  },
} as const;

const loadOptions = (a: { namespace?: unknown; replicas?: unknown }): LoadOptions => ({
  ...(typeof a.namespace === 'string' ? { namespace: a.namespace } : {}),
  ...(a.replicas === true ? { replicas: true } : {}),
});

/** yargs reads a lone `-` (stdin) as an empty string. */
const scenarioRef = (v: unknown): string => (v === '' || v === undefined ? '-' : String(v));

function load(ref: string, opts: LoadOptions = {}): ResolvedScenario {
  try {
    return loadScenario(ref, opts);
  } catch (err) {
    if (err instanceof ScenarioError) fail(err.message);
    throw err;
  }
}

export { isolationMissing, run };

export async function main(argv: string[]): Promise<void> {
  let code = 0;
  await yargs(argv)
    .scriptName('scenario')
    .usage(
      `scenario ${VERSION}\n\nRuns network-policy scenarios end to end: deploys probes and a collector through a Marathon-compatible orchestrator, applies each step's NetworkPolicies and compares, for every cell, what the author intended, what the policies say (computed, with the reason) and what the packets did.`,
    )
    .command(
      'run <scenario>',
      'run a scenario file (YAML or JSON), a directory of them, or a built-in scenario or set',
      (y) =>
        y
          .positional('scenario', {
            type: 'string',
            demandOption: true,
            describe: `file, directory of scenario files, Kubernetes manifests (a file, a directory, - for stdin), or a built-in: ${builtinNames()}`,
          })
          .options(manifestOptions)
          .option('orchestrator', { type: 'string', describe: 'URL of a running Marathon-compatible orchestrator (default: start the bundled one)' })
          .option('uid', { type: 'string', default: 'admin', describe: 'account to log in with (with --password or $STARMAP_PASSWORD)' })
          .option('password', { type: 'string', describe: 'password for --uid (prefer $STARMAP_PASSWORD)' })
          .option('token', { type: 'string', describe: 'an authorization token instead of a login (or $STARMAP_TOKEN)' })
          .option('isolation', {
            choices: ['auto', 'netns', 'off'] as const,
            default: 'auto' as const,
            describe: 'task isolation of the bundled orchestrator (auto: netns when root with iproute2 and nftables)',
          })
          .option('policy-hook', { type: 'string', describe: "command that applies a step's policies on another orchestrator; gets the path of a JSON file" })
          .option('report-json', { type: 'string', describe: 'write the JSON report here' })
          .option('report-junit', { type: 'string', describe: 'write a JUnit XML report here' })
          .option('report-html', {
            type: 'string',
            describe:
              'write a self-contained HTML report here (opens without network): per step the intended, computed and observed tables, the mismatches with their reasons, convergence times and a graph',
          })
          .option('step-timeout', {
            type: 'number',
            describe: 'seconds a step may take to settle before it fails (default: the larger of 10 s and four times probe interval + timeout + 1 s)',
          })
          .option('pause', { type: 'number', default: 0, describe: 'seconds to linger after each step (for watching the UI)' })
          .option('keep', { type: 'boolean', default: false, describe: 'leave the apps deployed at the end' })
          .option('publish-address', {
            type: 'string',
            default: DEFAULTS.publishAddress,
            describe:
              "isolated runs: where the bundled orchestrator publishes the pods' TCP ports on the host (the collector UI is printed there); 0.0.0.0 opens them to the network (the collector has no login), off publishes none",
            coerce: (v: string) => String(v).replace(/^\[(.*)\]$/, '$1'),
          })
          .option('netns-prefix', {
            type: 'string',
            describe:
              'isolated runs: prefix of what the bundled orchestrator creates (default smap; another for a second run on the same machine, with --netns-subnet)',
            coerce: prefixFlag('netns-prefix'),
          })
          .option('netns-subnet', {
            type: 'string',
            describe: 'isolated runs: the task subnet of the bundled orchestrator (default 10.213.0.0/24)',
            coerce: subnetFlag('netns-subnet'),
          })
          .option('hold', { type: 'boolean', default: false, describe: 'after the last step keep everything running until Ctrl-C, then clean up (demos)' })
          .check((a) => {
            if (a.stepTimeout != null && !(Number(a.stepTimeout) > 0)) throw new Error('invalid value for --step-timeout: expected seconds > 0');
            if (!(a.pause >= 0)) throw new Error('invalid value for --pause: expected seconds >= 0');
            if (a.publishAddress !== 'off' && isIP(String(a.publishAddress)) === 0)
              throw new Error(
                `invalid value for --publish-address: ${JSON.stringify(a.publishAddress)} (expected an IP address such as 127.0.0.1 or 0.0.0.0, or off)`,
              );
            return true;
          }),
      async (a) => {
        try {
          code = await run({ ...(a as unknown as RunArgs), scenario: scenarioRef(a.scenario) });
        } catch (err) {
          if (err instanceof RunError) fail(err.message);
          throw err;
        }
      },
    )
    .command('list', 'list the built-in scenarios', {}, () => {
      // Single scenarios first, then the sets' members.
      for (const name of Object.keys(BUILTIN).sort((a, b) => Number(a.includes('/')) - Number(b.includes('/')) || a.localeCompare(b))) {
        const s = load(name);
        process.stdout.write(
          `${name.padEnd(Math.max(...Object.keys(BUILTIN).map((n) => n.length)))}  ${s.description ?? ''} (${plural(s.steps.length, 'step')})\n`,
        );
      }
    })
    .command(
      'check <scenario>',
      "show every step's computed truth tables (and the intended ones) without deploying anything; exits 1 when the policies do not say what the scenario intends",
      (y) =>
        y
          .positional('scenario', {
            type: 'string',
            demandOption: true,
            describe: 'file, Kubernetes manifests (a file, a directory, - for stdin), or a built-in name',
          })
          .options(manifestOptions),
      (a) => {
        const r = checkScenario(load(scenarioRef(a.scenario), loadOptions(a)));
        process.stdout.write(`${r.text}\n`);
        code = r.ok ? 0 : 1;
      },
    )
    .command(
      'explain <scenario>',
      'print why one connection is allowed or blocked at a step: both sides, the isolating policies and the rule that allows it (no deployment, no root)',
      (y) =>
        y
          .positional('scenario', {
            type: 'string',
            demandOption: true,
            describe: 'file, Kubernetes manifests (a file, a directory, - for stdin), or a built-in name',
          })
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
      (a) => {
        try {
          process.stdout.write(
            `${explainConnection(load(scenarioRef(a.scenario), loadOptions(a)), { step: String(a.step), from: String(a.from), to: String(a.to), ips: a.ip as string[] })}\n`,
          );
        } catch (err) {
          if (err instanceof InspectError) fail(`${String(a.scenario)}: ${err.message}`);
          throw err;
        }
      },
    )
    .command('schema', 'print the JSON Schema of scenario files', {}, () => {
      process.stdout.write(`${JSON.stringify(Scenario, null, 2)}\n`);
    })
    .command('report-schema', 'print the JSON Schema of the JSON report (--report-json)', {}, () => {
      process.stdout.write(`${JSON.stringify(Report, null, 2)}\n`);
    })
    .demandCommand(1, 'give a command: run, check, explain, list, schema or report-schema')
    .strict()
    .version(VERSION)
    .help()
    .wrap(null)
    .fail((msg, err) => fail(msg || err?.message || 'invalid arguments'))
    .parseAsync();
  process.exitCode = code;
}

if (!process.env.STARMAP_SCENARIO_NO_MAIN) {
  // `scenario list | head`: a reader that went away is not a crash.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  });
  void runMain('scenario', main);
}
