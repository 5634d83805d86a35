// Writing an export to a directory (scenario export --to DIR, run --kubernetes): a new or empty
// directory, or an earlier export, whose files are replaced.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ScenarioError } from '../errors.ts';
import type { KubernetesExport } from './kubernetes-manifests.ts';

/** What marks a directory as written by scenario export (its README's first lines). */
const MARK = 'Written by `scenario export`';

/** Writes an export into `dir`: a new or empty directory, or a previous export (whose files are replaced). */
export function writeExport(ex: KubernetesExport, dir: string): void {
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) throw new ScenarioError(`--to ${dir}: not a directory`);
    const entries = readdirSync(dir);
    if (entries.length > 0) {
      const readme = join(dir, 'README.md');
      if (!existsSync(readme) || !readFileSync(readme, 'utf8').includes(MARK))
        throw new ScenarioError(
          `--to ${dir}: the directory is not empty and holds no earlier export (no README.md of scenario export): give a new or empty one`,
        );
      for (const e of entries)
        if (/^step-\d+$/.test(e) || /^0\d-[a-z-]+\.yaml$/.test(e) || e === 'README.md') rmSync(join(dir, e), { recursive: true, force: true });
    }
  }
  for (const f of ex.files) {
    mkdirSync(dirname(join(dir, f.path)), { recursive: true });
    writeFileSync(join(dir, f.path), f.content);
  }
}
