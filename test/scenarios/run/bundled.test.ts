// Starting the bundled orchestrator for a scenario run: the readiness wait keeps its deadline even
// when the orchestrator's port accepts connections but never answers.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startBundled } from '../../../scenarios/run/bundled-orchestrator.ts';
import { NODE, stopAll, tempDir } from '../../helpers/process.ts';
import { waitFor } from '../../helpers/wait.ts';

/** Pid files of the stand-ins started, so that they are killed even when a test fails early. */
const pidFiles: string[] = [];
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

afterAll(async () => {
  for (const f of pidFiles) {
    const pid = existsSync(f) ? Number(readFileSync(f, 'utf8')) : 0;
    if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
  }
  await stopAll();
});

describe('startBundled', () => {
  it('gives up at its deadline when the orchestrator accepts connections but never answers', async () => {
    const dir = tempDir('starmap-bundled-');
    // A stand-in orchestrator: listens on --http-port, never sends a byte back, and says its pid.
    const mute = join(dir, 'mute.mjs');
    const pidFile = join(dir, 'mute.pid');
    pidFiles.push(pidFile);
    writeFileSync(
      mute,
      [
        "import { createServer } from 'node:net';",
        "import { writeFileSync } from 'node:fs';",
        "const port = Number(process.argv.find((a) => a.startsWith('--http-port='))?.slice('--http-port='.length));",
        'const held = [];',
        `createServer((c) => held.push(c)).listen(port, '127.0.0.1', () => writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)));`,
      ].join('\n'),
    );
    const started = Date.now();
    const err = await startBundled([NODE, mute], { workDir: dir, isolation: false, readyTimeoutMs: 2000 }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(err?.message).toMatch(/^the orchestrator did not answer on http:\/\/127\.0\.0\.1:\d+ within 2 s/);
    // The deadline plus at most one attempt's own deadline, not the HTTP client's minutes.
    expect(Date.now() - started).toBeLessThan(6000);
    // The stand-in was killed.
    await waitFor(() => !alive(pid), { timeoutMs: 5000, message: 'the stand-in orchestrator still runs' });
  }, 20_000);
});
