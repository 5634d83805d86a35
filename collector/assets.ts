// The web UI's files (collector/ui/). In the single-file executable they are embedded at build
// time: scripts/build.ts defines STARMAP_UI_ASSETS as an object name → content (binary files as
// "base64:<data>"). Run from source, the define is absent and the files are read from disk on
// every request, so edits to the UI show on reload without a restart.
import { readFileSync, statSync } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';

declare const STARMAP_UI_ASSETS: Record<string, string> | undefined;

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.jpg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
};

/** Asset names: path segments of safe characters; no `..`, no absolute paths, no backslashes. */
const NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9._-]*(\/[A-Za-z0-9_][A-Za-z0-9._-]*)*$/;

export interface Asset {
  body: Buffer;
  contentType: string;
}

export function contentTypeOf(name: string): string {
  return CONTENT_TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream';
}

export function isSafeAssetName(name: string): boolean {
  return NAME_PATTERN.test(name) && !name.split('/').some((s) => s === '..' || s === '.');
}

/** The UI folder when running from source (undefined inside the bundle, which embeds the files). */
function sourceDir(): string | undefined {
  const here = import.meta.dirname as string | undefined;
  return here ? join(here, 'ui') : undefined;
}

const embedded: Record<string, string> | undefined = typeof STARMAP_UI_ASSETS === 'undefined' ? undefined : STARMAP_UI_ASSETS;

/** Where the UI files come from: "embedded" or the folder they are read from. */
export function assetSource(dir = sourceDir()): string {
  return embedded ? 'embedded' : (dir ?? 'none');
}

/** Looks an asset up by name (e.g. "index.html", "app.js"); undefined when there is none. */
export function uiAsset(name: string, dir = sourceDir()): Asset | undefined {
  if (!isSafeAssetName(name)) return undefined;
  if (embedded) {
    if (!Object.hasOwn(embedded, name)) return undefined;
    const content = embedded[name]!;
    const body = content.startsWith('base64:') ? Buffer.from(content.slice(7), 'base64') : Buffer.from(content, 'utf8');
    return { body, contentType: contentTypeOf(name) };
  }
  if (!dir) return undefined;
  const root = resolve(dir);
  const file = resolve(root, name);
  // Belt and braces: the name pattern already rules out traversal.
  if (!file.startsWith(root + sep)) return undefined;
  try {
    if (!statSync(file).isFile()) return undefined;
    return { body: readFileSync(file), contentType: contentTypeOf(name) };
  } catch {
    return undefined;
  }
}
