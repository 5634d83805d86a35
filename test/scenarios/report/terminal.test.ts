// What `scenario run` shows a person: progress lines that the next line clears on a terminal (and
// none at all in a pipe), and a run stopped with Ctrl-C or SIGTERM said as stopped after N of M
// steps, not as a failure, with the conventional exit codes (130, 143). The CLI runs for real on
// loopback (bundled orchestrator, real probes); the terminal through a pseudo-terminal (script).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TerminalLines, type Output } from '../../../scenarios/cli/terminal.ts';
import { NODE, start, stopAll, tempDir, type Running } from '../../helpers/process.ts';
import { waitFor } from '../../helpers/wait.ts';

afterAll(stopAll);

const CLEAR = '\r\x1b[K';

/** The exit code, or 'hung' when the process has not exited within `ms` (it is then killed). */
async function exitWithin(run: Running, ms: number): Promise<number | string> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<string>((res) => (timer = setTimeout(() => res('hung'), ms)));
  const code = await Promise.race([run.exited, hung]);
  clearTimeout(timer);
  if (code === 'hung') await run.stop('SIGKILL');
  return code;
}

function screen(isTTY: boolean, columns?: number): Output & { text: string } {
  const out = { text: '', isTTY, ...(columns ? { columns } : {}), write: (t: string) => ((out.text += t), true) };
  return out;
}

describe('the terminal writer', () => {
  it('on a terminal: a progress line is overwritten by the next one and cleared before a line', () => {
    const out = screen(true);
    const t = new TerminalLines(out);
    t.progress('  /starmap/x/a: TASK_STAGING');
    t.progress('  /starmap/x/a: TASK_RUNNING');
    t.log('collector UI: http://127.0.0.1:1/');
    t.log('pods running');
    t.progress('  1.0 s: 1/2 cells checked since, 1/1 as expected');
    t.log('step 1/5 open: PASS');
    t.clear();
    expect(out.text).toBe(
      `${CLEAR}  /starmap/x/a: TASK_STAGING${CLEAR}  /starmap/x/a: TASK_RUNNING${CLEAR}collector UI: http://127.0.0.1:1/\npods running\n` +
        `${CLEAR}  1.0 s: 1/2 cells checked since, 1/1 as expected${CLEAR}step 1/5 open: PASS\n`,
    );
    t.progress('left over');
    t.clear();
    expect(out.text.endsWith(`${CLEAR}left over${CLEAR}`)).toBe(true);
  });

  it('cuts a progress line to the terminal width (a wrapped line would not be overwritten)', () => {
    const out = screen(true, 20);
    new TerminalLines(out).progress('x'.repeat(50));
    expect(out.text).toBe(`${CLEAR}${'x'.repeat(18)}…`);
  });

  it('not a terminal: no progress and no \\r, just the lines', () => {
    const out = screen(false);
    const t = new TerminalLines(out);
    t.progress('  /starmap/x/a: TASK_RUNNING');
    t.log('collector UI: http://127.0.0.1:1/');
    t.clear();
    expect(out.text).toBe('collector UI: http://127.0.0.1:1/\n');
  });
});

/** Two probes that check each other, over `steps` steps that all pass on loopback. */
function pairFile(steps: number): string {
  const file = join(tempDir('starmap-terminal-'), 'pair.yaml');
  writeFileSync(
    file,
    `name: stoppable
probeSeconds: 0.5
timeoutSeconds: 0.3
apps:
  - { name: a, kind: probe, probes: [b] }
  - { name: b, kind: probe, probes: [a] }
  - { name: ui, kind: collector, collects: [a, b] }
steps:
${Array.from({ length: steps }, (_, i) => `  - { name: s${i + 1}, policies: [], expect: computed }`).join('\n')}
`,
  );
  return file;
}

describe('scenario run, stopped (loopback, bundled orchestrator)', () => {
  for (const [signal, by, code] of [
    ['SIGINT', 'Ctrl-C', 130],
    ['SIGTERM', 'SIGTERM', 143],
  ] as const) {
    it(`${signal}: "stopped (${by}) after 1 of 5 steps", never FAIL; exit ${code}`, async () => {
      const json = join(tempDir('starmap-terminal-'), 'report.json');
      const run = start(NODE, ['scenarios/main.ts', 'run', pairFile(5), '--isolation=off', '--pause=60', `--report-json=${json}`]);
      await waitFor(() => run.output().includes('(next step in 60 s)'), { timeoutMs: 90_000, message: 'step 1 did not finish' });
      // Ctrl-C reaches the whole foreground process group; a SIGTERM (systemd, docker stop) the program.
      if (signal === 'SIGINT') process.kill(-run.child.pid!, 'SIGINT');
      else run.child.kill('SIGTERM');
      const exit = await exitWithin(run, 60_000);
      const out = run.output();
      expect(out, out).toContain(`stoppable: stopped (${by}) after 1 of 5 steps (it as expected)`);
      expect(out).toContain(`stopped (${by}); everything it deployed is removed`);
      expect(out).not.toMatch(/FAIL|interrupted/);
      expect(exit).toBe(code);
      const report = JSON.parse(readFileSync(json, 'utf8')) as { outcome: string; passed: boolean; failure: unknown; error: string; steps: unknown[] };
      expect(report).toMatchObject({ outcome: 'not run', passed: false, failure: null, error: `stopped (${by}) after 1 of 5 steps` });
      expect(report.steps).toHaveLength(1);
    }, 180_000);
  }
});

describe('scenario run on a terminal (a pseudo-terminal through script)', () => {
  it('every progress line is cleared before the next line is written', async () => {
    const dir = tempDir('starmap-terminal-');
    const typescript = join(dir, 'typescript');
    const cmd = [NODE, 'scenarios/main.ts', 'run', pairFile(2), '--isolation=off'].map((a) => `'${a}'`).join(' ');
    // -e: script exits with the command's code; the terminal's bytes go to `typescript`.
    const run = start('script', ['-q', '-e', '-c', cmd, typescript], { env: { COLUMNS: '400' } });
    const exit = await exitWithin(run, 150_000);
    const raw = readFileSync(typescript, 'utf8');
    expect(exit, raw).toBe(0);
    expect(raw).toMatch(/TASK_RUNNING/); // progress was shown
    expect(raw).toMatch(/cells checked since/);
    // After a progress line comes the next one or a clear, never a line glued to it.
    for (const m of raw.matchAll(/(TASK_[A-Z_]+|cells checked since, \d+\/\d+ as expected)(.{0,4})/gs)) expect(m[2]!.startsWith(CLEAR), raw).toBe(true);
    expect(raw).toMatch(/stoppable: PASS: 2 of 2 steps as expected/);
  }, 180_000);
});
