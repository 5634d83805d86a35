// Copies the validation schema of upstream's policy CRDs (kubernetes-sigs/network-policy-api,
// config/crd/experimental/*.yaml) into shared/netpol/crd/, without descriptions, so that Starmap
// validates ClusterNetworkPolicy (and the v1alpha1 AdminNetworkPolicy and
// BaselineAdminNetworkPolicy) with exactly the schema the API server uses.
//   node scripts/update-policy-crds.ts <crd.yaml> <source note> [<crd.yaml> <source note> ...]
// The note (repository, tag or commit, path) is kept in the file's $comment.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).flatMap(([k, v]) => (k === 'description' ? [] : [[k, strip(v)]])));
}

const args = process.argv.slice(2);
if (args.length === 0 || args.length % 2 !== 0) {
  console.error('usage: node scripts/update-policy-crds.ts <crd.yaml> <source note> [...]');
  process.exit(2);
}
for (let i = 0; i < args.length; i += 2) {
  const crd = parse(readFileSync(args[i]!, 'utf8')) as {
    spec: { group: string; names: { kind: string; plural: string }; scope: string; versions: { name: string; schema: { openAPIV3Schema: unknown } }[] };
  };
  const version = crd.spec.versions.at(-1)!;
  const out = {
    $comment: `${crd.spec.names.kind} ${crd.spec.group}/${version.name}, from ${args[i + 1]} (descriptions removed by scripts/update-policy-crds.ts)`,
    kind: crd.spec.names.kind,
    apiVersion: `${crd.spec.group}/${version.name}`,
    scope: crd.spec.scope,
    schema: strip(version.schema.openAPIV3Schema),
  };
  const file = join(import.meta.dirname, '..', 'shared', 'netpol', 'crd', `${crd.spec.names.plural}.${version.name}.json`);
  writeFileSync(file, `${JSON.stringify(out, null, 1)}\n`);
  console.log(`wrote ${file}`);
}
