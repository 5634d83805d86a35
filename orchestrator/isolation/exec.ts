// Running `ip` and `nft` without a shell: argv arrays only, optional stdin (for atomic `nft -f -`),
// and errors that carry the command and its stderr so that logs say what failed.
import { spawn } from 'node:child_process';

export class CommandError extends Error {
  readonly stderr: string;
  readonly code: number | string;
  constructor(cmd: string[], code: number | string, stderr: string) {
    super(`${cmd.join(' ')} failed (${code}): ${stderr.trim() || 'no output'}`);
    this.stderr = stderr;
    this.code = code;
  }
}

export interface RunResult {
  stdout: string;
  stderr: string;
}

/** Runs `cmd args…` to completion; rejects with CommandError on a non-zero exit. */
export function run(cmd: string, args: string[], input?: string, timeoutMs = 15_000): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve({ stdout, stderr });
      else reject(new CommandError([cmd, ...args], code ?? signal ?? -1, stderr));
    });
    if (input !== undefined && child.stdin) {
      child.stdin.on('error', () => {
        /* the exit code reports the failure */
      });
      child.stdin.end(input);
    }
  });
}

/** Like run, but a failure is returned as false instead of thrown (for best-effort cleanup). */
export async function tryRun(cmd: string, args: string[], input?: string): Promise<boolean> {
  try {
    await run(cmd, args, input);
    return true;
  } catch {
    return false;
  }
}
