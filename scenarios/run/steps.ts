// The pure parts of running a scenario: the settle budget, which cells cannot be observed, the
// state a step asks the orchestrator for, and the check that the policies say what each step
// intends (made before anything starts), with its report.
import { resolveClusterPolicy } from '../../shared/netpol/cluster-policy-doc.ts';
import { resolvePolicy } from '../../shared/netpol/ip-template.ts';
import { objectId } from '../../shared/netpol/types.ts';
import { expectStep, type StepExpectation } from '../model/expect.ts';
import { IPV6_NOT_RUN, unobservableExternals } from '../model/externals.ts';
import type { DesiredState } from './policies.ts';
import { unenforcedTierCells } from './unenforced.ts';
import { cellResults, NOT_PROVEN_REASON, stepResult, stepText, type ScenarioReportDoc, type StepResultDoc } from '../report/results.ts';
import type { ResolvedScenario, ResolvedStep } from '../model/resolve.ts';
import { LEGEND } from '../report/truth-table.ts';

/** The settle budget of a scenario: probe interval + check timeout + 1 s (issue #18). */
export function settleBudgetMs(s: Pick<ResolvedScenario, 'probeSeconds' | 'timeoutSeconds'>): number {
  return Math.round((s.probeSeconds + s.timeoutSeconds + 1) * 1000);
}

/** Why a cell from or to a hostNetwork pod is computed only: a run has no node namespace yet (deploy-plan.ts). */
export const HOST_NETWORK_NOT_RUN = 'not run: hostNetwork pods are computed only; a run has no node namespace for them yet';

/** Cells that cannot be observed, and why (NOT_PROVEN_REASON: judged cells the policies block, without enforcement). */
export function notRunCells(exp: StepExpectation, enforced: boolean): Map<string, string> {
  const out = new Map<string, string>();
  const tiers = unenforcedTierCells(exp);
  const ipv6 = unobservableExternals(exp.cluster.pods);
  const hostNetwork = new Set(exp.cluster.pods.filter((p) => p.hostNetwork).map(objectId));
  for (const c of exp.cells) {
    if (c.cell.protocol === 'SCTP') out.set(c.cell.key, 'not run: the probe cannot check SCTP (Node.js has no SCTP sockets)');
    else if (ipv6.has(c.cell.from) || ipv6.has(c.cell.to)) out.set(c.cell.key, IPV6_NOT_RUN);
    else if (hostNetwork.has(c.cell.from) || hostNetwork.has(c.cell.to)) out.set(c.cell.key, HOST_NETWORK_NOT_RUN);
    else if (tiers.has(c.cell.key)) out.set(c.cell.key, tiers.get(c.cell.key)!);
    else if (!enforced && (c.computed === false || c.expected === false))
      out.set(c.cell.key, c.expected === null ? 'not run: policies are not enforced here (no isolation), so nothing can be blocked' : NOT_PROVEN_REASON);
  }
  return out;
}

/** The state a step asks the orchestrator for, with addresses filled into the policies. */
export function desiredState(s: ResolvedScenario, step: ResolvedStep, ips: ReadonlyMap<string, string>): DesiredState {
  const same = (a: Record<string, string>, b: Record<string, string>) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
  return {
    step: step.name,
    policies: step.policies.map((p) => resolvePolicy(p, (ref) => ips.get(ref))),
    clusterPolicies: (step.clusterPolicies ?? []).map((p) => resolveClusterPolicy(p, (ref) => ips.get(ref))),
    namespaces: step.namespaceLabels,
    // Externals are no pods of the orchestrator's (model/externals.ts): no labels to replace.
    podLabels: Object.fromEntries(
      s.pods.filter((p) => p.external === undefined).map((p) => [p.id, same(step.podLabels[p.id] ?? p.labels, p.labels) ? null : step.podLabels[p.id]!]),
    ),
    ...(step.dialect ? { dialect: step.dialect } : {}),
  };
}

/**
 * The steps whose hand-written verdicts the policies contradict, as step results (not run), or
 * [] when every step says what its policies say.
 */
export function policyMistakes(s: ResolvedScenario, exps: StepExpectation[], enforced: boolean): StepResultDoc[] | undefined {
  if (!exps.some((e) => e.mistakes.length > 0)) return undefined;
  return exps.map((e) =>
    stepResult(e, s.pods, cellResults(e, notRunCells(e, enforced)), {
      settled: null,
      durationMs: null,
      budgetMs: settleBudgetMs(s),
      lastFlipMs: null,
      observed: false,
    }),
  );
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
    outcome: 'not run',
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
  const refused = policyMistakes(
    s,
    s.steps.map((st) => expectStep(s, st)),
    enforced,
  );
  return refused ? refuse(emptyReport(s, isolated, enforced), refused, log, 'nothing was deployed') : undefined;
}

/**
 * A scenario fails when a step does; is computed only when a step is (some judged cell not proven);
 * passes when a step passed and none failed; else was not run.
 */
export function scenarioOutcome(r: Pick<ScenarioReportDoc, 'steps' | 'error'>): ScenarioReportDoc['outcome'] {
  if (r.error || r.steps.some((st) => st.outcome === 'fail')) return 'fail';
  if (r.steps.some((st) => st.outcome === 'computed only')) return 'computed only';
  return r.steps.some((st) => st.outcome === 'pass') ? 'pass' : 'not run';
}

export function refuse(report: ScenarioReportDoc, steps: StepResultDoc[], log: (line: string) => void, what: string): ScenarioReportDoc {
  report.steps = steps;
  report.failure = 'intended != computed';
  report.outcome = 'fail';
  log(`\nintended != computed: the policies do not say what the scenario intends (a policy-writing mistake); ${what}.`);
  log(LEGEND);
  for (const st of steps) log(st.failure ? `\n${stepText(st, steps.length)}` : `step ${st.index + 1}/${steps.length} ${st.name}: intended = computed`);
  report.finishedAt = new Date().toISOString();
  return report;
}

/**
 * What a run's report would hold before anything is observed: every step's intended and computed
 * verdicts, nothing observed (as `scenario check` sees it); for the HTML report's measurements.
 */
export function computedReport(s: ResolvedScenario): ScenarioReportDoc {
  const report = emptyReport(s, false, true);
  report.steps = s.steps.map((st) => {
    const exp = expectStep(s, st);
    return stepResult(exp, s.pods, cellResults(exp, notRunCells(exp, true)), {
      settled: null,
      durationMs: null,
      budgetMs: settleBudgetMs(s),
      lastFlipMs: null,
      observed: false,
    });
  });
  report.outcome = report.steps.some((st) => st.failure) ? 'fail' : 'not run';
  report.failure = report.steps.find((st) => st.failure)?.failure ?? null;
  return report;
}

/**
 * The report `scenario check --report-html` writes: the page of a run, computed only. Every step's
 * intended and computed verdicts with the addresses `ips` (what an isolated run assigns), nothing
 * observed; a step without a policy-writing mistake is 'computed only', never passed.
 */
export function checkedReport(s: ResolvedScenario, ips: ReadonlyMap<string, string>): ScenarioReportDoc {
  const report = emptyReport(s, false, true);
  for (const p of report.pods) p.ip = ips.get(p.id) ?? null;
  report.notices.push('computed only: scenario check deploys nothing, so nothing was observed; a run as root with nftables proves the verdicts');
  report.steps = s.steps.map((st) => {
    const exp = expectStep(s, st, ips);
    const step = stepResult(exp, s.pods, cellResults(exp, notRunCells(exp, true)), {
      settled: null,
      durationMs: null,
      budgetMs: settleBudgetMs(s),
      lastFlipMs: null,
      observed: false,
    });
    if (!step.failure) step.outcome = 'computed only';
    return step;
  });
  report.outcome = report.steps.some((st) => st.failure) ? 'fail' : 'computed only';
  report.failure = report.steps.find((st) => st.failure)?.failure ?? null;
  return report;
}

/** The report of a scenario that could not be run at all (an error before its first step). */
export function notRunReport(s: ResolvedScenario): ScenarioReportDoc {
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
