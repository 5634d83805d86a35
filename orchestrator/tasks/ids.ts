// Task ids and what Marathon derives from them. A task id is `<safePath>.<uuid>` (`/a/b` → `a_b.<uuid>`);
// id segments may hold dots but never `_`, and the uuid holds no dot, so the last dot separates them.

/** The app id a task id was made from (`a_b.<uuid>` → `/a/b`). */
export function appIdOfTask(taskId: string): string {
  const dot = taskId.lastIndexOf('.');
  return `/${(dot < 0 ? taskId : taskId.slice(0, dot)).replace(/_/g, '/')}`;
}

/** Marathon 1.4's instance id of a task: `<safePath>.marathon-<uuid>`. */
export function instanceIdOf(taskId: string): string {
  const dot = taskId.lastIndexOf('.');
  return dot < 0 ? taskId : `${taskId.slice(0, dot)}.marathon-${taskId.slice(dot + 1)}`;
}

/** The one agent id this single-machine orchestrator reports (tasks' slaveId, events' agentId). */
export const SLAVE_ID = 'local-agent-S0';
