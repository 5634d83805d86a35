// `scenario export`: a resolved scenario as plain Kubernetes manifests (docs/kubernetes.md). Pure:
// the caller writes the files. About 430 lines: every object of an export is built here, in one
// place, so that the names, selectors and labels they share agree.
//   00-namespaces.yaml   the scenario's namespaces with their labels (not default, kube-*: those
//                        exist in every cluster and are never created or deleted; their labels are
//                        said in README.md and set by `run --kubernetes` with kubectl label)
//   01-pods.yaml         per namespace a headless Service `starmap-pods`, and one Pod per probe of
//                        the model (hostname + subdomain: it is `<pod>.starmap-pods.<ns>.svc` in
//                        the cluster's DNS as soon as it is scheduled, before it is ready); a
//                        collector of the model as a Deployment (one replica, the same DNS name), its
//                        resources in a ConfigMap, and a Service; the same arguments as the
//                        orchestrator's tasks (run/deploy-plan.ts, its isolated layout with these names)
//   02-observer.yaml     the observer: a collector in its own namespace that fetches every probe's
//                        /status and every model collector's /responses; `scenario observe` reads
//                        its /responses. On the host network, like a kubelet: Calico and Cilium let
//                        a node's own traffic into its pods whatever the policies, so the policies
//                        under test do not hide the probes from it (on one node; docs say the rest)
//   step-N/step.yaml     a ConfigMap starmap-step in the observer's namespace: the step in force
//   step-N/policies.yaml the NetworkPolicies and ClusterNetworkPolicies in force in step N
//   step-N/labels.yaml   the namespaces and pods whose labels step N changes (from step N-1's)
//   step-N/needs-addresses.yaml.tmpl  policies with {{ip ns/pod}} ipBlocks: pod addresses are
//                        known only once scheduled; kubectl apply -f step-N/ skips the file, and
//                        run --kubernetes fills the addresses in and applies it
// Every object carries the label starmap.scenario=<name> (cleanup selects on it); no RBAC (nothing
// calls the API server; the pods mount no service account token).
import { stringify } from 'yaml';
import { VERSION } from '../../shared/version.ts';
import { dns1123LabelErrors, labelValueErrors } from '../../shared/netpol/names.ts';
import { cidrTexts, hasTemplate } from '../../shared/netpol/ip-template.ts';
import { clusterPolicyTemplates } from '../../shared/netpol/cluster-policy.ts';
import type { NetworkPolicyObject } from '../../shared/netpol/types.ts';
import type { PodSpec, ResolvedScenario } from '../model/resolve.ts';
import { ScenarioError } from '../errors.ts';
import { planApps, type PlannedApp } from './deploy-plan.ts';
import { clusterPolicyManifest } from './kubernetes-cluster-policies.ts';
import { exportReadme } from './kubernetes-readme.ts';

/** The release's image (docs/distribution.md builds it; `kind load docker-image` puts it on a kind cluster). */
export const DEFAULT_IMAGE = `starmap:${VERSION}`;
export const SCENARIO_LABEL = 'starmap.scenario';
/** Which model pod an exported pod is (`<name>`, with its namespace: the Deployment's pods have generated names). */
export const POD_LABEL = 'starmap.pod';
export const PODS_SERVICE = 'starmap-pods';
export const OBSERVER = 'starmap-observer';
/** The observer's port on the node (host network): above the usual range of node ports and agents. */
export const OBSERVER_PORT = 19091;
/** The ConfigMap in the observer's namespace that says which step is in force. */
export const STEP_CONFIGMAP = 'starmap-step';
const RESOURCES_FILE = '/config/resources.json';
/** Namespaces every cluster has: never created, labelled or deleted by a whole-object apply. */
export const SYSTEM_NAMESPACES: ReadonlySet<string> = new Set(['default', 'kube-system', 'kube-public', 'kube-node-lease']);

export interface ExportFile {
  path: string;
  content: string;
}

export interface ExportedStep {
  /** `step-1` … */
  dir: string;
  name: string;
  /** `ns/name` of the NetworkPolicies in force, and the names of the ClusterNetworkPolicies. */
  networkPolicies: { namespace: string; name: string }[];
  clusterPolicies: string[];
  /** Has a needs-addresses.yaml.tmpl. */
  templated: boolean;
}

export interface KubernetesExport {
  files: ExportFile[];
  /** What the export could not carry over as the model says it, for stderr and README.md. */
  notes: string[];
  label: string;
  observerNamespace: string;
  /** The pods as planned with their cluster names: their argv, and each target → cell. */
  plan: PlannedApp[];
  /** The observer's program and flags, as its pod runs them. */
  observerArgs: string[];
  steps: ExportedStep[];
  /** Labels the scenario gives namespaces that already exist (default, kube-*), set with kubectl label. */
  systemLabels: { namespace: string; labels: Record<string, string> }[];
}

/** A pod's name in the cluster's DNS: the headless Service `starmap-pods` of its namespace. */
export const clusterHost = (p: Pick<PodSpec, 'name' | 'namespace'>): string => `${p.name}.${PODS_SERVICE}.${p.namespace}.svc`;

/** The observer's resource id for a pod (probe: its /status; collector: its /responses). */
export const observerId = (p: Pick<PodSpec, 'kind' | 'namespace' | 'name'>): string => `${p.kind}.${p.namespace}.${p.name}`;

/** The namespace of the observer: its own, so that deleting it removes nothing of the scenario's. */
export const observerNamespace = (scenario: string): string =>
  `starmap-${scenario
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')}`
    .slice(0, 63)
    .replace(/-+$/, '');

/** The pods that become pods of the cluster: externals stay outside (they are addresses, not pods). */
export const exportedPods = (s: ResolvedScenario): PodSpec[] => s.pods.filter((p) => p.external === undefined);

/** The observer's resources: every probe's /status and every model collector's /responses. */
export function observerResources(plan: readonly PlannedApp[], urlOf: (a: PlannedApp) => string): { id: string; url: string }[] {
  return plan
    .filter((a) => a.pod.external === undefined && (a.pod.kind === 'probe' || a.pod.kind === 'collector'))
    .map((a) => ({ id: observerId(a.pod), url: `${urlOf(a)}${a.statusPath}` }));
}

const yamlDocs = (objects: readonly unknown[], head: string): string => `# ${head}\n${objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n')}`;

function check(s: ResolvedScenario): void {
  const problems: string[] = [];
  for (const e of labelValueErrors(s.name)) problems.push(`scenario name ${JSON.stringify(s.name)}: as the label ${SCENARIO_LABEL}: ${e}`);
  for (const p of exportedPods(s)) for (const e of dns1123LabelErrors(p.name)) problems.push(`pod ${p.id}: its name is its hostname in the cluster: ${e}`);
  const obs = observerNamespace(s.name);
  if (s.namespaces.some((n) => n.name === obs)) problems.push(`namespace ${obs} is the observer's; rename the scenario or the namespace`);
  if (problems.length > 0) throw new ScenarioError(`${s.file}: cannot be exported to Kubernetes:\n  ${problems.join('\n  ')}`);
}

const securityContext = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  privileged: false,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

/** The pod spec of an agent: locked down as deploy/kubernetes is, serving its declared ports. */
function podSpec(name: string, image: string, args: readonly string[], p: PodSpec | undefined, apiPort: number, extra: Record<string, unknown> = {}) {
  const ports = p
    ? [
        ...new Map([{ port: apiPort, protocol: 'TCP', name: undefined as string | undefined }, ...p.ports].map((x) => [`${x.port}/${x.protocol}`, x])).values(),
      ].map((x) => ({ ...(x.name ? { name: x.name.slice(0, 15) } : {}), containerPort: x.port, protocol: x.protocol }))
    : [{ name: 'http', containerPort: apiPort, protocol: 'TCP' }];
  return {
    securityContext: {
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      seccompProfile: { type: 'RuntimeDefault' },
      // Lets the non-root agent listen below 1024 without a capability (a namespaced, "safe" sysctl).
      ...(extra.hostNetwork ? {} : { sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }] }),
    },
    automountServiceAccountToken: false,
    terminationGracePeriodSeconds: 2,
    ...extra,
    containers: [
      {
        name,
        image,
        imagePullPolicy: 'IfNotPresent',
        args: [...args],
        ports,
        securityContext,
        resources: { requests: { cpu: '10m', memory: '64Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
        readinessProbe: { httpGet: { path: '/healthz', port: apiPort }, periodSeconds: 2 },
      },
    ],
  };
}

const same = (a: Record<string, string>, b: Record<string, string>) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

const templatedPolicy = (p: NetworkPolicyObject) => cidrTexts(p).some((c) => hasTemplate(c.text));

export function exportScenario(s: ResolvedScenario, opts: { image?: string } = {}): KubernetesExport {
  check(s);
  const image = opts.image ?? DEFAULT_IMAGE;
  const label = s.name;
  const notes: string[] = [];
  const pods = exportedPods(s);
  const byId = new Map(pods.map((p) => [p.id, p]));
  // The agents' arguments: the orchestrator's isolated layout (real ports, 0.0.0.0) with the
  // cluster's names; the image runs the program its first argument names. planApps asks for one
  // resources file per collector, in the order of the pods.
  const collectors = s.pods.filter((p) => p.kind === 'collector');
  const resourceFiles = new Map<string, string>();
  const plan = planApps(s, { probe: ['probe'], collector: ['collector'] }, { isolated: true, hostName: clusterHost }, (content) => {
    resourceFiles.set(collectors[resourceFiles.size]!.id, content);
    return RESOURCES_FILE;
  });
  const ext = s.pods.filter((p) => p.external !== undefined);
  if (ext.length > 0)
    notes.push(
      `externals are not exported (they are addresses outside the pod network): ${ext.map((p) => `${p.id}=${p.external}`).join(', ')}; the probes still try them there`,
    );
  const apps = pods.filter((p) => p.kind === 'app');
  if (apps.length > 0) notes.push(`apps run as probes that serve their declared ports (the image has no other program): ${apps.map((p) => p.id).join(', ')}`);
  const later = pods.filter((p) => p.fromStep !== undefined);
  if (later.length > 0) notes.push(`pods a step adds are deployed from the start: ${later.map((p) => p.id).join(', ')}`);

  const common = (extra: Record<string, string> = {}) => ({ [SCENARIO_LABEL]: label, ...extra });
  const files: ExportFile[] = [];
  const systemLabels: KubernetesExport['systemLabels'] = [];
  const namespaces = s.namespaces.filter((n) => !SYSTEM_NAMESPACES.has(n.name));
  for (const n of s.namespaces.filter((n) => SYSTEM_NAMESPACES.has(n.name))) {
    const labels = Object.fromEntries(Object.entries(n.labels).filter(([k]) => k !== 'kubernetes.io/metadata.name'));
    if (Object.keys(labels).length > 0) systemLabels.push({ namespace: n.name, labels });
  }
  const namespaceDoc = (name: string, labels: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { ...labels, ...common() } },
  });
  files.push({
    path: '00-namespaces.yaml',
    content: yamlDocs(
      namespaces.map((n) => namespaceDoc(n.name, n.labels)),
      `${s.name}: the scenario's namespaces (scenario export; docs/kubernetes.md)`,
    ),
  });

  const podDoc = (a: PlannedApp, labels: Record<string, string>) => {
    const p = a.pod;
    // An app of the model has no program in the image: a probe that serves its ports stands in.
    const args =
      p.kind === 'app'
        ? [
            'probe',
            `--urls=http://${clusterHost(p)}:${a.port}/healthz`,
            ...(p.ports.length > 0 ? [`--serve=${p.ports.map((x) => `${x.port}/${x.protocol.toLowerCase()}`).join(',')}`] : []),
            '--http-address=0.0.0.0',
            `--http-port=${a.port}`,
          ]
        : ((a.definition.args as string[] | undefined) ?? []);
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: p.name, namespace: p.namespace, labels: { ...labels, ...common({ [POD_LABEL]: p.name }) } },
      spec: { hostname: p.name, subdomain: PODS_SERVICE, ...podSpec('agent', image, args, p, a.port) },
    };
  };
  const objects: unknown[] = [];
  for (const ns of [...new Set(pods.map((p) => p.namespace))])
    objects.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: PODS_SERVICE, namespace: ns, labels: common() },
      spec: { clusterIP: 'None', publishNotReadyAddresses: true, selector: common() },
    });
  for (const a of plan) {
    const p = a.pod;
    if (!byId.has(p.id)) continue;
    if (p.kind !== 'collector') {
      objects.push(podDoc(a, p.labels));
      continue;
    }
    const cm = `${p.name}-resources`;
    objects.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: cm, namespace: p.namespace, labels: common() },
      data: { 'resources.json': resourceFiles.get(p.id) ?? '[]' },
    });
    const selector = common({ [POD_LABEL]: p.name });
    objects.push({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: p.name, namespace: p.namespace, labels: common() },
      spec: {
        replicas: 1,
        strategy: { type: 'Recreate' },
        selector: { matchLabels: selector },
        template: {
          metadata: { labels: { ...p.labels, ...selector } },
          spec: {
            hostname: p.name,
            subdomain: PODS_SERVICE,
            ...podSpec('collector', image, (a.definition.args as string[]) ?? [], p, a.port, {
              volumes: [{ name: 'config', configMap: { name: cm } }],
            }),
          },
        },
      },
    });
    // The model collector's UI: kubectl port-forward -n <ns> service/<name> <port>.
    objects.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: p.name, namespace: p.namespace, labels: common() },
      spec: { type: 'ClusterIP', selector, ports: [{ name: 'http', port: a.port, targetPort: a.port, protocol: 'TCP' }] },
    });
  }
  // The collector container reads its resources from the ConfigMap's volume.
  for (const o of objects as { kind: string; spec: { template?: { spec: { containers: Record<string, unknown>[] } } } }[])
    if (o.kind === 'Deployment') o.spec.template!.spec.containers[0]!.volumeMounts = [{ name: 'config', mountPath: '/config', readOnly: true }];
  files.push({ path: '01-pods.yaml', content: yamlDocs(objects, `${s.name}: one pod per pod of the model (scenario export)`) });

  const obsNs = observerNamespace(s.name);
  const observerArgs = [
    'collector',
    `--resources-file=${RESOURCES_FILE}`,
    '--http-address=0.0.0.0',
    `--http-port=${OBSERVER_PORT}`,
    `--http-request-seconds=${s.probeSeconds}`,
    `--timeout-seconds=${Math.max(s.timeoutSeconds, 0.5)}`,
  ];
  const obsSelector = common({ [POD_LABEL]: OBSERVER });
  files.push({
    path: '02-observer.yaml',
    content: yamlDocs(
      [
        namespaceDoc(obsNs, {}),
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `${OBSERVER}-resources`, namespace: obsNs, labels: common() },
          data: {
            'resources.json': `${JSON.stringify(
              observerResources(
                plan.filter((a) => byId.has(a.pod.id)),
                (a) => `http://${clusterHost(a.pod)}:${a.port}`,
              ),
              null,
              2,
            )}\n`,
          },
        },
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: OBSERVER, namespace: obsNs, labels: common() },
          spec: {
            replicas: 1,
            strategy: { type: 'Recreate' },
            selector: { matchLabels: obsSelector },
            template: {
              metadata: { labels: obsSelector },
              spec: {
                ...podSpec('collector', image, observerArgs, undefined, OBSERVER_PORT, {
                  hostNetwork: true,
                  dnsPolicy: 'ClusterFirstWithHostNet',
                  volumes: [{ name: 'config', configMap: { name: `${OBSERVER}-resources` } }],
                }),
              },
            },
          },
        },
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: OBSERVER, namespace: obsNs, labels: common() },
          spec: { type: 'ClusterIP', selector: obsSelector, ports: [{ name: 'http', port: OBSERVER_PORT, targetPort: OBSERVER_PORT, protocol: 'TCP' }] },
        },
      ].map((o) => {
        const d = o as { kind: string; spec?: { template?: { spec: { containers: Record<string, unknown>[] } } } };
        if (d.kind === 'Deployment') d.spec!.template!.spec.containers[0]!.volumeMounts = [{ name: 'config', mountPath: '/config', readOnly: true }];
        return o;
      }),
      `${s.name}: the observer that scenario observe reads (kubectl port-forward -n ${obsNs} service/${OBSERVER} ${OBSERVER_PORT})`,
    ),
  });

  const steps: ExportedStep[] = [];
  let labelsBefore = {
    ns: Object.fromEntries(s.namespaces.map((n) => [n.name, n.labels])),
    pods: Object.fromEntries(pods.map((p) => [p.id, p.labels])),
  };
  for (const [i, step] of s.steps.entries()) {
    const dir = `step-${i + 1}`;
    const plain = step.policies.filter((p) => !templatedPolicy(p));
    const withAddresses = step.policies.filter(templatedPolicy);
    const cnps = step.clusterPolicies ?? [];
    const policyLabels = (extra: Record<string, string> = {}) => ({ ...extra, ...common() });
    const npDoc = (p: NetworkPolicyObject) => ({ ...p, metadata: { ...p.metadata, labels: policyLabels(p.metadata.labels) } });
    const cnpTemplated = cnps.filter((p) => clusterPolicyTemplates(p).some((t) => hasTemplate(t.text)));
    const cnpPlain = cnps.filter((p) => !cnpTemplated.includes(p));
    // Which step is in force, in the cluster: also keeps a step without policies from being an
    // empty directory (kubectl apply refuses "no objects passed to apply").
    files.push({
      path: `${dir}/step.yaml`,
      content: yamlDocs(
        [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: STEP_CONFIGMAP, namespace: obsNs, labels: common() },
            data: { step: String(i + 1), name: step.name },
          },
        ],
        `${s.name} step ${i + 1} ${step.name}: the step in force`,
      ),
    });
    if (plain.length + cnpPlain.length > 0)
      files.push({
        path: `${dir}/policies.yaml`,
        content: yamlDocs(
          [...plain.map(npDoc), ...cnpPlain.map((p) => clusterPolicyManifest(p, common()))],
          `${s.name} step ${i + 1} ${step.name}: every policy in force (kubectl apply -f ${dir}/; delete those of the step before that are not here)`,
        ),
      });
    if (withAddresses.length + cnpTemplated.length > 0)
      files.push({
        path: `${dir}/needs-addresses.yaml.tmpl`,
        content: yamlDocs(
          [...withAddresses.map(npDoc), ...cnpTemplated.map((p) => clusterPolicyManifest(p, common()))],
          `${s.name} step ${i + 1}: policies whose ipBlocks name pods (ip templates): replace each template with the pod's address (kubectl get pod -n NS NAME -o jsonpath='{.status.podIP}'), then kubectl apply -f; run --kubernetes does it`,
        ),
      });
    const changed: unknown[] = [];
    for (const n of namespaces) {
      const now = step.namespaceLabels[n.name] ?? n.labels;
      if (!same(now, labelsBefore.ns[n.name] ?? n.labels)) changed.push(namespaceDoc(n.name, now));
    }
    for (const a of plan) {
      if (!byId.has(a.pod.id)) continue;
      const now = step.podLabels[a.pod.id] ?? a.pod.labels;
      if (same(now, labelsBefore.pods[a.pod.id] ?? a.pod.labels)) continue;
      if (a.pod.kind === 'collector') notes.push(`step ${step.name}: the labels of collector ${a.pod.id} change: its Deployment's pod is replaced`);
      changed.push(podDoc(a, now));
    }
    for (const n of s.namespaces.filter((x) => SYSTEM_NAMESPACES.has(x.name)))
      if (!same(step.namespaceLabels[n.name] ?? n.labels, labelsBefore.ns[n.name] ?? n.labels))
        notes.push(`step ${step.name}: the labels of namespace ${n.name} change; set them by hand (kubectl label namespace ${n.name} …)`);
    if (changed.length > 0)
      files.push({ path: `${dir}/labels.yaml`, content: yamlDocs(changed, `${s.name} step ${i + 1} ${step.name}: the labels this step changes`) });
    labelsBefore = {
      ns: Object.fromEntries(s.namespaces.map((n) => [n.name, step.namespaceLabels[n.name] ?? n.labels])),
      pods: Object.fromEntries(pods.map((p) => [p.id, step.podLabels[p.id] ?? p.labels])),
    };
    steps.push({
      dir,
      name: step.name,
      networkPolicies: step.policies.map((p) => ({ namespace: p.metadata.namespace, name: p.metadata.name })),
      clusterPolicies: cnps.map((p) => p.name),
      templated: withAddresses.length + cnpTemplated.length > 0,
    });
  }
  files.push({ path: 'README.md', content: exportReadme(s, steps, obsNs, notes, systemLabels) });
  return { files, notes, label, observerNamespace: obsNs, plan: plan.filter((a) => byId.has(a.pod.id)), observerArgs, steps, systemLabels };
}
