// Benchmarks write their figures into bench/RESULTS.md, one section per benchmark, replaced on
// each run so the file always holds the latest figures of every benchmark.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';

const FILE = join(import.meta.dirname, '..', 'RESULTS.md');

export function machine(): string {
  return `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
}

/** Replaces (or appends) the section `## <title>` of bench/RESULTS.md with `body`. */
export function writeSection(title: string, body: string): void {
  const header = '# Benchmark results\n\nWritten by `npm run bench`; each section is replaced when its benchmark runs again.\n';
  const text = existsSync(FILE) ? readFileSync(FILE, 'utf8') : header;
  const section = `## ${title}\n\n_${new Date().toISOString()}, ${machine()}_\n\n${body.trim()}\n`;
  const re = new RegExp(`## ${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n[\\s\\S]*?(?=\\n## |$)`);
  const next = re.test(text) ? text.replace(re, section) : `${text.trimEnd()}\n\n${section}`;
  writeFileSync(FILE, next.endsWith('\n') ? next : `${next}\n`);
}

/** A markdown table from rows of cells. */
export function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor((s.length - 1) / 2)]!;
}

export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}
