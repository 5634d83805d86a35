// What `scenario run` does with a scenario that puts admin-tier policies (ClusterNetworkPolicy,
// AdminNetworkPolicy, BaselineAdminNetworkPolicy) in force: the bundled orchestrator's nftables
// renderer does not enforce them yet, so nothing it would observe could say whether they hold.
// Such a scenario is not deployed: its report says so before anything starts, with every cell
// "not run" (its computed verdicts kept, as `scenario check` has them), and the run exits non-zero.
// Never a pass for something not observed. Pure.
import { expectStep } from '../model/expect.ts';
import type { ResolvedScenario } from '../model/resolve.ts';
import { cellResults, stepResult, type ScenarioReportDoc } from '../report/results.ts';
import { emptyReport, settleBudgetMs } from './steps.ts';

export const NOT_ENFORCED = 'ClusterNetworkPolicy is not enforced by this orchestrator';

/** The steps that put admin-tier policies in force (1-based numbers), or [] for none. */
export function clusterPolicySteps(s: ResolvedScenario): number[] {
  return s.steps.filter((st) => (st.clusterPolicies?.length ?? 0) > 0).map((st) => st.index + 1);
}

/** The report of a scenario not run because its admin-tier policies are not enforced, or undefined when it has none. */
export function notEnforcedReport(s: ResolvedScenario, isolated: boolean): ScenarioReportDoc | undefined {
  const steps = clusterPolicySteps(s);
  if (steps.length === 0) return undefined;
  const report = emptyReport(s, isolated, false);
  const why = `not run: ${NOT_ENFORCED} (admin-tier policies in force at ${steps.length === 1 ? 'step' : 'steps'} ${steps.join(', ')}); nothing was deployed`;
  report.steps = s.steps.map((st) => {
    const exp = expectStep(s, st);
    const notRun = new Map(exp.cells.map((c) => [c.cell.key, why]));
    return stepResult(exp, s.pods, cellResults(exp, notRun), {
      settled: null,
      durationMs: null,
      budgetMs: settleBudgetMs(s),
      lastFlipMs: null,
      observed: false,
    });
  });
  report.outcome = 'not run';
  report.error = why;
  return report;
}
