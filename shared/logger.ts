// Structured logs with pino, to stdout or to the file named by `--logfile`.
// Secrets are redacted by path so that no token, password or key can reach a log line.
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

export function createLogger(opts: LoggerOptions): Logger {
  // Synchronous writes: agents log rarely (start, stop, state changes), and nothing is lost
  // when the process exits right after a fatal message.
  const destination = opts.destination ?? pino.destination({ dest: opts.logfile ?? 1, sync: true, mkdir: true });
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
