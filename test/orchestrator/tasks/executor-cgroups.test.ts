// Task cgroups with real processes (issue 16): a descendant that detaches with `setsid env -i` and
// is re-parented away from the task (no process group, no MESOS_TASK_ID, no parent link left) is
// still killed at a task kill, when the task exits by itself, at shutdown, and after a kill -9 of
// the orchestrator and a restart. Run for every backend this machine has (cgroup v2, v1 freezer,
// v1 pids); a backend the machine lacks is reported, never passed silently.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ProcessExecutor } from '../../../orchestrator/tasks/executor.ts';
import { TaskCgroups, cgroupMounts, scopeName, type CgroupMode } from '../../../orchestrator/tasks/cgroups.ts';
import { isLive, procInfo, sameLiveProcess, signalPid } from '../../../orchestrator/tasks/process-group.ts';
import type { LaunchSpec, TaskStatusUpdate } from '../../../orchestrator/tasks/types.ts';
import { startOrchestrator } from '../../helpers/orchestrator.ts';
import { stopAll, tempDir } from '../../helpers/process.ts';
import { waitFor } from '../../helpers/wait.ts';

const executors: ProcessExecutor[] = [];
/** Processes a failed test could leave behind, with their start times: a pid is reused once its process is gone. */
const strays: { pid: number; start: number }[] = [];
const stray = (pid: number) => {
  const info = procInfo(pid);
  if (info) strays.push({ pid, start: info.start });
};
afterEach(async () => {
  await Promise.all(executors.splice(0).map((e) => e.shutdown()));
});
afterAll(async () => {
  // Only if a test failed: never leave processes behind, and never kill another process that got the pid since.
  for (const { pid, start } of strays) if (sameLiveProcess(pid, start)) signalPid(pid, 'SIGKILL');
  await stopAll();
});

/**
 * A task whose grandchild detaches completely: a subshell starts it with setsid and an empty
 * environment and exits at once, so it is re-parented (to PID 1 or a subreaper); it ignores SIGTERM
 * and writes its pid to `pidFile`.
 */
function detachingCmd(pidFile: string, main: string): string {
  return `( setsid env -i /bin/sh -c 'trap "" TERM; echo $$ > ${pidFile}; exec /bin/sleep 1000' & ); ${main}`;
}

async function detachedPid(pidFile: string): Promise<number> {
  // The shell creates the file before it writes the pid: empty (0) until then.
  const readPid = () => (existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : Number.NaN);
  const pid = await waitFor(
    () => {
      const n = readPid();
      return Number.isInteger(n) && n > 1 ? n : undefined;
    },
    { message: `no pid in ${pidFile}` },
  );
  await waitFor(() => isLive(pid));
  stray(pid);
  // Really detached: another session, no MESOS_TASK_ID, not a child of the task.
  const environ = readFileSync(`/proc/${pid}/environ`, 'latin1');
  expect(environ).not.toContain('MESOS_TASK_ID');
  return pid;
}

let n = 0;
function spec(cmd: string, over: Partial<LaunchSpec> = {}): LaunchSpec {
  n++;
  return {
    taskId: `cg_app.${process.pid}-${n}`,
    appId: '/cg/app',
    appVersion: '2026-01-01T00:00:00.000Z',
    cmd,
    args: null,
    env: { MESOS_TASK_ID: `cg_app.${process.pid}-${n}` },
    ports: [],
    sandboxDir: join(tempDir('starmap-cg-'), 'sandbox'),
    killGracePeriodSeconds: 0.5,
    ...over,
  };
}

function make(mode: CgroupMode, scope?: string): { ex: ProcessExecutor; updates: TaskStatusUpdate[] } {
  const ex = new ProcessExecutor({ cgroups: { mode, ...(scope ? { scope } : {}) }, defaultKillGracePeriodSeconds: 0.5 });
  executors.push(ex);
  const updates: TaskStatusUpdate[] = [];
  ex.onStatus((u) => updates.push(u));
  return { ex, updates };
}

const terminal = (updates: TaskStatusUpdate[], taskId: string) =>
  waitFor(() => updates.find((u) => u.taskId === taskId && ['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED'].includes(u.state)), { timeoutMs: 15_000 });

const scopeDirs = (scope: string) => cgroupMounts().map((m) => join(m.path, 'starmap', scopeName(scope)));

const BACKENDS: Exclude<CgroupMode, 'auto' | 'off'>[] = ['v2', 'v1-freezer', 'v1-pids'];

describe.each(BACKENDS)('task cgroups: %s', (mode) => {
  const probe = TaskCgroups.open(`probe-${mode}-${process.pid}`, mode);
  const usable = probe instanceof TaskCgroups;
  if (usable) probe.close();
  const needs = (ctx: { skip: () => void }) => {
    if (!usable) {
      console.warn(`skipped: ${mode} is not usable on this machine: ${(probe as { unavailable: string }).unavailable}`);
      ctx.skip();
    }
  };

  it('kills a detached (setsid env -i) descendant when the task is killed', async (ctx) => {
    needs(ctx);
    const { ex, updates } = make(mode);
    expect(ex.containment).toMatch(/its own cgroup/);
    const pidFile = join(tempDir('starmap-cg-'), 'child');
    const s = spec(detachingCmd(pidFile, 'exec /bin/sleep 1000'));
    ex.launch(s);
    const child = await detachedPid(pidFile);
    await ex.kill(s.taskId, 'test');
    expect((await terminal(updates, s.taskId)).state).toBe('TASK_KILLED');
    expect(isLive(child)).toBe(false);
  });

  it('kills it when the task exits by itself, and at shutdown; removes the cgroups', async (ctx) => {
    needs(ctx);
    const scope = tempDir('starmap-cg-scope-');
    const { ex, updates } = make(mode, scope);
    const dir = tempDir('starmap-cg-');
    // The task ends by itself once the test has seen its detached child (the file "go").
    const a = spec(detachingCmd(join(dir, 'child'), `while [ ! -e ${join(dir, 'go')} ]; do /bin/sleep 0.05; done; exit 0`));
    ex.launch(a);
    const first = await detachedPid(join(dir, 'child'));
    writeFileSync(join(dir, 'go'), '');
    expect((await terminal(updates, a.taskId)).state).toBe('TASK_FINISHED');
    expect(isLive(first)).toBe(false);
    const running = join(tempDir('starmap-cg-'), 'child');
    const b = spec(detachingCmd(running, 'exec /bin/sleep 1000'));
    ex.launch(b);
    const second = await detachedPid(running);
    await ex.shutdown();
    expect(isLive(second)).toBe(false);
    for (const dir of scopeDirs(scope)) expect(existsSync(dir), dir).toBe(false);
  });

  it('after a crash, a new executor on the same scope kills what the old run left', async (ctx) => {
    needs(ctx);
    const scope = tempDir('starmap-cg-scope-');
    // The old run: its tasks keep running, as after a kill -9 of the orchestrator.
    const old = new ProcessExecutor({ cgroups: { mode, scope } });
    executors.push(old); // shut down after the test (its spawner and its view of the killed task)
    const pidFile = join(tempDir('starmap-cg-'), 'child');
    const s = spec(detachingCmd(pidFile, 'exec /bin/sleep 1000'));
    const updates: TaskStatusUpdate[] = [];
    old.onStatus((u) => updates.push(u));
    old.launch(s);
    const child = await detachedPid(pidFile);
    const main = (await waitFor(() => updates.find((u) => u.state === 'TASK_RUNNING'))).pid!;
    stray(main);
    const { ex } = make(mode, scope);
    expect(await ex.killLeftovers()).toEqual([s.taskId]);
    expect(isLive(child)).toBe(false);
    expect(isLive(main)).toBe(false);
    await ex.shutdown();
    for (const dir of scopeDirs(scope)) expect(existsSync(dir), dir).toBe(false);
  });
});

describe('without task cgroups', () => {
  it('says what is not guaranteed', () => {
    const ex = new ProcessExecutor({ cgroups: { mode: 'off' } });
    expect(ex.containment).toMatch(/not available/);
  });
});

describe('the orchestrator program', () => {
  it('kills a detached task descendant after kill -9 and restart, and leaves no cgroup at stop', async (ctx) => {
    const probe = TaskCgroups.open(`probe-auto-${process.pid}`);
    if (!(probe instanceof TaskCgroups)) {
      console.warn(`skipped: no usable cgroup hierarchy on this machine: ${probe.unavailable}`);
      ctx.skip();
    } else probe.close();
    const dataDir = tempDir('orch-cg-');
    const pidFile = join(tempDir('starmap-cg-'), 'child');
    const args = ['--task-port-min=36500', '--task-port-max=36599'];
    let o = await startOrchestrator(args, { dataDir });
    expect(o.proc.output()).not.toMatch(/task cgroups are not available/);
    const cmd = detachingCmd(pidFile, 'exec /bin/sleep 1000');
    expect((await o.call('POST', '/v2/apps', { id: '/detach', cmd })).status).toBe(201);
    const child = await detachedPid(pidFile);
    o.proc.child.kill('SIGKILL');
    await o.proc.exited;
    expect(isLive(child)).toBe(true); // what used to outlive the orchestrator forever
    rmSync(pidFile);
    o = await startOrchestrator(args, { dataDir, port: o.port });
    await waitFor(() => !isLive(child), { timeoutMs: 15_000, message: 'detached descendant killed after restart' });
    // The app runs again with a new task (and a new detached child).
    await waitFor(async () => (await o.call('GET', '/v2/apps/detach')).body.app.tasksRunning === 1, { timeoutMs: 15_000 });
    const again = await detachedPid(pidFile);
    expect(again).not.toBe(child);
    await o.proc.stop('SIGTERM');
    expect(isLive(again)).toBe(false);
    for (const dir of scopeDirs(dataDir)) expect(existsSync(dir), dir).toBe(false);
  }, 90_000);
});
