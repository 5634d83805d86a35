// The --logfile of the agents (shared/logger.ts, which the orchestrator, the probe and the collector
// all use): the file is the owner's alone (0600) when the program creates it and when it already
// existed with a looser mode, and an existing file is appended to, not truncated.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../shared/logger.ts';
import { freePort, stopAll, tempDir } from './helpers/process.ts';
import { startProbe } from './helpers/probe.ts';

afterAll(stopAll);

const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('--logfile', () => {
  it('a probe creates its logfile 0600 (in a directory it makes), whatever the umask', async () => {
    const logfile = join(tempDir('starmap-logger-'), 'sub', 'probe.log');
    // The child inherits the umask: 0 would leave pino's default 0666 as it is.
    const umask = process.umask(0);
    let probe;
    try {
      probe = await startProbe([`--urls=127.0.0.1:${await freePort()}`, `--logfile=${logfile}`]);
    } finally {
      process.umask(umask);
    }
    expect(await probe.proc.stop('SIGTERM')).toBe(0);
    expect(modeOf(logfile).toString(8)).toBe('600');
    expect(readFileSync(logfile, 'utf8')).toContain('"msg":"probe listening"');
  });

  it('sets an existing world-readable logfile to 0600 and appends to it', async () => {
    const logfile = join(tempDir('starmap-logger-'), 'probe.log');
    writeFileSync(logfile, 'a line from before\n', { mode: 0o644 });
    expect(modeOf(logfile).toString(8)).toBe('644');
    const probe = await startProbe([`--urls=127.0.0.1:${await freePort()}`, `--logfile=${logfile}`]);
    expect(await probe.proc.stop('SIGTERM')).toBe(0);
    expect(modeOf(logfile).toString(8)).toBe('600');
    const text = readFileSync(logfile, 'utf8');
    expect(text.startsWith('a line from before\n')).toBe(true);
    expect(text).toContain('"msg":"stopped"');
  });

  it('createLogger (as the orchestrator and the collector call it) does the same', () => {
    const logfile = join(tempDir('starmap-logger-'), 'orchestrator.log');
    writeFileSync(logfile, '', { mode: 0o664 });
    createLogger({ name: 'orchestrator', logfile }).info({ token: 'not-in-the-log' }, 'hello');
    expect(modeOf(logfile).toString(8)).toBe('600');
    expect(readFileSync(logfile, 'utf8')).toMatch(/"token":"\[redacted\]".*"msg":"hello"/);
  });
});
