// Runs a scenario end to end against an orchestrator: deploys the apps as one group, follows the
// deployment through the event stream, applies each step's policies, waits until the observed
// reachability settles (or a deadline passes), and reports expected, observed and mismatches.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { groupDocument, groupId, planApps, type PlannedApp, type Programs } from './deploy-plan.ts';
import { edgeKey, expectedVerdicts, renderTables, scenarioEdges, type Observation } from './matrix.ts';
import type { ScenarioDoc } from './model.ts';
import { observe, type Located } from './observe.ts';
import type { OrchestratorClient, Task } from './orchestrator-client.ts';
import type { PolicyApplier } from './policies.ts';
import { stepText, type ScenarioResult, type StepResult } from './report.ts';
import { settle } from './settle.ts';

export interface RunOptions {
  scenario: ScenarioDoc;
  client: OrchestratorClient;
  policies: PolicyApplier;
  programs: Programs;
  isolated: boolean;
  /** loopback layout: free host ports, one per app. */
  ports?: Map<string, number>;
  workDir: string;
  /** Seconds a step may take to settle (default: 10 probe cycles + 10 s). */
  stepTimeoutSeconds?: number;
  /** Seconds to linger after each settled step (so people can watch the UI). */
  pauseSeconds?: number;
  /** Leave the apps deployed at the end. */
  keep?: boolean;
  /** After the last step, keep everything running until `signal` aborts (demos). */
  hold?: boolean;
  log: (line: string) => void;
  /** Progress lines that overwrite each other on a terminal. */
  progress?: (line: string) => void;
  /** Called once the apps are up, with where each one is reached (the demo prints the UI address). */
  onDeployed?: (located: Located[]) => void;
  signal?: AbortSignal;
}

function baseFor(task: Task, app: PlannedApp, isolated: boolean): string | undefined {
  if (isolated) {
    const ip = task.ipAddresses?.find((a) => a.protocol === 'IPv4')?.ipAddress ?? task.ipAddresses?.[0]?.ipAddress;
    return ip ? `http://${ip.includes(':') ? `[${ip}]` : ip}:${app.port}` : undefined;
  }
  const port = task.ports[0] ?? app.port;
  return `http://127.0.0.1:${port}`;
}

async function deploy(opts: RunOptions, plan: PlannedApp[]): Promise<Located[]> {
  const { client, scenario: s, log } = opts;
  const group = groupDocument(s, plan) as { id: string };
  // Follow the deployment through the event stream (and poll /v2/deployments as a fallback).
  let outcome: { ok: boolean; reason?: string } | undefined;
  let deploymentId: string | undefined;
  const events: { eventType: string; id?: unknown }[] = [];
  const stream = await client
    .events(['deployment_success', 'deployment_failed', 'status_update_event'], (e) => {
      events.push(e);
      if (e.eventType === 'status_update_event') opts.progress?.(`  ${String(e.appId)}: ${String(e.taskStatus)}`);
      if (deploymentId && e.id === deploymentId) outcome = { ok: e.eventType === 'deployment_success', reason: e.eventType };
    })
    .catch((err: unknown) => {
      log(`  (event stream unavailable: ${(err as Error).message}; polling /v2/deployments)`);
      return undefined;
    });
  try {
    deploymentId = await client.putGroup(group);
    log(`deploying ${group.id} (deployment ${deploymentId})`);
    for (const e of events) if (e.id === deploymentId) outcome = { ok: e.eventType === 'deployment_success' };
    // Gone from /v2/deployments without an event seen: it finished.
    await client.waitDeployment(deploymentId, 120_000, { done: () => outcome !== undefined, ...(opts.signal ? { signal: opts.signal } : {}) });
    outcome ??= { ok: true };
    if (!outcome.ok) throw new Error(`deployment ${deploymentId} failed`);
  } finally {
    stream?.stop();
  }
  const located: Located[] = [];
  for (const app of plan) {
    const tasks = await client.tasks(app.marathonId);
    const running = tasks.find((t) => (t.state ?? 'TASK_RUNNING') === 'TASK_RUNNING') ?? tasks[0];
    const base = running ? baseFor(running, app, opts.isolated) : undefined;
    if (!base) throw new Error(`${app.marathonId} has no running task with an address`);
    located.push({ app, base, targets: app.targets });
  }
  return located;
}

export async function runScenario(opts: RunOptions): Promise<ScenarioResult> {
  const { scenario: s, log } = opts;
  const startedAt = new Date().toISOString();
  const result: ScenarioResult = { scenario: s.name, ...(s.description ? { description: s.description } : {}), isolated: opts.isolated, startedAt, finishedAt: startedAt, passed: false, steps: [] };
  const scope = { groupId: groupId(s), prefix: s.name };
  mkdirSync(opts.workDir, { recursive: true });
  const plan = planApps(s, opts.programs, { isolated: opts.isolated, ...(opts.ports ? { ports: opts.ports } : {}) }, (content) => {
    const f = join(opts.workDir, 'collector-resources.json');
    writeFileSync(f, content);
    return f;
  });
  const edges = scenarioEdges(s);
  const cycle = (s.probeSeconds ?? 1) + (s.timeoutSeconds ?? 0.5);
  const stepTimeoutMs = (opts.stepTimeoutSeconds ?? cycle * 10 + 10) * 1000;
  try {
    await opts.policies.clear(scope);
    const located = await deploy(opts, plan);
    opts.onDeployed?.(located);
    log(`apps running: ${located.map((l) => `${l.app.short}=${l.base}`).join(' ')}`);
    let previous: Map<string, Observation> | undefined;
    for (const [i, step] of s.steps.entries()) {
      if (opts.signal?.aborted) throw new Error('interrupted');
      const expected = expectedVerdicts(s, step, i);
      const active = Object.fromEntries(step.policies.map((p) => [p, s.policies![p]!]));
      log(`\nstep ${i + 1}/${s.steps.length} ${step.name}${step.description ? `: ${step.description}` : ''} (policies: ${step.policies.join(', ') || 'none'})`);
      await opts.policies.apply(step.name, active, scope);
      const appliedAt = Date.now();
      const settled = await settle({
        edges,
        expected,
        observe: () => observe(located),
        appliedAt,
        deadlineMs: step.timeoutSeconds ? step.timeoutSeconds * 1000 : stepTimeoutMs,
        holdMs: cycle * 1000,
        ...(previous ? { previous } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
        onProgress: (cmp, ms) => opts.progress?.(`  waiting ${(ms / 1000).toFixed(1)} s: ${cmp.wrong} wrong, ${cmp.noValue} no value, ${cmp.correct} correct`),
      });
      if (opts.signal?.aborted) throw new Error('interrupted');
      const { comparison } = settled;
      const stepResult: StepResult = {
        name: step.name,
        ...(step.description ? { description: step.description } : {}),
        passed: comparison.wrong === 0 && comparison.noValue === 0,
        durationMs: settled.durationMs,
        settled: settled.settled,
        comparison,
        tables: renderTables(s, expected, settled.observed, comparison),
        edges: edges.map((e) => {
          const k = edgeKey(e.from, e.to);
          const o = settled.observed.get(k);
          return { from: e.from, to: e.to, expected: expected.get(k) ?? null, observed: o?.verdict ?? 'unknown', reason: o?.reason ?? null, changedAfterMs: settled.changedAfterMs.get(k) ?? null };
        }),
      };
      result.steps.push(stepResult);
      log(stepText(i, stepResult));
      previous = settled.observed;
      if (opts.pauseSeconds && i < s.steps.length - 1) {
        log(`  (next step in ${opts.pauseSeconds} s)`);
        await new Promise<void>((res) => {
          const t = setTimeout(res, opts.pauseSeconds! * 1000);
          opts.signal?.addEventListener('abort', () => (clearTimeout(t), res()), { once: true });
        });
      }
    }
    result.passed = result.steps.every((st) => st.passed);
    if (opts.hold && !opts.signal?.aborted) {
      log('\nall steps done; everything keeps running so you can look around. Ctrl-C stops it and cleans up.');
      await new Promise<void>((res) => opts.signal?.addEventListener('abort', () => res(), { once: true }));
    }
  } catch (err) {
    result.error = (err as Error).message;
    if (!opts.signal?.aborted) log(`error: ${result.error}`);
  } finally {
    if (!opts.keep) {
      try {
        await opts.policies.clear(scope);
        const id = await opts.client.deleteGroup(scope.groupId);
        if (id) await opts.client.waitDeployment(id, 60_000);
      } catch (err) {
        log(`cleanup: ${(err as Error).message}`);
      }
    }
    result.finishedAt = new Date().toISOString();
  }
  return result;
}

