// The formats of a diff behind one signature, as the run's (formats.ts): the diff in, the file's
// text out. `scenario diff --report-<format> FILE` writes each; the terminal gets `text`.
import type { ScenarioDiff } from '../model/diff-schema.ts';
import { diffJunit } from './diff-junit.ts';
import { diffMarkdown } from './diff-markdown.ts';
import { diffText } from './diff-text.ts';

export type DiffFormatter = (diff: ScenarioDiff) => string;

export const DIFF_FORMATS = {
  text: (d) => diffText(d),
  md: (d) => diffMarkdown(d),
  json: (d) => `${JSON.stringify(d, null, 2)}\n`,
  junit: diffJunit,
} as const satisfies Record<string, DiffFormatter>;
