// Docker apps through podman. No registry can be pulled from here, so the test imports a tiny
// image (dash, sleep, env, cat and their libraries from this machine) into a private podman store
// in a temporary folder; it is skipped, with the reason printed, when podman cannot run containers.
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { lockPodman } from '../../helpers/podman-lock.ts';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { join, basename } from 'node:path';
import { tmpdir } from 'node:os';
import { mkdtempSync } from 'node:fs';
import { ProcessExecutor } from '../../../orchestrator/tasks/executor.ts';
import { podmanRunArgs, findPodman } from '../../../orchestrator/tasks/podman.ts';
import { liveMembers } from '../../../orchestrator/tasks/process-group.ts';
import type { LaunchSpec, TaskStatusUpdate } from '../../../orchestrator/tasks/types.ts';
import { waitFor } from '../../helpers/wait.ts';

const IMAGE = 'localhost/starmap-executor-test:1';
let dir = '';
let podmanEnv: Record<string, string> = {};
let skipReason = '';

function podman(args: string[]): { status: number | null; out: string } {
  const r = spawnSync('podman', args, { env: { ...process.env, ...podmanEnv }, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

let unlockPodman: (() => void) | undefined;

beforeAll(async () => {
  if (!findPodman(process.env.PATH)) {
    skipReason = 'podman is not installed';
    return;
  }
  unlockPodman = await lockPodman();
  dir = mkdtempSync(join(tmpdir(), 'starmap-podman-'));
  const root = join(dir, 'root');
  for (const d of ['bin', 'lib/x86_64-linux-gnu', 'lib64', 'tmp']) mkdirSync(join(root, d), { recursive: true });
  copyFileSync('/bin/dash', join(root, 'bin/sh'));
  const libs = new Set<string>();
  for (const b of ['sleep', 'env', 'cat']) {
    copyFileSync(`/bin/${b}`, join(root, 'bin', b));
    for (const m of execFileSync('ldd', [`/bin/${b}`], { encoding: 'utf8' }).matchAll(/=> (\S+)/g)) libs.add(m[1]!);
  }
  for (const l of [...libs, ...(execFileSync('ldd', ['/bin/dash'], { encoding: 'utf8' }).match(/=> (\S+)/g) ?? []).map((x) => x.slice(3))])
    copyFileSync(l, join(root, 'lib/x86_64-linux-gnu', basename(l)));
  if (existsSync('/lib64/ld-linux-x86-64.so.2')) copyFileSync('/lib64/ld-linux-x86-64.so.2', join(root, 'lib64/ld-linux-x86-64.so.2'));
  // runc (crun rejects this machine's cgroup layout), modest ulimits, a private store (vfs: no mounts left behind).
  writeFileSync(join(dir, 'containers.conf'), '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n[engine]\nruntime = "runc"\n');
  writeFileSync(join(dir, 'storage.conf'), `[storage]\ndriver = "vfs"\nrunroot = "${dir}/run"\ngraphroot = "${dir}/storage"\n`);
  podmanEnv = { CONTAINERS_CONF: join(dir, 'containers.conf'), CONTAINERS_STORAGE_CONF: join(dir, 'storage.conf') };
  execFileSync('tar', ['-C', root, '-cf', join(dir, 'root.tar'), '.']);
  const imp = podman(['import', join(dir, 'root.tar'), IMAGE]);
  if (imp.status !== 0) {
    skipReason = `podman cannot import an image here: ${imp.out.trim()}`;
    return;
  }
  const probe = podman(['run', '--rm', '--network', 'host', IMAGE, '/bin/sh', '-c', 'exit 0']);
  if (probe.status !== 0) skipReason = `podman cannot run containers here: ${probe.out.trim()}`;
}, 660_000);

afterAll(() => {
  try {
    if (!dir) return;
    podman(['rm', '-a', '-f', '-t', '0']);
    podman(['rmi', '-a', '-f']);
    spawnSync('podman', ['system', 'reset', '-f'], { env: { ...process.env, ...podmanEnv }, timeout: 60_000 });
    rmSync(dir, { recursive: true, force: true });
  } finally {
    unlockPodman?.();
  }
}, 120_000);

function dockerSpec(over: Partial<LaunchSpec>): LaunchSpec {
  return {
    taskId: `docker_app.${process.pid}-${Math.random().toString(16).slice(2)}`,
    appId: '/docker/app',
    appVersion: 'v1',
    cmd: null,
    args: null,
    env: { MARATHON_APP_ID: '/docker/app' },
    ports: [],
    sandboxDir: join(dir || tmpdir(), `sb-${Math.random().toString(16).slice(2)}`),
    killGracePeriodSeconds: 1,
    docker: { image: IMAGE, network: 'HOST', privileged: false, parameters: [], forcePullImage: false, volumes: [] },
    ...over,
  };
}

describe('podman arguments', () => {
  it('maps networking, ports, volumes, parameters, env and the command', () => {
    const args = podmanRunArgs(
      {
        ...dockerSpec({ taskId: 'a_b.1', cmd: 'echo hi', env: { A: '1' } }),
        ports: [
          { hostPort: 31000, declaredPort: 80, containerPort: 80, protocol: 'tcp' },
          { hostPort: 31001, declaredPort: 53, containerPort: 53, protocol: 'udp,tcp' },
          { hostPort: 0, declaredPort: 9000, containerPort: 9000, protocol: 'tcp' },
        ],
        docker: {
          image: 'nginx',
          network: 'BRIDGE',
          privileged: true,
          parameters: [{ key: 'memory', value: '64m' }],
          forcePullImage: false,
          volumes: [{ containerPath: '/data', hostPath: '/srv/data', mode: 'RO' }],
        },
      },
      { publishAddress: '127.0.0.1' },
    );
    expect(args).toEqual([
      'run',
      '--rm',
      '--name',
      'a_b.1',
      '--label',
      'MESOS_TASK_ID=a_b.1',
      '--privileged',
      '-p',
      '127.0.0.1:31000:80',
      '-p',
      '127.0.0.1:31001:53/udp',
      '-p',
      '127.0.0.1:31001:53',
      '-v',
      '/srv/data:/data:ro',
      '--memory=64m',
      '-e',
      'A=1',
      'nginx',
      '/bin/sh',
      '-c',
      'echo hi',
    ]);
  });

  it('without podman the task fails with a clear message', async () => {
    const ex = new ProcessExecutor({ podmanPath: null });
    const updates: TaskStatusUpdate[] = [];
    ex.onStatus((u) => updates.push(u));
    const s = dockerSpec({ cmd: 'true' });
    ex.launch(s);
    const t = await waitFor(() => updates.find((u) => u.state === 'TASK_FAILED'));
    expect(t.message).toBe('docker containers need podman, which is not installed');
  });
});

/** An executor using the test's podman store, collecting its status updates; skips (saying why) where podman cannot run. */
function podmanExecutor(ctx: TestContext): { ex: ProcessExecutor; updates: TaskStatusUpdate[] } {
  if (skipReason) {
    console.warn(`skipped: ${skipReason}`);
    ctx.skip();
  }
  const ex = new ProcessExecutor({ podmanEnv });
  const updates: TaskStatusUpdate[] = [];
  ex.onStatus((u) => updates.push(u));
  return { ex, updates };
}

describe('docker tasks with podman', () => {
  it('runs the image with the task env (host networking) and reports the exit', async (ctx) => {
    const { ex, updates } = podmanExecutor(ctx);
    const s = dockerSpec({ cmd: 'echo "app=$MARATHON_APP_ID"; exit 4' });
    ex.launch(s);
    const t = await waitFor(() => updates.find((u) => u.taskId === s.taskId && ['TASK_FAILED', 'TASK_FINISHED'].includes(u.state)), { timeoutMs: 60_000 });
    expect(t.state).toBe('TASK_FAILED');
    expect(t.message).toMatch(/^Command exited with code 4/);
    expect(readFileSync(join(s.sandboxDir, 'stdout'), 'utf8')).toBe('app=/docker/app\n');
    await ex.shutdown();
  }, 90_000);

  it('kill stops the container even when it ignores SIGTERM, and removes it', async (ctx) => {
    const { ex, updates } = podmanExecutor(ctx);
    const s = dockerSpec({ cmd: "trap '' TERM; echo up; sleep 1000 & wait" });
    ex.launch(s);
    await waitFor(() => existsSync(join(s.sandboxDir, 'stdout')) && readFileSync(join(s.sandboxDir, 'stdout'), 'utf8').includes('up'), { timeoutMs: 60_000 });
    const pid = updates.find((u) => u.state === 'TASK_RUNNING')!.pid!;
    await ex.kill(s.taskId, 'test');
    expect(updates.at(-1)).toMatchObject({ state: 'TASK_KILLED', message: 'Killed: test' });
    expect(liveMembers(pid)).toEqual([]);
    expect(podman(['ps', '-a', '--format', '{{.Names}}']).out).not.toContain(s.taskId);
    await ex.shutdown();
  }, 90_000);
});
