// Whether the probe's and the collector's main.ts start themselves when loaded. Run on their own
// (`node probe/main.ts`, dist/bin/probe) they do. The multi-call agent (scripts/agent-entry.ts)
// loads one of them to call its main with the arguments it picked: it marks the process first,
// so that loading the module does not also start the program with the agent's command line.
// runMain is how each of them (and the agent itself) starts a main and reports a fatal error, and
// where the build warms a program up instead of starting it, to make its executable's code cache
// from what the warm-up ran (scripts/lib/warm-code-cache.ts, issue 17).

let agent = false;

/** Called by the multi-call agent before it loads a program's main.ts. */
export function markMultiCall(): void {
  agent = true;
}

/** True when the multi-call agent runs this process (a main.ts must then not start itself). */
export function isMultiCall(): boolean {
  return agent;
}

/** Where scripts/lib/warm-code-cache.ts collects the warm-ups it waits for before it makes a code cache. */
const WARM_UPS = Symbol.for('starmap.warmUps');

/**
 * Runs a program's main; if it fails, prints "<program>: fatal: <stack>" to stderr and exits 1.
 * The promise settles when main does (the agent awaits it).
 *
 * While the build warms the program up, main does not run: `warmUp` does (the work before listen,
 * without a socket, a file or a timer, so that the code it runs is in the code cache).
 */
export function runMain(program: string, main: (argv: string[]) => Promise<void>, argv?: string[], warmUp?: () => Promise<void>): Promise<void> {
  const warmUps = (globalThis as { [WARM_UPS]?: Promise<void>[] })[WARM_UPS];
  if (warmUps) {
    const warm = warmUp?.() ?? Promise.resolve();
    warmUps.push(warm);
    return warm;
  }
  return main(argv ?? process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`${program}: fatal: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
