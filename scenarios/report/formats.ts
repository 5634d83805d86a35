// The report formats behind one signature (as netpol-analyzer's conns_formatter_*.go): a run's
// report document in, the file's text out. `scenario run --report-<format> FILE` writes each.
import { reportHtml } from './html.ts';
import { toJson } from './json.ts';
import { toJunit } from './junit.ts';
import type { ReportDoc } from './schema.ts';

/** Renders a report document as one file's text. */
export type ReportFormatter = (doc: ReportDoc) => string;

export const REPORT_FORMATS = {
  json: toJson,
  junit: toJunit,
  html: (doc) => reportHtml(doc),
} as const satisfies Record<string, ReportFormatter>;

export type ReportFormat = keyof typeof REPORT_FORMATS;
