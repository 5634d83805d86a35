// Signals never reach a process they were not meant for: not our own process group (a pid 0 read
// from a cgroup or a file), not a process that got a task's pid after the task was reaped (pids
// wrap: 32,768 of them on many machines, used up in minutes by a busy test run).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TaskCgroup } from '../../../orchestrator/tasks/cgroups.ts';
import { groupLedBy, procInfo, signalPid } from '../../../orchestrator/tasks/process-group.ts';
import { tempDir } from '../../helpers/process.ts';
import { waitFor } from '../../helpers/wait.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('pid safety', () => {
  it('signalPid never signals pid 0, -1 or 1 (our group, everyone, init), nor a non-integer', () => {
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true);
    for (const pid of [0, -0, -1, 1, Number.NaN, 1.5]) signalPid(pid, 'SIGCONT');
    expect(kill).not.toHaveBeenCalled();
    signalPid(4242, 'SIGCONT');
    expect(kill).toHaveBeenCalledWith(4242, 'SIGCONT');
  });

  it('a cgroup member listed as 0 (outside our pid namespace) is neither a member nor signalled', () => {
    const dir = tempDir('starmap-pid-safety-');
    writeFileSync(join(dir, 'cgroup.procs'), '0\n4242\n\n0\n');
    const cgroup = new TaskCgroup('v2', dir);
    expect(cgroup.members()).toEqual([4242]);
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true);
    cgroup.signal('SIGKILL');
    expect(kill.mock.calls).toEqual([[4242, 'SIGKILL']]);
  });

  it('groupLedBy: the group while the pid is the same process or gone, none once another process has the pid', async () => {
    const child = spawn('/bin/sleep', ['1000'], { detached: true, stdio: 'ignore' });
    const pid = child.pid!;
    const start = procInfo(pid)!.start;
    expect(groupLedBy(pid, start)).toBe(pid);
    expect(groupLedBy(pid, undefined)).toBe(pid); // start unknown: the pid is trusted
    expect(groupLedBy(pid, start - 1)).toBeUndefined(); // the pid names a process that started later
    child.kill('SIGKILL');
    await waitFor(() => child.exitCode !== null || child.signalCode !== null);
    await waitFor(() => procInfo(pid) === undefined);
    expect(groupLedBy(pid, start)).toBe(pid); // reaped, not reused: members left in its group are still the task's
  });
});
