// A real launcher (orchestrator/launch-queue/launcher.ts) over a real task tracker, for the tests
// of the launcher and of the deployment manager: the executor under it either records the launches
// it is asked for (RecordingExecutor: no process, and a kill is reported TASK_KILLED as the real one
// reports it once the process is gone) or is a real ProcessExecutor the test passes in. What the
// launcher hands back to its owner (records to write, passes to run, statuses it decides) is kept
// in order, so a test can see that a task's record was written before its process was asked for.
import { Writable } from 'node:stream';
import { Launcher, type TaskIsolation } from '../../orchestrator/launch-queue/launcher.ts';
import { parseApp, type AppDefinition } from '../../orchestrator/state/app-definition.ts';
import { TaskTracker } from '../../orchestrator/tasks/tracker.ts';
import type { Executor, LaunchSpec, TaskStatusUpdate } from '../../orchestrator/tasks/types.ts';
import { createLogger } from '../../shared/logger.ts';
import { tempDir } from './process.ts';

export const V1 = '2026-01-01T00:00:00.000Z';
export const V2 = '2026-01-01T00:00:01.000Z';

/** An app as the group manager stores it: parsed, with its version. */
export function storedApp(def: Record<string, unknown>, version = V1): AppDefinition {
  const a = parseApp({ cmd: 'sleep 1000', ...def }, { now: version });
  return { ...a, version, versionInfo: { lastScalingAt: version, lastConfigChangeAt: version } };
}

/** An executor that starts nothing: it records launches and kills; `throwOnLaunch` makes launch() throw. */
export class RecordingExecutor implements Executor {
  readonly launched: LaunchSpec[] = [];
  readonly killed: string[] = [];
  throwOnLaunch: string | undefined;
  readonly #listeners = new Set<(u: TaskStatusUpdate) => void>();
  readonly #log: string[];

  constructor(log: string[]) {
    this.#log = log;
  }

  launch(spec: LaunchSpec): void {
    if (this.throwOnLaunch !== undefined) throw new Error(this.throwOnLaunch);
    this.launched.push(spec);
    this.#log.push(`launch ${spec.taskId}`);
  }

  async kill(taskId: string, reason?: string): Promise<void> {
    this.killed.push(taskId);
    this.emit({ taskId, state: 'TASK_KILLED', message: reason ?? 'killed', timestamp: new Date().toISOString() });
  }

  /** Reports a status as the real executor would. */
  emit(u: TaskStatusUpdate): void {
    for (const l of this.#listeners) l(u);
  }

  onStatus(listener: (u: TaskStatusUpdate) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  active(): string[] {
    return this.launched.map((s) => s.taskId).filter((id) => !this.killed.includes(id));
  }

  async killOrphan(): Promise<void> {}

  async shutdown(): Promise<void> {}
}

export interface LauncherRig {
  launcher: Launcher;
  tracker: TaskTracker;
  /** What the launcher asked of its owner and its executor, in order: `persist`, `schedule`, `launch <task>`, `status <task> <state> <message>`. */
  log: string[];
  /** The statuses the launcher decided itself (onStatus). */
  statuses: TaskStatusUpdate[];
  /** The log lines it wrote, parsed. */
  logLines: Record<string, unknown>[];
  stats: { launched: number };
  dataDir: string;
}

export function launcherRig(opts: {
  executor?: Executor;
  log?: string[];
  taskPorts?: [number, number];
  hostname?: string;
  isolation?: TaskIsolation;
  envVarsPrefix?: string;
}): LauncherRig {
  const log = opts.log ?? [];
  const statuses: TaskStatusUpdate[] = [];
  const logLines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line) logLines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const tracker = new TaskTracker(() => {});
  const stats = { launched: 0 };
  const dataDir = tempDir('starmap-launcher-');
  const [taskPortMin, taskPortMax] = opts.taskPorts ?? [33_600, 33_699];
  const launcher = new Launcher({
    tracker,
    executor: opts.executor ?? new RecordingExecutor(log),
    logger: createLogger({ name: 'launcher-test', destination }),
    hostname: opts.hostname ?? 'host-a',
    dataDir,
    taskPortMin,
    taskPortMax,
    envVarsPrefix: opts.envVarsPrefix,
    isolation: opts.isolation,
    stats,
    persist: () => log.push('persist'),
    schedule: () => log.push('schedule'),
    onStatus: (u) => {
      statuses.push(u);
      log.push(`status ${u.taskId} ${u.state} ${u.message}`);
    },
  });
  return { launcher, tracker, log, statuses, logLines, stats, dataDir };
}
