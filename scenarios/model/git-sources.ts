// `git:REF:PATH`: a scenario or manifests read from a repository's history without a checkout, so
// that CI compares a pull request with its base in one call (`scenario diff git:origin/main:deploy/
// git:HEAD:deploy/`). The blobs under PATH at REF are copied into a fresh temporary folder with the
// same relative paths (a scenario's `manifests:` resolve there as in the work tree), read from there
// by the ordinary loader, and the folder is removed. Errors name `git:REF:PATH/...`, never the folder.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { ScenarioError } from '../errors.ts';
import { MAX_SCENARIO_BYTES } from './scenario-file.ts';

/** Bounds of what one side may bring: files and bytes in all (a manifest set, not a repository). */
export const MAX_GIT_FILES = 5000;
export const MAX_GIT_BYTES = 64 * 1024 * 1024;
const GIT_TIMEOUT_MS = 60_000;

export interface GitRef {
  ref: string;
  path: string;
}

/** `git:REF:PATH` split (REF may hold `/`, PATH is the part after the last `:`); undefined for other references. */
export function parseGitRef(spec: string): GitRef | undefined {
  if (!spec.startsWith('git:')) return undefined;
  const rest = spec.slice(4);
  const at = rest.lastIndexOf(':');
  if (at <= 0) throw new ScenarioError(`${spec}: expected git:REF:PATH (for example git:origin/main:deploy/)`);
  const ref = rest.slice(0, at);
  const path = rest.slice(at + 1) || '.';
  // A ref git would read as an option, or a path that climbs out of the repository, is refused.
  if (ref.startsWith('-') || /[\s\0]/.test(ref)) throw new ScenarioError(`${spec}: ${JSON.stringify(ref)} is not a git revision`);
  if (normalize(path).startsWith('..') || path.startsWith('/')) throw new ScenarioError(`${spec}: the path must be inside the repository`);
  return { ref, path };
}

function git(cwd: string, args: string[], spec: string): Buffer {
  try {
    return execFileSync('git', args, { cwd, maxBuffer: MAX_GIT_BYTES + 1024 * 1024, timeout: GIT_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { code?: string; stderr?: Buffer };
    if (e.code === 'ENOENT') throw new ScenarioError(`${spec}: git is not installed`);
    const why = e.stderr?.toString().trim().split('\n').pop() ?? (err as Error).message;
    throw new ScenarioError(`${spec}: ${why}`);
  }
}

/**
 * Copies PATH at REF (a file, or a folder's *.yaml, *.yml and *.json files, recursively) into a new
 * temporary folder and returns where PATH now is and how to remove the copy.
 */
export function checkoutGitPath(spec: string, cwd = process.cwd()): { path: string; remove: () => void; label: (text: string) => string } {
  const { ref, path } = parseGitRef(spec)!;
  let commit = '';
  try {
    commit = git(cwd, ['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`], spec)
      .toString()
      .trim();
  } catch (err) {
    if ((err as Error).message.includes('git is not installed')) throw err;
  }
  if (!/^[0-9a-f]{40,64}$/.test(commit)) throw new ScenarioError(`${spec}: no commit ${JSON.stringify(ref)} in the repository of ${cwd}`);
  // PATH is relative to the repository's top whatever the current folder, as in `git show REF:PATH`.
  const inRepo = normalize(path).replace(/\/+$/, '').replace(/^\.$/, '');
  const listing = git(cwd, ['ls-tree', '-r', '-z', '--full-tree', '-l', commit, '--', inRepo || '.'], spec)
    .toString()
    .split('\0')
    .filter(Boolean)
    .map((line) => {
      const [meta, name] = line.split('\t') as [string, string];
      const [, type, object, size] = meta.split(/\s+/) as [string, string, string, string];
      return { type, object, size: Number(size), name };
    })
    .filter((e) => e.type === 'blob' && (e.name === inRepo || /\.(ya?ml|json)$/.test(e.name)));
  if (listing.length === 0) throw new ScenarioError(`${spec}: no such file or folder with YAML or JSON files at ${ref}`);
  if (listing.length > MAX_GIT_FILES) throw new ScenarioError(`${spec}: ${listing.length} files, more than the ${MAX_GIT_FILES} one side may have`);
  const bytes = listing.reduce((n, e) => n + e.size, 0);
  if (bytes > MAX_GIT_BYTES) throw new ScenarioError(`${spec}: ${bytes} bytes of files, more than the ${MAX_GIT_BYTES} one side may have`);
  const single = listing.length === 1 && listing[0]!.name === inRepo;
  if (single && listing[0]!.size > MAX_SCENARIO_BYTES) throw new ScenarioError(`${spec}: larger than ${MAX_SCENARIO_BYTES} bytes`);

  const root = mkdtempSync(join(tmpdir(), 'starmap-git-'));
  try {
    // One `git cat-file --batch` for every blob: the objects, each after a header line.
    const out = execFileSync('git', ['cat-file', '--batch'], {
      cwd,
      input: listing.map((e) => e.object).join('\n') + '\n',
      maxBuffer: bytes + listing.length * 128 + 1024,
      timeout: GIT_TIMEOUT_MS,
    });
    let at = 0;
    for (const e of listing) {
      const nl = out.indexOf(10, at);
      at = nl + 1;
      const file = join(root, e.name);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, out.subarray(at, at + e.size));
      at += e.size + 1;
    }
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw err instanceof ScenarioError ? err : new ScenarioError(`${spec}: cannot read from git: ${(err as Error).message}`);
  }
  const local = join(root, inRepo);
  return {
    path: local,
    remove: () => rmSync(root, { recursive: true, force: true }),
    // Messages from the loader name the copy; users know the git path.
    label: (text) =>
      text
        .split(local)
        .join(`git:${ref}:${path.replace(/\/+$/, '')}`)
        .split(root + '/')
        .join(`git:${ref}:`),
  };
}
