// The container image, built the way `npm run image` builds it (podman FROM scratch, private store
// in a temporary folder): one multi-call agent executable with probe and collector as links to it,
// then run locked down: read-only root filesystem, no capabilities, no new
// privileges, non-root user. The probe and the collector run as containers on the host network
// bound to 127.0.0.1 only; the collector registers the probe through POST /resources and serves its
// /status under /responses. Skipped, with the reason, when podman cannot build or run here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockPodman } from './helpers/podman-lock.ts';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildImage, type ImageResult } from '../scripts/image.ts';
import { hasPodman, podmanIn, type Podman } from '../scripts/lib/podman.ts';
import { freePort, ROOT } from './helpers/process.ts';
import { waitFor } from './helpers/wait.ts';

const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
let dir = '';
let podman: Podman | undefined;
let image: ImageResult | undefined;
let skipReason = '';
const containers: string[] = [];

const LOCKED = ['--read-only', '--cap-drop=ALL', '--security-opt=no-new-privileges', '--user=65532:65532', '--network=host'];

let unlockPodman: (() => void) | undefined;

beforeAll(async () => {
  if (!hasPodman()) {
    skipReason = 'podman is not installed';
    return;
  }
  unlockPodman = await lockPodman();
  dir = mkdtempSync(join(tmpdir(), 'starmap-image-test-'));
  podman = podmanIn(join(dir, 'store'));
  try {
    image = await buildImage({ arch: 'amd64', store: join(dir, 'store'), save: false, log: () => {} });
  } catch (err) {
    skipReason = `podman cannot build the image here: ${(err as Error).message.slice(0, 500)}`;
    return;
  }
  const r = podman.run(['run', '--rm', ...LOCKED, image.tag, 'probe', '--version'], { timeoutMs: 60_000 });
  if (r.status !== 0) skipReason = `podman cannot run containers here: ${r.out.trim().slice(0, 500)}`;
}, 840_000);

afterAll(() => {
  try {
    if (!podman) return;
    for (const c of containers) podman.run(['rm', '-f', '-t', '0', c]);
    podman.run(['rmi', '-a', '-f']);
    podman.run(['system', 'reset', '-f']);
    rmSync(dir, { recursive: true, force: true });
  } finally {
    unlockPodman?.();
  }
}, 120_000);

async function json(url: string, init?: RequestInit): Promise<unknown> {
  const r = await fetch(url, init);
  if (!r.ok) throw new Error(`${url}: ${r.status}`);
  return r.json();
}

describe('container image', () => {
  it('is non-root, labelled, has a healthcheck and no shell', (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const cfg = JSON.parse(podman!.run(['image', 'inspect', image!.tag]).out) as [
      {
        Healthcheck?: { Test: string[] };
        Config: { User: string; Labels: Record<string, string>; Healthcheck?: { Test: string[] }; ExposedPorts: Record<string, unknown> };
      },
    ];
    const c = cfg[0].Config;
    expect(c.User).toBe('65532:65532');
    expect(c.Labels['org.opencontainers.image.version']).toBe(version);
    expect(c.Labels['org.opencontainers.image.licenses']).toBe('Apache-2.0');
    expect(c.Labels['org.opencontainers.image.source']).toMatch(/^https:\/\//);
    expect(Object.keys(c.ExposedPorts).sort()).toEqual(['9000/tcp', '9001/tcp']);
    if (image!.healthcheck) expect((cfg[0].Healthcheck ?? c.Healthcheck)?.Test).toEqual(['CMD', '/usr/local/bin/healthcheck']);
    const sh = podman!.run(['run', '--rm', ...LOCKED, '--entrypoint=/bin/sh', image!.tag, '-c', 'true']);
    expect(sh.status).not.toBe(0);
  });

  it('holds one executable, the agent, with probe and collector as links to it (one Node runtime)', (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const id = podman!.run(['create', image!.tag, 'probe']).out.trim().split('\n').pop()!;
    containers.push(id);
    const tar = join(dir, 'amd64.tar');
    expect(podman!.run(['export', '-o', tar, id]).status).toBe(0);
    const listing = spawnSync('tar', ['-tvf', tar], { encoding: 'utf8' }).stdout.split('\n');
    const bin = listing
      .filter((l) => / usr\/local\/bin\/./.test(l))
      .map((l) => l.replace(/^.*? usr\/local\/bin\//, ''))
      .sort();
    expect(bin).toEqual(['agent', 'collector -> agent', 'healthcheck', 'probe -> agent'].filter((f) => image!.healthcheck || f !== 'healthcheck'));
    // Everything besides the agent (libraries, healthcheck, passwd) is small: no second runtime.
    const agentBytes = statSync(join(ROOT, 'dist', 'bin', 'agent')).size;
    expect(image!.imageBytes).toBeLessThan(agentBytes + 15e6);
    console.log(`image ${image!.tag}: ${(image!.imageBytes / 1e6).toFixed(1)} MB uncompressed, agent ${(agentBytes / 1e6).toFixed(1)} MB`);
    // The agent answers by its own name too.
    const r = podman!.run(['run', '--rm', ...LOCKED, image!.tag, 'agent', 'bogus'], { timeoutMs: 60_000 });
    expect(r.status).toBe(2);
    expect(r.out).toContain('unknown subcommand "bogus" (expected one of: probe, collector)');
  });

  it('runs the probe and the collector locked down on loopback', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const probePort = await freePort();
    const collectorPort = await freePort();
    const name = `starmap-dist-${process.pid}`;
    const p = podman!.run([
      'run',
      '-d',
      '--name',
      `${name}-probe`,
      ...LOCKED,
      image!.tag,
      'probe',
      `--urls=127.0.0.1:${collectorPort},http://127.0.0.1:${collectorPort}/healthz`,
      '--http-address=127.0.0.1',
      `--http-port=${probePort}`,
      '--http-probe-seconds=1',
    ]);
    expect(p.status, p.out).toBe(0);
    containers.push(`${name}-probe`);
    const c = podman!.run([
      'run',
      '-d',
      '--name',
      `${name}-collector`,
      ...LOCKED,
      image!.tag,
      'collector',
      '--http-address=127.0.0.1',
      `--http-port=${collectorPort}`,
      '--http-request-seconds=1',
    ]);
    expect(c.status, c.out).toBe(0);
    containers.push(`${name}-collector`);

    const probeStatus = `http://127.0.0.1:${probePort}/status`;
    const collector = `http://127.0.0.1:${collectorPort}`;
    await waitFor(() => json(`${collector}/healthz`).then(() => true), { timeoutMs: 20_000, message: 'collector container answers' });
    const posted = await json(`${collector}/resources`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'probe', url: probeStatus }),
    });
    // star answers a bare {id,url}; the collector may wrap it as {resource:{id,url}} (README form).
    expect((posted as { resource?: unknown }).resource ?? posted).toMatchObject({ id: 'probe', url: probeStatus });

    // The probe sees the collector (both targets reachable), straight from its /status ...
    const status = await waitFor(
      async () => {
        const s = (await json(probeStatus)) as { status: { targets: { url: string; reachable: boolean }[] } };
        return s.status.targets.length === 2 && s.status.targets.every((t) => t.reachable) ? s : undefined;
      },
      { timeoutMs: 20_000, message: 'probe container reports its targets reachable' },
    );
    expect(status.status.targets.map((t) => t.url).sort()).toEqual([`127.0.0.1:${collectorPort}`, `http://127.0.0.1:${collectorPort}/healthz`]);
    // ... and through the collector's /responses.
    const responses = await waitFor(
      async () => {
        const r = (await json(`${collector}/responses`)) as {
          responses: Record<string, { statusCode: number; json: { status: { targets: { reachable: boolean }[] } } } | null>;
        };
        const mine = r.responses.probe;
        return mine && mine.json.status.targets.length === 2 && mine.json.status.targets.every((t) => t.reachable) ? mine : undefined;
      },
      { timeoutMs: 20_000, message: "collector container serves the probe's status" },
    );
    expect(responses.statusCode).toBe(200);

    if (image!.healthcheck) {
      for (const n of [`${name}-probe`, `${name}-collector`]) {
        // The probe and collector listen on non-default ports here: the healthcheck program takes them as arguments.
        const port = n.endsWith('probe') ? probePort : collectorPort;
        const h = podman!.run(['exec', n, '/usr/local/bin/healthcheck', String(port)]);
        expect(h.status, h.out).toBe(0);
      }
    }
    const ps = podman!.run(['ps', '--format', '{{.Names}}']).out;
    expect(ps).toContain(`${name}-probe`);
  }, 90_000);

  it('arm64: assembled here, and its own libraries run both agents (under qemu-user-static)', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    if (spawnSync('qemu-aarch64-static', ['--version']).status !== 0) ctx.skip('qemu-aarch64-static is not installed');
    const arm = await buildImage({ arch: 'arm64', store: join(dir, 'store'), save: false, log: () => {} });
    expect(podman!.run(['image', 'inspect', '--format', '{{.Architecture}}', arm.tag]).out.trim()).toBe('arm64');
    // No binfmt_misc in this container, so `podman run` cannot start arm64 code: export the image's
    // files and run each agent with qemu, with the image's root as the only library path.
    const rootfs = join(dir, 'arm64-rootfs');
    mkdirSync(rootfs);
    const id = podman!.run(['create', '--platform', 'linux/arm64', arm.tag, 'probe']).out.trim().split('\n').pop()!;
    containers.push(id);
    const tar = join(dir, 'arm64.tar');
    expect(podman!.run(['export', '-o', tar, id]).status).toBe(0);
    expect(spawnSync('tar', ['-xf', tar, '-C', rootfs]).status).toBe(0);
    // probe and collector are links to the agent: started through them, it runs that program.
    for (const [program, flag] of [
      ['probe', '--urls'],
      ['collector', '--resources-file'],
    ] as const) {
      const r = spawnSync('qemu-aarch64-static', ['-L', rootfs, join(rootfs, 'usr', 'local', 'bin', program), '--help'], { encoding: 'utf8', timeout: 60_000 });
      expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
      expect(r.stdout, program).toContain(`${program} ${version}`);
      expect(r.stdout, program).toContain(flag);
    }
    const agent = spawnSync('qemu-aarch64-static', ['-L', rootfs, join(rootfs, 'usr', 'local', 'bin', 'agent'), '--version'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(agent.stdout.trim()).toBe(version);
  }, 180_000);
});
