// Whether the probe's and the collector's main.ts start themselves when loaded. Run on their own
// (`node probe/main.ts`, dist/bin/probe) they do. The multi-call agent (scripts/agent-entry.ts)
// loads one of them to call its main with the arguments it picked: it marks the process first,
// so that loading the module does not also start the program with the agent's command line.
// runMain is how each of them (and the agent itself) starts a main and reports a fatal error, and
// where an executable built with a start-up snapshot (scripts/build.ts, issue 17) splits loading,
// done once at build time, from running, done at each start.
import { startupSnapshot } from 'node:v8';

let agent = false;

/** Called by the multi-call agent before it loads a program's main.ts. */
export function markMultiCall(): void {
  agent = true;
}

/** True when the multi-call agent runs this process (a main.ts must then not start itself). */
export function isMultiCall(): boolean {
  return agent;
}

/** True while scripts/build.ts runs this program to take its start-up snapshot. */
export function buildingSnapshot(): boolean {
  return startupSnapshot.isBuildingSnapshot();
}

/**
 * Runs a program's main; if it fails, prints "<program>: fatal: <stack>" to stderr and exits 1.
 * The promise settles when main does (the agent awaits it).
 *
 * While a start-up snapshot is built, main does not run: `warmUp` does (the work before listen,
 * without a socket, a file or a timer, so that the code it runs is compiled into the snapshot), and
 * main runs when the executable starts, with that start's arguments.
 */
export function runMain(program: string, main: (argv: string[]) => Promise<void>, argv?: string[], warmUp?: () => Promise<void>): Promise<void> {
  if (buildingSnapshot()) {
    startupSnapshot.setDeserializeMainFunction(() => void runMain(program, main, argv));
    return warmUp?.() ?? Promise.resolve();
  }
  return main(argv ?? process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`${program}: fatal: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
