// Whether the probe's and the collector's main.ts start themselves when loaded. Run on their own
// (`node probe/main.ts`, dist/bin/probe) they do. The multi-call agent (scripts/agent-entry.ts)
// loads one of them to call its main with the arguments it picked: it marks the process first,
// so that loading the module does not also start the program with the agent's command line.
// runMain is how each of them (and the agent itself) starts a main and reports a fatal error.
let agent = false;

/** Called by the multi-call agent before it loads a program's main.ts. */
export function markMultiCall(): void {
  agent = true;
}

/** True when the multi-call agent runs this process (a main.ts must then not start itself). */
export function isMultiCall(): boolean {
  return agent;
}

/**
 * Runs a program's main; if it fails, prints "<program>: fatal: <stack>" to stderr and exits 1.
 * The promise settles when main does (the agent awaits it).
 */
export function runMain(program: string, main: (argv: string[]) => Promise<void>, argv: string[] = process.argv.slice(2)): Promise<void> {
  return main(argv).catch((err: unknown) => {
    process.stderr.write(`${program}: fatal: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
