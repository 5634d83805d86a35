// The built-in scenarios (scenarios/builtin/**/*.yaml) and the manifest files they name (the stars
// demo's own policies under deploy/kubernetes). The single-file executable carries them through
// the STARMAP_BUILTIN_FILES define (scripts/build.ts); from source they are read from the tree.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

declare const STARMAP_BUILTIN_FILES: Record<string, string> | undefined;

/** Where the built-ins live, relative to the repository root. */
export const BUILTIN_DIR = 'scenarios/builtin';
/** Manifests outside BUILTIN_DIR that built-ins name with `file:` (the stars demo's own). */
export const BUILTIN_MANIFESTS = 'deploy/kubernetes';

/** Repository-relative path → text of every built-in scenario and every manifest they may name. */
export function collectBuiltinFiles(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, keep: (name: string) => boolean) => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path, keep);
      else if (keep(name)) out[relative(root, path).split(sep).join('/')] = readFileSync(path, 'utf8');
    }
  };
  walk(join(root, BUILTIN_DIR), (n) => /\.(ya?ml|json)$/.test(n));
  walk(join(root, BUILTIN_MANIFESTS), (n) => /^policy-.*\.ya?ml$/.test(n));
  return out;
}

function fromDisk(): Record<string, string> {
  const here = import.meta.dirname as string | undefined;
  return here ? collectBuiltinFiles(join(here, '..', '..')) : {};
}

export const BUILTIN_FILES: Record<string, string> = typeof STARMAP_BUILTIN_FILES === 'undefined' ? fromDisk() : STARMAP_BUILTIN_FILES;

/**
 * Built-in scenario name (`stars`, `k8s-e2e/deny-all`) → its repository-relative path. A YAML file
 * under BUILTIN_DIR is a scenario when it has top-level steps (manifests beside them have not).
 */
export const BUILTIN: Record<string, string> = Object.fromEntries(
  Object.entries(BUILTIN_FILES)
    .filter(([p, text]) => p.startsWith(`${BUILTIN_DIR}/`) && p.endsWith('.yaml') && /^steps:/m.test(text))
    .map(([p]) => [p.slice(BUILTIN_DIR.length + 1).replace(/\.yaml$/, ''), p]),
);

/** The built-ins as people name them: top-level scenarios, and sets (folders) with a trailing count. */
export function builtinNames(): string {
  const names = Object.keys(BUILTIN).sort();
  const sets = new Map<string, number>();
  for (const n of names) if (n.includes('/')) sets.set(n.split('/')[0]!, (sets.get(n.split('/')[0]!) ?? 0) + 1);
  return [...names.filter((n) => !n.includes('/')), ...[...sets].map(([s, n]) => `${s} (a set of ${n})`)].join(', ');
}
