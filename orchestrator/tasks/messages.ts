// What a task's status updates say when its launch fails or its command fails, as Mesos' executor
// words them, with the last line of the task's stderr (what a user looks for first).
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** `what` (the program) could not be started: the errno of spawn or of exec. */
export function launchErrorMessage(what: string, code: string | undefined, message: string): string {
  if (code === 'ENOENT') return `command not found: ${what}`;
  if (code === 'EACCES') return `permission denied: ${what}`;
  return `launch failed: ${message}`;
}

/** A command that ended with a non-zero code or by a signal; `stderrPath` gives the message its tail. */
export function failedCommandMessage(code: number | null, signal: NodeJS.Signals | null, stderrPath: string): string {
  const why =
    signal !== null
      ? `killed by signal ${signal}`
      : `exited with code ${code}${code === 127 ? ' (command not found)' : code === 126 ? ' (not executable)' : ''}`;
  const tail = lastLine(stderrPath);
  return `Command ${why}${tail ? `: ${tail}` : ''}`;
}

/** Last non-empty line of a file (at most the last 4 KiB are read), trimmed to 300 characters. */
export function lastLine(path: string): string {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    const len = Math.min(size, 4096);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    const lines = buf
      .toString('utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    const line = lines[lines.length - 1] ?? '';
    return line.length > 300 ? `${line.slice(0, 297)}...` : line;
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
