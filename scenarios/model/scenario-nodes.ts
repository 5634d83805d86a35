// The nodes of a scenario's cluster (issue 31): `nodes:` as declared, or one default node, each
// with the labels a kubelet gives a Linux node (types.ts nodeLabels) under its own. Every
// hostNetwork pod is put on a node: the one it names, or the only one; a pod naming a node that
// does not exist, or a hostNetwork pod without `node:` among several nodes, is a problem at its
// field. Pure.
import { DEFAULT_NODE_NAME, nodeLabels, type NodeInfo } from '../../shared/netpol/types.ts';
import type { Problems } from './problems.ts';
import type { PodSpec } from './resolved.ts';
import type { AppDoc, NodeDoc } from './schema.ts';

export function scenarioNodes(declared: readonly NodeDoc[] | undefined, apps: readonly AppDoc[], pods: PodSpec[], problems: Problems): NodeInfo[] {
  const nodes: NodeInfo[] = (declared ?? [{ name: DEFAULT_NODE_NAME }]).map((n) => ({ name: n.name, labels: nodeLabels(n.name, n.labels) }));
  const seen = new Set<string>();
  (declared ?? []).forEach((n, i) => {
    problems.labels(`/nodes/${i}/labels`, n.labels);
    if (seen.has(n.name)) problems.add(`/nodes/${i}/name`, `duplicate node "${n.name}"`);
    seen.add(n.name);
  });
  const names = nodes.map((n) => n.name);
  for (const pod of pods) {
    const app = apps.findIndex((a) => `${a.namespace ?? a.group ?? 'default'}/${a.name}` === pod.id);
    const at = app >= 0 ? `/apps/${app}` : '/manifests';
    if (pod.node !== undefined && !names.includes(pod.node))
      problems.add(`${at}/node`, `no node "${pod.node}" (the nodes are ${names.map((n) => `"${n}"`).join(', ')})`);
    else if (pod.hostNetwork && pod.node === undefined) {
      if (nodes.length === 1) pod.node = nodes[0]!.name;
      else problems.add(`${at}/node`, `a hostNetwork pod among ${nodes.length} nodes must name its node (one of ${names.map((n) => `"${n}"`).join(', ')})`);
    }
  }
  return nodes;
}
