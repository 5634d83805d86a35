// The README.md of an export (run/kubernetes-manifests.ts): the kubectl and scenario observe commands
// for this scenario, in order, and the notes of what the export could not carry over. Pure.
import { VERSION } from '../../shared/version.ts';
import type { ResolvedScenario } from '../model/resolve.ts';
import { OBSERVER, OBSERVER_PORT, SCENARIO_LABEL, type ExportedStep } from './kubernetes-manifests.ts';

/** README.md of an export: the commands for this scenario, and what could not be carried over. */
export function exportReadme(
  s: ResolvedScenario,
  steps: readonly ExportedStep[],
  obsNs: string,
  notes: readonly string[],
  system: readonly { namespace: string; labels: Record<string, string> }[],
): string {
  const lines = [
    `# ${s.name} on a Kubernetes cluster`,
    '',
    `Written by \`scenario export\` (Starmap ${VERSION}) from ${s.file}; docs/kubernetes.md says more.`,
    `Every object carries the label \`${SCENARIO_LABEL}=${s.name}\`.`,
    '',
    '```sh',
    'kubectl apply -f .        # namespaces, pods, the observer',
    ...system.map(
      (n) =>
        `kubectl label namespace ${n.namespace} --overwrite ${Object.entries(n.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`,
    ),
    `kubectl wait --for=condition=Ready pod -A -l ${SCENARIO_LABEL}=${s.name} --timeout=180s`,
    `kubectl port-forward -n ${obsNs} service/${OBSERVER} ${OBSERVER_PORT} &`,
    ...steps.flatMap((st, i) => [
      `kubectl apply -f ${st.dir}/      # step ${i + 1}: ${st.name}${st.templated ? ` (and ${st.dir}/needs-addresses.yaml.tmpl with the pods' addresses filled in)` : ''}`,
      `scenario observe ${s.file} --collector http://127.0.0.1:${OBSERVER_PORT} --step ${st.name}`,
    ]),
    `kubectl delete pod,deployment,service,configmap,networkpolicy -A -l ${SCENARIO_LABEL}=${s.name}`,
    `kubectl delete clusternetworkpolicy -l ${SCENARIO_LABEL}=${s.name}; kubectl delete namespace -l ${SCENARIO_LABEL}=${s.name}`,
    '```',
    '',
    'Between steps, delete the policies of the step before that the next one does not list (or let `scenario run --kubernetes` do all of this).',
  ];
  if (notes.length > 0) lines.push('', 'Notes:', ...notes.map((n) => `- ${n}`));
  return `${lines.join('\n')}\n`;
}
