// How a blocked cell's evidence (run/evidence.ts measures it) turns into its status and words. A
// blocked observation is proven only by the counter of the rule the evaluator says decides it;
// packets dropped by another rule are their own kind of mismatch, and no counted drop at all means
// nothing enforced the policies (whatever the probe saw: a dead server looks like a drop).
import type { CellStatusName, DropRuleDoc, EvidenceDoc } from './schema.ts';

/** The status of a judged, observed cell given its evidence (undefined: none was taken). */
export function judgedStatus(expected: boolean, observed: boolean, evidence: EvidenceDoc | null | undefined): CellStatusName {
  if (expected || !evidence) return observed === expected ? 'pass' : 'computed != observed';
  switch (evidence.verdict) {
    case 'proven':
      return observed ? 'computed != observed' : 'pass';
    case 'not enforced':
      return 'not enforced';
    case 'dropped by another rule':
      return 'dropped by another rule';
    case 'counters unreadable':
      return 'no value';
  }
}

/** A drop rule in words: "default/deny-all ingress of default/b". */
export function ruleText(r: DropRuleDoc): string {
  const who = r.policies === null ? 'an unknown rule' : r.policies.length === 0 ? 'the default drop' : r.policies.join(' + ');
  return `${who} ${r.side} of ${r.pod}`;
}

/** What the evidence says, for failure lines and reports: computed (the deciding rule) against observed (the counted drops). */
export function evidenceText(e: EvidenceDoc, observed: boolean | null): string {
  const computed = `computed: dropped by ${e.rule ? ruleText(e.rule) : 'some rule (undecided)'}`;
  const counted =
    e.drops.length > 0
      ? `observed: dropped by ${e.drops.map((d) => `${ruleText(d)} (${d.packets} packet${d.packets === 1 ? '' : 's'})`).join(', ')}`
      : `observed: ${observed === true ? 'allowed' : observed === false ? 'blocked' : 'no value'}, no drop counted`;
  const control = e.positiveControl === null ? 'no positive control' : `positive control: ${e.positiveControl} reached it`;
  return `${computed}; ${counted}; ${control}`;
}
