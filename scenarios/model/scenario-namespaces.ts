// The namespaces of a scenario: declared (`namespaces:`, labels checked), the manifests', the
// model's and the pods' (externals have none); policies add theirs later through `ensure`. Every
// namespace carries its name label. Pure.
import { NAMESPACE_NAME_LABEL } from '../../shared/netpol/types.ts';
import type { Problems } from './problems.ts';
import type { PodSpec } from './resolved.ts';
import type { ManifestModel } from './scenario-manifests.ts';
import type { ScenarioDoc } from './schema.ts';

export interface ScenarioNamespaces {
  /** Name → labels (with the name label), in the order they became known. */
  declared: Map<string, Record<string, string>>;
  /** Adds a namespace with only its name label, unless known. */
  ensure(name: string): void;
}

export function scenarioNamespaces(
  doc: ScenarioDoc,
  fromManifests: ManifestModel | undefined,
  pods: readonly PodSpec[],
  problems: Problems,
): ScenarioNamespaces {
  const declared = new Map<string, Record<string, string>>();
  for (const [name, ns] of Object.entries(doc.namespaces ?? {})) {
    problems.labels(`/namespaces/${name}/labels`, ns.labels);
    const given = ns.labels?.[NAMESPACE_NAME_LABEL];
    if (given !== undefined && given !== name) problems.add(`/namespaces/${name}/labels`, `${NAMESPACE_NAME_LABEL} is always the namespace's name ("${name}")`);
    declared.set(name, { ...(ns.labels ?? {}), [NAMESPACE_NAME_LABEL]: name });
  }
  const ensureNs = (name: string) => declared.has(name) || declared.set(name, { [NAMESPACE_NAME_LABEL]: name });
  for (const [name, labels] of fromManifests?.set.namespaces ?? []) if (!declared.has(name)) declared.set(name, labels);
  for (const ns of doc.model?.namespaces ?? []) ensureNs(ns);
  for (const p of pods) if (p.external === undefined) ensureNs(p.namespace);
  return { declared, ensure: ensureNs };
}
