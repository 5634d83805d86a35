// `scenario run`: one scenario or a set (a built-in folder such as k8s-e2e, or a directory). Finds
// policy-writing mistakes before anything starts, starts the bundled orchestrator (with isolation
// when the machine can) or logs in to the one given, runs the scenarios (those with the same pods
// on one deployment), writes the reports and says how it went.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createSocket } from 'node:dgram';
import { networkInterfaces, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { startBundled, type Bundled } from './bundled.ts';
import { assignHostPorts, groupId, portNumbers } from './deploy-plan.ts';
import { collectorNaming, LiveExpectations } from './live-expectations.ts';
import { loadTargets } from './load.ts';
import { ScenarioError } from './model.ts';
import { OrchestratorClient } from './orchestrator-client.ts';
import { ChangesEndpoint, HookPolicies, NoPolicies, POLICY_PATH, type PolicyApplier } from './policies.ts';
import { locatePrograms } from './programs.ts';
import type { SetReportDoc } from './report-schema.ts';
import { reportHtml } from './report-html.ts';
import { toJson, toJunit, type ScenarioReportDoc, type StepResultDoc } from './report.ts';
import type { ResolvedScenario } from './resolve.ts';
import type { Located } from './observe.ts';
import { DEFAULTS } from '../orchestrator/config.ts';
import { runDeployment, stoppedBy, topology } from './run.ts';
import { preflight } from './steps.ts';
import { TerminalLines } from './terminal.ts';

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
}

export class RunError extends Error {}

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
  if (missing.length > 0)
    return `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} missing (apt-get install ${missing.map((m) => (m === 'ip' ? 'iproute2' : 'nftables')).join(' ')})`;
  return undefined;
}

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

function summary(r: ScenarioReportDoc, total: number): string {
  const passed = r.failure === 'intended != computed' ? 0 : r.steps.filter((s) => s.passed).length;
  // A stopped run is no failure of what it checks: say how far it got (and a failure it saw).
  if (r.error?.startsWith('stopped ')) {
    const ran = r.steps.length;
    if (r.outcome === 'fail') return `${r.scenario}: FAIL: ${passed} of ${ran} steps run as expected (${r.failure}); then ${r.error}`;
    return `${r.scenario}: ${r.error}${ran === 0 ? '' : passed === ran ? ` (${ran === 1 ? 'it' : 'all'} as expected)` : ` (${passed} as expected)`}`;
  }
  if (r.error?.startsWith('not run: stopped ')) return `${r.scenario}: ${r.error.replace(/^not run: /, '')}, not run`;
  const notRun = r.steps.filter((s) => s.observed && s.outcome === 'not run').length;
  const why =
    r.failure === 'intended != computed'
      ? ' (intended != computed: a policy-writing mistake, nothing observed)'
      : r.failure === 'computed != observed'
        ? ' (computed != observed: an enforcement fault)'
        : '';
  const word = r.outcome === 'pass' ? 'PASS' : r.outcome === 'not run' ? 'NOT RUN' : 'FAIL';
  return `${r.scenario}: ${word}: ${passed} of ${total} steps as expected${notRun ? `, ${notRun} not run (nothing they judge could be observed here)` : ''}${why}${r.error ? ` (${r.error})` : ''}${r.enforced ? '' : '; cells the policies block were not observed (no isolation)'}`;
}

/** For callers that run scenarios in process (npm start, live views): when the pods are up, and each finished step with its cells and reasons. */
export interface RunHooks {
  onReady?: (info: { bundled?: Bundled; uiUrl?: string }) => void;
  onStep?: (scenario: string, step: StepResultDoc) => void;
}

export async function run(args: RunArgs, hooks: RunHooks = {}): Promise<number> {
  let targets: { set?: string; scenarios: ResolvedScenario[] };
  try {
    targets = loadTargets(args.scenario, {
      ...(args.namespace !== undefined ? { namespace: args.namespace } : {}),
      ...(args.replicas ? { replicas: true } : {}),
    });
  } catch (err) {
    if (err instanceof ScenarioError) throw new RunError(err.message);
    throw err;
  }
  // A report that cannot be written is said before the run, not after it.
  for (const [flag, file] of [
    ['--report-json', args.reportJson],
    ['--report-junit', args.reportJunit],
    ['--report-html', args.reportHtml],
  ] as const)
    if (file && !existsSync(join(file, '..'))) throw new RunError(`${flag}: no directory ${join(file, '..')}`);
  const terminal = new TerminalLines(process.stdout);
  const { log } = terminal;
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
    ? { set: targets.set, startedAt, finishedAt: new Date().toISOString(), passed: ordered.every((r) => r.outcome !== 'fail'), scenarios: ordered }
    : ordered[0]!;
  if (args.reportJson) writeFileSync(args.reportJson, toJson(doc));
  if (args.reportHtml) writeFileSync(args.reportHtml, reportHtml(doc));
  if (args.reportJunit) writeFileSync(args.reportJunit, toJunit(ordered));
  log('');
  for (const [i, r] of ordered.entries()) log(summary(r, targets.scenarios[i]!.steps.length));
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
  // Not run is no failure (SCTP here, as upstream skips it without the feature), nor a pass.
  return ordered.some((r) => r.outcome === 'fail') ? 1 : 0;
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
          `note: running on loopback without isolation${missing ? ` (${missing})` : ''}: network policies are not enforced (use --isolation=netns to require them)`,
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
    // Scenarios with the same pods share one deployment, in the order they first appear.
    const groups = new Map<string, ResolvedScenario[]>();
    for (const s of scenarios) groups.set(topology(s), [...(groups.get(topology(s)) ?? []), s]);
    for (const [i, group] of [...groups.values()].entries()) {
      if (ac.signal.aborted) break;
      const name = set ? deploymentName(set, i, groups.size) : group[0]!.name;
      const hostPorts = isolated ? undefined : await loopbackPorts(group[0]!);
      let live: LiveExpectations | undefined; // the collector UI's live expectations, once it is up
      const results = await runDeployment(
        {
          client,
          policies: applier(name, [...new Set(group.flatMap((s) => s.namespaces.map((n) => n.name)))]),
          programs: found.programs,
          isolated,
          ...(hostPorts ? { hostPorts } : {}),
          workDir,
          ...(args.stepTimeout ? { stepTimeoutSeconds: args.stepTimeout } : {}),
          pauseSeconds: args.pause,
          keep: args.keep,
          hold: args.hold && i === groups.size - 1,
          log,
          progress,
          signal: ac.signal,
          onStep: (scenario: string, step: StepResultDoc) => (live?.judged(scenario, step), hooks.onStep?.(scenario, step)),
          onStepStart: (scenario, exp, total, notRun) => live?.started(scenario, exp, total, notRun),
          onDeployed: (located) => {
            const naming = collectorNaming(located);
            if (naming) live = new LiveExpectations(naming, log);
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

/**
 * Where people open the collector UI: the port the orchestrator published (--publish-address) when
 * it did, else the task's own address (this machine only). For a loopback address, one line on how
 * to reach it from elsewhere; for 0.0.0.0, this machine's addresses (nothing is looked up).
 */
export function uiAddress(ui: Located, publishAddress: string | undefined): { url: string; note?: string } {
  if (!ui.published || !publishAddress || publishAddress === 'off') return { url: `${ui.base}/` };
  const port = ui.published;
  const host = (a: string) => (a.includes(':') ? `[${a}]` : a);
  if (publishAddress === '0.0.0.0' || publishAddress === '::') {
    const mine = Object.values(networkInterfaces())
      .flatMap((l) => l ?? [])
      .filter((i) => !i.internal && (publishAddress === '::' || i.family === 'IPv4'));
    const others = mine.map((i) => `http://${host(i.address)}:${port}/`);
    return { url: `http://127.0.0.1:${port}/`, note: `open to the network (the collector has no login)${others.length ? `: ${others.join('  ')}` : ''}` };
  }
  const url = `http://${host(publishAddress)}:${port}/`;
  if (publishAddress.startsWith('127.') || publishAddress === '::1') {
    return {
      url,
      note: `this machine only; from another: ssh -L ${port}:${host(publishAddress)}:${port} <user>@<this machine>, then open http://localhost:${port}/ (or npm start -- --publish-address=0.0.0.0 to open it to the network)`,
    };
  }
  return { url };
}

/** Whether a port is free on 127.0.0.1 for both TCP and UDP (a probe serves both on one number). */
async function portFree(port: number): Promise<boolean> {
  const tcp = await new Promise<boolean>((res) => {
    const srv = createServer();
    srv.once('error', () => res(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
  });
  if (!tcp) return false;
  return new Promise<boolean>((res) => {
    const sock = createSocket('udp4');
    sock.once('error', () => (sock.close(), res(false)));
    sock.bind(port, '127.0.0.1', () => sock.close(() => res(true)));
  });
}

/**
 * Host ports for the loopback layout, each free for TCP and UDP when chosen, below Linux's
 * ephemeral range (32768+) so that outgoing connections do not take them meanwhile.
 */
async function loopbackPorts(s: ResolvedScenario): Promise<Map<string, Map<number, number>>> {
  const taken = new Set<number>();
  const free: number[] = [];
  const needed = s.pods.reduce((n, p) => n + portNumbers(p).length, 0);
  for (let tries = 0; free.length < needed && tries < needed * 20; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!taken.has(port) && (await portFree(port))) free.push(port);
    taken.add(port);
  }
  if (free.length < needed) throw new RunError(`could not find ${needed} free ports on 127.0.0.1 for the loopback layout`);
  return assignHostPorts(s.pods, () => free.shift()!);
}

function notRunReport(s: ResolvedScenario): ScenarioReportDoc {
  const now = new Date().toISOString();
  return {
    scenario: s.name,
    isolated: false,
    enforced: false,
    startedAt: now,
    finishedAt: now,
    outcome: 'fail',
    passed: false,
    failure: 'error',
    notices: [],
    pods: [],
    steps: [],
  };
}
