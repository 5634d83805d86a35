// The probe's command line: star's flags, the extras, and clear errors naming the flag.
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseProbeFlags } from '../probe/flags.ts';
import { NODE, runToEnd, stopAll, tempDir } from './helpers/process.ts';
import { startProbe } from './helpers/probe.ts';

afterAll(stopAll);

const probe = (...args: string[]) => runToEnd(NODE, ['probe/main.ts', ...args]);

describe('probe flags', () => {
  it("--help lists star's flags with their defaults and the extras", async () => {
    const { code, output } = await probe('--help');
    expect(code).toBe(0);
    for (const flag of [
      '--urls',
      '--http-address',
      '--http-port',
      '--http-probe-seconds',
      '--logfile',
      '--timeout-seconds',
      '--concurrency',
      '--version',
      '--help',
    ]) {
      expect(output).toContain(flag);
    }
    expect(output).toMatch(/default: "0\.0\.0\.0"/);
    expect(output).toMatch(/default: 9000/);
    expect(output).toMatch(/default: 5\b/);
  });

  it('--version prints the version', async () => {
    const { code, output } = await probe('--version');
    expect(code).toBe(0);
    expect(output.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it.each([
    [[], /urls/],
    [['--urls='], /--urls/],
    [['--urls=foo'], /--urls.*"foo"/],
    [['--urls=http://127.0.0.1:0/'], /--urls.*port 0 is outside 1-65535/],
    [['--urls=a:1', '--http-port=abc'], /--http-port.*"abc"/],
    [['--urls=a:1', '--http-port=70000'], /--http-port/],
    [['--urls=a:1', '--http-probe-seconds=0'], /--http-probe-seconds/],
    [['--urls=a:1', '--http-probe-seconds=-1'], /--http-probe-seconds/],
    [['--urls=a:1', '--timeout-seconds=x'], /--timeout-seconds/],
    [['--urls=a:1', '--concurrency=0'], /--concurrency/],
    [['--urls=a:1', '--concurrency=1.5'], /--concurrency/],
    [['--urls=a:1', '--expect-status=2xx'], /--expect-status/],
    [['--urls=a:1', '--http-address=a b'], /--http-address/],
    [['--urls=a:1', '--no-such-flag'], /no-such-flag/],
    [['--urls=a:1', '--log-level=loud'], /log-level/],
  ])('%j exits non-zero naming the flag', async (args, pattern) => {
    const { code, output } = await probe(...args);
    expect(code).toBe(2);
    expect(output).toMatch(pattern);
    expect(output).toMatch(/--help/);
  });

  it('parses values into numbers and targets, and reads --urls-file', () => {
    const dir = tempDir('starmap-flags-');
    const file = join(dir, 'urls.txt');
    writeFileSync(file, '# frontend and backend\nhttp://frontend/status\nbackend:6379, [::1]:80\n\n');
    const f = parseProbeFlags([`--urls-file=${file}`, '--http-port=9555', '--http-probe-seconds=0.5', '--timeout-seconds', '2']);
    expect(f.targets.map((t) => t.url)).toEqual(['http://frontend/status', 'backend:6379', '[::1]:80']);
    expect([f.httpPort, f.httpProbeSeconds, f.timeoutSeconds, f.concurrency, f.httpAddress]).toEqual([9555, 0.5, 2, 1000, '0.0.0.0']);
    const g = parseProbeFlags(['--urls=a:1']);
    expect([g.httpPort, g.httpProbeSeconds, g.timeoutSeconds]).toEqual([9000, 5, 1]);
  });

  it('a bad --urls-file names the file and the entry', async () => {
    const dir = tempDir('starmap-flags-');
    const file = join(dir, 'urls.txt');
    writeFileSync(file, 'a:1\nnot-a-target\n');
    const bad = await probe(`--urls-file=${file}`);
    expect(bad.code).toBe(2);
    expect(bad.output).toMatch(new RegExp(`--urls-file: ${file}: entry 2 bad target "not-a-target"`));
    const missing = await probe(`--urls-file=${join(dir, 'nope.txt')}`);
    expect(missing.output).toMatch(/--urls-file: cannot read .*nope.txt: ENOENT/);
    const good = join(dir, 'good.txt');
    writeFileSync(good, 'a:1');
    const both = await probe('--urls=a:1', `--urls-file=${good}`);
    expect(both.code).toBe(2);
  });

  it('ignores empty entries in --urls (a trailing comma), as star did', async () => {
    const probe = await startProbe(['--urls=127.0.0.1:1,,']);
    expect((await probe.status()).map((t) => t.url)).toEqual(['127.0.0.1:1']);
  });

  it('a port already in use is a clear error, not a crash', async () => {
    const first = net.createServer();
    await new Promise<void>((res) => first.listen(0, '127.0.0.1', res));
    const port = (first.address() as { port: number }).port;
    const { code, output } = await probe('--urls=127.0.0.1:1', '--http-address=127.0.0.1', `--http-port=${port}`);
    first.close();
    expect(code).toBe(1);
    expect(output).toMatch(new RegExp(`--http-port=${port}.*EADDRINUSE`));
  });
});
