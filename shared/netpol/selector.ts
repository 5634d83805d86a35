// metav1.LabelSelector matching, as the Kubernetes API machinery defines it: every matchLabels
// pair and every matchExpressions requirement must hold (AND); an empty selector matches
// everything. NotIn also matches when the key is absent, as in Kubernetes.
//
// The one piece the evaluator (evaluate.ts, tiers.ts, matrix.ts) and the nftables compiler
// (orchestrator/isolation/compile.ts) share. Everything else they implement independently on
// purpose, so that each checks the other on real packets; a mistake here would be made by both
// and go unseen there, so this module is tested directly against upstream's own cases
// (test/netpol-selector-upstream.test.ts, transcribed from k8s.io/apimachinery pkg/labels and
// pkg/apis/meta/v1 into test/fixtures/label-selector-upstream.json).
import type { LabelSelector, LabelSelectorRequirement } from './types.ts';

export function requirementHolds(req: LabelSelectorRequirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, req.key);
  const values = req.values ?? [];
  switch (req.operator) {
    case 'In':
      return has && values.includes(labels[req.key]!);
    case 'NotIn':
      return !has || !values.includes(labels[req.key]!);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    default:
      // validate.ts refuses unknown operators; a selector that slipped through selects nothing,
      // as the API machinery's conversion fails closed.
      return false;
  }
}

export function selectorMatches(selector: LabelSelector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (!Object.hasOwn(labels, k) || labels[k] !== v) return false;
  for (const req of selector.matchExpressions ?? []) if (!requirementHolds(req, labels)) return false;
  return true;
}

/** A selector as text, kubectl style: `role=db,tier in (a,b),!legacy`; `{}` selects everything. */
export function selectorText(selector: LabelSelector): string {
  const parts = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const r of selector.matchExpressions ?? []) {
    if (r.operator === 'Exists') parts.push(r.key);
    else if (r.operator === 'DoesNotExist') parts.push(`!${r.key}`);
    else parts.push(`${r.key} ${r.operator === 'In' ? 'in' : 'notin'} (${(r.values ?? []).join(',')})`);
  }
  return parts.length > 0 ? parts.join(',') : '{}';
}

/** The dialect's `labels` selector (orchestrator/isolation/policy.ts): every given label must be present with that value. */
export function labelsInclude(want: Record<string, string>, have: Record<string, string>): boolean {
  return Object.entries(want).every(([k, v]) => Object.hasOwn(have, k) && have[k] === v);
}
