// The set-up step before `npm start` and `npm test` (scripts/ensure-installed.mjs), on a machine
// made to miss tools by a PATH holding only `sh` (and a stand-in apt-get that records its
// arguments and installs nothing): as root with apt-get it installs what is missing, one line each
// saying why; STARMAP_NO_INSTALL=1 stops that; what is still missing is named with its cost and the
// one command that fixes it; without root it says what that costs. Only `--system` runs (no npm ci).
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NODE, ROOT, removeTempDirs, tempDir } from './helpers/process.ts';

afterAll(removeTempDirs);

function machine(withApt: boolean): { bin: string; log: string } {
  const bin = tempDir('preflight-bin-');
  chmodSync(bin, 0o755); // readable by the unprivileged user too
  symlinkSync('/bin/sh', join(bin, 'sh'));
  const log = join(bin, 'apt.log');
  if (withApt) {
    writeFileSync(join(bin, 'apt-get'), `#!/bin/sh\necho "$DEBIAN_FRONTEND $*" >> ${log}\n`);
    chmodSync(join(bin, 'apt-get'), 0o755);
  }
  return { bin, log };
}

function preflight(mode: 'start' | 'test', bin: string, env: Record<string, string> = {}, asUser?: string): { code: number | null; out: string } {
  const argv = [NODE, join(ROOT, 'scripts', 'ensure-installed.mjs'), mode, '--system'];
  const [cmd, ...args] = asUser ? [SETPRIV, `--reuid=${asUser}`, `--regid=${asUser}`, '--clear-groups', ...argv] : argv;
  const r = spawnSync(cmd!, args, { env: { PATH: bin, ...env }, encoding: 'utf8', timeout: 20_000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

const isRoot = process.getuid?.() === 0;
const SETPRIV = '/usr/bin/setpriv';

describe.skipIf(!isRoot)('set-up preflight as root (run as root; CI does)', () => {
  it('installs what `npm start` misses with apt-get, one line each with why, then names what is still missing and the fix', () => {
    const { bin, log } = machine(true);
    const r = preflight('start', bin);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    expect(lines[0]).toBe('[starmap] installing iproute2: network namespaces: every task on its own address');
    expect(lines[1]).toBe('[starmap] installing nftables: enforces the network policies on real packets');
    expect(readFileSync(log, 'utf8').split('\n')).toEqual([
      'noninteractive update -qq',
      'noninteractive install -y -qq --no-install-recommends iproute2 nftables',
      '',
    ]);
    // The stand-in installed nothing: it says so, what it costs, and the fix.
    expect(r.out).toContain(
      '[starmap] missing iproute2 (network namespaces: every task on its own address): the demo runs on loopback: policies are not enforced',
    );
    expect(r.out).toContain('[starmap] fix: apt-get install -y --no-install-recommends iproute2 nftables\n');
    expect(r.out).not.toContain('chromium'); // npm start needs no browser
  });

  it("`npm test` asks for every suite's packages; STARMAP_NO_INSTALL=1 installs nothing and says what each costs", () => {
    const { bin, log } = machine(true);
    const r = preflight('test', bin, { STARMAP_NO_INSTALL: '1' });
    expect(r.code).toBe(0);
    expect(r.out).not.toContain('installing');
    expect(() => readFileSync(log)).toThrow();
    expect(r.out).toContain(
      'missing nftables (enforces the network policies on real packets): the isolation suites (isolation-*, orchestrator-isolation*, scenario-isolated) are skipped',
    );
    expect(r.out).toContain("missing curl jq (the README's examples use them): readme-examples is skipped");
    expect(r.out).toMatch(/\[starmap\] fix: apt-get install -y --no-install-recommends iproute2 nftables .*podman buildah .*openssl python3 curl jq\n/);
  });

  it('--strict (CI): a package still missing after apt-get fails the run', () => {
    const { bin } = machine(true);
    const r = spawnSync(NODE, [join(ROOT, 'scripts', 'ensure-installed.mjs'), 'test', '--system', '--strict'], {
      env: { PATH: bin },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('[starmap] fix: apt-get install');
  });

  it('without apt-get it names the packages for another package manager', () => {
    const { bin } = machine(false);
    const r = preflight('start', bin);
    expect(r.out).toContain('fix: apt-get install -y --no-install-recommends iproute2 nftables (or the same packages with your package manager)');
  });

  it.skipIf(!existsSync(SETPRIV))(
    'not root (as uid 65534, by setpriv from util-linux): never installs; says what running without root costs and the command with sudo',
    () => {
      const { bin, log } = machine(true);
      const r = preflight('start', bin, {}, '65534');
      expect(r.code, r.out).toBe(0);
      expect(() => readFileSync(log)).toThrow();
      expect(r.out).toContain('[starmap] fix: sudo apt-get install -y --no-install-recommends iproute2 nftables');
      expect(r.out).toContain(
        '[starmap] not root: the demo runs on loopback: policies are not enforced and the cells they block are not run (as root: sudo npm start)',
      );
    },
  );
});
