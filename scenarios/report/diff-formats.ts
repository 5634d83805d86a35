// The formats of a diff behind one signature, as the run's (formats.ts): the diff (with every cell
// of both sides, which only the HTML page draws) in, the file's text out. `scenario diff
// --report-<format> FILE` writes each; the terminal gets `text`.
import type { CellSide, ScenarioDiff } from '../model/diff-schema.ts';
import type { Protocol } from '../../shared/netpol/types.ts';
import { diffHtml } from './diff-html.ts';
import { diffJunit } from './diff-junit.ts';
import { diffMarkdown } from './diff-markdown.ts';
import { diffText } from './diff-text.ts';

/** A diff, and every cell of the two sides with its verdict on each (absent: the side has no such cell). */
export interface DiffView {
  diff: ScenarioDiff;
  cells: { key: string; from: string; to: string; port: number; protocol: Protocol; before?: CellSide; after?: CellSide }[];
}

export type DiffFormatter = (view: DiffView) => string;

export const DIFF_FORMATS = {
  text: (v) => diffText(v.diff),
  md: (v) => diffMarkdown(v.diff),
  json: (v) => `${JSON.stringify(v.diff, null, 2)}\n`,
  junit: (v) => diffJunit(v.diff),
  html: (v) => diffHtml(v),
} as const satisfies Record<string, DiffFormatter>;
