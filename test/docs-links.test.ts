// Every relative link of the README and of docs/ leads somewhere: the file exists and, for a
// `#anchor`, the page has a heading of that name (GitHub's slugs). The manual moved out of the
// README into docs/; a link left pointing at a section that moved is a dead end for a reader.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/process.ts';

const pages = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replaceAll(' ', '-');
}

function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>();
  let inCode = false;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.startsWith('```')) inCode = !inCode;
    const m = !inCode && /^#{1,6} (.*)$/.exec(line);
    if (m) anchors.add(slug(m[1]!));
  }
  return anchors;
}

describe('links in the README and docs/', () => {
  it.each(pages)('%s: every relative link and anchor resolves', (page) => {
    const text = readFileSync(join(ROOT, page), 'utf8').replace(/```[\s\S]*?```/g, '');
    const dead: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue; // http:, https:, mailto:
      const [path, anchor] = target!.split('#') as [string, string | undefined];
      const file = path === '' ? join(ROOT, page) : join(ROOT, dirname(page), path);
      if (!existsSync(file)) dead.push(`${target} (no file ${relative(ROOT, file)})`);
      else if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(file).has(anchor))
        dead.push(`${target} (no heading #${anchor} in ${relative(ROOT, file)})`);
    }
    expect(dead).toEqual([]);
  });
});
