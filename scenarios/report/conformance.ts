// `--report-conformance FILE`: the results of the built-in set cnp-conformance as the
// ConformanceReport YAML that upstream's suite writes and implementations publish under
// kubernetes-sigs/network-policy-api conformance/reports/ (its Go types: conformance/apis/v1alpha1,
// ProfileReport / Status / Statistics; kind ConformanceReport, apiVersion
// policy.networking.k8s.io/v1alpha1), one profile, ClusterNetworkPolicy: standard holds the tests
// of SupportClusterNetworkPolicy alone, experimental the tests that also need an optional feature.
//
// Honesty over format: the format knows only Passed, Failed and Skipped. A test is Passed only when
// every one of its checks was observed on packets as upstream expects; Failed when a check was
// observed otherwise, or when the policies compute otherwise than upstream expects (the evaluator
// or the model disagrees with upstream: a fault, said as one); everything else (computed only, not
// run, node peers not modelled) is Skipped and listed in skippedTests, and the summary says which
// of them agree with upstream by computation. So `scenario check` never writes a pass: its results
// are computed, not observed. Result: failure when a test failed, partial when one was skipped,
// success only when every test passed. Pure: the caller writes the text.
import { stringify } from 'yaml';
import type { ScenarioReportDoc } from './schema.ts';

/** The upstream version the built-in set cnp-conformance transcribes: commit 0eec1b0, after v0.2.0. */
export const CNP_CONFORMANCE_VERSION = 'v0.2.0-0eec1b0';

export const BASE_FEATURE = 'SupportClusterNetworkPolicy';

/** How one upstream test fared. */
export interface ConformanceTestResult {
  shortName: string;
  features: string[];
  checks: number;
  /** Checks whose computed verdict is upstream's expectation. */
  computedAgree: number;
  /** Checks whose computed verdict is not upstream's. */
  computedDisagree: number;
  /** Checks the model cannot compute (addresses not known, node peers not modelled). */
  notComputed: number;
  /** Checks observed on packets as upstream expects / otherwise. */
  observedPass: number;
  observedFail: number;
  result: 'Passed' | 'Failed' | 'Skipped';
  /** Why, in a few words. */
  note: string;
}

/** The upstream ShortName, features and not-modelled check ids a scenario of the set carries in its description, or undefined for another scenario. */
export function upstreamOf(description: string | undefined): { shortName: string; features: string[]; notModelled: string[] } | undefined {
  const m = /^(CNP\w+): .*?; features: ([\w, ]+)\)(?:; not modelled \([^)]*\): (.*))?$/s.exec(description ?? '');
  if (!m) return undefined;
  return { shortName: m[1]!, features: m[2]!.split(', '), notModelled: m[3] ? m[3].split(', ') : [] };
}

export function conformanceTestResult(r: ScenarioReportDoc): ConformanceTestResult | undefined {
  const up = upstreamOf(r.description);
  if (!up) return undefined;
  const judged = r.steps.flatMap((s) => s.cells.filter((c) => c.intended !== null));
  const computedAgree = judged.filter((c) => c.computed === c.intended).length;
  const computedDisagree = judged.filter((c) => c.computed !== null && c.computed !== c.intended).length;
  const notComputed = judged.filter((c) => c.computed === null).length + up.notModelled.length;
  const observedPass = judged.filter((c) => c.status === 'pass').length;
  const observedFail = judged.filter((c) => c.status === 'computed != observed' || c.status === 'no value').length;
  const checks = judged.length + up.notModelled.length;
  let result: ConformanceTestResult['result'];
  let note: string;
  if (computedDisagree > 0 || observedFail > 0) {
    result = 'Failed';
    note =
      observedFail > 0
        ? `${observedFail} of ${checks} checks observed otherwise than upstream expects`
        : `${computedDisagree} of ${checks} checks compute otherwise than upstream expects`;
  } else if (observedPass === checks && checks > 0) {
    result = 'Passed';
    note = `all ${checks} checks observed on packets as upstream expects`;
  } else {
    result = 'Skipped';
    note =
      computedAgree === checks
        ? `computed only: all ${checks} checks agree with upstream by computation; not observed on packets${r.error ? ` (${r.error})` : ''}`
        : `computed only: ${computedAgree} of ${checks} checks agree with upstream by computation, ${notComputed} not computed (addresses not known, or node peers not modelled); not observed on packets${r.error ? ` (${r.error})` : ''}`;
  }
  return { shortName: up.shortName, features: up.features, checks, computedAgree, computedDisagree, notComputed, observedPass, observedFail, result, note };
}

/** Optional features as the report names them: suite.SupportClusterNetworkPolicyNamedPorts -> ClusterNetworkPolicyNamedPorts. */
const features = (tests: ConformanceTestResult[]): string[] =>
  [...new Set(tests.flatMap((t) => t.features.filter((f) => f !== BASE_FEATURE).map((f) => f.replace(/^Support/, ''))))].sort();

function status(tests: ConformanceTestResult[], mode: string): Record<string, unknown> {
  const count = (k: ConformanceTestResult['result']) => tests.filter((t) => t.result === k).length;
  const failed = tests.filter((t) => t.result === 'Failed');
  const skipped = tests.filter((t) => t.result === 'Skipped');
  const agree = skipped.filter((t) => t.computedAgree === t.checks).length;
  return {
    result: failed.length > 0 ? 'failure' : skipped.length > 0 || tests.length === 0 ? 'partial' : 'success',
    summary: `${mode}. ${tests.length} tests: ${count('Passed')} observed passing on packets, ${failed.length} failed, ${skipped.length} skipped${
      skipped.length > 0 ? ` (${agree} of them agree with upstream on every check by computation only, never observed)` : ''
    }. ${tests.map((t) => `${t.shortName}: ${t.result}: ${t.note}`).join('; ')}`,
    statistics: { Failed: count('Failed'), Passed: count('Passed'), Skipped: skipped.length },
    ...(skipped.length > 0 ? { skippedTests: skipped.map((t) => t.shortName) } : {}),
    ...(failed.length > 0 ? { failedTests: failed.map((t) => t.shortName) } : {}),
  };
}

/** The ConformanceReport YAML of the set's scenario reports; `mode` says how the results were made (computed by `scenario check`, or a run). */
export function conformanceReportYaml(
  reports: readonly ScenarioReportDoc[],
  opts: { mode: 'computed' | 'run'; date: string; version: string; apiVersion: string },
): string {
  const tests = reports.map(conformanceTestResult).filter((t): t is ConformanceTestResult => t !== undefined);
  const standard = tests.filter((t) => t.features.every((f) => f === BASE_FEATURE));
  const experimental = tests.filter((t) => t.features.some((f) => f !== BASE_FEATURE));
  const mode =
    opts.mode === 'computed'
      ? 'Mode: computed by Starmap’s policy evaluator (scenario check); nothing was observed on packets, so no test is reported passed'
      : 'Mode: scenario run (only checks observed on packets count as passed)';
  const doc = {
    apiVersion: 'policy.networking.k8s.io/v1alpha1',
    kind: 'ConformanceReport',
    date: opts.date,
    implementation: {
      organization: 'starmap',
      project: 'starmap',
      url: '',
      version: opts.version,
      contact: [],
      additionalInformation: `${mode}; ClusterNetworkPolicy is not enforced by Starmap’s orchestrator yet`,
    },
    networkPolicyV2APIVersion: opts.apiVersion,
    profiles: [
      {
        name: 'ClusterNetworkPolicy',
        standard: status(standard, mode),
        ...(experimental.length > 0
          ? {
              experimental: {
                ...status(experimental, mode),
                // Attempted: a feature some test of which had a check judged (computed or observed).
                supportedFeatures: features(experimental.filter((t) => t.notComputed < t.checks)),
                unsupportedFeatures: features(experimental).filter((f) => !features(experimental.filter((t) => t.notComputed < t.checks)).includes(f)),
              },
            }
          : {}),
      },
    ],
  };
  return stringify(doc, { lineWidth: 0 });
}
