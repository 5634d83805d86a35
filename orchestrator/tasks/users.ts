// Running a task as a user (Marathon's app `user`, or the orchestrator's --mesos-user default): the
// name is resolved to a uid, gid and supplementary groups from this machine's /etc/passwd and
// /etc/group (read on libuv's thread pool, as a launch is prepared), and the task's command is
// wrapped in setpriv (util-linux), which sets all three and execs it. The wrapper runs after the
// task has joined its cgroup and network namespace (both need root), so the task itself never
// holds root: as another user it cannot write to any cgroup.procs (they are root's, 0644), so it
// cannot leave its cgroup, and it cannot signal tasks of other users or the orchestrator.
import { readFile } from 'node:fs/promises';
import { resolveProgram } from './env.ts';

export interface TaskUser {
  name: string;
  uid: number;
  gid: number;
  /** Supplementary groups (the primary one included, as initgroups gives them). */
  groups: number[];
  home: string;
}

async function readLines(path: string): Promise<string[]> {
  try {
    return (await readFile(path, 'utf8')).split('\n');
  } catch {
    return [];
  }
}

/** The user's entry in /etc/passwd and its groups from /etc/group; a reason instead when there is none. */
export async function resolveUser(name: string, files = { passwd: '/etc/passwd', group: '/etc/group' }): Promise<TaskUser | { problem: string }> {
  const entry = (await readLines(files.passwd)).map((l) => l.split(':')).find((f) => f.length >= 7 && f[0] === name);
  const uid = Number(entry?.[2]);
  const gid = Number(entry?.[3]);
  if (!entry || !Number.isInteger(uid) || !Number.isInteger(gid))
    return { problem: `cannot run the task as user "${name}": no such user on this machine (${files.passwd})` };
  const groups = new Set([gid]);
  for (const f of (await readLines(files.group)).map((l) => l.split(':'))) {
    const id = Number(f[2]);
    if (f.length >= 4 && Number.isInteger(id) && f[3]!.split(',').includes(name)) groups.add(id);
  }
  return { name, uid, gid, groups: [...groups], home: entry[5] ?? '/' };
}

/**
 * The command that runs `file args` as `user` (setpriv from PATH), or a reason why it cannot: the
 * orchestrator is not root and the user is not its own, or setpriv is missing. Undefined
 * `command` when nothing needs to change (the user is the orchestrator's own).
 */
export function asUser(
  user: TaskUser,
  file: string,
  args: string[],
  pathVar: string | undefined,
): { command: { file: string; args: string[] } | undefined } | { problem: string } {
  const uid = process.getuid?.() ?? 0;
  if (user.uid === uid && user.gid === process.getgid?.()) return { command: undefined };
  if (uid !== 0) return { problem: `cannot run the task as user "${user.name}": the orchestrator runs as uid ${uid}, not as root` };
  const setpriv = resolveProgram('setpriv', pathVar) ?? resolveProgram('/usr/bin/setpriv', undefined);
  if (!setpriv) return { problem: `cannot run the task as user "${user.name}": setpriv (util-linux) is not installed` };
  return {
    command: {
      file: setpriv,
      args: [`--reuid=${user.uid}`, `--regid=${user.gid}`, `--groups=${user.groups.join(',')}`, '--', file, ...args],
    },
  };
}
