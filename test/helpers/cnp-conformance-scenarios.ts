// The built-in set `cnp-conformance` (scenarios/builtin/cnp-conformance/<name>.yaml) made from the
// transcription of upstream's suite beside it (<ShortName>.yaml, format: cnp-conformance.ts): one
// scenario per upstream ConformanceTest, so that `scenario check cnp-conformance` judges every
// transcribed check as a cell, and `scenario run` may run it on packets once the orchestrator
// enforces ClusterNetworkPolicy. The scenario files are generated, committed, and held to the
// transcription by test/cnp-conformance-scenarios.test.ts; regenerate with
//   node test/helpers/cnp-conformance-scenarios.ts --write
// What a scenario holds:
// - the namespaces of conformance/base/manifests.yaml with their labels, and its pods (each
//   StatefulSet replica <name>-<n>) as probes with the template's labels and named ports, plus the
//   ports the checks reach; host-network pods are left out (the evaluator judges them, in
//   test/cnp-conformance-computed.test.ts, but a run has no node namespace for them yet), and so
//   are the checks that need them (node peers), named in the scenario's description;
// - `policies:` the test's manifests (NetworkPolicies and admin-tier policies), by id in each step;
// - one step per subtest (a test none of whose checks is modelled: one step, computed) (and a new step wherever upstream changes something between two checks of
//   a subtest), with the policies and namespace labels in force and, as edges, upstream's
//   expectation of each check (connect: allow, else deny).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import {
  conformanceCluster,
  CONFORMANCE_DIR,
  loadConformanceTests,
  upstreamDocuments,
  type Change,
  type Check,
  type ConformanceTest,
} from './cnp-conformance.ts';
import { NAMESPACE_NAME_LABEL, objectId, type Protocol } from '../../shared/netpol/types.ts';

type Doc = Record<string, unknown>;

const CLUSTER_SHORT: Record<string, string> = { ClusterNetworkPolicy: 'cnp', AdminNetworkPolicy: 'anp', BaselineAdminNetworkPolicy: 'banp' };

/** How a scenario of the set refers to a policy: `namespace/name`, or `cnp/<name>` for the admin-tier kinds. */
function policyId(d: Doc): string {
  const meta = d.metadata as { name: string; namespace?: string };
  const short = CLUSTER_SHORT[String(d.kind)];
  return short ? `${short}/${meta.name}` : `${meta.namespace ?? 'default'}/${meta.name}`;
}

const docKey = (d: { kind?: unknown; metadata?: unknown }) => {
  const meta = (d.metadata ?? {}) as { namespace?: string; name?: string };
  return `${String(d.kind)}/${meta.namespace ?? ''}/${meta.name ?? ''}`;
};

/** The scenario's name (a Marathon id segment, at most 32): CNPBaselineTierEgressInlineCIDRPeers -> baseline-egress-cidr-peers. */
export function scenarioName(shortName: string): string {
  const name = shortName
    .replace(/^CNP(Admin|Baseline)Tier/, '$1')
    .replace('InlineCIDR', 'CIDR')
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1-$2')
    .toLowerCase();
  if (!/^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$/.test(name)) throw new Error(`${shortName}: no scenario name (${name})`);
  return name;
}

/** Checks the model cannot have as cells: node peers (a host-network pod's node). */
export function notModelled(check: Check, hostNetwork: ReadonlySet<string>): boolean {
  return check.toNode || hostNetwork.has(check.from) || hostNetwork.has(check.to);
}

/** The scenario document of one transcribed test. */
export function conformanceScenario(test: ConformanceTest): Doc {
  const cluster = conformanceCluster();
  const hostNetwork = new Set(cluster.pods.filter((p) => p.hostNetwork).map(objectId));
  const pods = cluster.pods.filter((p) => !p.hostNetwork);
  const checks = test.subtests.flatMap((s) => s.checks);
  const modelled = checks.filter((c) => !notModelled(c, hostNetwork));
  const skipped = checks.filter((c) => notModelled(c, hostNetwork));

  // The test's manifests, then its changes, as upstream applies them.
  const initial = new Map<string, Doc>();
  for (const m of test.manifests) for (const d of upstreamDocuments(m)) initial.set(docKey(d), d);
  const docs = new Map(initial);
  const nsLabels = new Map(cluster.namespaces.map((n) => [n.name, n.labels]));
  const apply = (c: Change) => {
    if ('apply' in c) docs.set(docKey(c.apply), c.apply);
    else if ('delete' in c) {
      if (!docs.delete(docKey({ kind: c.delete.kind, metadata: c.delete })))
        throw new Error(`${test.shortName}: delete of a missing ${c.delete.kind} ${c.delete.name}`);
    } else nsLabels.set(c.namespaceLabels.namespace, { ...c.namespaceLabels.labels, [NAMESPACE_NAME_LABEL]: c.namespaceLabels.namespace });
  };

  const steps: Doc[] = [];
  const names = new Set<string>();
  let emittedLabels = new Map(nsLabels);
  const stepOf = (name: string, group: Check[]) => {
    const judged = group.filter((c) => !notModelled(c, hostNetwork));
    if (judged.length === 0) return;
    let unique = name.slice(0, 120);
    for (let n = 2; names.has(unique); n++) unique = `${name.slice(0, 115)} (${n})`;
    names.add(unique);
    const edges = new Map<string, { from: string; to: string; port: string; expect: string }>();
    for (const c of judged) {
      const port = `${c.port}/${c.protocol}`;
      const key = `${c.from}>${c.to}@${port}`;
      const expect = c.connect ? 'allow' : 'deny';
      if (edges.has(key) && edges.get(key)!.expect !== expect) throw new Error(`${c.id}: ${key} expected both ways in one step`);
      edges.set(key, { from: c.from, to: c.to, port, expect });
    }
    const labels = Object.fromEntries(
      [...nsLabels]
        .filter(([ns, l]) => JSON.stringify(emittedLabels.get(ns)) !== JSON.stringify(l))
        .map(([ns, l]) => [ns, Object.fromEntries(Object.entries(l).filter(([k]) => k !== NAMESPACE_NAME_LABEL))]),
    );
    emittedLabels = new Map(nsLabels);
    steps.push({
      name: unique,
      description: `upstream: ${test.shortName} t.Run(${JSON.stringify(name)}), checks ${judged.map((c) => c.id.split('/').slice(1).join('/')).join(', ')}`,
      policies: [...docs.values()].map((d) => (initial.get(docKey(d)) === d ? policyId(d) : d)),
      ...(Object.keys(labels).length > 0 ? { labels: { namespaces: labels } } : {}),
      expect: { edges: [...edges.values()] },
    });
  };
  for (const sub of test.subtests) {
    for (const c of sub.changes) apply(c);
    let group: Check[] = [];
    let part = 1;
    for (const check of sub.checks) {
      if (check.changes.length > 0 && group.length > 0) {
        stepOf(part === 1 ? sub.name : `${sub.name} / part ${part}`, group);
        group = [];
        part++;
      }
      for (const c of check.changes) apply(c);
      group.push(check);
    }
    stepOf(part === 1 ? sub.name : `${sub.name} / part ${part}`, group);
  }

  // A test none of whose checks the model has (node peers) still says what its policies compute.
  if (steps.length === 0)
    steps.push({
      name: 'not modelled: node peers',
      description: `upstream: ${test.shortName}: every check needs a node peer (a host-network pod's node), which the model has not yet`,
      policies: [...initial.values()].map(policyId),
      expect: 'computed',
    });
  const targets = new Map<string, Set<string>>();
  const reached = new Map<string, Map<string, { port: number; protocol: Protocol }>>();
  for (const c of modelled) {
    targets.set(c.from, (targets.get(c.from) ?? new Set()).add(`${c.to}:${c.port}/${c.protocol.toLowerCase()}`));
    const m = reached.get(c.to) ?? new Map();
    m.set(`${c.port}/${c.protocol}`, { port: c.port, protocol: c.protocol });
    reached.set(c.to, m);
  }
  return {
    name: scenarioName(test.shortName),
    description: `${test.shortName}: ${test.description} (upstream kubernetes-sigs/network-policy-api@${test.commit} ${test.source}; features: ${test.features.join(', ')})${
      skipped.length > 0 ? `; not modelled (node peers: the model has no nodes yet): ${skipped.map((c) => c.id).join(', ')}` : ''
    }`,
    namespaces: Object.fromEntries(
      cluster.namespaces.map((n) => [n.name, { labels: Object.fromEntries(Object.entries(n.labels).filter(([k]) => k !== NAMESPACE_NAME_LABEL)) }]),
    ),
    apps: pods.map((p) => {
      const named = p.ports.map((np) => ({ name: np.name, port: np.port, protocol: np.protocol }));
      const extra = [...(reached.get(objectId(p))?.values() ?? [])]
        .filter((r) => !named.some((np) => np.port === r.port && np.protocol === r.protocol))
        .sort((a, b) => a.port - b.port || (a.protocol < b.protocol ? -1 : 1));
      return {
        name: p.name,
        kind: 'probe',
        namespace: p.namespace,
        short: `${p.name.split('-')[0]}-${p.name.split('-').at(-1)}`, // harry-potter-1 -> harry-1 (tables stay narrow)
        labels: p.labels,
        ports: [...named, ...extra],
        probes: [...(targets.get(objectId(p)) ?? [])].sort(),
      };
    }),
    policies: [...initial.values()],
    steps,
  };
}

/** The file name and text of each scenario of the set. */
export function conformanceScenarioFiles(): { file: string; text: string }[] {
  return loadConformanceTests().map((t) => ({
    file: `${scenarioName(t.shortName)}.yaml`,
    text: `# Upstream's ClusterNetworkPolicy conformance test ${t.shortName} as a Starmap scenario (docs/cluster-policies.md).\n# Generated from ${t.shortName}.yaml (the transcription) by test/helpers/cnp-conformance-scenarios.ts: do not edit.\n${stringify(
      conformanceScenario(t),
      { lineWidth: 0 },
    )}`,
  }));
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--write'))
  for (const f of conformanceScenarioFiles()) writeFileSync(join(CONFORMANCE_DIR, f.file), f.text);
