// The executor's task spawner (orchestrator/tasks/spawner.ts) with real processes: tasks are
// children of the spawner, not of this process; exit codes, signals, launch errors (ENOENT,
// EACCES at exec) and output files reach the executor as with a direct spawn (the same cases run
// with `spawner: false`); killing the spawner loses no task: running tasks keep running and are
// still killed and reported, new launches start a new spawner; one that goes away before it
// confirms a start fails that task. The orchestrator program, from source and as the executable:
// its tasks are the spawner's children, and a kill -9 of the orchestrator ends the spawner, not the
// tasks, which the next start replaces as before.
import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { startOrchestrator } from '../../helpers/orchestrator.ts';
import { join } from 'node:path';
import { liveMembers, procInfo } from '../../../orchestrator/tasks/process-group.ts';
import type { TaskStatusUpdate } from '../../../orchestrator/tasks/types.ts';
import { createLogger } from '../../../shared/logger.ts';
import { waitFor } from '../../helpers/wait.ts';
import { cleanUpExecutors, makeExecutor, taskSpec, terminal } from '../../helpers/executor.ts';
import { ROOT, tempDir } from '../../helpers/process.ts';
import { run, useCommandRunner } from '../../../orchestrator/isolation/exec.ts';

function running(updates: TaskStatusUpdate[], taskId: string): Promise<TaskStatusUpdate> {
  return waitFor(() => updates.find((u) => u.taskId === taskId && u.state === 'TASK_RUNNING'), { timeoutMs: 15_000, message: `${taskId} not running` });
}

afterEach(cleanUpExecutors);

describe.each([
  { spawner: true, mode: 'auto' as const },
  { spawner: true, mode: 'off' as const },
  { spawner: false, mode: 'off' as const },
])('spawner $spawner, cgroups $mode: the same outcomes', ({ spawner, mode }) => {
  it('exit codes, a signal and the output files', async () => {
    const { ex, updates } = makeExecutor({ spawner, cgroups: { mode } });
    const ok = taskSpec('spawner', { cmd: 'echo out; echo err >&2' });
    const bad = taskSpec('spawner', { cmd: 'echo why >&2; exit 3' });
    const sig = taskSpec('spawner', { cmd: 'kill -USR1 $$' });
    for (const s of [ok, bad, sig]) ex.launch(s);
    expect((await terminal(updates, ok.taskId)).message).toBe('Command exited with code 0');
    expect(readFileSync(join(ok.sandboxDir, 'stdout'), 'utf8')).toBe('out\n');
    expect(readFileSync(join(ok.sandboxDir, 'stderr'), 'utf8')).toBe('err\n');
    const b = await terminal(updates, bad.taskId);
    expect([b.state, b.message, b.exitCode]).toEqual(['TASK_FAILED', 'Command exited with code 3: why', 3]);
    const s = await terminal(updates, sig.taskId);
    expect([s.state, s.message, s.signal]).toEqual(['TASK_FAILED', 'Command killed by signal SIGUSR1', 'SIGUSR1']);
    for (const t of [ok, bad, sig])
      expect(
        updates
          .filter((u) => u.taskId === t.taskId)
          .map((u) => u.state)
          .slice(0, 3),
      ).toEqual(['TASK_STAGING', 'TASK_STARTING', 'TASK_RUNNING']);
  });

  it('launch errors at exec: ENOENT is "command not found", EACCES "permission denied"', async () => {
    const { ex, updates } = makeExecutor({ spawner, cgroups: { mode } });
    const dir = tempDir('starmap-spawner-bin-');
    // Both pass the executor's own PATH check (executable files); exec fails in the kernel.
    const noInterpreter = join(dir, 'no-interpreter');
    writeFileSync(noInterpreter, '#!/no/such/interpreter\n');
    chmodSync(noInterpreter, 0o755);
    const notExecutable = join(dir, 'not-executable');
    writeFileSync(notExecutable, 'echo\n', { mode: 0o644 });
    const badInterpreter = join(dir, 'bad-interpreter');
    writeFileSync(badInterpreter, `#!${notExecutable}\n`);
    chmodSync(badInterpreter, 0o755);
    const enoent = taskSpec('spawner', { args: [noInterpreter] });
    const eacces = taskSpec('spawner', { args: [badInterpreter] });
    ex.launch(enoent);
    ex.launch(eacces);
    const a = await terminal(updates, enoent.taskId);
    const b = await terminal(updates, eacces.taskId);
    if (mode === 'off') {
      expect([a.state, a.message]).toEqual(['TASK_FAILED', `command not found: ${noInterpreter}`]);
      expect([b.state, b.message]).toEqual(['TASK_FAILED', `permission denied: ${badInterpreter}`]);
    } else {
      // Wrapped to join its cgroup: the wrapping shell's exec fails and says so.
      expect(a.state).toBe('TASK_FAILED');
      expect(b.state).toBe('TASK_FAILED');
    }
  });
});

describe('the spawner process', () => {
  it('is the parent of the tasks, a process of its own', async () => {
    const { ex, updates } = makeExecutor({ spawner: true, cgroups: { mode: 'auto' } });
    const t = taskSpec('spawner', { cmd: 'exec sleep 100' });
    ex.launch(t);
    const pid = (await running(updates, t.taskId)).pid!;
    const spawnerPid = ex.spawnerPid;
    expect(spawnerPid).toBeDefined();
    expect(spawnerPid).not.toBe(process.pid);
    expect(procInfo(pid)?.ppid).toBe(spawnerPid);
    expect(procInfo(pid)?.pgid).toBe(pid); // detached: its own group
    await ex.kill(t.taskId);
    expect((await terminal(updates, t.taskId)).state).toBe('TASK_KILLED');
  });

  it("runs the isolation's commands (exec.ts run) as its own children: input, output, exit code; lost ones fail", async () => {
    const { ex } = makeExecutor({ spawner: true, cgroups: { mode: 'off' } });
    const runner = ex.commandRunner!;
    // Not ready before its first use: the caller runs the command itself.
    expect(runner('true', [], undefined, 5000)).toBeUndefined();
    await waitFor(() => runner('true', [], undefined, 5000), { message: 'the spawner takes commands once ready' });
    useCommandRunner(runner);
    try {
      const parent = await run('sh', ['-c', 'echo $PPID']);
      expect(Number(parent.stdout.trim())).toBe(ex.spawnerPid);
      expect(await run('sh', ['-c', 'cat; echo err >&2'], 'in\n')).toEqual({ stdout: 'in\n', stderr: 'err\n' });
      await expect(run('sh', ['-c', 'echo why >&2; exit 3'])).rejects.toThrow(/sh -c echo why >&2; exit 3 failed \(3\): why/);
      // A program that cannot start there is run here, for spawn()'s own error (ENOENT).
      await expect(run('/no/such/program', [])).rejects.toMatchObject({ code: 'ENOENT' });
      const slow = run('sleep', ['3']);
      process.kill(ex.spawnerPid!, 'SIGKILL');
      await expect(slow).rejects.toThrow(/failed \(lost\): the task spawner \(pid \d+\) went away/);
    } finally {
      useCommandRunner(undefined);
    }
  });

  it('killed: running tasks keep running and are still reported, new launches get a new spawner', async () => {
    const { ex, updates } = makeExecutor({ spawner: true, cgroups: { mode: 'auto' } });
    const long = taskSpec('spawner', { cmd: 'exec sleep 100' });
    const ending = taskSpec('spawner', { cmd: 'while [ ! -e stop ]; do sleep 0.05; done; exit 0' });
    ex.launch(long);
    ex.launch(ending);
    const longPid = (await running(updates, long.taskId)).pid!;
    await running(updates, ending.taskId);
    const first = ex.spawnerPid!;
    process.kill(first, 'SIGKILL');
    await waitFor(() => ex.spawnerPid === undefined, { timeoutMs: 15_000, message: 'the executor did not notice the spawner went away' });
    expect(procInfo(longPid)?.state).not.toBe('Z');
    expect(liveMembers(longPid)).toContain(longPid);

    // A task that ends by itself now is reported, with its exit status unknown.
    writeFileSync(join(ending.sandboxDir, 'stop'), '');
    const e = await terminal(updates, ending.taskId);
    expect(e.state).toBe('TASK_FAILED');
    expect(e.message).toMatch(/^Command ended; its exit status is unknown: the task spawner \(pid \d+\) went away/);

    // New launches start a new spawner.
    const next = taskSpec('spawner', { cmd: 'exit 0' });
    ex.launch(next);
    expect((await terminal(updates, next.taskId)).message).toBe('Command exited with code 0');
    expect(ex.spawnerPid).toBeDefined();
    expect(ex.spawnerPid).not.toBe(first);

    // The orphaned task is still killed as any other.
    await ex.kill(long.taskId, 'test');
    expect((await terminal(updates, long.taskId)).message).toBe('Killed: test');
    expect(existsSync(`/proc/${longPid}`) && procInfo(longPid)?.state !== 'Z').toBe(false);
  });

  it('cannot start: the tasks are spawned directly, and after three tries no spawner is started any more', async () => {
    const logfile = join(tempDir('starmap-spawner-log-'), 'log');
    const logger = createLogger({ name: 'test', logfile, level: 'info' });
    // A "spawner" that exits at once, before it is ready.
    const { ex, updates } = makeExecutor({ spawner: { file: '/bin/sh', args: ['-c', 'exit 3'] }, cgroups: { mode: 'auto' }, logger });
    for (let round = 1; round <= 4; round++) {
      const t = taskSpec('spawner', { cmd: 'echo ran; exit 0' });
      ex.launch(t);
      expect((await terminal(updates, t.taskId)).message).toBe('Command exited with code 0');
      expect(readFileSync(join(t.sandboxDir, 'stdout'), 'utf8')).toBe('ran\n');
    }
    const log = await waitFor(
      () => {
        const text = existsSync(logfile) ? readFileSync(logfile, 'utf8') : '';
        return text.includes('tasks are spawned directly from now on') ? text : undefined;
      },
      { timeoutMs: 10_000, message: 'the fallback was not logged' },
    );
    // One spawner per launch, each gone before it was ready; its task spawned directly.
    expect(log.match(/spawning the task directly/g)).toHaveLength(3);
    expect(log.match(/the next launches start a new one/g)).toHaveLength(2);
    expect(log.match(/tasks are spawned directly from now on/g)).toHaveLength(1);
  });
  it('goes away before it confirms a start: the task fails (and is replaced by the scheduler), nothing is left', async () => {
    // A "spawner" that says it is ready, then exits when asked to start anything.
    const fake = `process.send({ t: 'ready', pid: process.pid }); process.on('message', () => process.exit(1));`;
    const { ex, updates } = makeExecutor({ spawner: { file: process.execPath, args: ['-e', fake] }, cgroups: { mode: 'auto' } });
    const t = taskSpec('spawner', { cmd: 'exec sleep 100' });
    ex.launch(t);
    const end = await terminal(updates, t.taskId);
    expect(end.state).toBe('TASK_FAILED');
    expect(end.message).toMatch(/^launch failed: the task spawner \(pid \d+\) went away: .* before it confirmed the start$/);
    expect(ex.active()).toEqual([]);
  });
});

/** A process that is gone or a zombie (PID 1 here may not reap the orphans it inherits). */
const gone = (pid: number) => !existsSync(`/proc/${pid}`) || procInfo(pid)?.state === 'Z';

const BIN = join(ROOT, 'dist', 'bin', 'orchestrator');
describe.each([
  { how: 'from source', binary: undefined, spawnerMark: 'runSpawner' },
  { how: 'the executable', binary: BIN, spawnerMark: '--starmap-task-spawner' },
])('the orchestrator $how', ({ binary, spawnerMark }) => {
  it.skipIf(binary !== undefined && !existsSync(binary))(
    'starts tasks from its spawner; a kill -9 ends the spawner, not the tasks, and the restart replaces them',
    async () => {
      const dataDir = tempDir('starmap-spawner-orch-');
      const o = await startOrchestrator(['--task-port-min=38200', '--task-port-max=38300'], { binary, dataDir });
      expect((await o.call('POST', '/v2/apps', { id: '/sp', cmd: 'exec sleep 1000', instances: 2 })).status).toBe(201);
      const tasks = await waitFor(
        async () => {
          const t = (await o.call('GET', '/v2/apps/sp/tasks')).body.tasks as { id: string; state: string }[];
          return t.length === 2 && t.every((x) => x.state === 'TASK_RUNNING') ? t : undefined;
        },
        { timeoutMs: 20_000, message: 'the tasks did not run' },
      );
      // The tasks' processes: children of the spawner, itself a child of the orchestrator.
      const orchestratorPid = o.proc.child.pid!;
      const spawnerPid = await waitFor(
        () => {
          const kids = readFileSync(`/proc/${orchestratorPid}/task/${orchestratorPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
          return kids.find((k) => readFileSync(`/proc/${k}/cmdline`, 'utf8').includes(spawnerMark));
        },
        { timeoutMs: 10_000, message: 'no spawner process' },
      );
      const taskPids = readFileSync(`/proc/${spawnerPid}/task/${spawnerPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
      expect(taskPids).toHaveLength(2);
      for (const pid of taskPids) expect(procInfo(pid)?.pgid).toBe(pid);

      o.proc.child.kill('SIGKILL');
      await o.proc.exited;
      await waitFor(() => gone(spawnerPid), { timeoutMs: 10_000, message: 'the spawner outlived the orchestrator' });
      for (const pid of taskPids) expect(gone(pid), `task process ${pid} ended with the orchestrator`).toBe(false);

      // The restart kills what the previous run left and launches replacements, as without a spawner.
      const again = await startOrchestrator(['--task-port-min=38200', '--task-port-max=38300'], { binary, dataDir });
      await waitFor(() => taskPids.every(gone), { timeoutMs: 20_000, message: "the previous run's tasks were not killed" });
      await waitFor(
        async () => {
          const t = (await again.call('GET', '/v2/apps/sp/tasks')).body.tasks as { id: string; state: string }[];
          return t.length === 2 && t.every((x) => x.state === 'TASK_RUNNING' && !tasks.some((old) => old.id === x.id));
        },
        { timeoutMs: 20_000, message: 'no replacements ran' },
      );
      expect((await again.call('DELETE', '/v2/apps/sp')).status).toBe(200);
      await waitFor(async () => ((await again.call('GET', '/v2/tasks')).body.tasks as unknown[]).length === 0, { timeoutMs: 20_000 });
      await again.proc.stop('SIGTERM');
    },
    90_000,
  );
});
