// Label selector matching for the renderer (metav1.LabelSelector semantics). Written here on
// purpose rather than shared with shared/netpol's evaluator: the two implement the semantics
// independently so that property tests comparing them catch a mistake in either.
import type { LabelSelector, LabelSelectorRequirement } from '../../shared/netpol/types.ts';

function requirementMatches(r: LabelSelectorRequirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, r.key);
  switch (r.operator) {
    case 'In':
      return has && (r.values ?? []).includes(labels[r.key]!);
    case 'NotIn':
      // A pod without the key matches NotIn, as in Kubernetes.
      return !has || !(r.values ?? []).includes(labels[r.key]!);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    default:
      // Validation refuses other operators; a stored one that slipped through selects nothing.
      return false;
  }
}

/** Does the selector select an object with these labels? {} selects everything (matchLabels AND matchExpressions). */
export function selectorMatches(sel: LabelSelector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (!Object.hasOwn(labels, k) || labels[k] !== v) return false;
  return (sel.matchExpressions ?? []).every((r) => requirementMatches(r, labels));
}

/** The dialect's `labels` selector: every given label must be present with that value. */
export function labelsInclude(want: Record<string, string>, have: Record<string, string>): boolean {
  return Object.entries(want).every(([k, v]) => Object.hasOwn(have, k) && have[k] === v);
}
