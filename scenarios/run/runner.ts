// Runs scenarios end to end against an orchestrator:
// 1. before anything is deployed, computes every step's verdicts from its policies and compares
//    them with the hand-written ones: a disagreement is a policy-writing mistake and stops the run
//    there ("intended != computed", steps.ts), without waiting for any deadline;
// 2. deploys the pods as one group, and repeats that check for cells that depended on addresses;
// 3. per step applies the policies and labels in one change, waits until every cell has been
//    checked since and the judged ones show their expected verdict (or a deadline passes), reads
//    which side dropped what, and reports intended, computed and observed ("computed != observed"
//    is an enforcement fault);
// 4. removes what it deployed.
// A set of scenarios with the same pods (the Kubernetes e2e set) shares one deployment, as the
// upstream suite shares its pods between tests, whatever their cells (share.ts): the deployment
// probes the union of the cells and each scenario judges only its own; each scenario's first step
// replaces the previous scenario's policies and labels in one change. Right after each change the
// probes are asked to check at once (poke.ts), so a step settles about one check timeout after it.
// Cells that cannot be observed here are "not run", never passed: SCTP (the probe cannot speak it),
// and without enforcement every cell the policies block.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { groupId, planApps, type Programs } from './deploy-plan.ts';
import { addressMismatches } from '../model/addresses.ts';
import { deploy } from './deploy.ts';
import { droppedBy, measureStep, readDrops, type DropCounts } from './drops.ts';
import { stepEvidence } from './evidence.ts';
import { expectStep, type StepExpectation } from '../model/expect.ts';
import { observe, type Located, type Observation } from './observe.ts';
import type { OrchestratorClient } from './orchestrator-client.ts';
import type { PolicyApplier } from './policies.ts';
import { cellResults, stepResult, stepText, type ScenarioReportDoc, type StepResultDoc } from '../report/results.ts';
import type { ResolvedScenario, ResolvedStep } from '../model/resolve.ts';
import { pokeProbes } from './poke.ts';
import { settle } from './settle.ts';
import { deploymentScenario } from './share.ts';
import { desiredState, emptyReport, notRunCells, policyMistakes, preflight, refuse, scenarioOutcome, settleBudgetMs } from './steps.ts';
import { plural } from '../../shared/plural.ts';
import { LEGEND } from '../report/truth-table.ts';

export interface RunOptions {
  client: OrchestratorClient;
  policies: PolicyApplier;
  programs: Programs;
  isolated: boolean;
  /** loopback layout: host ports per pod and port number. */
  hostPorts?: Map<string, Map<number, number>>;
  /** isolated layout: the address asked for per pod (model/addresses.ts: what `scenario check` assumes). */
  addresses?: ReadonlyMap<string, string>;
  workDir: string;
  /** Seconds a step may take to settle (default: the larger of 10 s and four settle budgets). */
  stepTimeoutSeconds?: number;
  /** Seconds to linger after each step (so people can watch the UI). */
  pauseSeconds?: number;
  /** Leave the apps deployed at the end. */
  keep?: boolean;
  /** After the last step, keep everything running until `signal` aborts (demos). */
  hold?: boolean;
  log: (line: string) => void;
  /** Progress lines that overwrite each other on a terminal. */
  progress?: (line: string) => void;
  /** Called once the pods are up, with where each one is reached (the demo prints the UI address). */
  onDeployed?: (located: Located[]) => void;
  /** Called with each finished step (for live views). */
  onStep?: (scenario: string, step: StepResultDoc) => void;
  /** Called as each step starts, with what it expects and the cells that cannot be observed here (live views). */
  onStepStart?: (scenario: string, exp: StepExpectation, total: number, notRun: ReadonlyMap<string, string>) => void;
  signal?: AbortSignal;
}

/** How a run was stopped, as its lines say it: "Ctrl-C" (SIGINT) or "SIGTERM" (the abort's reason). */
export function stoppedBy(signal: AbortSignal): string {
  return signal.reason === 'SIGTERM' ? 'SIGTERM' : 'Ctrl-C';
}

function sctpNotice(s: ResolvedScenario): string | undefined {
  const n = s.cells.filter((c) => c.protocol === 'SCTP').length;
  if (n === 0) return undefined;
  const kernel = existsSync('/proc/net/sctp') ? 'the kernel has SCTP' : 'this kernel has no SCTP module either';
  return `${plural(n, 'SCTP cell')} per step ${n === 1 ? 'is' : 'are'} not run: the probe cannot check SCTP (Node.js has no SCTP sockets; ${kernel}); they are never counted as passed`;
}

export async function runScenario(opts: RunOptions & { scenario: ResolvedScenario }): Promise<ScenarioReportDoc> {
  const refused = preflight(opts.scenario, opts.isolated, opts.policies.enforces, opts.log);
  if (refused) return refused;
  return (await runDeployment(opts, opts.scenario.name, [opts.scenario]))[0]!;
}

/**
 * Runs scenarios that share one topology on one deployment named `name` (a Marathon id segment),
 * one report per scenario; the caller has made the pre-flight check.
 */
export async function runDeployment(opts: RunOptions, name: string, scenarios: ResolvedScenario[]): Promise<ScenarioReportDoc[]> {
  const { log, policies } = opts;
  const base = { ...deploymentScenario(scenarios), name };
  const reports = scenarios.map((s) => emptyReport(s, opts.isolated, policies.enforces));
  const notices: string[] = [];
  const sctp = sctpNotice(base);
  if (sctp) log(`note: ${sctp}`);
  // Each scenario's own SCTP cells: a shared deployment probes the union of the scenarios' cells.
  for (const [k, s] of scenarios.entries()) {
    const own = scenarios.length === 1 ? sctp : sctpNotice(s);
    if (own) reports[k]!.notices.push(own);
  }
  if (!policies.enforces)
    notices.push(
      `policies are not enforced here (${policies.description}): the cells they block cannot be observed and are marked not run, not waited for; the expected tables are still computed and shown`,
    );
  for (const n of notices) log(`note: ${n}`);
  for (const r of reports) r.notices.push(...notices);

  mkdirSync(opts.workDir, { recursive: true });
  const layout = {
    isolated: opts.isolated,
    ...(opts.hostPorts ? { hostPorts: opts.hostPorts } : {}),
    ...(opts.addresses ? { addresses: opts.addresses } : {}),
  };
  const plan = planApps(base, opts.programs, layout, (content) => {
    const f = join(opts.workDir, 'collector-resources.json');
    writeFileSync(f, content);
    return f;
  });
  let current = 0;
  try {
    await policies.clear();
    const { located, ips } = await deploy(opts.client, base, plan, {
      isolated: opts.isolated,
      log,
      ...(opts.progress ? { progress: opts.progress } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    for (const r of reports) for (const p of r.pods) p.ip = ips.get(p.id) ?? null;
    const moved = opts.addresses ? addressMismatches(opts.addresses, ips, base.pods) : [];
    if (moved.length > 0) log(`note: not every pod got the address scenario check assumes (${moved.join('; ')}): its answers for ipBlock cells may differ`);
    opts.onDeployed?.(located);
    log(`pods running: ${located.map((l) => `${l.app.pod.short}=${l.base}`).join(' ')}`);
    log(LEGEND);
    let previous: Carried = {};
    for (const [k, s] of scenarios.entries()) {
      current = k;
      if (scenarios.length > 1) log(`\n== ${s.name}${s.description ? `: ${s.description}` : ''}`);
      previous = await runSteps(opts, s, reports[k]!, located, ips, previous);
    }
    if (opts.hold && !opts.signal?.aborted) {
      log('\nall steps done; everything keeps running so you can look around. Ctrl-C stops it and cleans up.');
      await new Promise<void>((res) => opts.signal?.addEventListener('abort', () => res(), { once: true }));
    }
  } catch (err) {
    const r = reports[current]!;
    r.passed = false;
    if (opts.signal?.aborted) {
      // Stopped, not failed: what ran is reported as it went, the rest as not run.
      const by = stoppedBy(opts.signal);
      r.error = `stopped (${by}) after ${r.steps.length} of ${scenarios[current]!.steps.length} steps`;
      r.outcome = r.steps.some((st) => st.outcome === 'fail') ? 'fail' : 'not run';
      r.failure = r.steps.find((st) => st.failure)?.failure ?? null;
      for (const later of reports.slice(current + 1)) {
        later.error = `not run: stopped (${by}) before it`;
        later.outcome = 'not run';
      }
    } else {
      r.error = (err as Error).message;
      r.failure = 'error';
      r.outcome = 'fail';
      log(`error: ${r.error}`);
      for (const later of reports.slice(current + 1)) {
        later.error = `not run: the run stopped at ${scenarios[current]!.name}`;
        later.failure = 'error';
        later.outcome = 'fail';
      }
    }
  } finally {
    if (!opts.keep) {
      try {
        await policies.clear();
        const id = await opts.client.deleteGroup(groupId(base));
        if (id) await opts.client.waitDeployment(id, 60_000);
      } catch (err) {
        log(`cleanup: ${(err as Error).message}`);
      }
    }
    for (const r of reports) r.finishedAt = new Date().toISOString();
  }
  return reports;
}

/** What a step hands the next: its last observations and its last read of the drop counters (nothing was written since). */
interface Carried {
  observed?: Map<string, Observation>;
  drops?: DropCounts;
}

/** One scenario's steps on pods that run; fills `report`; returns what its last step hands on. */
async function runSteps(
  opts: RunOptions,
  s: ResolvedScenario,
  report: ScenarioReportDoc,
  located: Located[],
  ips: Map<string, string>,
  carried: Carried,
): Promise<Carried> {
  let previous = carried.observed;
  let lastDrops = carried.drops;
  const { log, policies } = opts;
  report.startedAt = new Date().toISOString();
  const budgetMs = settleBudgetMs(s);
  const deadlineFor = (step: ResolvedStep) => (step.timeoutSeconds ?? opts.stepTimeoutSeconds ?? Math.max(10, (4 * budgetMs) / 1000)) * 1000;
  // The same check as before deploying, for cells whose verdict needed the pods' addresses.
  const exps = s.steps.map((st) => expectStep(s, st, ips));
  const late = policyMistakes(s, exps, policies.enforces);
  if (late) {
    refuse(report, late, log, 'no policy was applied');
    return carried;
  }
  for (const [i, step] of s.steps.entries()) {
    if (opts.signal?.aborted) throw new Error('interrupted');
    const exp = exps[i]!;
    opts.onStepStart?.(s.name, exp, s.steps.length, notRunCells(exp, policies.enforces));
    log(
      `\napplying step ${i + 1}/${s.steps.length} ${step.name}${step.description ? `: ${step.description}` : ''} (policies: ${[...exp.step.policies.map((p) => `${p.metadata.namespace}/${p.metadata.name}`), ...(exp.step.clusterPolicies ?? []).map((p) => p.id)].join(', ') || 'none'})`,
    );
    const notRun = notRunCells(exp, policies.enforces);
    const observable = exp.cells.filter((c) => !notRun.has(c.cell.key));
    const expected = new Map(observable.filter((c) => c.expected !== null).map((c) => [c.cell.key, c.expected!]));
    // The drop counters are read before the write and after the step settled (drops.ts says why).
    const counted = policies.enforces && opts.isolated;
    const {
      result: run,
      before,
      after,
    } = await measureStep(
      () => (counted ? readDrops(opts.client) : Promise.resolve(undefined)),
      async () => {
        const writeAt = Date.now();
        // Nothing to apply where nothing enforces (and no pod addresses to fill into ipBlocks there).
        const applied = policies.enforces ? await policies.apply(desiredState(s, step, ips)) : { applied: 0, unchanged: 0, failed: [] };
        const appliedAt = Date.now();
        // Only checks that start after appliedAt count, so the poke comes after it.
        await pokeProbes(located);
        if (applied.failed.length > 0) {
          const text = `step ${step.name}: the orchestrator could not apply everything: ${JSON.stringify(applied.failed).slice(0, 300)}`;
          report.notices.push(text);
          log(`note: ${text}`);
        }
        const settled = await settle({
          cells: observable.map((c) => c.cell.key),
          expected,
          observe: () => observe(located),
          appliedAt,
          deadlineMs: deadlineFor(step),
          // Poked probes answer within about a check timeout: look often enough not to add to it.
          pollMs: 100,
          ...(previous ? { previous } : {}),
          ...(opts.signal ? { signal: opts.signal } : {}),
          onProgress: (st, ms) =>
            opts.progress?.(`  ${(ms / 1000).toFixed(1)} s: ${st.fresh}/${observable.length} cells checked since, ${st.matching}/${st.judged} as expected`),
        });
        if (opts.signal?.aborted) throw new Error('interrupted');
        return { writeAt, appliedAt, settled };
      },
      lastDrops,
    );
    lastDrops = after;
    const { writeAt, appliedAt, settled } = run;
    const dropped = new Map<string, 'egress' | 'ingress' | 'both'>();
    if (before && after) {
      for (const c of observable) {
        const side = settled.observed.get(c.cell.key)?.allowed === false ? droppedBy(before, after, c.cell, ips) : undefined;
        if (side) dropped.set(c.cell.key, side);
      }
    }
    const seen = new Map(observable.map((c) => [c.cell.key, settled.fresh.has(c.cell.key) ? (settled.observed.get(c.cell.key)?.allowed ?? null) : null]));
    const evidence = before && after ? stepEvidence(exp, seen, before, after, ips) : undefined;
    const flips = [...settled.changedAfterMs.values()];
    const result = stepResult(exp, s.pods, cellResults(exp, notRun, { ...settled, droppedBy: dropped, ...(evidence ? { evidence } : {}) }), {
      settled: settled.settled,
      durationMs: settled.durationMs,
      budgetMs,
      applyMs: appliedAt - writeAt,
      lastFlipMs: flips.length > 0 ? Math.max(...flips) + (appliedAt - writeAt) : null,
      observed: true,
    });
    report.steps.push(result);
    opts.onStep?.(s.name, result);
    log(stepText(result, s.steps.length));
    previous = settled.observed;
    if (opts.pauseSeconds && i < s.steps.length - 1) {
      await pause(opts.pauseSeconds, log, opts.signal);
      lastDrops = undefined; // a pause's drops are no step's: read again before the next write
    }
  }
  report.outcome = scenarioOutcome(report);
  report.passed = report.outcome === 'pass';
  report.failure = report.steps.find((st) => st.failure === 'computed != observed')?.failure ?? report.steps.find((st) => st.failure)?.failure ?? null;
  report.finishedAt = new Date().toISOString();
  return { ...(previous ? { observed: previous } : {}), ...(lastDrops ? { drops: lastDrops } : {}) };
}

function pause(seconds: number, log: (line: string) => void, signal?: AbortSignal): Promise<void> {
  log(`  (next step in ${seconds} s)`);
  return new Promise<void>((res) => {
    const t = setTimeout(res, seconds * 1000);
    signal?.addEventListener('abort', () => (clearTimeout(t), res()), { once: true });
  });
}
