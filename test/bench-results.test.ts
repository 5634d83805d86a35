// bench/RESULTS.md is generated only (bench/lib/results.ts): one short table per benchmark
// (measure, value, baseline, ratio, goal, met) under a header line with the date, the machine and
// the load average, no free text, every line under 200 characters.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FILE_HEADER, MAX_LINE, renderSection, replaceSection, writeResults, type ResultRow } from '../bench/lib/results.ts';

const dir = mkdtempSync(join(tmpdir(), 'starmap-bench-results-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const row: ResultRow = { measure: 'GET /x, 16 connections', value: '4426/s', baseline: 'bare: 4765/s', ratio: '0.93×', goal: '≥ 0.8×', met: 'yes' };
const HEAD = '| measure | value | baseline | ratio | goal | met |';
const RULE = '| --- | --- | --- | --- | --- | --- |';

describe('bench/lib/results.ts', () => {
  it('writes a section as the header line, the six-column table and the limiting factor', () => {
    const text = renderSection('Serving', [row], {
      date: '2026-12-02T01:00:00.000Z',
      machine: '2 × cpu, 24 GiB',
      load: [0.5, 1, 1.25],
      limitingFactor: 'the copy into the socket',
    });
    expect(text.split('\n')).toEqual([
      '## Serving',
      '',
      '_2026-12-02T01:00:00.000Z · 2 × cpu, 24 GiB · load average 0.50 1.00 1.25_',
      '',
      HEAD,
      RULE,
      '| GET /x, 16 connections | 4426/s | bare: 4765/s | 0.93× | ≥ 0.8× | yes |',
      '',
      'Limiting factor: the copy into the socket',
      '',
    ]);
  });

  it('keeps a cell on one line and escapes the table separator', () => {
    const text = renderSection('T', [{ ...row, measure: 'a | b\nc', value: '' }], { load: 'not recorded' });
    expect(text).toContain('| a \\| b c | - | bare: 4765/s |');
    expect(text).toContain('load average not recorded');
  });

  it('replaces its own section and keeps the others', () => {
    const one = renderSection('One', [row], { load: [0, 0, 0] });
    const two = renderSection('Two', [row], { load: [0, 0, 0] });
    const file = replaceSection(replaceSection('', 'One', one), 'Two', two);
    expect(file.startsWith(FILE_HEADER)).toBe(true);
    const again = replaceSection(file, 'One', renderSection('One', [{ ...row, value: '1/s' }], { load: [0, 0, 0] }));
    expect(again.match(/^## /gm)).toHaveLength(2);
    expect(again).toContain('| 1/s |');
    expect(again).not.toContain('| 4426/s | bare: 4765/s | 0.93× | ≥ 0.8× | yes |\n\n## Two');
    expect(again.indexOf('## One')).toBeLessThan(again.indexOf('## Two'));
  });

  it('writes the file, and refuses a section with a line of 200 characters or more', () => {
    const file = join(dir, 'RESULTS.md');
    writeResults('Bench', [row], { load: [1, 1, 1] }, file);
    expect(readFileSync(file, 'utf8')).toContain(HEAD);
    const before = readFileSync(file, 'utf8');
    const stderr = process.stderr.write;
    process.stderr.write = () => true;
    try {
      expect(() => writeResults('Bench', [{ ...row, measure: 'x'.repeat(MAX_LINE) }], {}, file)).toThrow(/section "Bench" has lines of 200\+ characters/);
    } finally {
      process.stderr.write = stderr;
    }
    expect(readFileSync(file, 'utf8')).toBe(before);
  });
});

describe('bench/RESULTS.md', () => {
  const text = readFileSync(join(import.meta.dirname, '..', 'bench', 'RESULTS.md'), 'utf8');
  const lines = text.split('\n');

  it('has every line under 200 characters', () => {
    const long = lines.map((l, i) => ({ n: i + 1, len: [...l].length })).filter((l) => l.len >= MAX_LINE);
    expect(long).toEqual([]);
  });

  it('is in the generated shape only: each section a header line, one table, at most a limiting factor', () => {
    expect(text.startsWith(FILE_HEADER)).toBe(true);
    const sections = text
      .slice(FILE_HEADER.length)
      .split(/\n(?=## )/)
      .map((s) => s.trim())
      .filter(Boolean);
    expect(sections.length).toBeGreaterThanOrEqual(10);
    for (const section of sections) {
      const [title, blank1, header, blank2, head, rule, ...rest] = section.split('\n');
      expect(title, section.slice(0, 80)).toMatch(/^## /);
      expect([blank1, blank2]).toEqual(['', '']);
      expect(header, title).toMatch(/^_\d{4}-\d\d-\d\dT[\d:.]+Z · .+ · load average .+_$/);
      expect([head, rule], title).toEqual([HEAD, RULE]);
      const rows = rest.filter((l) => l.startsWith('|'));
      expect(rows.length, title).toBeGreaterThan(0);
      for (const r of rows) expect(r.replace(/\\\|/g, '').split('|').length, r).toBe(8);
      const other = rest.slice(rows.length).filter((l) => l !== '');
      expect(other.length, title).toBeLessThanOrEqual(1);
      if (other.length === 1) expect(other[0], title).toMatch(/^Limiting factor: /);
    }
  });
});
