// The orchestrator's entry point to isolation (--isolation=netns): one object that owns the task
// network and the policy engine and keeps the list of isolated tasks itself.
//
//   const iso = await Isolation.open({ prefix, subnet, db, log });   // orchestrator start: preflight, crash cleanup, bridge
//   app.register(policyPlugin, { engine: iso.engine });             // the /v2/starmap/… endpoints
//   const { netns, ip, ports } = await iso.taskStarting({ taskId, appId, labels, groups, hostnames, ports });
//                                                                    // ports: host ports at --publish-address
//   executor.launch({ ...spec, netns });                             // HOST=ip, ipAddresses=[{ipAddress: ip, protocol: 'IPv4'}]
//   await iso.taskStopped(taskId);                                   // after the task's process is gone (terminal state)
//   await iso.close();                                               // orchestrator stop: removes everything
import type { DatabaseSync } from 'node:sqlite';
import type { CleanupReport } from './cleanup.ts';
import { TaskNetwork, type TaskNetworkOptions } from './netns.ts';
import { parseDiscoveryPorts } from './cluster.ts';
import { parseFault, type RuleFault } from './compile.ts';
import { parseTestMode, type IsolationTestMode } from './drop-tags.ts';
import { PolicyEngine, type SyncResult } from './policy-engine.ts';
import type { TaskNetInfo } from './policy.ts';
import { checkIsolationSupport, describeProblems } from './preflight.ts';
import { PublishedPorts } from './published-ports.ts';

export { checkIsolationSupport, describeProblems } from './preflight.ts';
export { cleanupAll, leftovers } from './cleanup.ts';
export { TaskNetwork, DEFAULT_PREFIX, DEFAULT_SUBNET } from './netns.ts';
export { PolicyEngine } from './policy-engine.ts';
export { useCommandRunner } from './exec.ts';
export { policyPlugin, POLICY_PATH, NETWORK_PATH, DROPS_PATH, STARMAP_PATHS } from './policy-routes.ts';
export { NAMESPACES_PATH, PODS_PATH, CHANGES_PATH } from './cluster-routes.ts';
export type { NetworkPolicy, TaskNetInfo } from './policy.ts';

export class IsolationUnavailable extends Error {}

/** The app label that asks for a task address (honoured when it is a free address of the subnet). */
export const ADDRESS_LABEL = 'starmap.address';
/** The app label that makes a task an external with that address (scenarios/model/externals.ts writes it). */
export const EXTERNAL_APP_LABEL = 'starmap.external';

export interface IsolationOptions extends TaskNetworkOptions {
  db?: DatabaseSync;
  log?: (msg: string, err?: unknown) => void;
  /** Test-only fault (default: STARMAP_TEST_FAULT_DROP_RULE from the environment). */
  faultDropRule?: string | undefined;
  /** Test-only switch (default: STARMAP_ISOLATION_TEST_MODE from the environment; docs/isolation.md). */
  testMode?: string | undefined;
  /** --publish-address: where tasks' TCP ports are published on the host (published-ports.ts); none when absent. */
  publishAddress?: string | undefined;
}

/** A task about to start; `ports` are the app's raw ipAddress.discovery.ports (named ports). */
export type TaskIdentity = Omit<TaskNetInfo, 'ip' | 'netns' | 'ports'> & { ports?: unknown };

/** The test-only fault switch: leave one rule out of every ruleset, to prove a broken renderer is caught. */
function faultFrom(text: string | undefined, log: (msg: string) => void): RuleFault | undefined {
  if (!text) return undefined;
  const f = parseFault(text);
  if ('error' in f) throw new Error(f.error);
  log(`isolation: TEST FAULT: STARMAP_TEST_FAULT_DROP_RULE=${text}: rule ${f.index} (${f.direction}) of policy ${f.policy} is left out of every ruleset`);
  return f;
}

/** The test switch: a data plane that accepts everything, or drops through the wrong rule (drop-tags.ts). */
function testModeFrom(text: string | undefined, log: (msg: string) => void): IsolationTestMode | undefined {
  const m = parseTestMode(text);
  if (typeof m === 'object') throw new Error(m.error);
  if (m)
    log(
      `isolation: TEST SWITCH: STARMAP_ISOLATION_TEST_MODE=${m}: ${m === 'accept-all' ? 'rules are rendered but nothing is dropped' : 'every drop is counted under a rule no policy has'}`,
    );
  return m;
}

export class Isolation {
  readonly network: TaskNetwork;
  readonly engine: PolicyEngine;
  readonly #tasks = new Map<string, TaskNetInfo>();
  readonly published: PublishedPorts | undefined;
  /** What the crash cleanup at start removed (a previous run's leftovers). */
  leftovers: CleanupReport | undefined;

  private constructor(opts: IsolationOptions) {
    this.network = new TaskNetwork(opts);
    const log = opts.log ?? (() => undefined);
    if (opts.publishAddress) this.published = new PublishedPorts(opts.publishAddress, log);
    this.engine = new PolicyEngine({
      target: this.network,
      listTasks: () => [...this.#tasks.values()],
      ...(opts.db ? { db: opts.db } : {}),
      log,
      fault: faultFrom('faultDropRule' in opts ? opts.faultDropRule : process.env.STARMAP_TEST_FAULT_DROP_RULE, (m) => log(m, 'a test-only fault is active')),
      testMode: testModeFrom('testMode' in opts ? opts.testMode : process.env.STARMAP_ISOLATION_TEST_MODE, (m) => log(m, 'a test-only switch is active')),
    });
  }

  /** Checks the machine (throws IsolationUnavailable naming what is missing), cleans up after a crash, creates the bridge. */
  static async open(opts: IsolationOptions = {}): Promise<Isolation> {
    const support = await checkIsolationSupport();
    if (!support.ok) throw new IsolationUnavailable(describeProblems(support));
    const iso = new Isolation(opts);
    iso.leftovers = await iso.network.start();
    return iso;
  }

  get gateway(): string {
    return this.network.gateway;
  }

  /**
   * Gives the task its namespace and address and applies every task's rules; call before launching
   * it. Throws (and undoes the attachment) when the task's own rules cannot be applied.
   */
  async taskStarting(task: TaskIdentity): Promise<{ netns: string; ip: string; sync: SyncResult; ports?: number[] }> {
    const wanted = task.labels?.[ADDRESS_LABEL];
    const external = task.labels?.[EXTERNAL_APP_LABEL];
    if (external !== undefined) {
      // A host outside the cluster (netns.ts): no policy applies to it and no selector sees it, so it
      // is kept out of the engine's tasks; its own namespace stays open. Nothing is published.
      const { netns, ip } = await this.network.attachTask(task.taskId, { external, ...(wanted ? { wantedIp: wanted } : {}) });
      return { netns, ip, sync: { applied: [], unchanged: [], failed: [] } };
    }
    // An app may ask for its address (label starmap.address: the scenario runner's deterministic
    // addressing, scenarios/model/addresses.ts); it gets it when free, else the next one.
    const { netns, ip } = await this.network.attachTask(task.taskId, wanted ? { wantedIp: wanted } : {});
    const named = parseDiscoveryPorts(task.ports);
    this.#tasks.set(task.taskId, { ...task, ports: named, netns, ip });
    const sync = await this.engine.sync();
    const failed = sync.failed.find((f) => f.taskId === task.taskId);
    if (failed) {
      // Never start a task whose rules are not in place: it would accept what policies forbid.
      await this.taskStopped(task.taskId);
      throw new Error(`cannot enforce the network policies of task ${task.taskId}: ${failed.error}`);
    }
    if (!this.published) return { netns, ip, sync };
    try {
      const published = await this.published.publish(
        task.taskId,
        ip,
        named.filter((p) => p.protocol === 'TCP').map((p) => p.port),
      );
      return { netns, ip, sync, ports: published.map((p) => p.hostPort) };
    } catch (err) {
      await this.taskStopped(task.taskId);
      throw err;
    }
  }

  /** Removes the task's namespace (killing what still runs in it), frees its address, updates the others' rules. */
  async taskStopped(taskId: string): Promise<SyncResult | undefined> {
    const t = this.#tasks.get(taskId);
    this.#tasks.delete(taskId);
    await this.published?.release(taskId);
    await this.network.detachTask(taskId);
    if (!t) return undefined;
    this.engine.forget(t.netns);
    return this.engine.sync();
  }

  task(taskId: string): TaskNetInfo | undefined {
    return this.#tasks.get(taskId);
  }

  /** Removes every namespace, link, rule and route of this instance. */
  async close(): Promise<CleanupReport> {
    this.#tasks.clear();
    await this.published?.close();
    return this.network.stop();
  }
}
