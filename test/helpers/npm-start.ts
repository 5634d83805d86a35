// `npm start` as a new user runs it: in a git clone of this worktree's HEAD (a temporary folder
// under test/.tmp, on the same file system), with node_modules hard-linked from the worktree
// instead of fetched (the clone's package-lock.json is the worktree's, dated as installed, so the
// set-up step sees the dependencies installed) and the x64 executables hard-linked with their build
// stamps copied (the build renames over executables, never writes into them). Used by
// test/start-clone.test.ts and bench/start.bench.ts.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './process.ts';

export interface Clone {
  dir: string;
  /** TMPDIR given to `npm start`: what the run keeps there must be gone after it. */
  tmp: string;
  remove: () => void;
}

export function cloneWorktree(): Clone {
  const base = join(ROOT, 'test', '.tmp');
  mkdirSync(base, { recursive: true });
  const top = mkdtempSync(join(base, 'clone-'));
  const dir = join(top, 'starmap');
  const head = execFileSync('git', ['-C', ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  execFileSync('git', ['clone', '--quiet', '--no-checkout', ROOT, dir]);
  execFileSync('git', ['-C', dir, 'checkout', '--quiet', '--detach', head]);
  execFileSync('cp', ['-al', join(ROOT, 'node_modules'), join(dir, 'node_modules')]);
  const lock = join(dir, 'package-lock.json');
  if (readFileSync(lock, 'utf8') !== readFileSync(join(ROOT, 'package-lock.json'), 'utf8'))
    throw new Error('the worktree has an uncommitted package-lock.json: commit it first');
  // Whole milliseconds, rounded down: a Date would round up past the installed tree's time.
  const installed = Math.floor(statSync(join(ROOT, 'node_modules', '.package-lock.json')).mtimeMs) / 1000;
  utimesSync(lock, installed, installed);
  const bin = join(ROOT, 'dist', 'bin');
  if (existsSync(bin)) {
    mkdirSync(join(dir, 'dist', 'bin'), { recursive: true });
    mkdirSync(join(dir, 'dist', '.cache'), { recursive: true });
    for (const f of readdirSync(bin).filter((f) => !f.includes('-linux-'))) linkSync(join(bin, f), join(dir, 'dist', 'bin', f));
    const cache = join(ROOT, 'dist', '.cache');
    for (const f of existsSync(cache) ? readdirSync(cache).filter((f) => f.endsWith('.sha256') && !f.includes('-linux-')) : [])
      copyFileSync(join(cache, f), join(dir, 'dist', '.cache', f));
  }
  const tmp = join(top, 'tmp');
  mkdirSync(tmp);
  return { dir, tmp, remove: () => rmSync(top, { recursive: true, force: true }) };
}

export interface NpmStart {
  child: ChildProcess;
  output: () => string;
  /** Resolves with the first match of `re` in the output (and when it appeared, ms after spawn), or rejects after `timeoutMs` or when npm exits first. */
  waitFor: (re: RegExp, timeoutMs: number) => Promise<{ match: RegExpMatchArray; ms: number }>;
  /** Ctrl-C: SIGINT to the whole process group; resolves with npm's exit code once it is gone (SIGKILL after `timeoutMs`). */
  interrupt: (timeoutMs: number) => Promise<number | string>;
}

export function npmStart(clone: Clone, args: string[] = []): NpmStart {
  const startedAt = performance.now();
  const child = spawn('npm', ['start', ...(args.length ? ['--', ...args] : [])], {
    cwd: clone.dir,
    env: { ...process.env, TMPDIR: clone.tmp, FORCE_COLOR: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  const waiters = new Set<() => void>();
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const w of waiters) w();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | string>((res) => child.once('exit', (code, signal) => res(code ?? signal ?? -1)));
  void exited.then(() => {
    for (const w of waiters) w();
  });
  const waitFor = (re: RegExp, timeoutMs: number) =>
    new Promise<{ match: RegExpMatchArray; ms: number }>((resolve, reject) => {
      const check = () => {
        const match = out.match(re);
        if (match) {
          done();
          resolve({ match, ms: performance.now() - startedAt });
        } else if (child.exitCode !== null || child.signalCode !== null) {
          done();
          reject(new Error(`npm start exited before ${re}:\n${out.slice(-3000)}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no ${re} within ${timeoutMs / 1000} s of npm start:\n${out.slice(-3000)}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });
  const interrupt = async (timeoutMs: number) => {
    const signal = (s: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, s);
      } catch {
        /* gone */
      }
    };
    if (child.exitCode === null && child.signalCode === null) signal('SIGINT');
    const timer = setTimeout(() => signal('SIGKILL'), timeoutMs);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  return { child, output: () => out, waitFor, interrupt };
}

/** Pids of processes whose command line mentions `text` (pgrep -f; none → []). */
export function processesMentioning(text: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', text], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}
