// The terminal's account of a diff: the summary, the flips grouped by cause with the deciding
// reason on both sides, the cells of one side only, and the approval when one was given. Bounded:
// past `maxFlips` flips the rest are counted, not listed (the JSON report has them all).
import type { ScenarioDiff } from '../model/diff-schema.ts';
import { flipsByCause } from '../model/diff.ts';
import { causeText, cellName, flipWords, observationText, observedWords, oneSidedByCause, summaryText, verdictWord } from './diff-words.ts';

export function diffText(d: ScenarioDiff, maxFlips = 100): string {
  const out = [`scenario diff ${d.base} (${d.step.base}) -> ${d.head} (${d.step.head}): ${summaryText(d)}`];
  let shown = 0;
  for (const { cause, flips } of flipsByCause(d)) {
    out.push('', `${causeText(cause)}: ${flips.length} flip${flips.length === 1 ? '' : 's'}`);
    for (const f of flips) {
      if (shown++ >= maxFlips) break;
      out.push(`  ${cellName(f)}  ${flipWords(f)}`, `    before: ${f.before.reason}`, `    after:  ${f.after.reason}`);
      const seen = observedWords(f);
      if (seen) out.push(`    ${seen}`);
    }
  }
  if (shown > maxFlips) out.push('', `... and ${d.flips.length - maxFlips} more flips (--report-json FILE lists every one)`);
  for (const [title, cells] of [
    ['cells of HEAD only', d.added],
    ['cells of BASE only', d.removed],
  ] as const) {
    if (cells.length === 0) continue;
    out.push('', `${title}:`);
    for (const { cause, cells: list } of oneSidedByCause(d, cells)) {
      const counts = { allowed: list.filter((c) => c.side.allowed === true).length, blocked: list.filter((c) => c.side.allowed === false).length };
      out.push(`  ${causeText(cause)}: ${list.length} cells (${counts.allowed} allowed, ${counts.blocked} blocked)`);
      for (const c of list.slice(0, 10)) out.push(`    ${cellName(c)}  ${verdictWord(c.side.allowed)}`);
      if (list.length > 10) out.push(`    ... and ${list.length - 10} more`);
    }
  }
  const quiet = d.causes.filter(
    (_, i) => !d.flips.some((f) => f.causes.includes(i)) && !d.added.some((c) => c.cause === i) && !d.removed.some((c) => c.cause === i),
  );
  if (quiet.length > 0) out.push('', 'changes that flip nothing:', ...quiet.map((c) => `  ${causeText(c)}`));
  if (d.deadRules.length > 0) out.push('', 'rules the change leaves dead (no cell exercises them):', ...d.deadRules.map((r) => `  ${r.rule}: ${r.why}`));
  if (d.undecided.length > 0) out.push('', `${d.undecided.length} cells undecided on a side (addresses not known): never counted as flips`);
  const packets = observationText(d);
  if (packets) {
    out.push('', packets);
    for (const f of d.observation!.faults.slice(0, 50)) out.push(`  ${f.text}`);
    if (d.observation!.faults.length > 50) out.push(`  ... and ${d.observation!.faults.length - 50} more faults (--report-json FILE lists every one)`);
  }
  if (d.approval) {
    const a = d.approval;
    out.push('', a.passed ? `approved: the flips are exactly those of ${a.file}` : `NOT APPROVED (${a.file}):`);
    const byKey = new Map(d.flips.map((f) => [f.key, f]));
    for (const k of a.unapproved.slice(0, 50)) out.push(`  unapproved flip: ${cellName(byKey.get(k)!)}  ${flipWords(byKey.get(k)!)}`);
    if (a.unapproved.length > 50) out.push(`  ... and ${a.unapproved.length - 50} more unapproved flips`);
    for (const m of a.missing) out.push(`  approved but no such flip: ${m}`);
  }
  return out.join('\n');
}
