// Deploys the planned group through the orchestrator, follows the deployment on the event stream
// (polling /v2/deployments as a fallback), and finds where each pod runs: the address the runner
// reads it at and, with isolation, the pod's own address (for ipBlocks and the drop counters).
import { groupDocument, type PlannedApp } from './deploy-plan.ts';
import type { Located } from './observe.ts';
import type { OrchestratorClient, Task } from './orchestrator-client.ts';
import type { ResolvedScenario } from '../model/resolve.ts';

export interface Deployed {
  located: Located[];
  /** `ns/pod` → its address (isolated layout only). */
  ips: Map<string, string>;
}

function addressOf(task: Task): string | undefined {
  return task.ipAddresses?.find((a) => a.protocol === 'IPv4')?.ipAddress ?? task.ipAddresses?.[0]?.ipAddress;
}

/**
 * The host port the orchestrator published the app's API port on (--publish-address): the task's
 * `ports` follow its TCP discovery ports in order, each number once. An orchestrator that
 * publishes nothing (or another Marathon) reports none.
 */
export function publishedPort(app: PlannedApp, task: Pick<Task, 'ports'>): number | undefined {
  const tcp = [...new Set(app.pod.ports.filter((p) => p.protocol === 'TCP').map((p) => p.port))];
  const i = tcp.indexOf(app.port);
  return i < 0 ? undefined : task.ports?.[i];
}

export async function deploy(
  client: OrchestratorClient,
  s: ResolvedScenario,
  plan: PlannedApp[],
  opts: { isolated: boolean; log: (line: string) => void; progress?: (line: string) => void; signal?: AbortSignal },
): Promise<Deployed> {
  const group = groupDocument(s, plan) as { id: string };
  let outcome: { ok: boolean; reason?: string } | undefined;
  let deploymentId: string | undefined;
  const events: { eventType: string; id?: unknown }[] = [];
  // A pod that keeps failing never lets the deployment finish: say which, after a few tries,
  // rather than waiting out the deadline.
  const failures = new Map<string, number>();
  const stream = await client
    .events(['deployment_success', 'deployment_failed', 'status_update_event'], (e) => {
      events.push(e);
      if (e.eventType === 'status_update_event') {
        opts.progress?.(`  ${String(e.appId)}: ${String(e.taskStatus)}`);
        if (e.taskStatus === 'TASK_FAILED' || e.taskStatus === 'TASK_ERROR') {
          const n = (failures.get(String(e.appId)) ?? 0) + 1;
          failures.set(String(e.appId), n);
          if (n >= 3)
            outcome ??= { ok: false, reason: `${String(e.appId)} failed ${n} times${e.message ? ` (last: ${String(e.message).slice(0, 300)})` : ''}` };
        }
      }
      if (deploymentId && e.id === deploymentId) outcome = { ok: e.eventType === 'deployment_success' };
    })
    .catch((err: unknown) => {
      opts.log(`  (event stream unavailable: ${(err as Error).message}; polling /v2/deployments)`);
      return undefined;
    });
  try {
    deploymentId = await client.putGroup(group);
    opts.log(`deploying ${group.id} (deployment ${deploymentId})`);
    for (const e of events) if (e.id === deploymentId) outcome = { ok: e.eventType === 'deployment_success' };
    // Gone from /v2/deployments without an event seen: it finished.
    await client.waitDeployment(deploymentId, 120_000, { done: () => outcome !== undefined, ...(opts.signal ? { signal: opts.signal } : {}) });
    outcome ??= { ok: true };
    if (!outcome.ok) throw new Error(`deployment ${deploymentId} failed${outcome.reason ? `: ${outcome.reason}` : ''}`);
  } finally {
    stream?.stop();
  }
  const located: Located[] = [];
  const ips = new Map<string, string>();
  for (const app of plan) {
    const tasks = await client.tasks(app.marathonId);
    const running = tasks.find((t) => (t.state ?? 'TASK_RUNNING') === 'TASK_RUNNING') ?? tasks[0];
    const ip = opts.isolated && running ? addressOf(running) : undefined;
    const base = !running
      ? undefined
      : opts.isolated
        ? ip
          ? `http://${ip.includes(':') ? `[${ip}]` : ip}:${app.port}`
          : undefined
        : `http://127.0.0.1:${running.ports[0] ?? app.port}`;
    if (!base) throw new Error(`${app.marathonId} has no running task with an address`);
    // An external is reached at its subnet address (its API) but is, to the pods, its own address.
    if (ip) ips.set(app.pod.id, app.pod.external ?? ip);
    const published = opts.isolated && running ? publishedPort(app, running) : undefined;
    located.push({ app, base, ...(published ? { published } : {}) });
  }
  return { located, ips };
}
