// `scenario`: runs network-policy scenarios end to end. One file per command in cli/:
//   scenario run <file, directory, built-in or built-in set> [--orchestrator URL …] [--report-json F] [--report-junit F] [--report-html F]
//   scenario check <file>      the computed tables, intended = computed, without deploying
//   scenario explain <file> --step S --from ns/pod --to ns/pod[:port/PROTO]   why one connection is allowed or not
//   scenario export <file> --to DIR   Kubernetes manifests of the scenario (docs/kubernetes.md)
//   scenario observe <file> --collector URL [--step S]   judge the step in force on a cluster
//   scenario diff <base> <head>   which flows a change opens or closes, and why
//   scenario list              the built-in scenarios
//   scenario schema | report-schema | diff-schema   the JSON Schemas of scenario files and reports
// The layers below: model/ (reading and meaning), run/ (deploy, apply, observe, settle), report/
// (results and their formats); docs/scenarios.md is the manual.
import yargs from 'yargs';
import { runMain } from '../shared/multicall.ts';
import { VERSION } from '../shared/version.ts';
import { checkCommand } from './cli/check.ts';
import { diffCommandModule, diffSchemaCommand } from './cli/diff.ts';
import { explainCommand } from './cli/explain.ts';
import { exportCommand } from './cli/export.ts';
import { listCommand } from './cli/list.ts';
import { observeCommand } from './cli/observe.ts';
import { fail } from './cli/options.ts';
import { isolationMissing, run, runCommand } from './cli/run.ts';
import { reportSchemaCommand, schemaCommand } from './cli/schema.ts';

export { isolationMissing, run };

export async function main(argv: string[]): Promise<void> {
  process.exitCode = 0;
  await yargs(argv)
    .scriptName('scenario')
    .usage(
      `scenario ${VERSION}\n\nRuns network-policy scenarios end to end: deploys probes and a collector through a Marathon-compatible orchestrator, applies each step's NetworkPolicies and compares, for every cell, what the author intended, what the policies say (computed, with the reason) and what the packets did.`,
    )
    .command(runCommand)
    .command(listCommand)
    .command(checkCommand)
    .command(explainCommand)
    .command(exportCommand)
    .command(observeCommand)
    .command(diffCommandModule)
    .command(schemaCommand)
    .command(reportSchemaCommand)
    .command(diffSchemaCommand)
    .demandCommand(1, 'give a command: run, check, explain, export, observe, diff, list, schema, report-schema or diff-schema')
    .strict()
    .version(VERSION)
    .help()
    .wrap(null)
    .fail((msg, err) => fail(msg || err?.message || 'invalid arguments'))
    .parseAsync();
}

if (!process.env.STARMAP_SCENARIO_NO_MAIN) {
  // `scenario list | head`: a reader that went away is not a crash.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  });
  void runMain('scenario', main);
}
