// Tasks run as a user (Marathon's app `user`, the --mesos-user default): the task's process has the
// user's uid, gid and groups from its first instruction, owns its sandbox, cannot move itself or a
// detached child out of its cgroup (so a kill still ends everything it started), and cannot signal
// tasks of other users. A user this machine does not know fails the task with a message. A task
// run as root can leave its cgroup: the last test shows what the docs say about that.
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessExecutor, type ProcessExecutorOptions } from '../../../orchestrator/tasks/executor.ts';
import { TaskCgroups } from '../../../orchestrator/tasks/cgroups.ts';
import { resolveUser } from '../../../orchestrator/tasks/users.ts';
import { isLive, signalPid } from '../../../orchestrator/tasks/process-group.ts';
import type { LaunchSpec, TaskStatusUpdate } from '../../../orchestrator/tasks/types.ts';
import { parseOrchestratorFlags } from '../../../orchestrator/flags.ts';
import { runCommand } from '../../../orchestrator/health/checks.ts';
import { startOrchestrator } from '../../helpers/orchestrator.ts';
import { NODE, runToEnd, tempDir } from '../../helpers/process.ts';
import { trackTasks } from '../../helpers/executor.ts';
import { waitFor } from '../../helpers/wait.ts';

const USER = 'nobody';
const isRoot = process.getuid?.() === 0;
const nobody = await resolveUser(USER);

const { executors, dataDirs, remember } = trackTasks();

/** Root, and a `nobody` user: what running tasks as another user needs here. */
function needs(ctx: { skip: () => void }): void {
  if (!isRoot || 'problem' in nobody) {
    console.warn(`skipped: needs root and a "${USER}" user (${isRoot ? (nobody as { problem: string }).problem : 'not root'})`);
    ctx.skip();
  }
}

function make(opts: ProcessExecutorOptions = {}) {
  const scope = tempDir('starmap-user-scope-');
  const ex = new ProcessExecutor({ cgroups: { scope }, defaultKillGracePeriodSeconds: 0.5, ...opts });
  executors.push(ex);
  const updates: TaskStatusUpdate[] = [];
  ex.onStatus((u) => updates.push(u));
  const cgroups = TaskCgroups.open(scope);
  if (cgroups instanceof TaskCgroups) cgroups.close();
  return { ex, updates, cgroups: cgroups instanceof TaskCgroups ? cgroups : undefined };
}

let n = 0;
function spec(cmd: string, over: Partial<LaunchSpec> = {}): LaunchSpec {
  n++;
  const taskId = `user_app.${process.pid}-${n}`;
  return {
    taskId,
    appId: '/user/app',
    appVersion: '2026-01-01T00:00:00.000Z',
    cmd,
    args: null,
    env: { MESOS_TASK_ID: taskId },
    ports: [],
    sandboxDir: join(tempDir('starmap-user-'), 'sandbox'),
    killGracePeriodSeconds: 0.5,
    ...over,
  };
}

const running = (updates: TaskStatusUpdate[], taskId: string) =>
  waitFor(() => updates.find((u) => u.taskId === taskId && u.state === 'TASK_RUNNING')?.pid, { message: `${taskId} running` }).then(remember);
const ended = (updates: TaskStatusUpdate[], taskId: string) =>
  waitFor(() => updates.find((u) => u.taskId === taskId && ['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED'].includes(u.state)), { timeoutMs: 15_000 });

/** The uids, gids and groups of a process, from /proc/<pid>/status. */
function credentials(pid: number): { uid: string; gid: string; groups: string } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) =>
    status
      .match(new RegExp(`^${name}:\\s*(.*)$`, 'm'))?.[1]
      ?.trim()
      .replace(/\s+/g, ' ') ?? '';
  return { uid: field('Uid'), gid: field('Gid'), groups: field('Groups') };
}

/** Waits for a file the task writes (created empty by the shell before it is written). */
const fileText = (path: string) => waitFor(() => existsSync(path) && readFileSync(path, 'utf8').trim(), { message: `${path} written` });

describe('tasks run as a user', () => {
  it("runs the task's process with the user's uid, gid and groups, in a sandbox it owns", async (ctx) => {
    needs(ctx);
    const user = nobody as Exclude<typeof nobody, { problem: string }>;
    const { ex, updates } = make();
    const s = spec('echo "$HOME $USER" > own-file; exec /bin/sleep 1000', { user: USER });
    ex.launch(s);
    const pid = await running(updates, s.taskId);
    expect(await fileText(join(s.sandboxDir, 'own-file'))).toBe(`${user.home} ${USER}`);
    const ids = (x: number) => `${x} ${x} ${x} ${x}`;
    expect(credentials(pid)).toEqual({ uid: ids(user.uid), gid: ids(user.gid), groups: user.groups.join(' ') });
    expect(statSync(s.sandboxDir).uid).toBe(user.uid);
    expect(statSync(join(s.sandboxDir, 'stdout')).uid).toBe(user.uid);
    await ex.kill(s.taskId);
    expect((await ended(updates, s.taskId)).state).toBe('TASK_KILLED');
  });

  it('cannot move itself or a detached child out of its cgroup: a kill ends everything it started', async (ctx) => {
    needs(ctx);
    const { ex, updates, cgroups } = make();
    if (!cgroups) {
      console.warn('skipped: no usable cgroup hierarchy');
      return ctx.skip();
    }
    const hierarchy = join(cgroups.root, '..', '..');
    const out = tempDir('starmap-user-out-');
    writeFileSync(join(out, 'x'), '');
    const escape = (target: string) => `echo $$ > ${target}/cgroup.procs`;
    // The child detaches (setsid, empty environment, re-parented) and tries the machine's root
    // cgroup, then the orchestrator's scope; the task itself tries the root cgroup too.
    const child = `setsid env -i /bin/sh -c '${escape(hierarchy)} || ${escape(cgroups.root)}; echo $? > child-rc; echo $$ > child-pid; exec /bin/sleep 1000'`;
    const s = spec(`( ${child} & ); ${escape(hierarchy)}; echo $? > rc; exec /bin/sleep 1000`, { user: USER });
    ex.launch(s);
    const pid = await running(updates, s.taskId);
    const childPid = remember(Number(await fileText(join(s.sandboxDir, 'child-pid'))));
    expect(await fileText(join(s.sandboxDir, 'rc'))).not.toBe('0');
    expect(await fileText(join(s.sandboxDir, 'child-rc'))).not.toBe('0');
    const cgroupOf = (p: number) => readFileSync(`/proc/${p}/cgroup`, 'utf8');
    const taskCgroup = cgroups.find(s.taskId)!;
    expect(taskCgroup.members().sort()).toEqual([pid, childPid].sort());
    expect(cgroupOf(childPid)).toContain(s.taskId);
    await ex.kill(s.taskId);
    expect((await ended(updates, s.taskId)).state).toBe('TASK_KILLED');
    expect(isLive(childPid)).toBe(false);
  });

  it('cannot signal a task of another user', async (ctx) => {
    needs(ctx);
    const { ex, updates } = make();
    const victim = spec('exec /bin/sleep 1000');
    ex.launch(victim);
    const victimPid = await running(updates, victim.taskId);
    const s = spec(`kill -9 ${victimPid} 2> kill-err; echo $? > rc; exec /bin/sleep 1000`, { user: USER });
    ex.launch(s);
    await running(updates, s.taskId);
    expect(await fileText(join(s.sandboxDir, 'rc'))).not.toBe('0');
    expect(readFileSync(join(s.sandboxDir, 'kill-err'), 'utf8')).toMatch(/not permitted/i);
    expect(isLive(victimPid)).toBe(true);
  });

  it('fails the task, saying so, when the user does not exist on this machine', async () => {
    const { ex, updates } = make();
    const s = spec('exec /bin/sleep 1000', { user: 'no-such-user-starmap' });
    ex.launch(s);
    const end = await ended(updates, s.taskId);
    expect(end.state).toBe('TASK_FAILED');
    expect(end.message).toBe('cannot run the task as user "no-such-user-starmap": no such user on this machine (/etc/passwd)');
    expect(updates.filter((u) => u.taskId === s.taskId).map((u) => u.state)).toEqual(['TASK_STAGING', 'TASK_FAILED']);
  });

  it("runs tasks without a user as the default user, and a task's own user wins", async (ctx) => {
    needs(ctx);
    const user = nobody as Exclude<typeof nobody, { problem: string }>;
    const { ex, updates } = make({ defaultUser: USER });
    // The pid TASK_RUNNING reports is setpriv's until it has set the ids and exec'd the command, so
    // the credentials are judged once the task's own first instruction has run (it writes `started`).
    const byDefault = spec(': > started; exec /bin/sleep 1000');
    const asRoot = spec(': > started; exec /bin/sleep 1000', { user: 'root' });
    ex.launch(byDefault);
    ex.launch(asRoot);
    const started = async (s: LaunchSpec) => {
      const pid = await running(updates, s.taskId);
      await waitFor(() => existsSync(join(s.sandboxDir, 'started')), { message: `${s.taskId} started` });
      return pid;
    };
    expect(credentials(await started(byDefault)).uid).toBe(`${user.uid} ${user.uid} ${user.uid} ${user.uid}`);
    expect(credentials(await started(asRoot)).uid).toBe('0 0 0 0');
  });

  it('a root task can leave its cgroup (what the docs say a root task can escape)', async (ctx) => {
    needs(ctx);
    const { ex, updates, cgroups } = make();
    if (!cgroups) return ctx.skip();
    const hierarchy = join(cgroups.root, '..', '..');
    const child = `setsid env -i /bin/sh -c 'echo $$ > ${hierarchy}/cgroup.procs; echo $$ > child-pid; exec /bin/sleep 1000'`;
    const s = spec(`( ${child} & ); exec /bin/sleep 1000`);
    ex.launch(s);
    await running(updates, s.taskId);
    const childPid = remember(Number(await fileText(join(s.sandboxDir, 'child-pid'))));
    await ex.kill(s.taskId);
    expect(isLive(childPid)).toBe(true); // escaped: only running tasks as a user prevents this
    signalPid(childPid, 'SIGKILL');
  });
});

describe('COMMAND health checks of a task with a user', () => {
  it("run as the task's user, and are unhealthy, saying why, when it does not exist", async (ctx) => {
    needs(ctx);
    const target = { host: '127.0.0.1', ports: [], sandboxDir: tempDir('starmap-user-check-') };
    // Before: checks ran as root whatever the task's user, a way for the app's code to get root.
    expect(await runCommand(`test "$(id -un)" = ${USER}`, { ...target, user: USER }, 5000)).toEqual({ kind: 'healthy' });
    expect(await runCommand('test "$(id -u)" = 0', target, 5000)).toEqual({ kind: 'healthy' });
    expect(await runCommand('true', { ...target, user: 'no-such-user-starmap' }, 5000)).toEqual({
      kind: 'unhealthy',
      cause: 'cannot run the task as user "no-such-user-starmap": no such user on this machine (/etc/passwd)',
    });
  });
});

describe('the orchestrator program', () => {
  it("runs an app's tasks as its `user`, others as --mesos-user, and reports an unknown user as the task's failure", async (ctx) => {
    needs(ctx);
    const user = nobody as Exclude<typeof nobody, { problem: string }>;
    const dataDir = tempDir('orch-user-');
    dataDirs.push(dataDir);
    const o = await startOrchestrator(['--task-port-min=40700', '--task-port-max=40799', `--mesos-user=${USER}`], { dataDir });
    expect((await o.call('GET', '/v2/info')).body.marathon_config.mesos_user).toBe(USER);
    const pidOf = async (appId: string) => {
      const sandbox = await waitFor(async () => {
        const tasks = (await o.call('GET', `/v2/apps/${appId}/tasks`)).body.tasks as { id: string; state: string }[];
        const t = tasks.find((x) => x.state === 'TASK_RUNNING');
        return t && join(dataDir, 'sandboxes', t.id);
      });
      return remember(Number(await fileText(join(sandbox, 'pid'))));
    };
    const cmd = 'echo $$ > pid; exec /bin/sleep 1000';
    // Its COMMAND health check runs as the task's user too: healthy only as `nobody`.
    const check = { protocol: 'COMMAND', command: { value: `test "$(id -un)" = ${USER}` }, gracePeriodSeconds: 30, intervalSeconds: 1 };
    for (const app of [
      { id: '/default-user', cmd, healthChecks: [check] },
      { id: '/as-root', cmd, user: 'root' },
      { id: '/nobody-knows', cmd, user: 'no-such-user-starmap' },
    ])
      expect((await o.call('POST', '/v2/apps', { ...app, portDefinitions: [] })).status).toBe(201);
    expect(credentials(await pidOf('default-user')).uid).toBe(`${user.uid} ${user.uid} ${user.uid} ${user.uid}`);
    expect(credentials(await pidOf('as-root')).uid).toBe('0 0 0 0');
    await waitFor(async () => (await o.call('GET', '/v2/apps/default-user')).body.app.tasksHealthy === 1, { message: 'health check as nobody' });
    const failure = await waitFor(async () => (await o.call('GET', '/v2/apps/nobody-knows?embed=apps.lastTaskFailure')).body.app.lastTaskFailure);
    expect(failure).toMatchObject({
      state: 'TASK_FAILED',
      message: 'cannot run the task as user "no-such-user-starmap": no such user on this machine (/etc/passwd)',
    });
    expect(await o.proc.stop('SIGTERM')).toBe(0);
  }, 60_000);

  it('reads --mesos-user and --stop-grace-period, and rejects a bad value', async () => {
    expect(parseOrchestratorFlags(['--mesos_user=nobody', '--stop-grace-period=2.5']).tasks).toEqual({ defaultUser: 'nobody', stopGracePeriodSeconds: 2.5 });
    expect(parseOrchestratorFlags([]).tasks).toEqual({ defaultUser: undefined, stopGracePeriodSeconds: 5 });
    const bad = await runToEnd(NODE, ['orchestrator/main.ts', '--stop-grace-period=-1']);
    expect(bad.code).toBe(2);
    expect(bad.output).toMatch(/invalid value for --stop-grace-period: -1 \(expected a number from 0 to 300\)/);
  });
});
