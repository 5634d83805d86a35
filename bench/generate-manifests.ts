// `node bench/generate-manifests.ts --pods 10000 --policies 1000 --seed 1 --out DIR`: a realistic
// manifest set of a given size, seeded (bench/lib/cluster-gen.ts: shared namespaces and one per
// team, Deployments from a catalogue with shared labels, a default deny and allow policies per
// team namespace), written as one YAML file per namespace (Namespace, Deployments, NetworkPolicies)
// for `scenario check DIR --replicas` (the Deployments' replicas are the pods), with
// --admin-policies N a cluster-policies.yaml of N ClusterNetworkPolicies. The same arguments
// always write the same files. Exit 2 on a bad argument.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { clusterYaml, generateCluster, type ClusterSize, type GeneratedCluster } from './lib/cluster-gen.ts';

/** Namespaces for a pod count when none is given: as the scale bench has them (20 pods a namespace, 4 at least). */
export const defaultNamespaces = (pods: number): number => Math.max(4, Math.round(pods / 20));

/** The manifest files of a generated cluster: file name → YAML, one per namespace. */
export function manifestFiles(c: GeneratedCluster): Map<string, string> {
  const out = new Map<string, string>();
  for (const ns of c.namespaces) {
    const part: GeneratedCluster = {
      namespaces: [ns],
      deployments: c.deployments.filter((d) => d.namespace === ns.name),
      pods: [],
      policies: c.policies.filter((p) => p.metadata.namespace === ns.name),
      adminPolicies: [],
    };
    out.set(`${ns.name}.yaml`, clusterYaml(part));
  }
  if (c.adminPolicies.length > 0)
    out.set('cluster-policies.yaml', clusterYaml({ namespaces: [], deployments: [], pods: [], policies: [], adminPolicies: c.adminPolicies }));
  return out;
}

/** Writes the set and returns what it holds. */
export function generateManifests(
  dir: string,
  seed: number,
  size: ClusterSize,
): { files: number; pods: number; policies: number; adminPolicies: number; namespaces: number } {
  const c = generateCluster(seed, size);
  mkdirSync(dir, { recursive: true });
  const files = manifestFiles(c);
  for (const [name, text] of files) writeFileSync(join(dir, name), text);
  return { files: files.size, pods: c.pods.length, policies: c.policies.length, adminPolicies: c.adminPolicies.length, namespaces: c.namespaces.length };
}

function main(): void {
  const usage = 'usage: node bench/generate-manifests.ts --pods N --policies N [--namespaces N] [--admin-policies N] [--seed N] --out DIR';
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      options: {
        pods: { type: 'string' },
        policies: { type: 'string' },
        namespaces: { type: 'string' },
        'admin-policies': { type: 'string' },
        seed: { type: 'string' },
        out: { type: 'string' },
      },
      strict: true,
    }));
  } catch (err) {
    process.stderr.write(`generate-manifests: ${(err as Error).message}\n${usage}\n`);
    process.exit(2);
  }
  const count = (flag: string, min: number, fallback?: number): number => {
    const v = values[flag];
    if (v === undefined && fallback !== undefined) return fallback;
    const n = Number(v);
    if (v === undefined || !Number.isInteger(n) || n < min) {
      process.stderr.write(
        `generate-manifests: --${flag}: ${v === undefined ? 'missing' : `${JSON.stringify(v)} is not a whole number`} (at least ${min})\n${usage}\n`,
      );
      process.exit(2);
    }
    return n;
  };
  const pods = count('pods', 1);
  const size: ClusterSize = {
    pods,
    policies: count('policies', 0),
    namespaces: count('namespaces', 4, defaultNamespaces(pods)),
    adminPolicies: count('admin-policies', 0, 0),
  };
  const seed = count('seed', 0, 1);
  if (!values.out) {
    process.stderr.write(`generate-manifests: --out: missing\n${usage}\n`);
    process.exit(2);
  }
  const r = generateManifests(values.out, seed, size);
  process.stdout.write(
    `${values.out}: ${r.files} files, ${r.namespaces} namespaces, ${r.pods} pods (with --replicas), ${r.policies} NetworkPolicies, ${r.adminPolicies} ClusterNetworkPolicies (seed ${seed})\n`,
  );
}

if (import.meta.filename === process.argv[1]) main();
