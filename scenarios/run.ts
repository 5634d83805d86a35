// Runs a scenario end to end against an orchestrator:
// 1. before anything is deployed, computes every step's verdicts from its policies and compares
//    them with the hand-written ones: a disagreement is a policy-writing mistake and stops the run
//    there ("intended != computed"), without waiting for any deadline;
// 2. deploys the pods as one group, and repeats that check for cells that depended on addresses;
// 3. per step applies the policies and labels in one change, waits until every cell has been
//    checked since and the judged ones show their expected verdict (or a deadline passes), reads
//    which side dropped what, and reports intended, computed and observed ("computed != observed"
//    is an enforcement fault);
// 4. removes what it deployed.
// Cells that cannot be observed here are "not run", never passed: SCTP (the probe cannot speak it),
// and without enforcement every cell the policies block.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolvePolicy } from '../shared/netpol/ip-template.ts';
import { groupId, planApps, type Programs } from './deploy-plan.ts';
import { deploy } from './deploy.ts';
import { droppedBy, readDrops } from './drops.ts';
import { expectStep, type StepExpectation } from './expect.ts';
import { observe, type Located, type Observation } from './observe.ts';
import type { OrchestratorClient } from './orchestrator-client.ts';
import type { DesiredState, PolicyApplier } from './policies.ts';
import { cellResults, stepResult, stepText, type ScenarioReportDoc, type StepResultDoc } from './report.ts';
import type { ResolvedScenario, ResolvedStep } from './resolve.ts';
import { settle } from './settle.ts';
import { LEGEND } from './tables.ts';

export interface RunOptions {
  scenario: ResolvedScenario;
  client: OrchestratorClient;
  policies: PolicyApplier;
  programs: Programs;
  isolated: boolean;
  /** loopback layout: host ports per pod and port number. */
  hostPorts?: Map<string, Map<number, number>>;
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
  onStep?: (step: StepResultDoc) => void;
  signal?: AbortSignal;
}

/** The settle budget of a scenario: probe interval + check timeout + 1 s (issue #18). */
export function settleBudgetMs(s: Pick<ResolvedScenario, 'probeSeconds' | 'timeoutSeconds'>): number {
  return Math.round((s.probeSeconds + s.timeoutSeconds + 1) * 1000);
}

/** Cells that cannot be observed, and why. */
export function notRunCells(exp: StepExpectation, enforced: boolean): Map<string, string> {
  const out = new Map<string, string>();
  for (const c of exp.cells) {
    if (c.cell.protocol === 'SCTP') out.set(c.cell.key, 'not run: the probe cannot check SCTP (Node.js has no SCTP sockets)');
    else if (!enforced && (c.computed === false || c.expected === false)) out.set(c.cell.key, 'not run: policies are not enforced here (no isolation), so nothing can be blocked');
  }
  return out;
}

/** The state a step asks the orchestrator for, with addresses filled into the policies. */
export function desiredState(s: ResolvedScenario, step: ResolvedStep, ips: ReadonlyMap<string, string>): DesiredState {
  const same = (a: Record<string, string>, b: Record<string, string>) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
  return {
    step: step.name,
    policies: step.policies.map((p) => resolvePolicy(p, (ref) => ips.get(ref))),
    namespaces: step.namespaceLabels,
    podLabels: Object.fromEntries(s.pods.map((p) => [p.id, same(step.podLabels[p.id] ?? p.labels, p.labels) ? null : step.podLabels[p.id]!])),
    ...(step.dialect ? { dialect: step.dialect } : {}),
  };
}

/**
 * The steps whose hand-written verdicts the policies contradict, as step results (not run), or
 * [] when every step says what its policies say.
 */
export function policyMistakes(s: ResolvedScenario, exps: StepExpectation[], enforced: boolean): StepResultDoc[] | undefined {
  if (!exps.some((e) => e.mistakes.length > 0)) return undefined;
  return exps.map((e) => stepResult(e, s.pods, cellResults(e, notRunCells(e, enforced)), { settled: null, durationMs: null, budgetMs: settleBudgetMs(s), lastFlipMs: null, observed: false }));
}

function sctpNotice(s: ResolvedScenario): string | undefined {
  const n = s.cells.filter((c) => c.protocol === 'SCTP').length;
  if (n === 0) return undefined;
  const kernel = existsSync('/proc/net/sctp') ? 'the kernel has SCTP' : 'this kernel has no SCTP module either';
  return `${n} SCTP cells per step are not run: the probe cannot check SCTP (Node.js has no SCTP sockets; ${kernel}); they are never counted as passed`;
}

export function emptyReport(s: ResolvedScenario, isolated: boolean, enforced: boolean): ScenarioReportDoc {
  const startedAt = new Date().toISOString();
  return {
    scenario: s.name,
    ...(s.description ? { description: s.description } : {}),
    isolated,
    enforced,
    startedAt,
    finishedAt: startedAt,
    passed: false,
    failure: null,
    notices: [],
    pods: s.pods.map((p) => ({ id: p.id, short: p.short, namespace: p.namespace, name: p.name, kind: p.kind, ip: null })),
    steps: [],
  };
}

/**
 * The check made before anything starts: when some step's hand-written verdicts contradict its
 * policies, the report of that (printed), else undefined.
 */
export function preflight(s: ResolvedScenario, isolated: boolean, enforced: boolean, log: (line: string) => void): ScenarioReportDoc | undefined {
  const refused = policyMistakes(s, s.steps.map((st) => expectStep(s, st)), enforced);
  return refused ? refuse(emptyReport(s, isolated, enforced), refused, log, 'nothing was deployed') : undefined;
}

export async function runScenario(opts: RunOptions): Promise<ScenarioReportDoc> {
  const { scenario: s, log, policies } = opts;
  const report = emptyReport(s, opts.isolated, policies.enforces);
  const notice = (text: string) => (report.notices.push(text), log(`note: ${text}`));
  const budgetMs = settleBudgetMs(s);
  const deadlineFor = (step: ResolvedStep) => (step.timeoutSeconds ?? opts.stepTimeoutSeconds ?? Math.max(10, (4 * budgetMs) / 1000)) * 1000;

  // 1. Policy-writing mistakes, before anything is deployed.
  const refused = preflight(s, opts.isolated, policies.enforces, log);
  if (refused) return refused;
  const sctp = sctpNotice(s);
  if (sctp) notice(sctp);
  if (!policies.enforces) notice(`policies are not enforced here (${policies.description}): the cells they block cannot be observed and are marked not run, not waited for; the expected tables are still computed and shown`);

  mkdirSync(opts.workDir, { recursive: true });
  const plan = planApps(s, opts.programs, { isolated: opts.isolated, ...(opts.hostPorts ? { hostPorts: opts.hostPorts } : {}) }, (content) => {
    const f = join(opts.workDir, 'collector-resources.json');
    writeFileSync(f, content);
    return f;
  });
  let deployed = false;
  try {
    await policies.clear();
    deployed = true;
    const { located, ips } = await deploy(opts.client, s, plan, { isolated: opts.isolated, log, ...(opts.progress ? { progress: opts.progress } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
    for (const p of report.pods) p.ip = ips.get(p.id) ?? null;
    opts.onDeployed?.(located);
    log(`pods running: ${located.map((l) => `${l.app.pod.short}=${l.base}`).join(' ')}`);

    // 2. The same check for cells whose verdict needed the pods' addresses.
    const exps = s.steps.map((st) => expectStep(s, st, ips));
    const late = policyMistakes(s, exps, policies.enforces);
    if (late) return refuse(report, late, log, 'no policy was applied');

    log(LEGEND);
    let previous: Map<string, Observation> | undefined;
    for (const [i, step] of s.steps.entries()) {
      if (opts.signal?.aborted) throw new Error('interrupted');
      const exp = exps[i]!;
      log(`\napplying step ${i + 1}/${s.steps.length} ${step.name}${step.description ? `: ${step.description}` : ''} (policies: ${exp.step.policies.map((p) => `${p.metadata.namespace}/${p.metadata.name}`).join(', ') || 'none'})`);
      const writeAt = Date.now();
      const applied = await policies.apply(desiredState(s, step, ips));
      const appliedAt = Date.now();
      if (applied.failed.length > 0) notice(`step ${step.name}: the orchestrator could not apply everything: ${JSON.stringify(applied.failed).slice(0, 300)}`);
      const before = policies.enforces && opts.isolated ? await readDrops(opts.client) : undefined;
      const notRun = notRunCells(exp, policies.enforces);
      const observable = exp.cells.filter((c) => !notRun.has(c.cell.key));
      const expected = new Map(observable.filter((c) => c.expected !== null).map((c) => [c.cell.key, c.expected!]));
      const settled = await settle({
        cells: observable.map((c) => c.cell.key),
        expected,
        observe: () => observe(located),
        appliedAt,
        deadlineMs: deadlineFor(step),
        ...(previous ? { previous } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
        onProgress: (st, ms) => opts.progress?.(`  ${(ms / 1000).toFixed(1)} s: ${st.fresh}/${observable.length} cells checked since, ${st.matching}/${st.judged} as expected`),
      });
      if (opts.signal?.aborted) throw new Error('interrupted');
      const after = before ? await readDrops(opts.client) : undefined;
      const dropped = new Map<string, 'egress' | 'ingress' | 'both'>();
      if (before && after) {
        for (const c of observable) {
          const side = settled.observed.get(c.cell.key)?.allowed === false ? droppedBy(before, after, c.cell, ips) : undefined;
          if (side) dropped.set(c.cell.key, side);
        }
      }
      const flips = [...settled.changedAfterMs.values()];
      const result = stepResult(exp, s.pods, cellResults(exp, notRun, { ...settled, droppedBy: dropped }), {
        settled: settled.settled,
        durationMs: settled.durationMs,
        budgetMs,
        applyMs: appliedAt - writeAt,
        lastFlipMs: flips.length > 0 ? Math.max(...flips) + (appliedAt - writeAt) : null,
        observed: true,
      });
      report.steps.push(result);
      opts.onStep?.(result);
      log(stepText(result, s.steps.length));
      previous = settled.observed;
      if (opts.pauseSeconds && i < s.steps.length - 1) await pause(opts.pauseSeconds, log, opts.signal);
    }
    report.passed = report.steps.every((st) => st.passed);
    report.failure = report.steps.find((st) => st.failure === 'computed != observed')?.failure ?? report.steps.find((st) => st.failure)?.failure ?? null;
    if (opts.hold && !opts.signal?.aborted) {
      log('\nall steps done; everything keeps running so you can look around. Ctrl-C stops it and cleans up.');
      await new Promise<void>((res) => opts.signal?.addEventListener('abort', () => res(), { once: true }));
    }
  } catch (err) {
    report.error = (err as Error).message;
    report.failure = 'error';
    if (!opts.signal?.aborted) log(`error: ${report.error}`);
  } finally {
    if (deployed && !opts.keep) {
      try {
        await policies.clear();
        const id = await opts.client.deleteGroup(groupId(s));
        if (id) await opts.client.waitDeployment(id, 60_000);
      } catch (err) {
        log(`cleanup: ${(err as Error).message}`);
      }
    }
    report.finishedAt = new Date().toISOString();
  }
  return report;
}

function refuse(report: ScenarioReportDoc, steps: StepResultDoc[], log: (line: string) => void, what: string): ScenarioReportDoc {
  report.steps = steps;
  report.failure = 'intended != computed';
  log(`\nintended != computed: the policies do not say what the scenario intends (a policy-writing mistake); ${what}.`);
  log(LEGEND);
  for (const st of steps) log(st.failure ? `\n${stepText(st, steps.length)}` : `step ${st.index + 1}/${steps.length} ${st.name}: intended = computed`);
  report.finishedAt = new Date().toISOString();
  return report;
}

function pause(seconds: number, log: (line: string) => void, signal?: AbortSignal): Promise<void> {
  log(`  (next step in ${seconds} s)`);
  return new Promise<void>((res) => {
    const t = setTimeout(res, seconds * 1000);
    signal?.addEventListener('abort', () => (clearTimeout(t), res()), { once: true });
  });
}
