// Applying a step's policies. On Starmap's orchestrator they go through its policy extension
// endpoint and are enforced with nftables in the task namespaces. Anywhere else (a real Marathon
// on DC/OS with Calico, say) the runner cannot apply them itself: a hook command given with
// --policy-hook receives a JSON file with the step's policies and applies them there.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { POLICY_PATH } from '../orchestrator/isolation/policy-plugin.ts';
import type { PolicyDoc } from './model.ts';
import { OrchestratorError, type OrchestratorClient } from './orchestrator-client.ts';

/** Starmap's policy endpoint (the orchestrator's own constant): an extension path that no Marathon path uses. */
export { POLICY_PATH };

export interface PolicyApplier {
  readonly description: string;
  /** Makes exactly `active` the set of policies in force. */
  apply(step: string, active: Record<string, PolicyDoc>, scope: ScenarioScope): Promise<void>;
  clear(scope: ScenarioScope): Promise<void>;
}

export interface ScenarioScope {
  /** The scenario's group id, e.g. /starmap/stars: policies select apps under it only. */
  groupId: string;
  /** Prefix of policy ids, so that two scenarios never touch each other's policies. */
  prefix: string;
}

/** The selector of a scenario policy in the orchestrator's terms (labels plus the scenario label). */
function toEndpointPolicy(id: string, p: PolicyDoc, scope: ScenarioScope): Record<string, unknown> {
  const sel = (s: { labels?: Record<string, string>; group?: string }) => ({
    labels: { ...(s.labels ?? {}), 'starmap.scenario': scope.prefix, ...(s.group ? { 'starmap.group': s.group } : {}) },
  });
  return {
    id,
    selector: sel(p.selector),
    ingress: p.ingress.map((r) => ({
      ...(r.from ? { from: r.from.map(sel) } : {}),
      ...(r.ports ? { ports: r.ports.map((x) => ({ port: x.port, protocol: x.protocol ?? 'tcp' })) } : {}),
    })),
  };
}

export class EndpointPolicies implements PolicyApplier {
  readonly description = `the orchestrator's ${POLICY_PATH} endpoint`;
  readonly #client: OrchestratorClient;
  constructor(client: OrchestratorClient) {
    this.#client = client;
  }

  async #ours(scope: ScenarioScope): Promise<string[]> {
    const res = (await this.#client.call('GET', POLICY_PATH)) as { policies: { id: string }[] };
    return res.policies.map((p) => p.id).filter((id) => id.startsWith(`${scope.prefix}.`));
  }

  async apply(_step: string, active: Record<string, PolicyDoc>, scope: ScenarioScope): Promise<void> {
    const wanted = new Map(Object.entries(active).map(([name, p]) => [`${scope.prefix}.${name}`, p]));
    for (const [id, p] of wanted) await this.#client.call('PUT', `${POLICY_PATH}/${encodeURIComponent(id)}`, toEndpointPolicy(id, p, scope));
    for (const id of await this.#ours(scope)) if (!wanted.has(id)) await this.#client.call('DELETE', `${POLICY_PATH}/${encodeURIComponent(id)}`);
  }

  async clear(scope: ScenarioScope): Promise<void> {
    for (const id of await this.#ours(scope)) {
      try {
        await this.#client.call('DELETE', `${POLICY_PATH}/${encodeURIComponent(id)}`);
      } catch (err) {
        if (!(err instanceof OrchestratorError && err.status === 404)) throw err;
      }
    }
  }
}

/** Runs `<hook> <file>` where file holds {scenario, step, policies}; the hook applies them. */
export class HookPolicies implements PolicyApplier {
  readonly description: string;
  readonly #hook: string;
  readonly #workDir: string;
  constructor(hook: string, workDir: string) {
    this.#hook = hook;
    this.#workDir = workDir;
    this.description = `the hook command ${JSON.stringify(hook)}`;
  }

  async apply(step: string, active: Record<string, PolicyDoc>, scope: ScenarioScope): Promise<void> {
    const file = join(this.#workDir, `policies-${step}.json`);
    writeFileSync(file, JSON.stringify({ scenario: scope.prefix, group: scope.groupId, step, policies: active }, null, 2));
    await promisify(execFile)('/bin/sh', ['-c', `${this.#hook} "$1"`, 'hook', file], { timeout: 120_000 });
  }

  async clear(scope: ScenarioScope): Promise<void> {
    await this.apply('cleanup', {}, scope);
  }
}

/** When nothing can apply policies (loopback layout): only steps without policies can pass. */
export class NoPolicies implements PolicyApplier {
  readonly description = 'nothing (no isolation: policies are not enforced)';
  async apply(): Promise<void> {}
  async clear(): Promise<void> {}
}
