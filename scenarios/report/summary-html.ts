// The HTML page of a check summarised by workload (report/check-summary.ts): the totals, a table
// of workloads (cells from and to their pods by verdict) and one of workload pairs per port with
// their reason, each as long as the summary's bounds allow, so the page stays a few MB. Pure and
// self-contained like report/html.ts (inline CSS, no script, a CSP that fetches nothing); every
// string from the manifests is escaped.
import { esc } from './graph.ts';
import type { SummaryReportDoc, TallyDoc } from './summary-schema.ts';

const n = (x: number) => x.toLocaleString('en');
const cells = (t: TallyDoc) => `<td class="a">${n(t.allowed)}</td><td class="d">${n(t.denied)}</td><td class="u">${n(t.undecided)}</td>`;
const TALLY_HEAD = '<th>allowed</th><th>denied</th><th>undecided</th>';

export function summaryHtml(doc: SummaryReportDoc): string {
  const c = doc.counts;
  const more = (count: number, what: string) =>
    count > 0 ? `<p class="more">… and ${n(count)} ${what} not listed here (--report-cells writes every cell).</p>` : '';
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    `<title>${esc(doc.scenario)}: scenario check summary</title>`,
    '<style>body{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}' +
      'td.a,td.d,td.u{text-align:right}td.a{color:#060}td.d{color:#a00}td.u{color:#a60}.more{color:#555}tr.mixed td{background:#fff6e0}</style>',
    '</head><body>',
    `<h1>${esc(doc.scenario)}: computed, summarised by workload</h1>`,
    `<p>${esc(doc.outcome)} · ${esc(doc.startedAt)} · addresses used for ipBlocks: ${esc(doc.addresses)}</p>`,
    ...doc.notices.map((t) => `<p>${esc(t)}</p>`),
    doc.manifests.length > 0 ? `<ul>${doc.manifests.map((m) => `<li>${esc(m)}</li>`).join('')}</ul>` : '',
    `<p>${n(c.pods)} pods in ${n(c.workloads)} workloads (${n(c.classes)} classes of identical pods), ${n(c.policies)} NetworkPolicies: ` +
      `${n(c.cells)} cells, <b>${n(c.allowed)}</b> allowed, <b>${n(c.denied)}</b> denied, <b>${n(c.undecided)}</b> undecided.</p>`,
    doc.cellsFile ? `<p>Every cell: <code>${esc(doc.cellsFile)}</code> (NDJSON).</p>` : '',
    '<h2>Workloads</h2>',
    `<table><thead><tr><th rowspan="2">workload</th><th rowspan="2">pods</th><th colspan="3">from its pods</th><th colspan="3">to its pods</th></tr><tr>${TALLY_HEAD}${TALLY_HEAD}</tr></thead><tbody>`,
    ...doc.workloads.map((w) => `<tr><td>${esc(w.workload)}</td><td class="a">${n(w.pods)}</td>${cells(w.out)}${cells(w.in)}</tr>`),
    '</tbody></table>',
    more(doc.workloadsOmitted, 'workloads'),
    '<h2>Workload pairs by port</h2>',
    `<table><thead><tr><th>from</th><th>to</th><th>port</th><th>verdict</th>${TALLY_HEAD}<th>reason</th></tr></thead><tbody>`,
    ...doc.pairs.map(
      (p) =>
        `<tr${p.verdict === 'mixed' ? ' class="mixed"' : ''}><td>${esc(p.from)}</td><td>${esc(p.to)}</td><td>${p.port}/${p.protocol}</td><td>${p.verdict}</td>${cells(p.cells)}<td>${esc(p.reason ?? '(the cells differ)')}</td></tr>`,
    ),
    '</tbody></table>',
    more(doc.cellsNotInPairs, 'cells of further workload pairs'),
    ...(doc.undecided.length > 0
      ? [
          '<h2>Undecided cells</h2><ul>',
          ...doc.undecided.map((u) => `<li>${esc(u.from)} → ${esc(u.to)} ${u.port}/${u.protocol}: ${esc(u.why)}</li>`),
          '</ul>',
          more(doc.undecidedOmitted, 'undecided cells'),
        ]
      : []),
    '</body></html>',
    '',
  ].join('\n');
}
