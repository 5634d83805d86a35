// A diff as a pull-request comment (`--report-md FILE`): a summary line with counts, the first flips
// grouped by cause as tables, the rest in a collapsed block, and the cells of one side only. Bounded
// whatever the input: GitHub refuses a comment over 65,536 characters, so the text stops at
// `maxChars` with a count of what was left out (the JSON report has everything). Every name and
// reason is escaped: they come from the manifests.
import type { ScenarioDiff } from '../model/diff-schema.ts';
import { flipsByCause } from '../model/diff.ts';
import { causeText, cellName, flipWords, observationText, observedWords, oneSidedByCause, summaryText } from './diff-words.ts';

/** Text safe in a Markdown table cell: no HTML, no cell breaks, no emphasis or links. */
export function mdText(s: string): string {
  return s
    .replace(/[\r\n]+/g, ' ')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/([\\`*_[\]|#~])/g, '\\$1');
}

export interface MarkdownOptions {
  /** Flips shown before the collapsed block. */
  firstFlips?: number;
  maxChars?: number;
}

export function diffMarkdown(d: ScenarioDiff, opts: MarkdownOptions = {}): string {
  const firstFlips = opts.firstFlips ?? 20;
  const maxChars = opts.maxChars ?? 60_000;
  const head = [
    `### Starmap: ${d.counts.flips === 0 ? 'no flows change' : `${d.counts.flips} flow${d.counts.flips === 1 ? '' : 's'} change`}`,
    '',
    `**${mdText(summaryText(d))}**: \`${mdText(d.base)}\` → \`${mdText(d.head)}\``,
  ];
  if (d.approval) {
    const a = d.approval;
    head.push(
      '',
      a.passed
        ? `✅ the flips are exactly those approved in \`${mdText(a.file)}\``
        : `❌ not as approved in \`${mdText(a.file)}\`: ${a.unapproved.length} unapproved, ${a.missing.length} approved but missing`,
    );
  }
  const packets = observationText(d);
  if (packets) {
    head.push('', `${d.observation!.outcome === 'fail' ? '❌' : d.observation!.outcome === 'pass' ? '✅' : '⚠️'} ${mdText(packets)}`);
    const faults = d.observation!.faults;
    for (const f of faults.slice(0, 20)) head.push(`- ${mdText(f.text)}`);
    if (faults.length > 20) head.push(`- … and ${faults.length - 20} more faults (the JSON report has every one)`);
  }
  const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
  // With --isolation=netns each flip also says what the packets did and when the cell converged.
  const observed = d.observation !== undefined;
  const columns = ['from', 'to', 'port', 'change', 'before', 'after', ...(observed ? ['observed'] : [])];
  const tableHead = [row(columns), row(columns.map(() => '---'))];
  const flipRow = (f: ScenarioDiff['flips'][number]) =>
    row([
      mdText(f.from),
      mdText(f.to),
      `${f.port}/${f.protocol}`,
      flipWords(f),
      mdText(f.before.reason),
      mdText(f.after.reason),
      ...(observed ? [mdText(observedWords(f) ?? 'not observed')] : []),
    ]);
  const shown: string[] = [];
  const rest: string[] = [];
  let n = 0;
  for (const { cause, flips } of flipsByCause(d)) {
    const first = flips.filter(() => n++ < firstFlips);
    const later = flips.slice(first.length);
    if (first.length > 0) shown.push('', `**${mdText(causeText(cause))}** (${flips.length})`, '', ...tableHead, ...first.map(flipRow));
    if (later.length > 0) rest.push('', `**${mdText(causeText(cause))}**`, '', ...tableHead, ...later.map(flipRow));
  }
  const oneSided: string[] = [];
  for (const [title, cells] of [
    ['Cells of HEAD only', d.added],
    ['Cells of BASE only', d.removed],
  ] as const)
    for (const { cause, cells: list } of oneSidedByCause(d, cells))
      oneSided.push(
        `- ${title}, ${mdText(causeText(cause))}: ${list.length} (${list.filter((c) => c.side.allowed === true).length} allowed, ${list.filter((c) => c.side.allowed === false).length} blocked)`,
      );
  for (const r of d.deadRules) oneSided.push(`- rule left dead: ${mdText(r.rule)}: ${mdText(r.why)}`);
  if (d.approval) {
    const byKey = new Map(d.flips.map((f) => [f.key, f]));
    for (const k of d.approval.unapproved) oneSided.push(`- unapproved flip: ${mdText(cellName(byKey.get(k)!))} ${flipWords(byKey.get(k)!)}`);
    for (const m of d.approval.missing) oneSided.push(`- approved but no such flip: ${mdText(m)}`);
  }
  // Filled in order until the budget is spent; what did not fit is counted.
  const out = [...head];
  let left = 0;
  const budget = maxChars - 400;
  const add = (lines: string[]) => {
    for (const l of lines) {
      if (out.join('\n').length + l.length + 1 > budget) {
        left++;
        continue;
      }
      out.push(l);
    }
  };
  add(shown);
  if (rest.length > 0) {
    add(['', `<details><summary>${d.counts.flips - Math.min(firstFlips, d.counts.flips)} more flips</summary>`]);
    add(rest);
    out.push('', '</details>');
  }
  if (oneSided.length > 0) add(['', ...oneSided]);
  if (left > 0)
    out.push('', `… ${left} more lines left out to keep this comment under ${maxChars} characters: the JSON report (\`--report-json\`) has every flip.`);
  return `${out.join('\n')}\n`;
}
