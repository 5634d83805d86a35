// Structured logs with pino, to stdout or to the file named by `--logfile`.
// Secrets are redacted by path so that no token, password or key can reach a log line.
//
// A logfile is the owner's alone (0600), as the orchestrator's state files are: it is created so
// whatever the umask, and an existing regular file with another mode is set to 0600 (one that an
// older version made world-readable included). Devices and pipes (/dev/null, /dev/stderr, a FIFO)
// keep their modes: they are not the program's to change.
import { fchmodSync, fstatSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import pino from 'pino';

export type Logger = pino.Logger;

export const REDACT_PATHS = [
  'password',
  'token',
  'secret',
  'privateKey',
  'private_key',
  '*.password',
  '*.token',
  '*.secret',
  '*.privateKey',
  '*.private_key',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
];

export interface LoggerOptions {
  name: string;
  logfile?: string | undefined;
  level?: string | undefined;
  /** Where lines go instead of stdout or the logfile (a warm-up at build time discards them). */
  destination?: pino.DestinationStream;
}

const LOGFILE_MODE = 0o600;

/** Opens `path` for appending (its directory made if missing) as the top of this file says. */
function openLogfile(path: string): number {
  mkdirSync(dirname(path), { recursive: true });
  const fd = openSync(path, 'a', LOGFILE_MODE);
  const st = fstatSync(fd);
  if (st.isFile() && (st.mode & 0o777) !== LOGFILE_MODE) fchmodSync(fd, LOGFILE_MODE);
  return fd;
}

export function createLogger(opts: LoggerOptions): Logger {
  // Synchronous writes: agents log rarely (start, stop, state changes), and nothing is lost
  // when the process exits right after a fatal message.
  const destination = opts.destination ?? pino.destination({ fd: opts.logfile === undefined ? 1 : openLogfile(opts.logfile), sync: true });
  return pino(
    {
      name: opts.name,
      level: opts.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      base: { pid: process.pid },
    },
    destination,
  );
}
