// A diff as JUnit XML (`--report-junit FILE`): one test case per flip, failed unless an approval
// covers it (and, on packets, unless it was observed as computed), one per approved statement no
// flip made (failed), one per enforcement fault of a cell that is no flip, so CI lists each by name.
import type { ScenarioDiff } from '../model/diff-schema.ts';
import { causeText, cellName, flipWords, observedWords } from './diff-words.ts';
import { xml } from './junit.ts';

export function diffJunit(d: ScenarioDiff): string {
  const approved = new Set(d.approval ? d.flips.map((f) => f.key).filter((k) => !d.approval!.unapproved.includes(k)) : []);
  const faults = new Map((d.observation?.faults ?? []).map((f) => [f.key, f]));
  const cases = d.flips.map((f) => {
    const name = `${cellName(f)}: ${flipWords(f)}`;
    const seen = observedWords(f);
    const body = `${causeText(d.causes[f.causes[0]!]!)}\nbefore: ${f.before.reason}\nafter: ${f.after.reason}${seen ? `\n${seen}` : ''}`;
    const fault = faults.get(f.key);
    if (fault)
      return `    <testcase classname="starmap.diff" name="${xml(name)}" time="0"><failure message="${xml(fault.kind)}" type="enforcement fault">${xml(`${fault.text}\n${body}`)}</failure></testcase>`;
    return approved.has(f.key)
      ? `    <testcase classname="starmap.diff" name="${xml(name)}" time="0"><system-out>${xml(body)}</system-out></testcase>`
      : `    <testcase classname="starmap.diff" name="${xml(name)}" time="0"><failure message="${xml(d.approval ? 'unapproved flip' : 'flip')}" type="flip">${xml(body)}</failure></testcase>`;
  });
  for (const m of d.approval?.missing ?? [])
    cases.push(
      `    <testcase classname="starmap.diff" name="${xml(`approved: ${m}`)}" time="0"><failure message="approved but no such flip" type="missing"/></testcase>`,
    );
  const flipped = new Set(d.flips.map((f) => f.key));
  for (const f of faults.values())
    if (!flipped.has(f.key))
      cases.push(
        `    <testcase classname="starmap.diff" name="${xml(`${cellName(f)}: ${f.kind}`)}" time="0"><failure message="${xml(f.kind)}" type="enforcement fault">${xml(f.text)}</failure></testcase>`,
      );
  if (d.observation?.error)
    cases.push(
      `    <testcase classname="starmap.diff" name="on packets" time="0"><failure message="not observed" type="error">${xml(d.observation.error)}</failure></testcase>`,
    );
  if (cases.length === 0) cases.push(`    <testcase classname="starmap.diff" name="no flips" time="0"/>`);
  const failures = cases.filter((c) => c.includes('<failure')).length;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="starmap diff" tests="${cases.length}" failures="${failures}">`,
    `  <testsuite name="${xml(`${d.base} -> ${d.head}`)}" tests="${cases.length}" failures="${failures}" errors="0" skipped="0">`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}
