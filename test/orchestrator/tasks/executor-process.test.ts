// ProcessExecutor with real processes: states, messages, env, sandbox, grace period, process groups.
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { liveMembers, allProcesses } from '../../../orchestrator/tasks/process-group.ts';
import type { TaskStatusUpdate } from '../../../orchestrator/tasks/types.ts';
import { waitFor } from '../../helpers/wait.ts';
import { cleanUpExecutors, makeExecutor, taskSpec, terminal, watchGroup } from '../../helpers/executor.ts';

function states(updates: TaskStatusUpdate[], taskId: string): string[] {
  return updates.filter((u) => u.taskId === taskId).map((u) => u.state);
}

afterEach(cleanUpExecutors);

describe('ProcessExecutor', () => {
  it('runs cmd through /bin/sh: STAGING, STARTING, RUNNING, FINISHED; stdout and stderr in the sandbox', async () => {
    const { ex, updates } = makeExecutor();
    const s = taskSpec('test', { cmd: 'echo out; echo err >&2; pwd' });
    ex.launch(s);
    const t = await terminal(updates, s.taskId);
    expect(t.state).toBe('TASK_FINISHED');
    expect(t.exitCode).toBe(0);
    expect(states(updates, s.taskId)).toEqual(['TASK_STAGING', 'TASK_STARTING', 'TASK_RUNNING', 'TASK_FINISHED']);
    expect(readFileSync(join(s.sandboxDir, 'stdout'), 'utf8')).toBe(`out\n${s.sandboxDir}\n`);
    expect(readFileSync(join(s.sandboxDir, 'stderr'), 'utf8')).toBe('err\n');
    expect(updates.find((u) => u.state === 'TASK_RUNNING')!.pid).toBeGreaterThan(1);
    expect(ex.active()).toEqual([]);
  });

  it('runs args directly, without a shell', async () => {
    const { ex, updates } = makeExecutor();
    const s = taskSpec('test', { args: ['/bin/echo', '$HOME', 'a b'] });
    ex.launch(s);
    expect((await terminal(updates, s.taskId)).state).toBe('TASK_FINISHED');
    expect(readFileSync(join(s.sandboxDir, 'stdout'), 'utf8')).toBe('$HOME a b\n');
  });

  it('reports a non-zero exit with its code and the last stderr line', async () => {
    const { ex, updates } = makeExecutor();
    const s = taskSpec('test', { cmd: 'echo "config missing" >&2; exit 3' });
    ex.launch(s);
    const t = await terminal(updates, s.taskId);
    expect(t.state).toBe('TASK_FAILED');
    expect(t.exitCode).toBe(3);
    expect(t.message).toBe('Command exited with code 3: config missing');
  });

  it('reports death by signal', async () => {
    const { ex, updates } = makeExecutor();
    const s = taskSpec('test', { cmd: 'kill -SEGV $$' });
    ex.launch(s);
    const t = await terminal(updates, s.taskId);
    expect(t.state).toBe('TASK_FAILED');
    expect(t.signal).toBe('SIGSEGV');
    expect(t.message).toMatch(/^Command killed by signal SIGSEGV/);
  });

  it('fails with "command not found" for unknown programs (args and cmd)', async () => {
    const { ex, updates } = makeExecutor();
    const a = taskSpec('test', { args: ['no-such-program-xyz', '1'] });
    const c = taskSpec('test', { cmd: 'no-such-program-xyz 1' });
    ex.launch(a);
    ex.launch(c);
    const ta = await terminal(updates, a.taskId);
    expect(ta.state).toBe('TASK_FAILED');
    expect(ta.message).toBe('command not found: no-such-program-xyz');
    const tc = await terminal(updates, c.taskId);
    expect(tc.state).toBe('TASK_FAILED');
    expect(tc.message).toMatch(/^Command exited with code 127 \(command not found\): .*no-such-program-xyz.*not found/);
  });

  it('gives the spec env plus PATH and HOME from the orchestrator, nothing else', async () => {
    const { ex, updates } = makeExecutor();
    const s = taskSpec('test', { cmd: 'env > env.txt', env: { PORT0: '31001', MARATHON_APP_ID: '/test/app', HOME: '/custom-home' } });
    process.env.STARMAP_SECRET_TEST = 'x';
    ex.launch(s);
    await terminal(updates, s.taskId);
    delete process.env.STARMAP_SECRET_TEST;
    const env = Object.fromEntries(
      readFileSync(join(s.sandboxDir, 'env.txt'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(env.PORT0).toBe('31001');
    expect(env.MARATHON_APP_ID).toBe('/test/app');
    expect(env.HOME).toBe('/custom-home');
    expect(env.PATH).toBe(process.env.PATH);
    expect(env.STARMAP_SECRET_TEST).toBeUndefined();
  });

  it('kill: SIGTERM first, SIGKILL only after the grace period, for a task that ignores SIGTERM', async () => {
    const { ex, updates } = makeExecutor();
    // The shell traps TERM (records it) and keeps running; a child ignores TERM too.
    const s = taskSpec('test', {
      // The child says so once its trap is set: a SIGTERM before that would end it (seen under load).
      cmd: "trap 'echo term >> log' TERM; sh -c \"trap '' TERM; echo child > child; exec sleep 1000\" & echo ready > log; while true; do sleep 0.05; done",
      killGracePeriodSeconds: 1,
    });
    ex.launch(s);
    const said = (file: string, word: string) => existsSync(join(s.sandboxDir, file)) && readFileSync(join(s.sandboxDir, file), 'utf8').includes(word);
    await waitFor(() => said('log', 'ready') && said('child', 'child'));
    const pgid = updates.find((u) => u.taskId === s.taskId && u.state === 'TASK_RUNNING')!.pid!;
    await waitFor(() => liveMembers(pgid).length >= 2);
    const before = Date.now();
    const killed = ex.kill(s.taskId, 'test');
    // SIGTERM arrives and is handled while the group is still alive (no SIGKILL yet).
    await waitFor(() => readFileSync(join(s.sandboxDir, 'log'), 'utf8').includes('term'));
    expect(liveMembers(pgid).length).toBeGreaterThanOrEqual(2);
    await killed;
    expect(Date.now() - before).toBeGreaterThanOrEqual(1000);
    const t = updates.find((u) => u.taskId === s.taskId && u.state === 'TASK_KILLED')!;
    expect(t.message).toBe('Killed: test');
    expect(t.signal).toBe('SIGKILL');
    expect(liveMembers(pgid)).toEqual([]);
  });

  it('kill: a task that exits on SIGTERM is killed without waiting for the grace period', async () => {
    const { ex, updates } = makeExecutor();
    const s = taskSpec('test', { cmd: 'sleep 1000 & sleep 1000 & wait', killGracePeriodSeconds: 30 });
    ex.launch(s);
    await waitFor(() => updates.find((u) => u.taskId === s.taskId && u.state === 'TASK_RUNNING'));
    const pgid = updates.find((u) => u.state === 'TASK_RUNNING')!.pid!;
    await waitFor(() => liveMembers(pgid).length === 3);
    const before = Date.now();
    await ex.kill(s.taskId);
    expect(Date.now() - before).toBeLessThan(10_000);
    expect(liveMembers(pgid)).toEqual([]);
    expect(states(updates, s.taskId).at(-1)).toBe('TASK_KILLED');
  });

  it('a task that exits by itself leaves no children behind', async () => {
    const { ex, updates } = makeExecutor();
    const s = taskSpec('test', { cmd: 'sh -c "trap \'\' TERM HUP; exec sleep 1000" & echo $! > child; sleep 0.2; exit 0' });
    ex.launch(s);
    const t = await terminal(updates, s.taskId);
    expect(t.state).toBe('TASK_FINISHED');
    const child = Number(readFileSync(join(s.sandboxDir, 'child'), 'utf8'));
    const info = allProcesses().find((p) => p.pid === child);
    expect(info === undefined || info.state === 'Z').toBe(true);
  });

  it('kills descendants that moved to a process group of their own (setsid)', async () => {
    const { ex, updates } = makeExecutor();
    const s = taskSpec('test', { cmd: 'setsid sleep 1000 & echo $! > child; wait' });
    ex.launch(s);
    await waitFor(() => existsSync(join(s.sandboxDir, 'child')) && readFileSync(join(s.sandboxDir, 'child'), 'utf8').trim());
    const child = Number(readFileSync(join(s.sandboxDir, 'child'), 'utf8'));
    await waitFor(() => allProcesses().find((p) => p.pid === child && p.pgid === child));
    await ex.kill(s.taskId);
    const info = allProcesses().find((p) => p.pid === child);
    expect(info === undefined || info.state === 'Z').toBe(true);
    expect(states(updates, s.taskId).at(-1)).toBe('TASK_KILLED');
  });

  it('kill before the process started ends in TASK_KILLED without running it', async () => {
    const { ex, updates } = makeExecutor();
    const s = taskSpec('test', { cmd: 'touch ran; sleep 1000' });
    ex.launch(s);
    await ex.kill(s.taskId, 'scale down');
    expect(states(updates, s.taskId)).toEqual(['TASK_STAGING', 'TASK_KILLED']);
    expect(existsSync(join(s.sandboxDir, 'ran'))).toBe(false);
  });

  it('killOrphan kills a detached group left by a previous run, even one ignoring SIGTERM', async () => {
    const { ex } = makeExecutor();
    const child = spawn('/bin/sh', ['-c', "trap '' TERM; sleep 1000 & sleep 1000 & wait"], {
      detached: true,
      stdio: 'ignore',
      env: { PATH: process.env.PATH, MESOS_TASK_ID: 'old_app.1' },
    });
    child.unref();
    const pgid = child.pid!;
    watchGroup(pgid);
    await waitFor(() => liveMembers(pgid).length === 3);
    await ex.killOrphan(pgid, { taskId: 'other_app.2', gracePeriodSeconds: 0.5 }); // not that task's group: untouched
    expect(liveMembers(pgid).length).toBe(3);
    await ex.killOrphan(pgid, { taskId: 'old_app.1', gracePeriodSeconds: 0.5 });
    expect(liveMembers(pgid)).toEqual([]);
    await ex.killOrphan(pgid); // gone already: resolves at once
  });

  it('killOrphan leaves alone a group that is not a task (recorded pid reused by something else)', async () => {
    const { ex } = makeExecutor();
    const child = spawn('/bin/sh', ['-c', 'sleep 1000 & wait'], { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH } });
    child.unref();
    const pgid = child.pid!;
    watchGroup(pgid);
    await waitFor(() => liveMembers(pgid).length === 2);
    await ex.killOrphan(pgid, { gracePeriodSeconds: 0.5 });
    expect(liveMembers(pgid).length).toBe(2);
    process.kill(-pgid, 'SIGKILL');
    await waitFor(() => liveMembers(pgid).length === 0);
  });

  it('shutdown kills every task', async () => {
    const { ex, updates } = makeExecutor();
    const a = taskSpec('test', { cmd: 'sleep 1000' });
    const b = taskSpec('test', { args: ['sleep', '1000'] });
    ex.launch(a);
    ex.launch(b);
    await waitFor(() => updates.filter((u) => u.state === 'TASK_RUNNING').length === 2);
    expect(ex.active().sort()).toEqual([a.taskId, b.taskId].sort());
    await ex.shutdown();
    expect(states(updates, a.taskId).at(-1)).toBe('TASK_KILLED');
    expect(states(updates, b.taskId).at(-1)).toBe('TASK_KILLED');
    expect(ex.active()).toEqual([]);
  });

  it('runs a task inside a network namespace (netns) and kills it there', async (ctx) => {
    const ns = `starmap-exec-${process.pid}`;
    const add = spawnSync('ip', ['netns', 'add', ns], { encoding: 'utf8' });
    if (add.status !== 0) {
      console.warn(`skipped: cannot create a network namespace: ${add.stderr}`);
      ctx.skip();
    }
    try {
      const { ex, updates } = makeExecutor();
      const s = taskSpec('test', { cmd: 'readlink /proc/self/ns/net > ns.txt; exec sleep 1000', netns: ns });
      ex.launch(s);
      const text = await waitFor(() => existsSync(join(s.sandboxDir, 'ns.txt')) && readFileSync(join(s.sandboxDir, 'ns.txt'), 'utf8').trim());
      expect(text).toMatch(/^net:\[\d+\]$/);
      expect(text).not.toBe(readlinkSync('/proc/self/ns/net'));
      await ex.kill(s.taskId);
      expect(states(updates, s.taskId).at(-1)).toBe('TASK_KILLED');
    } finally {
      spawnSync('ip', ['netns', 'del', ns]);
    }
  });
});
