// Runs before `npm start` and `npm test` (as a pre-script: `node scripts/ensure-installed.mjs
// start|test`) on whatever Node the machine has, so that a fresh clone does its own set-up:
// 1. the system packages the command needs: as root with apt-get, it installs those missing, one
//    line each saying why (STARMAP_NO_INSTALL=1 turns that off); otherwise it says, before anything
//    else, what is missing, what that costs and the one command that fixes it;
// 2. the npm dependencies, including the Node 24 runtime from the npm registry (npm ci), when
//    node_modules is missing or older than package-lock.json.
// `--system` does step 1 only; `--strict` exits 1 when a package is still missing (.ci/run). Plain JavaScript on purpose: it may run on an old Node.
import { existsSync, statSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const mode = args.includes('test') ? 'test' : 'start';
const say = (line) => process.stderr.write(`[starmap] ${line}\n`);

function command(name) {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

const ISOLATION_SUITES = 'the isolation suites (isolation-*, orchestrator-isolation*, scenario-isolated) are skipped';
const DEMO_ON_LOOPBACK = 'the demo runs on loopback: policies are not enforced and the cells they block are not run';

/**
 * What each command needs from the system: Debian packages, how to tell they are there, why they
 * are needed and what their absence costs.
 */
export const NEEDS = [
  {
    packages: ['ca-certificates'],
    have: () => existsSync('/etc/ssl/certs/ca-certificates.crt'),
    for: ['start', 'test'],
    why: 'lets npm reach its registry over HTTPS',
    cost: { start: 'npm ci cannot install the dependencies', test: 'npm ci cannot install the dependencies' },
  },
  {
    packages: ['iproute2'],
    have: () => command('ip'),
    for: ['start', 'test'],
    why: 'network namespaces: every task on its own address',
    cost: { start: DEMO_ON_LOOPBACK, test: ISOLATION_SUITES },
  },
  {
    packages: ['nftables'],
    have: () => command('nft'),
    for: ['start', 'test'],
    why: 'enforces the network policies on real packets',
    cost: { start: DEMO_ON_LOOPBACK, test: ISOLATION_SUITES },
  },
  {
    packages: ['chromium'],
    have: () => existsSync('/usr/bin/chromium'),
    for: ['test'],
    why: 'a real browser for the collector UI tests',
    cost: { test: 'the collector UI suites (collector-ui-*) are skipped' },
  },
  {
    packages: ['podman', 'buildah', 'runc', 'fuse-overlayfs', 'uidmap'],
    have: () => command('podman') && command('buildah'),
    for: ['test'],
    why: 'builds and runs the container image',
    cost: { test: 'the image suites (distribution-image, orchestrator-executor-podman) are skipped' },
  },
  {
    packages: ['gcc', 'libc6-dev'],
    have: () => command('gcc'),
    for: ['test'],
    why: "compiles the image's tiny health-check program",
    cost: { test: 'the image cannot be built, so its suites are skipped' },
  },
  {
    packages: ['qemu-user-static', 'libc6-arm64-cross', 'libstdc++6-arm64-cross', 'libgcc-s1-arm64-cross', 'binutils-aarch64-linux-gnu'],
    have: () =>
      (existsSync('/usr/bin/qemu-aarch64-static') || existsSync('/usr/bin/qemu-aarch64')) && existsSync('/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1'),
    for: ['test'],
    why: 'runs the arm64 executables under emulation',
    cost: { test: 'the arm64 smoke tests (probe-binary, agent-binary, distribution-image) are skipped' },
  },
  {
    packages: ['binutils', 'file'],
    have: () => command('strip') && command('file'),
    for: ['test'],
    why: 'strips the executables and checks their format',
    cost: { test: 'the executables keep their symbols and the format checks fail' },
  },
  {
    packages: ['openssl'],
    have: () => command('openssl'),
    for: ['test'],
    why: 'makes self-signed certificates for the HTTPS tests',
    cost: { test: 'the HTTPS tests are skipped' },
  },
  {
    packages: ['python3'],
    have: () => command('python3'),
    for: ['test'],
    why: 'small HTTP servers that tasks in the orchestrator tests run',
    cost: { test: 'those orchestrator tests fail' },
  },
  {
    packages: ['curl', 'jq'],
    have: () => command('curl') && command('jq'),
    for: ['test'],
    why: "the README's examples use them",
    cost: { test: 'readme-examples is skipped' },
  },
];

function systemPackages() {
  const missing = NEEDS.filter((n) => n.for.includes(mode) && !n.have());
  const isRoot = process.getuid?.() === 0;
  const apt = command('apt-get');
  const off = !!process.env.STARMAP_NO_INSTALL && process.env.STARMAP_NO_INSTALL !== '0';
  if (missing.length > 0 && isRoot && apt && !off) {
    for (const n of missing) say(`installing ${n.packages.join(' ')}: ${n.why}`);
    say('(apt-get; STARMAP_NO_INSTALL=1 turns this off)');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const all = missing.flatMap((n) => n.packages);
    const update = spawnSync('apt-get', ['update', '-qq'], { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    const install =
      update.status === 0
        ? spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...all], { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' })
        : update;
    if (install.status !== 0)
      say(`apt-get failed (carrying on without): ${(install.stderr || install.error?.message || '').trim().split('\n').slice(-3).join(' ')}`);
  }
  const still = missing.filter((n) => !n.have());
  for (const n of still) say(`missing ${n.packages.join(' ')} (${n.why}): ${n.cost[mode]}`);
  if (still.length > 0) {
    const fix = `apt-get install -y --no-install-recommends ${still.flatMap((n) => n.packages).join(' ')}`;
    say(`fix: ${isRoot ? fix : `sudo ${fix}`}${isRoot && !apt ? ' (or the same packages with your package manager)' : ''}`);
  }
  // CI wants every suite: a package it could not install fails the run instead of skipping suites.
  if (still.length > 0 && args.includes('--strict')) process.exit(1);
  if (!isRoot) say(mode === 'start' ? `not root: ${DEMO_ON_LOOPBACK} (as root: sudo npm start)` : `not root: ${ISOLATION_SUITES} (as root: sudo npm test)`);
}

function dependenciesInstalled() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  if (!existsSync(marker) || !existsSync(join(root, 'node_modules', '.bin', 'node'))) return false;
  // A lock file newer than the installed tree means dependencies changed since the last install.
  return statSync(marker).mtimeMs >= statSync(join(root, 'package-lock.json')).mtimeMs;
}

systemPackages();
if (!args.includes('--system') && !dependenciesInstalled()) {
  say('installing the npm dependencies, with the Node 24 runtime (npm ci; about a minute the first time)');
  try {
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: root, stdio: 'inherit' });
  } catch {
    say('npm ci failed (its output is above)');
    process.exit(1);
  }
}
