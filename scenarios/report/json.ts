// The JSON report (`--report-json`): everything the run knew, as report/schema.ts publishes it.
import type { ReportDoc } from './schema.ts';

export function toJson(report: ReportDoc): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}
