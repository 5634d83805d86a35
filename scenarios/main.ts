// `scenario`: runs network-policy scenarios end to end.
//   scenario run <file or built-in name> [--orchestrator URL …] [--report-json F] [--report-junit F]
//   scenario check <file>      the computed tables, intended = computed, without deploying
//   scenario explain <file> --step S --from ns/pod --to ns/pod[:port/PROTO]   why one connection is allowed or not
//   scenario list              the built-in scenarios
//   scenario schema | report-schema   the JSON Schemas of scenario files and reports
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yargs from 'yargs';
import { VERSION } from '../shared/version.ts';
import { startBundled, type Bundled } from './bundled.ts';
import { BUILTIN } from './builtin.ts';
import { assignHostPorts, groupId } from './deploy-plan.ts';
import { checkScenario, explainConnection, InspectError } from './inspect.ts';
import { loadScenario } from './load.ts';
import { Scenario, ScenarioError } from './model.ts';
import { OrchestratorClient } from './orchestrator-client.ts';
import { ChangesEndpoint, HookPolicies, NoPolicies, POLICY_PATH, type PolicyApplier } from './policies.ts';
import { locatePrograms } from './programs.ts';
import { ScenarioReport } from './report-schema.ts';
import { toJson, toJunit, type ScenarioReportDoc } from './report.ts';
import type { ResolvedScenario } from './resolve.ts';
import { preflight, runScenario } from './run.ts';

function fail(message: string): never {
  process.stderr.write(`scenario: error: ${message}\n`);
  process.exit(2);
}

function load(ref: string): ResolvedScenario {
  try {
    return loadScenario(ref);
  } catch (err) {
    if (err instanceof ScenarioError) fail(err.message);
    throw err;
  }
}

/** Why this machine cannot isolate tasks, or undefined when it can. */
export function isolationMissing(): string | undefined {
  if (process.getuid?.() !== 0) return 'it needs root';
  const missing = ['ip', 'nft'].filter((cmd) => {
    try {
      execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length > 0) return `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} missing (apt-get install ${missing.map((m) => (m === 'ip' ? 'iproute2' : 'nftables')).join(' ')})`;
  return undefined;
}

interface RunArgs {
  scenario: string;
  orchestrator?: string;
  uid: string;
  password?: string;
  token?: string;
  isolation: 'auto' | 'netns' | 'off';
  policyHook?: string;
  reportJson?: string;
  reportJunit?: string;
  stepTimeout?: number;
  pause: number;
  keep: boolean;
  hold: boolean;
}

function writeReports(report: ScenarioReportDoc, args: Pick<RunArgs, 'reportJson' | 'reportJunit'>): void {
  if (args.reportJson) writeFileSync(args.reportJson, toJson(report));
  if (args.reportJunit) writeFileSync(args.reportJunit, toJunit(report));
}

export async function run(args: RunArgs, hooks: { onReady?: (info: { bundled?: Bundled; uiUrl?: string }) => void } = {}): Promise<number> {
  const scenario = load(args.scenario);
  const log = (line: string) => process.stdout.write(`${line}\n`);
  // Policy-writing mistakes are found before anything starts (no orchestrator, no deadline).
  const refused = preflight(scenario, args.isolation !== 'off', args.isolation !== 'off' || !!args.policyHook, log);
  if (refused) {
    writeReports(refused, args);
    log(`\n${scenario.name}: FAIL: 0 of ${scenario.steps.length} steps as expected (intended != computed: a policy-writing mistake, nothing observed)`);
    return 1;
  }
  const workDir = mkdtempSync(join(tmpdir(), `starmap-${scenario.name}-`));
  const found = locatePrograms();
  const tty = process.stdout.isTTY;
  const progress = (line: string) => (tty ? process.stdout.write(`\r\x1b[2K${line}`) : undefined);
  let bundled: Bundled | undefined;
  let isolated: boolean;
  const ac = new AbortController();
  const onSignal = () => ac.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    let client: OrchestratorClient;
    let policies: PolicyApplier;
    if (args.orchestrator) {
      client = new OrchestratorClient(args.orchestrator, args.token ?? process.env.STARMAP_TOKEN);
      const password = args.password ?? process.env.STARMAP_PASSWORD;
      if (!args.token && !process.env.STARMAP_TOKEN && password) await client.login(args.uid, password);
      isolated = args.isolation !== 'off';
      if (args.policyHook) policies = new HookPolicies(args.policyHook, workDir, scenario.name, groupId(scenario));
      else {
        try {
          await client.call('GET', POLICY_PATH);
          policies = new ChangesEndpoint(client, scenario.name, scenario.namespaces.map((n) => n.name));
        } catch {
          log(`note: ${args.orchestrator} has no ${POLICY_PATH} endpoint and no --policy-hook was given: policies will not be applied`);
          policies = new NoPolicies();
        }
      }
    } else {
      const missing = isolationMissing();
      if (args.isolation === 'netns' && missing) fail(`--isolation=netns: ${missing}`);
      isolated = args.isolation === 'netns' || (args.isolation === 'auto' && !missing);
      if (!isolated) log(`note: running on loopback without isolation${missing ? ` (${missing})` : ''}: network policies are not enforced (use --isolation=netns to require them)`);
      try {
        bundled = await startBundled(found.orchestrator, { workDir, isolation: isolated });
      } catch (err) {
        // --isolation=auto: an orchestrator that cannot isolate here still runs the scenario on loopback.
        if (!isolated || args.isolation !== 'auto') throw err;
        log(`note: the orchestrator could not start with --isolation=netns, so this runs on loopback without isolation (network policies are not enforced): ${(err as Error).message.split('\n').slice(0, 3).join(' ')}`);
        isolated = false;
        bundled = await startBundled(found.orchestrator, { workDir, isolation: false });
      }
      client = new OrchestratorClient(bundled.url);
      await client.login(bundled.uid, bundled.password);
      policies = isolated ? new ChangesEndpoint(client, scenario.name, scenario.namespaces.map((n) => n.name)) : new NoPolicies();
      log(`orchestrator: ${bundled.url}  (login: ${bundled.uid} / ${bundled.password}; state in ${bundled.dataDir})`);
    }
    let next = 21000 + Math.floor(Math.random() * 20000);
    const hostPorts = isolated ? undefined : assignHostPorts(scenario.pods, () => next++);
    const result = await runScenario({
      scenario,
      client,
      policies,
      programs: found.programs,
      isolated,
      ...(hostPorts ? { hostPorts } : {}),
      workDir,
      ...(args.stepTimeout ? { stepTimeoutSeconds: args.stepTimeout } : {}),
      pauseSeconds: args.pause,
      keep: args.keep,
      hold: args.hold,
      log,
      progress,
      signal: ac.signal,
      onDeployed: (located) => {
        const ui = located.find((l) => l.app.pod.kind === 'collector');
        hooks.onReady?.({ ...(bundled ? { bundled } : {}), ...(ui ? { uiUrl: `${ui.base}/` } : {}) });
        if (ui) log(`collector UI: ${ui.base}/`);
      },
    });
    if (tty) process.stdout.write('\r\x1b[2K');
    writeReports(result, args);
    const passed = result.steps.filter((s) => s.passed).length;
    const why = result.failure === 'intended != computed' ? ' (intended != computed: a policy-writing mistake, nothing observed)' : result.failure === 'computed != observed' ? ' (computed != observed: an enforcement fault)' : '';
    if (ac.signal.aborted) log(`\n${scenario.name}: stopped (Ctrl-C) after ${result.steps.length} of ${scenario.steps.length} steps, ${passed} as expected; everything it deployed is removed`);
    else log(`\n${scenario.name}: ${result.passed ? 'PASS' : 'FAIL'}: ${result.failure === 'intended != computed' ? 0 : passed} of ${scenario.steps.length} steps as expected${why}${result.error ? ` (${result.error})` : ''}${result.enforced ? '' : '; cells the policies block were not observed (no isolation)'}`);
    await client.close();
    if (ac.signal.aborted && !args.hold) return 130;
    return result.passed ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await bundled?.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

export async function main(argv: string[]): Promise<void> {
  let code = 0;
  await yargs(argv)
    .scriptName('scenario')
    .usage(`scenario ${VERSION}\n\nRuns network-policy scenarios end to end: deploys probes and a collector through a Marathon-compatible orchestrator, applies each step's policies and compares the observed reachability with the expected one.`)
    .command(
      'run <scenario>',
      'run a scenario file (YAML or JSON) or a built-in scenario',
      (y) =>
        y
          .positional('scenario', { type: 'string', demandOption: true, describe: `file, or a built-in name (${Object.keys(BUILTIN).join(', ')})` })
          .option('orchestrator', { type: 'string', describe: 'URL of a running Marathon-compatible orchestrator (default: start the bundled one)' })
          .option('uid', { type: 'string', default: 'admin', describe: 'account to log in with (with --password or $STARMAP_PASSWORD)' })
          .option('password', { type: 'string', describe: 'password for --uid (prefer $STARMAP_PASSWORD)' })
          .option('token', { type: 'string', describe: 'an authorization token instead of a login (or $STARMAP_TOKEN)' })
          .option('isolation', { choices: ['auto', 'netns', 'off'] as const, default: 'auto' as const, describe: 'task isolation of the bundled orchestrator (auto: netns when root with iproute2 and nftables)' })
          .option('policy-hook', { type: 'string', describe: 'command that applies a step\'s policies on another orchestrator; gets the path of a JSON file' })
          .option('report-json', { type: 'string', describe: 'write the JSON report here' })
          .option('report-junit', { type: 'string', describe: 'write a JUnit XML report here' })
          .option('step-timeout', { type: 'number', describe: 'seconds a step may take to settle (default: 10 probe cycles + 10 s)' })
          .option('pause', { type: 'number', default: 0, describe: 'seconds to linger after each step (for watching the UI)' })
          .option('keep', { type: 'boolean', default: false, describe: 'leave the apps deployed at the end' })
          .option('hold', { type: 'boolean', default: false, describe: 'after the last step keep everything running until Ctrl-C, then clean up (demos)' })
          .check((a) => {
            if (a.stepTimeout != null && !(Number(a.stepTimeout) > 0)) throw new Error('invalid value for --step-timeout: expected seconds > 0');
            if (!(a.pause >= 0)) throw new Error('invalid value for --pause: expected seconds >= 0');
            return true;
          }),
      async (a) => {
        code = await run(a as unknown as RunArgs);
      },
    )
    .command('list', 'list the built-in scenarios', {}, () => {
      for (const name of Object.keys(BUILTIN)) {
        const s = load(name);
        process.stdout.write(`${name.padEnd(12)} ${s.description ?? ''} (${s.steps.length} steps)\n`);
      }
    })
    .command(
      'check <scenario>',
      "show every step's computed truth tables (and the intended ones) without deploying anything; exits 1 when the policies do not say what the scenario intends",
      (y) => y.positional('scenario', { type: 'string', demandOption: true, describe: 'file, or a built-in name' }),
      (a) => {
        const r = checkScenario(load(String(a.scenario)));
        process.stdout.write(`${r.text}\n`);
        code = r.ok ? 0 : 1;
      },
    )
    .command(
      'explain <scenario>',
      'print why one connection is allowed or blocked at a step: both sides, the isolating policies and the rule that allows it (no deployment, no root)',
      (y) =>
        y
          .positional('scenario', { type: 'string', demandOption: true, describe: 'file, or a built-in name' })
          .option('step', { type: 'string', demandOption: true, describe: 'step name (or number, from 1)' })
          .option('from', { type: 'string', demandOption: true, describe: 'source pod: ns/pod (or its short label)' })
          .option('to', { type: 'string', demandOption: true, describe: 'destination: ns/pod, ns/pod:port/PROTOCOL or ns/pod:port-name; without a port, every port the scenario checks' })
          .option('ip', { type: 'string', array: true, default: [] as string[], describe: 'ns/pod=address, for ipBlocks (addresses are otherwise known only once deployed)' }),
      (a) => {
        try {
          process.stdout.write(`${explainConnection(load(String(a.scenario)), { step: String(a.step), from: String(a.from), to: String(a.to), ips: a.ip as string[] })}\n`);
        } catch (err) {
          if (err instanceof InspectError) fail(err.message);
          throw err;
        }
      },
    )
    .command('schema', 'print the JSON Schema of scenario files', {}, () => {
      process.stdout.write(`${JSON.stringify(Scenario, null, 2)}\n`);
    })
    .command('report-schema', 'print the JSON Schema of the JSON report (--report-json)', {}, () => {
      process.stdout.write(`${JSON.stringify(ScenarioReport, null, 2)}\n`);
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
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`scenario: fatal: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
