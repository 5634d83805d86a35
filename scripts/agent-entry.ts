// The multi-call agent: the probe and the collector in one executable (dist/bin/agent), so the
// container image carries one Node runtime instead of two. Busybox-style, it picks the program
//   - by the name it was started under: a link named `probe` or `collector` runs that program
//     with all the arguments (`probe --urls=…`), which is how the image runs it;
//   - otherwise by its first argument: `agent probe --urls=…`, `agent collector …`.
// Each program keeps its own flags, --help, --version, exit codes and messages. Only the chosen
// program's modules are loaded (dynamic import; esbuild keeps them lazy inside the bundle).
import { basename } from 'node:path';
import { markMultiCall, runMain } from '../shared/multicall.ts';
import { VERSION } from '../shared/version.ts';

/** What a program's main.ts exports. */
interface Program {
  main: (argv: string[]) => Promise<void>;
  warmUp: () => Promise<void>;
}

/** Subcommand → what it is and how to load its main. */
const SUBCOMMANDS: Record<string, { summary: string; load: () => Promise<Program> }> = {
  probe: {
    summary: 'star-compatible probe: checks its targets and serves GET /status (port 9000)',
    load: () => import('../probe/main.ts'),
  },
  collector: {
    summary: "star-compatible collector: fetches the probes' /status and serves /responses and the UI (port 9001)",
    load: () => import('../collector/main.ts'),
  },
};

const NAMES = Object.keys(SUBCOMMANDS);

function usage(): string {
  const width = Math.max(...NAMES.map((n) => n.length));
  return [
    `agent ${VERSION}`,
    '',
    "Starmap's agents in one executable. Started through a link named probe or collector, it runs",
    'that program; otherwise the first argument names the program.',
    '',
    `Usage: agent <${NAMES.join('|')}> [options]`,
    ...NAMES.map((n) => `       ${n} [options]`.padEnd(31) + `(through a link named ${n})`),
    '',
    'Subcommands:',
    ...NAMES.map((n) => `  ${n.padEnd(width)}  ${SUBCOMMANDS[n]!.summary}`),
    '',
    'Options:',
    '  -h, --help  show this help',
    '  --version   show the version number',
    '',
    "Run 'agent <subcommand> --help' for a subcommand's flags.",
    '',
  ].join('\n');
}

/** The program to run and its arguments, or an exit code with the text to print. */
function dispatch(argv0: string, args: string[]): { program: string; argv: string[] } | { exit: number; stdout?: string; stderr?: string } {
  const invokedAs = basename(argv0);
  if (Object.hasOwn(SUBCOMMANDS, invokedAs)) return { program: invokedAs, argv: args };
  const [first, ...rest] = args;
  if (first === undefined) return { exit: 2, stderr: `agent: error: missing subcommand (expected one of: ${NAMES.join(', ')})\n\n${usage()}` };
  if (Object.hasOwn(SUBCOMMANDS, first)) return { program: first, argv: rest };
  if (first === '--help' || first === '-h' || first === 'help') return { exit: 0, stdout: usage() };
  if (first === '--version') return { exit: 0, stdout: `${VERSION}\n` };
  return {
    exit: 2,
    stderr: `agent: error: unknown subcommand ${JSON.stringify(first)} (expected one of: ${NAMES.join(', ')})\nRun 'agent --help' for usage.\n`,
  };
}

async function main(): Promise<void> {
  const choice = dispatch(process.argv0, process.argv.slice(2));
  if ('exit' in choice) {
    if (choice.stdout) process.stdout.write(choice.stdout);
    if (choice.stderr) process.stderr.write(choice.stderr);
    process.exitCode = choice.exit;
    return;
  }
  // Before the program's module loads: it must not start itself with the agent's command line.
  markMultiCall();
  const program = await SUBCOMMANDS[choice.program]!.load();
  await runMain(choice.program, program.main, choice.argv);
}

/** While the build warms the agent up: loads and warms up every program, whichever a start picks. */
async function warmUp(): Promise<void> {
  markMultiCall();
  for (const sub of Object.values(SUBCOMMANDS)) await (await sub.load()).warmUp();
}

void runMain('agent', main, undefined, warmUp);
