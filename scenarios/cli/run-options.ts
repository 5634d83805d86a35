// The options of `scenario run` (cli/run.ts), as one yargs table: flags, their defaults and their
// checks, apart from what the command does with them.
import { isIP } from 'node:net';
import type { Argv } from 'yargs';
import { DEFAULTS } from '../../orchestrator/config.ts';
import { prefixFlag, subnetFlag } from '../../orchestrator/isolation/flags.ts';
import { builtinNames } from '../model/builtin.ts';
import { assertOption, EXIT, imageOption, manifestOptions } from './options.ts';

// Its return type is inferred: yargs types the handler's argument from it.
export function runOptions(y: Argv) {
  return y
    .positional('scenario', {
      type: 'string',
      demandOption: true,
      describe: `file, directory of scenario files, Kubernetes manifests (a file, a directory, - for stdin), or a built-in: ${builtinNames()}`,
    })
    .options(manifestOptions)
    .options(assertOption)
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
    .option('report-conformance', {
      type: 'string',
      describe:
        'write the ConformanceReport YAML of upstream’s ClusterNetworkPolicy suite (the set cnp-conformance) here; only checks observed on packets count as passed',
    })
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
    .option('computed-only', {
      type: 'boolean',
      default: false,
      describe: `a run that cannot enforce policies (no isolation) exits 0 instead of ${EXIT.computedOnly} when every computed check holds`,
    })
    .option('kubernetes', {
      type: 'boolean',
      default: false,
      describe: 'run on the cluster kubectl points at: export, apply, observe each step, delete (docs/kubernetes.md); with --kubectl, --image',
    })
    .option('kubectl', { type: 'string', describe: '--kubernetes: the kubectl program (default: $KUBECTL, else kubectl on PATH)' })
    .options(imageOption)
    .option('hold', { type: 'boolean', default: false, describe: 'after the last step keep everything running until Ctrl-C, then clean up (demos)' })
    .check((a) => {
      if (a.stepTimeout != null && !(Number(a.stepTimeout) > 0)) throw new Error('invalid value for --step-timeout: expected seconds > 0');
      if (!(a.pause >= 0)) throw new Error('invalid value for --pause: expected seconds >= 0');
      if (a.publishAddress !== 'off' && isIP(String(a.publishAddress)) === 0)
        throw new Error(
          `invalid value for --publish-address: ${JSON.stringify(a.publishAddress)} (expected an IP address such as 127.0.0.1 or 0.0.0.0, or off)`,
        );
      return true;
    });
}
