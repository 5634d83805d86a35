// What a task's status updates say when its launch or its command fails (orchestrator/tasks/messages.ts).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { failedCommandMessage, lastLine, launchErrorMessage } from '../../../orchestrator/tasks/messages.ts';
import { tempDir } from '../../helpers/process.ts';

describe('task messages', () => {
  it('names the program for ENOENT and EACCES, else the error', () => {
    expect(launchErrorMessage('nope', 'ENOENT', 'spawn nope ENOENT')).toBe('command not found: nope');
    expect(launchErrorMessage('./x', 'EACCES', 'spawn ./x EACCES')).toBe('permission denied: ./x');
    expect(launchErrorMessage('x', 'EMFILE', 'spawn EMFILE')).toBe('launch failed: spawn EMFILE');
  });

  it('says how a command ended, with the last line of its stderr', () => {
    const dir = tempDir('starmap-messages-');
    const stderr = join(dir, 'stderr');
    writeFileSync(stderr, `first\n${'x'.repeat(5000)}\n  the reason  \n\n`);
    expect(failedCommandMessage(3, null, stderr)).toBe('Command exited with code 3: the reason');
    expect(failedCommandMessage(127, null, join(dir, 'missing'))).toBe('Command exited with code 127 (command not found)');
    expect(failedCommandMessage(126, null, join(dir, 'missing'))).toBe('Command exited with code 126 (not executable)');
    expect(failedCommandMessage(null, 'SIGKILL', join(dir, 'missing'))).toBe('Command killed by signal SIGKILL');
    writeFileSync(stderr, 'y'.repeat(400));
    expect(lastLine(stderr)).toBe(`${'y'.repeat(297)}...`);
  });
});
