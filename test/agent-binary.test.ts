// The multi-call agent executable (dist/bin/agent: the probe and the collector in one Node SEA, the
// container image's only runtime), as a user gets it: copied alone into an empty folder and run with
// no Node on PATH, by subcommand (`agent probe …`) and through links named after the programs
// (`probe …`), busybox-style. `npm test` builds it first (npm run build).
import { copyFileSync, existsSync, linkSync, symlinkSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLOSED_PORT, ROOT, freePort, runToEnd, start, stopAll, tempDir, waitForHttp } from './helpers/process.ts';
import type { TargetStatus } from './helpers/probe.ts';
import { waitFor } from './helpers/wait.ts';

const BIN = join(ROOT, 'dist', 'bin', 'agent');
const ARM_BIN = join(ROOT, 'dist', 'bin', 'agent-linux-arm64');
const ARM_SYSROOT = '/usr/aarch64-linux-gnu';
const qemu = ['/usr/bin/qemu-aarch64-static', '/usr/bin/qemu-aarch64'].find(existsSync);
const NO_NODE = { PATH: '/nonexistent' };

const closers: (() => void)[] = [];
afterAll(async () => {
  closers.forEach((c) => c());
  await stopAll();
});

/** The agent alone in a fresh folder, with a symbolic link `probe` and a hard link `collector` to it. */
function install(): { agent: string; probe: string; collector: string } {
  const dir = tempDir('starmap-agent-');
  const agent = join(dir, 'agent');
  copyFileSync(BIN, agent);
  symlinkSync('agent', join(dir, 'probe'));
  linkSync(agent, join(dir, 'collector'));
  return { agent, probe: join(dir, 'probe'), collector: join(dir, 'collector') };
}

async function statusOf(url: string): Promise<TargetStatus[]> {
  return ((await (await fetch(url)).json()) as { status: { targets: TargetStatus[] } }).status.targets;
}

describe('dist/bin/agent', () => {
  it('exists (run `npm run build` first)', () => {
    expect(existsSync(BIN), `${BIN} is missing: run npm run build`).toBe(true);
  });

  it('answers --version and --help at the top level, and by subcommand and link name', async () => {
    const { agent, probe, collector } = install();
    const version = await runToEnd(agent, ['--version'], { env: NO_NODE });
    expect(version.code).toBe(0);
    expect(version.output.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const help = await runToEnd(agent, ['--help'], { env: NO_NODE });
    expect(help.code).toBe(0);
    expect(help.output).toContain('Usage: agent <probe|collector> [options]');
    // Each program's own help, whichever way it is reached.
    for (const [cmd, args, text] of [
      [agent, ['probe', '--help'], '--urls'],
      [agent, ['collector', '--help'], '--resources-file'],
      [probe, ['--help'], '--urls'],
      [collector, ['--help'], '--resources-file'],
    ] as const) {
      const r = await runToEnd(cmd, [...args], { env: NO_NODE });
      expect(r.code, `${cmd} ${args.join(' ')}`).toBe(0);
      expect(r.output).toContain(text);
    }
  });

  it('exits 2 naming the valid subcommands when the subcommand is missing or unknown', async () => {
    const { agent } = install();
    const missing = await runToEnd(agent, [], { env: NO_NODE });
    expect(missing.code).toBe(2);
    expect(missing.output).toContain('agent: error: missing subcommand (expected one of: probe, collector)');
    const unknown = await runToEnd(agent, ['prob', '--urls=127.0.0.1:1'], { env: NO_NODE });
    expect(unknown.code).toBe(2);
    expect(unknown.output).toContain('agent: error: unknown subcommand "prob" (expected one of: probe, collector)');
    // A flag where the subcommand belongs is not a subcommand either.
    const flag = await runToEnd(agent, ['--urls=127.0.0.1:1'], { env: NO_NODE });
    expect(flag.code).toBe(2);
    expect(flag.output).toContain('unknown subcommand "--urls=127.0.0.1:1"');
  });

  it("keeps each program's flag errors: exit 2 naming the flag", async () => {
    const { agent, probe } = install();
    for (const [cmd, args] of [
      [agent, ['probe', '--urls=127.0.0.1:1', '--http-port=nope']],
      [probe, ['--urls=127.0.0.1:1', '--http-port=nope']],
    ] as const) {
      const r = await runToEnd(cmd, [...args], { env: NO_NODE });
      expect(r.code).toBe(2);
      expect(r.output).toContain('probe: error: invalid value for --http-port');
    }
    const c = await runToEnd(agent, ['collector', '--http-request-seconds=0'], { env: NO_NODE });
    expect(c.code).toBe(2);
    expect(c.output).toContain('--http-request-seconds');
  });

  it('runs the collector and two probes (by subcommand and through the probe link) end to end on loopback', async () => {
    const { agent, probe } = install();
    // What the probes check: one HTTP server and one closed port, both on loopback.
    const web = http.createServer((_q, r) => r.end('ok'));
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    closers.push(() => web.close());
    const webUrl = `http://127.0.0.1:${(web.address() as net.AddressInfo).port}/`;
    const closedUrl = `http://127.0.0.1:${CLOSED_PORT}/`;
    const probeArgs = [`--urls=${webUrl},${closedUrl}`, '--http-address=127.0.0.1', '--http-probe-seconds=0.2'];

    const [subPort, linkPort, collectorPort] = [await freePort(), await freePort(), await freePort()];
    const byName = start(agent, ['probe', ...probeArgs, `--http-port=${subPort}`], { env: NO_NODE });
    const byLink = start(probe, [...probeArgs, `--http-port=${linkPort}`], { env: NO_NODE });
    const collector = start(agent, ['collector', '--http-address=127.0.0.1', `--http-port=${collectorPort}`, '--http-request-seconds=0.3'], { env: NO_NODE });
    const base = `http://127.0.0.1:${collectorPort}`;
    await waitForHttp(`http://127.0.0.1:${subPort}/healthz`);
    await waitForHttp(`http://127.0.0.1:${linkPort}/healthz`);
    await waitForHttp(`${base}/healthz`);

    // Both probes see the web server reachable and the closed port not, at their /status.
    for (const port of [subPort, linkPort]) {
      const targets = await waitFor(async () => {
        const t = await statusOf(`http://127.0.0.1:${port}/status`);
        return t.every((x) => x.checkedAt) && t;
      });
      expect(targets.map((t) => [t.url, t.reachable])).toEqual([
        [webUrl, true],
        [closedUrl, false],
      ]);
    }

    // The collector fetches both probes' /status and serves them at /responses.
    for (const [id, port] of [
      ['by-subcommand', subPort],
      ['by-link', linkPort],
    ] as const) {
      const post = await fetch(`${base}/resources`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id, url: `http://127.0.0.1:${port}/status` }),
      });
      expect(post.status).toBe(201);
    }
    type Entry = { statusCode: number | null; json: { status: { targets: TargetStatus[] } } | null };
    const responses = await waitFor(
      async () => {
        const doc = (await (await fetch(`${base}/responses`)).json()) as { responses: Record<string, Entry | null> };
        const entries = [doc.responses['by-subcommand'], doc.responses['by-link']];
        return entries.every((e) => e?.statusCode === 200 && e.json?.status.targets.every((t) => t.checkedAt)) && doc.responses;
      },
      { timeoutMs: 10_000, message: "the collector serves both probes' status" },
    );
    for (const id of ['by-subcommand', 'by-link']) {
      expect(responses[id]!.json!.status.targets.map((t) => [t.url, t.reachable])).toEqual([
        [webUrl, true],
        [closedUrl, false],
      ]);
    }
    // The collector's embedded UI came along into the agent.
    expect((await fetch(`${base}/responses/example`)).status).toBe(200);

    // Signals reach the program the agent runs: a clean stop, exit 0.
    expect(await byName.stop('SIGINT')).toBe(0);
    expect(await byLink.stop('SIGTERM')).toBe(0);
    expect(await collector.stop('SIGTERM')).toBe(0);
  });
});

describe.skipIf(!qemu || !existsSync(join(ARM_SYSROOT, 'lib', 'ld-linux-aarch64.so.1')))(
  'dist/bin/agent-linux-arm64 (under qemu-user; needs qemu-user-static and libc6-arm64-cross)',
  () => {
    it('is an arm64 executable that runs each program by subcommand and through a link', async () => {
      expect(existsSync(ARM_BIN), `${ARM_BIN} is missing: run npm run build`).toBe(true);
      const dir = tempDir('starmap-agent-arm64-');
      const agent = join(dir, 'agent');
      copyFileSync(ARM_BIN, agent);
      symlinkSync('agent', join(dir, 'collector'));
      const sub = await runToEnd(qemu!, ['-L', ARM_SYSROOT, agent, 'probe', '--help'], { timeoutMs: 60_000 });
      expect(sub.code).toBe(0);
      expect(sub.output).toContain('--urls');
      const link = await runToEnd(qemu!, ['-L', ARM_SYSROOT, join(dir, 'collector'), '--help'], { timeoutMs: 60_000 });
      expect(link.code).toBe(0);
      expect(link.output).toContain('--resources-file');
    }, 120_000);
  },
);
