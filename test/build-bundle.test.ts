// How scripts/lib/bundle.ts and scripts/lib/warm-code-cache.ts make a program (issue 17): a
// built-in that a program needs only later loads at its first use, and an executable that has lost
// the bundle and code cache appended to it says so instead of running something else.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundleProgram } from '../scripts/lib/bundle.ts';
import { NODE, ROOT, tempDir } from './helpers/process.ts';

describe('lazy built-ins in a bundle', () => {
  it('loads node:dns/promises at its first use, and it works as the real module', async () => {
    const dir = tempDir('starmap-bundle-');
    const entry = join(dir, 'entry.ts');
    writeFileSync(
      entry,
      `import { Resolver } from 'node:dns/promises';
const loaded = () => (process as unknown as { moduleLoadList: string[] }).moduleLoadList.includes('NativeModule internal/dns/promises');
const before = loaded();
const resolver = new Resolver({ timeout: 100, tries: 1 });
resolver.setServers(['127.0.0.1:53']);
console.log(JSON.stringify({ before, after: loaded(), servers: resolver.getServers(), resolve4: typeof resolver.resolve4 }));
`,
    );
    const out = join(dir, 'entry.cjs');
    await bundleProgram(entry, out);
    expect(JSON.parse(execFileSync(NODE, [out], { encoding: 'utf8' }))).toEqual({ before: false, after: true, servers: ['127.0.0.1'], resolve4: 'function' });
  });
});

describe('an executable whose appended bundle is gone', () => {
  it('exits non-zero and says to rebuild it', () => {
    const bin = join(ROOT, 'dist', 'bin', 'probe');
    const copy = join(tempDir('starmap-bundle-'), 'probe');
    copyFileSync(bin, copy);
    truncateSync(copy, statSync(copy).size - 1);
    const run = spawnSync(copy, ['--help'], { encoding: 'utf8', timeout: 30_000 });
    expect(run.status).toBe(1);
    expect(run.stderr).toBe('probe: the executable has lost its bundle: rebuild it (npm run build)\n');
  });
});
