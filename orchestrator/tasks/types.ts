// The contract between the scheduler side (api/, deployment/, launch-queue/) and the executor
// that runs task processes on this machine (tasks/executor.ts) and the health checkers (health/).

export type TaskState =
  'TASK_STAGING' | 'TASK_STARTING' | 'TASK_RUNNING' | 'TASK_KILLING' | 'TASK_FINISHED' | 'TASK_FAILED' | 'TASK_KILLED' | 'TASK_LOST' | 'TASK_ERROR';

export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_LOST', 'TASK_ERROR']);

export interface PortAssignment {
  /** Host port the task was given (what PORT0… carry). */
  hostPort: number;
  /** Declared port (portDefinitions[].port / portMappings[].containerPort), 0 when dynamic. */
  declaredPort: number;
  name?: string;
  protocol: string;
  /** For docker BRIDGE networking: the port inside the container. */
  containerPort?: number;
}

export interface DockerSpec {
  image: string;
  network: 'HOST' | 'BRIDGE' | 'USER' | 'NONE';
  privileged: boolean;
  parameters: { key: string; value: string }[];
  forcePullImage: boolean;
  volumes: { containerPath: string; hostPath: string; mode: 'RO' | 'RW' }[];
}

/** Everything the executor needs to start one task. The scheduler builds it from the app. */
export interface LaunchSpec {
  taskId: string;
  appId: string;
  appVersion: string;
  /** Shell command run through `/bin/sh -c`, or null when `args` is used. */
  cmd: string | null;
  /** Program and arguments run directly (no shell), or null when `cmd` is used. */
  args: string[] | null;
  /** Complete environment for the task: Marathon's variables plus the app's env (already merged). */
  env: Record<string, string>;
  ports: PortAssignment[];
  /** Folder for the task's files; stdout and stderr go to `stdout` and `stderr` inside it. */
  sandboxDir: string;
  /** Seconds between SIGTERM and SIGKILL (Mesos' default of 3 s applies when null). */
  killGracePeriodSeconds: number | null;
  docker?: DockerSpec;
  /** Optional hook: a network namespace to run the task in (isolation issue). */
  netns?: string;
  /** The app's `user`: the task's process runs as this user of this machine (command tasks; docker containers run as their image says). */
  user?: string | undefined;
}

export interface TaskStatusUpdate {
  taskId: string;
  state: TaskState;
  /** Why: exit code, signal, launch error … (becomes lastTaskFailure.message). */
  message: string;
  timestamp: string;
  pid?: number;
  exitCode?: number | null;
  signal?: string | null;
}

/** What the scheduler needs from the executor (implemented in tasks/executor.ts). */
export interface Executor {
  /** Starts a task; progress arrives as status updates (STAGING → STARTING → RUNNING → terminal). */
  launch(spec: LaunchSpec): void;
  /** SIGTERM to the task's process group, SIGKILL after the grace period; resolves once it is gone (TASK_KILLED sent). */
  kill(taskId: string, reason?: string): Promise<void>;
  onStatus(listener: (update: TaskStatusUpdate) => void): () => void;
  /** Ids of tasks that are not yet terminal. */
  active(): string[];
  /**
   * After a crash of the orchestrator: kills a process group left by a previous run (pid recorded in
   * state). With `taskId`, only a group whose processes carry MESOS_TASK_ID=<taskId> is touched (the
   * ProcessExecutor always requires some MESOS_TASK_ID), so a pid reused since is left alone.
   */
  killOrphan(pgid: number, opts?: { taskId?: string | undefined; gracePeriodSeconds?: number | null | undefined }): Promise<void>;
  /**
   * After a crash of the orchestrator, once killOrphan ran for the tasks it knew: kills whatever is
   * still left of a previous run's tasks (the ProcessExecutor: everything in their cgroups) and
   * returns what it found. Optional: executors without such a record have nothing to do.
   */
  killLeftovers?(): Promise<string[]>;
  /** Kills every task (used on orchestrator shutdown). */
  shutdown(): Promise<void>;
}
