// The single-file executables, as a user gets them: copied alone into an empty folder and run
// with no Node and no node_modules on PATH. `npm test` builds them first (npm run build).
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, freePort, runToEnd, stopAll, tempDir } from './helpers/process.ts';
import { startProbe } from './helpers/probe.ts';
import { waitFor } from './helpers/wait.ts';

const BIN = join(ROOT, 'dist', 'bin', 'probe');
const ARM_SYSROOT = '/usr/aarch64-linux-gnu';
const qemu = ['/usr/bin/qemu-aarch64-static', '/usr/bin/qemu-aarch64'].find(existsSync);

afterAll(stopAll);

describe('dist/bin/probe', () => {
  it('exists (run `npm run build` first)', () => {
    expect(existsSync(BIN), `${BIN} is missing: run npm run build`).toBe(true);
  });

  it('runs alone, without Node on PATH, and serves /status end to end', async () => {
    const dir = tempDir('starmap-bin-');
    const bin = join(dir, 'probe');
    copyFileSync(BIN, bin);
    execFileSync('chmod', ['+x', bin]);
    const { code, output } = await runToEnd(bin, ['--version'], { env: { PATH: '/nonexistent' } });
    expect(code).toBe(0);
    expect(output.trim()).toMatch(/^\d+\.\d+\.\d+$/);

    const server = net.createServer((c) => c.destroy());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    const probe = await startProbe([`--urls=127.0.0.1:${port},http://127.0.0.1:${port}/`, '--http-probe-seconds=0.2'], { binary: bin });
    const targets = await waitFor(async () => {
      const t = await probe.status();
      return t.every((x) => x.checkedAt) && t;
    });
    // A TCP listener that does not speak HTTP: reachable as TCP, not as HTTP (reset or error).
    expect(targets[0]).toMatchObject({ reachable: true, reason: 'ok' });
    expect(targets[1]!.reachable).toBe(false);
    expect(await probe.proc.stop('SIGINT')).toBe(0);
    server.close();
  });

  it('checks a UDP target against its own --serve echo (node:dgram loaded at first use in the bundle)', async () => {
    const udpPort = await freePort();
    const probe = await startProbe([`--urls=udp://127.0.0.1:${udpPort}`, `--serve=${udpPort}/udp`, '--http-probe-seconds=0.2'], { binary: BIN });
    const targets = await waitFor(async () => {
      const t = await probe.status();
      return t[0]?.reachable === true && t;
    });
    expect(targets[0]).toMatchObject({ reachable: true, reason: 'ok' });
    expect(await probe.proc.stop('SIGINT')).toBe(0);
  });

  it('rejects a bad flag with exit code 2, naming it', async () => {
    const { code, output } = await runToEnd(BIN, ['--urls=x:1', '--http-port=nope']);
    expect(code).toBe(2);
    expect(output).toContain('--http-port');
  });
});

describe.skipIf(!qemu || !existsSync(join(ARM_SYSROOT, 'lib', 'ld-linux-aarch64.so.1')))(
  'the linux-arm64 executables (under qemu-user; needs qemu-user-static and libc6-arm64-cross)',
  () => {
    // `npm run build` writes an arm64 twin of every program; each must start and print its help.
    it.each([
      ['probe', '--urls'],
      ['collector', '--resources-file'],
      ['orchestrator', '--data-dir'],
      ['scenario', 'run <scenario>'],
    ])(
      '%s-linux-arm64 is an arm64 executable that prints its help',
      async (name, flag) => {
        const bin = join(ROOT, 'dist', 'bin', `${name}-linux-arm64`);
        expect(existsSync(bin), `${bin} is missing: run npm run build`).toBe(true);
        expect(execFileSync('file', ['-b', bin], { encoding: 'utf8' })).toMatch(/ARM aarch64/);
        const { code, output } = await runToEnd(qemu!, ['-L', ARM_SYSROOT, bin, '--help'], { timeoutMs: 60_000 });
        expect(code).toBe(0);
        expect(output).toContain(flag);
      },
      90_000,
    );
  },
);
