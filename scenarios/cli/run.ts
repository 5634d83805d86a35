// `scenario run`: one scenario or a set (a built-in folder such as k8s-e2e, or a directory). Finds
// policy-writing mistakes before anything starts, starts the bundled orchestrator (with isolation
// when the machine can) or logs in to the one given, runs the scenarios (those with the same pods
// on one deployment), writes the reports and says how it went.
import type { CommandModule } from 'yargs';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { startBundled, type Bundled } from '../run/bundled-orchestrator.ts';
import { groupId } from '../run/deploy-plan.ts';
import { loopbackPorts, uiAddress } from '../run/host-ports.ts';
import { collectorNaming, LiveExpectations } from '../run/live-expectations.ts';
import { loadTargets } from '../model/load.ts';
import { ScenarioError } from '../model/scenario-file.ts';
import { OrchestratorClient } from '../run/orchestrator-client.ts';
import { ChangesEndpoint, HookPolicies, NoPolicies, POLICY_PATH, type PolicyApplier } from '../run/policies.ts';
import { locatePrograms } from '../run/programs.ts';
import type { SetReportDoc } from '../report/schema.ts';
import { REPORT_FORMATS } from '../report/formats.ts';
import type { ScenarioReportDoc, StepResultDoc } from '../report/results.ts';
import type { ResolvedScenario } from '../model/resolve.ts';
import { DEFAULTS } from '../../orchestrator/config.ts';
import { runDeployment, stoppedBy } from '../run/runner.ts';
import { deploymentScenario, shareDeployments } from '../run/share.ts';
import { notRunReport, preflight } from '../run/steps.ts';
import { findCommand, isolationGap, isolationMissing } from '../run/enforcement.ts';
import { scenarioSummaryLine } from '../report/results.ts';
import { CNP_CONFORMANCE_VERSION, conformanceReportYaml } from '../report/conformance.ts';
import { VERSION } from '../../shared/version.ts';
import { TerminalLines } from './terminal.ts';
import { addAssertFile, EXIT, externalFlags, fail, scenarioRef } from './options.ts';
import { runOptions } from './run-options.ts';
import { runOnKubernetes } from './run-kubernetes.ts';

export { EXIT, findCommand, isolationGap, isolationMissing };
import { plannedAddresses, RUN_SUBNET } from '../model/addresses.ts';

export interface RunArgs {
  scenario: string;
  orchestrator?: string;
  uid: string;
  password?: string;
  token?: string;
  isolation: 'auto' | 'netns' | 'off';
  policyHook?: string;
  reportJson?: string;
  reportJunit?: string;
  reportHtml?: string;
  reportConformance?: string;
  stepTimeout?: number;
  pause: number;
  keep: boolean;
  hold: boolean;
  /** Where the bundled orchestrator publishes isolated tasks' ports (default 127.0.0.1; off: none). */
  publishAddress?: string;
  /** The bundled orchestrator's --netns-prefix and --netns-subnet (its defaults when absent). */
  netnsPrefix?: string;
  netnsSubnet?: string;
  /** Manifests: the namespace of objects that name none, and one pod per replica. */
  namespace?: string;
  replicas?: boolean;
  /** A run that cannot enforce policies exits 0 (not EXIT_COMPUTED_ONLY) when every computed check holds. */
  computedOnly?: boolean;
  /** --external: hosts outside the pod network (model/externals.ts). */
  external?: string[];
  /** `--assert FILE`: intents for every step, or by step name. */
  assert?: string;
  /** --kubernetes: on the cluster kubectl points at (cli/run-kubernetes.ts), with --kubectl and --image. */
  kubernetes?: boolean;
  kubectl?: string;
  image?: string;
}

import { RunError } from '../errors.ts';

export { RunError };

/** A Marathon id segment for a set's deployment, from its folder name. */
function deploymentName(set: string, index: number, count: number): string {
  const base =
    basename(set)
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 28) || 'set';
  return count > 1 ? `${base}-${index + 1}` : base;
}

/** For callers that run scenarios in process (npm start, live views): when the pods are up, and each finished step with its cells and reasons. */
export interface RunHooks {
  onReady?: (info: { bundled?: Bundled; uiUrl?: string }) => void;
  onStep?: (scenario: string, step: StepResultDoc) => void;
  /** Called once with every scenario's report, in order, before the exit code is decided (scenario diff --isolation=netns reads them). */
  onReports?: (reports: ScenarioReportDoc[]) => void;
}

export async function run(args: RunArgs, hooks: RunHooks = {}): Promise<number> {
  if (args.kubernetes) return runOnKubernetes(args).catch((err: unknown) => Promise.reject(err instanceof ScenarioError ? new RunError(err.message) : err));
  let targets: { set?: string; scenarios: ResolvedScenario[] };
  try {
    targets = loadTargets(args.scenario, {
      ...(args.namespace !== undefined ? { namespace: args.namespace } : {}),
      ...(args.replicas ? { replicas: true } : {}),
      ...(args.external?.length ? { externals: externalFlags(args.external) } : {}),
      ...(args.netnsSubnet ? { podSubnet: args.netnsSubnet } : {}),
    });
    addAssertFile(targets.scenarios, args.assert);
  } catch (err) {
    if (err instanceof ScenarioError) throw new RunError(err.message);
    throw err;
  }
  return runLoaded(args, targets, hooks);
}

/** `run` of scenarios already resolved (`scenario diff --isolation=netns` builds one from its two sides). */
export async function runLoaded(args: RunArgs, targets: { set?: string; scenarios: ResolvedScenario[] }, hooks: RunHooks = {}): Promise<number> {
  // A report that cannot be written is said before the run, not after it.
  for (const [flag, file] of [
    ['--report-json', args.reportJson],
    ['--report-junit', args.reportJunit],
    ['--report-html', args.reportHtml],
    ['--report-conformance', args.reportConformance],
  ] as const)
    if (file && !existsSync(join(file, '..'))) throw new RunError(`${flag}: no directory ${join(file, '..')}`);
  const terminal = new TerminalLines(process.stdout);
  const { log } = terminal;
  // Said first (npm start's first lines after the build): a run that cannot enforce proves nothing
  // the policies block, and the one command that would.
  const gap = !args.orchestrator && args.isolation === 'auto' ? isolationGap() : undefined;
  if (gap) log(`policies are not enforced here (${gap.why}): the cells they block will be "not proven", never PASS.\n  To enforce them: ${gap.fix}`);
  const startedAt = new Date().toISOString();
  // Policy-writing mistakes are found before anything starts (no orchestrator, no deadline).
  const reports = new Map<ResolvedScenario, ScenarioReportDoc>();
  for (const s of targets.scenarios) {
    if (targets.set) log(`\n== ${s.name}: checking that the policies say what it intends`);
    for (const line of s.manifests ?? []) log(line);
    const refused = preflight(s, args.isolation !== 'off', args.isolation !== 'off' || !!args.policyHook, log);
    if (refused) reports.set(s, refused);
  }
  const runnable = targets.scenarios.filter((s) => !reports.has(s));
  const ac = new AbortController();
  if (runnable.length > 0) await runAll(args, targets.set, runnable, reports, terminal, ac, hooks);

  const ordered = targets.scenarios.map((s) => reports.get(s)!);
  const doc: ScenarioReportDoc | SetReportDoc = targets.set
    ? {
        set: targets.set,
        startedAt,
        finishedAt: new Date().toISOString(),
        passed: ordered.every((r) => r.outcome !== 'fail'),
        scenarios: ordered,
      }
    : ordered[0]!;
  hooks.onReports?.(ordered);
  for (const [file, format] of [
    [args.reportJson, 'json'],
    [args.reportHtml, 'html'],
    [args.reportJunit, 'junit'],
  ] as const)
    if (file) writeFileSync(file, REPORT_FORMATS[format](doc));
  if (args.reportConformance)
    writeFileSync(
      args.reportConformance,
      conformanceReportYaml(ordered, { mode: 'run', date: new Date().toISOString(), version: VERSION, apiVersion: CNP_CONFORMANCE_VERSION }),
    );
  log('');
  for (const [i, r] of ordered.entries()) log(scenarioSummaryLine(r, targets.scenarios[i]!.steps.length));
  if (targets.set) {
    const notRun = ordered.filter((r) => r.outcome === 'not run').length;
    log(
      `${targets.set}: ${ordered.filter((r) => r.passed).length} of ${ordered.length} scenarios as expected${notRun ? `, ${notRun} not run` : ''}, ${ordered.filter((r) => r.outcome === 'fail').length} failed`,
    );
  }
  if (ac.signal.aborted) {
    const by = stoppedBy(ac.signal);
    log(`stopped (${by}); everything it deployed is removed`);
    // 128 + the signal's number, as shells report a program a signal ended; a demo held after its
    // last step (--hold) ends this way normally and exits as its steps went.
    const cutShort = ordered.some((r) => /^(not run: )?stopped /.test(r.error ?? ''));
    if (!args.hold || cutShort) return by === 'SIGTERM' ? 143 : 130;
  }
  // Not run is no failure (SCTP here, as upstream skips it without the feature; admin-tier rules
  // with nodes or domainNames peers to externals: run/unenforced.ts), nor a pass; computed only (cells not proven without enforcement) has its own code unless asked for.
  if (ordered.some((r) => r.outcome === 'fail')) return EXIT.fail;
  return ordered.some((r) => r.outcome === 'computed only') && !args.computedOnly ? EXIT.computedOnly : EXIT.pass;
}

async function runAll(
  args: RunArgs,
  set: string | undefined,
  scenarios: ResolvedScenario[],
  reports: Map<ResolvedScenario, ScenarioReportDoc>,
  terminal: TerminalLines,
  ac: AbortController,
  hooks: RunHooks,
): Promise<void> {
  const workDir = mkdtempSync(join(tmpdir(), `starmap-${basename(set ?? scenarios[0]!.name)}-`));
  const found = locatePrograms();
  const { log, progress } = terminal;
  let bundled: Bundled | undefined;
  const onSignal = (signal: NodeJS.Signals) => ac.abort(signal);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    let client: OrchestratorClient;
    let isolated: boolean;
    let applier: (name: string, namespaces: string[]) => PolicyApplier;
    if (args.orchestrator) {
      client = new OrchestratorClient(args.orchestrator, args.token ?? process.env.STARMAP_TOKEN);
      const password = args.password ?? process.env.STARMAP_PASSWORD;
      if (!args.token && !process.env.STARMAP_TOKEN && password) await client.login(args.uid, password);
      isolated = args.isolation !== 'off';
      if (args.policyHook) applier = (name) => new HookPolicies(args.policyHook!, workDir, name, groupId({ name }));
      else {
        let endpoint = true;
        try {
          await client.call('GET', POLICY_PATH);
        } catch {
          log(`note: ${args.orchestrator} has no ${POLICY_PATH} endpoint and no --policy-hook was given: policies will not be applied`);
          endpoint = false;
        }
        applier = (name, namespaces) => (endpoint ? new ChangesEndpoint(client, name, namespaces) : new NoPolicies());
      }
    } else {
      const missing = isolationMissing();
      if (args.isolation === 'netns' && missing) throw new RunError(`--isolation=netns: ${missing}`);
      isolated = args.isolation === 'netns' || (args.isolation === 'auto' && !missing);
      if (!isolated)
        log(
          `note: running on loopback without isolation${missing ? ` (${missing})` : ''}: network policies are not enforced, so the cells they block are not proven (use --isolation=netns to require them)`,
        );
      log(`starting the orchestrator${isolated ? ' with network isolation' : ''} …`);
      try {
        bundled = await startBundled(found.orchestrator, {
          workDir,
          isolation: isolated,
          publishAddress: args.publishAddress ?? DEFAULTS.publishAddress,
          netnsPrefix: args.netnsPrefix,
          netnsSubnet: args.netnsSubnet,
        });
      } catch (err) {
        // --isolation=auto: an orchestrator that cannot isolate here still runs the scenario on loopback.
        if (!isolated || args.isolation !== 'auto') throw err;
        log(
          `note: the orchestrator could not start with --isolation=netns, so this runs on loopback without isolation (network policies are not enforced): ${(err as Error).message.split('\n').slice(0, 3).join(' ')}`,
        );
        isolated = false;
        bundled = await startBundled(found.orchestrator, { workDir, isolation: false });
      }
      client = new OrchestratorClient(bundled.url);
      await client.login(bundled.uid, bundled.password);
      const enforcing = isolated;
      applier = (name, namespaces) => (enforcing ? new ChangesEndpoint(client, name, namespaces) : new NoPolicies());
      log(`orchestrator: ${bundled.url}  (login: ${bundled.uid} / ${bundled.password}; state in ${bundled.dataDir})`);
    }
    // Scenarios with the same pods share one deployment (run/share.ts), in the order they first appear.
    const groups = shareDeployments(scenarios);
    for (const [i, group] of groups.entries()) {
      if (ac.signal.aborted) break;
      const name = set ? deploymentName(set, i, groups.length) : group[0]!.name;
      const deployed = deploymentScenario(group);
      const hostPorts = isolated ? undefined : await loopbackPorts(deployed);
      let live: LiveExpectations | undefined; // the collector UI's live expectations, once it is up
      const policies = applier(name, [...new Set(group.flatMap((s) => s.namespaces.map((n) => n.name)))]);
      const results = await runDeployment(
        {
          client,
          policies,
          programs: found.programs,
          isolated,
          ...(hostPorts ? { hostPorts } : {}),
          // The bundled orchestrator gives each pod the address scenario check assumes.
          ...(isolated && bundled ? { addresses: plannedAddresses(deployed.pods, args.netnsSubnet ?? RUN_SUBNET) } : {}),
          workDir,
          ...(args.stepTimeout ? { stepTimeoutSeconds: args.stepTimeout } : {}),
          pauseSeconds: args.pause,
          keep: args.keep,
          hold: args.hold && i === groups.length - 1,
          log,
          progress,
          signal: ac.signal,
          onStep: (scenario: string, step: StepResultDoc) => (live?.judged(scenario, step), hooks.onStep?.(scenario, step)),
          onStepStart: (scenario, exp, total, notRun) => live?.started(scenario, exp, total, notRun),
          onDeployed: (located) => {
            const naming = collectorNaming(located);
            if (naming) live = new LiveExpectations(naming, log, { enforced: policies.enforces });
            const ui = located.find((l) => l.app.pod.kind === 'collector');
            const where = ui ? uiAddress(ui, bundled ? (args.publishAddress ?? DEFAULTS.publishAddress) : undefined) : undefined;
            hooks.onReady?.({ ...(bundled ? { bundled } : {}), ...(where ? { uiUrl: where.url } : {}) });
            if (where) log(`collector UI: ${where.url}${where.note ? `\n  ${where.note}` : ''}`);
          },
        },
        name,
        group,
      );
      await live?.flush();
      group.forEach((s, k) => reports.set(s, results[k]!));
    }
    terminal.clear();
    await client.close();
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await bundled?.stop();
    rmSync(workDir, { recursive: true, force: true });
    // Scenarios an interruption kept from running still get a report.
    for (const s of scenarios)
      if (!reports.has(s))
        reports.set(
          s,
          ac.signal.aborted
            ? { ...notRunReport(s), outcome: 'not run', failure: null, error: `not run: stopped (${stoppedBy(ac.signal)}) before it` }
            : { ...notRunReport(s), error: 'not run: the run was stopped' },
        );
  }
}

export const runCommand: CommandModule = {
  command: 'run <scenario>',
  describe: 'run a scenario file (YAML or JSON), a directory of them, or a built-in scenario or set',
  builder: runOptions,
  handler: async (a) => {
    try {
      process.exitCode = await run({ ...(a as unknown as RunArgs), scenario: scenarioRef(a.scenario) });
    } catch (err) {
      if (err instanceof RunError) fail(err.message);
      throw err;
    }
  },
};
