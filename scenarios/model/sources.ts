// Reading manifests from where people keep them: a file, a directory (recursively, every *.yaml,
// *.yml and *.json in name order; hidden entries skipped, each directory once however it is linked)
// or `-` (stdin, read once). Bounded: each file as one manifest file, the number of files, their
// total size. Errors are ManifestErrors naming the path.
import { closeSync, openSync, readdirSync, readFileSync, readSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ManifestError, MAX_MANIFEST_BYTES } from '../../shared/netpol/manifests.ts';
import type { ManifestSource } from './manifests.ts';

export const MAX_MANIFEST_FILES = 2000;
export const MAX_MANIFEST_TOTAL_BYTES = 64 * 1024 * 1024;
const MANIFEST_FILE = /\.(ya?ml|json)$/;

let stdinText: string | undefined;

/** Standard input, read once (a second `-` gets the same text), bounded like a file. */
export function readStdin(): string {
  if (stdinText !== undefined) return stdinText;
  const chunks: Buffer[] = [];
  let size = 0;
  const fd = 0;
  const buf = Buffer.alloc(64 * 1024);
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, buf, 0, buf.length, null);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') continue;
      if ((err as NodeJS.ErrnoException).code === 'EOF') break;
      throw new ManifestError(`-: cannot read standard input: ${(err as Error).message}`);
    }
    if (n === 0) break;
    size += n;
    if (size > MAX_MANIFEST_BYTES) throw new ManifestError(`-: standard input is larger than ${MAX_MANIFEST_BYTES / 1024 / 1024} MiB`);
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  stdinText = Buffer.concat(chunks).toString('utf8');
  return stdinText;
}

function readBoundedFile(path: string): string {
  const size = statSync(path).size;
  if (size > MAX_MANIFEST_BYTES) throw new ManifestError(`${path}: larger than ${MAX_MANIFEST_BYTES / 1024 / 1024} MiB`);
  const fd = openSync(path, 'r');
  try {
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** Whether a path names manifests to read as a set (a directory, or `-`), rather than one file. */
export function isManifestDir(path: string): boolean {
  try {
    return path !== '-' && statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The manifest texts of a file, a directory or `-`; `label` is how messages name `path`. */
export function readManifestSources(path: string, label = path): ManifestSource[] {
  if (path === '-') return [{ file: '-', text: readStdin() }];
  let st;
  try {
    st = statSync(path);
  } catch (err) {
    throw new ManifestError(`${label}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (!st.isDirectory()) {
    try {
      return [{ file: label, text: readBoundedFile(path) }];
    } catch (err) {
      if (err instanceof ManifestError) throw new ManifestError(`${label}: ${err.message.slice(path.length + 2)}`);
      throw new ManifestError(`${label}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  const out: ManifestSource[] = [];
  const visited = new Set<string>();
  let total = 0;
  const walk = (dir: string, shown: string) => {
    const real = realpathSync(dir);
    if (visited.has(real)) return;
    visited.add(real);
    for (const name of readdirSync(dir).sort()) {
      if (name.startsWith('.')) continue;
      const full = join(dir, name);
      const show = `${shown.replace(/\/+$/, '')}/${name}`;
      let s;
      try {
        s = statSync(full);
      } catch {
        continue; // a dangling link
      }
      if (s.isDirectory()) walk(full, show);
      else if (s.isFile() && MANIFEST_FILE.test(name)) {
        if (out.length >= MAX_MANIFEST_FILES)
          throw new ManifestError(`${label}: more than ${MAX_MANIFEST_FILES} manifest files; at most ${MAX_MANIFEST_FILES}`);
        if (s.size > MAX_MANIFEST_BYTES) throw new ManifestError(`${show}: larger than ${MAX_MANIFEST_BYTES / 1024 / 1024} MiB`);
        total += s.size;
        if (total > MAX_MANIFEST_TOTAL_BYTES) throw new ManifestError(`${label}: more than ${MAX_MANIFEST_TOTAL_BYTES / 1024 / 1024} MiB of manifests`);
        out.push({ file: show, text: readFileSync(full, 'utf8') });
      }
    }
  };
  try {
    walk(path, label);
  } catch (err) {
    if (err instanceof ManifestError) throw err;
    throw new ManifestError(`${label}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (out.length === 0) throw new ManifestError(`${label}: no manifest files (*.yaml, *.yml, *.json) in this directory`);
  return out;
}
