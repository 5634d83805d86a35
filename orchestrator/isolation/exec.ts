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

/**
 * Where commands run instead of a fork of this process: the orchestrator hands over its task
 * spawner (orchestrator/tasks/spawner.ts), a small process whose forks cost a fraction of this
 * one's (each fork copies the caller's page tables and blocks its event loop meanwhile: 15-100 ms
 * here for the orchestrator, per `ip` or `nft`). It answers undefined when it cannot take the
 * command (not ready, gone); a run it lost midway is an error, as a failed command is.
 */
export type CommandRunner = (
  cmd: string,
  args: string[],
  input: string | undefined,
  timeoutMs: number,
) => Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string; error?: string } | { lost: string }> | undefined;

let runner: CommandRunner | undefined;

/** Sets (or, with undefined, removes) where run() sends its commands first. */
export function useCommandRunner(r: CommandRunner | undefined): void {
  runner = r;
}

/** Runs `cmd args…` to completion; rejects with CommandError on a non-zero exit. */
export async function run(cmd: string, args: string[], input?: string, timeoutMs = 15_000): Promise<RunResult> {
  const handed = runner?.(cmd, args, input, timeoutMs);
  if (handed) {
    const r = await handed;
    if ('lost' in r) throw new CommandError([cmd, ...args], 'lost', r.lost);
    // Not started there (no such program…): here, so that the error is the one spawn() gives.
    if (r.error !== undefined) return runHere(cmd, args, input, timeoutMs);
    if (r.code === 0) return { stdout: r.stdout, stderr: r.stderr };
    throw new CommandError([cmd, ...args], r.code ?? r.signal ?? -1, r.stderr);
  }
  return runHere(cmd, args, input, timeoutMs);
}

function runHere(cmd: string, args: string[], input: string | undefined, timeoutMs: number): Promise<RunResult> {
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
