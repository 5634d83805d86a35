// Kubernetes manifests as the scenario model: rendered manifests as people have them (`kubectl get
// -A -o yaml`, `helm template`, `kustomize build`): multi-document YAML with comments and
// `# Source:` lines, `List` kinds, JSON. What they say for a policy test:
// - the pods, from the kinds that make them (workloads.ts): one pod per workload (same labels,
//   same verdicts), or with `replicas` as many as the manifest asks, named `<workload>-<n>`;
// - the namespaces (Namespace objects' labels; every namespace has kubernetes.io/metadata.name);
// - the NetworkPolicies, validated as the API server does (shared/netpol/);
// - the admin-tier policies (ClusterNetworkPolicy, AdminNetworkPolicy, BaselineAdminNetworkPolicy),
//   validated against their upstream CRDs (cluster-policies.ts);
// - the Services, for their targetPort names.
// Everything else is ignored and counted; what changes what a policy means (hostNetwork, multus
// networks, no container ports) is said per object. Problems name the file, the document (1-based,
// with its line), the kind and name, the field and its line; all of them at once.
// Pure: the caller reads the texts (sources.ts).
import { parseAllDocuments, type Document } from 'yaml';
import { plural } from '../../shared/plural.ts';
import { aliasProblem, MAX_ALIASES, MAX_MANIFEST_VALUES, shapeProblem } from './yaml-bounds.ts';
import { checkPolicy, fieldErrorLines, lineOf, ManifestError, MAX_MANIFEST_BYTES, type LoadedPolicy } from '../../shared/netpol/manifests.ts';
import { dns1123LabelErrors, labelKeyErrors, labelValueErrors } from '../../shared/netpol/names.ts';
import { NAMESPACE_NAME_LABEL, type NamedPort } from '../../shared/netpol/types.ts';
import { pointerKey } from '../../shared/netpol/validate.ts';
import type { PodSpec } from './resolve.ts';
import { isClusterPolicyKind, readClusterPolicy, type LoadedClusterPolicy } from './cluster-policies.ts';
import { groupOf, makesPods, POD_KINDS, readWorkload, type Workload } from './workloads.ts';

export { ManifestError };

/** Bound on the objects of one manifest set (each costs a validation). */
export const MAX_OBJECTS = 20_000;

export interface ManifestSource {
  /** As messages name it: the path given, or `-` for stdin. */
  file: string;
  text: string;
}

export interface SourcedWorkload extends Workload {
  /** `file document N (line L)`, for messages. */
  origin: string;
}

export interface ServicePort {
  name: string;
  port: number;
  targetPort: number | string;
  protocol: string;
}

export interface Service {
  namespace: string;
  name: string;
  selector: Record<string, string>;
  ports: ServicePort[];
  origin: string;
}

export interface ManifestSet {
  files: number;
  /** Namespaces that Namespace objects declare, with their labels (the name label included). */
  namespaces: Map<string, Record<string, string>>;
  workloads: SourcedWorkload[];
  policies: LoadedPolicy[];
  /** The admin-tier policies (cluster-scoped, by id). */
  clusterPolicies: LoadedClusterPolicy[];
  services: Service[];
  /** Kind (with its apiVersion when that is not the usual one) → count. */
  ignored: Map<string, number>;
  /** Plain statements about objects whose meaning for a policy differs from what one may think. */
  notes: string[];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads every object of every source; throws one ManifestError listing every problem. */
export function readManifestSet(sources: readonly ManifestSource[], opts: { namespace?: string } = {}): ManifestSet {
  const defaultNs = opts.namespace ?? 'default';
  const set: ManifestSet = {
    files: sources.length,
    namespaces: new Map(),
    workloads: [],
    policies: [],
    clusterPolicies: [],
    services: [],
    ignored: new Map(),
    notes: [],
  };
  const problems: string[] = [];
  const seen = new Map<string, string>();
  let objects = 0;
  for (const { file, text } of sources) {
    if (Buffer.byteLength(text) > MAX_MANIFEST_BYTES) {
      problems.push(`${file}: larger than ${MAX_MANIFEST_BYTES / 1024 / 1024} MiB`);
      continue;
    }
    const shape = shapeProblem(text, MAX_MANIFEST_VALUES);
    if (shape) {
      problems.push(`${file}: not read: ${shape}`);
      continue;
    }
    const docs = parseAllDocuments(text, { prettyErrors: true, uniqueKeys: true });
    if (!Array.isArray(docs)) {
      problems.push(`${file}: not valid YAML/JSON`);
      continue;
    }
    docs.forEach((doc, d) => {
      const start = (doc.contents as { range?: [number, number] } | null)?.range?.[0] ?? doc.range?.[0];
      const where = `${file}: document ${d + 1}${start !== undefined ? ` (line ${lineAt(text, start)})` : ''}`;
      if (doc.errors.length > 0) return void problems.push(`${where}: not valid YAML/JSON: ${doc.errors.map((e) => e.message.split('\n')[0]).join('; ')}`);
      let value: unknown;
      try {
        value = doc.toJS({ maxAliasCount: MAX_ALIASES });
      } catch (err) {
        return void problems.push(`${where}: not valid YAML/JSON: ${aliasProblem(err as Error)}`);
      }
      if (value === null || value === undefined) return; // an empty document (a trailing ---, comments only)
      const kind = (value as { kind?: unknown }).kind;
      if (isObj(value) && typeof kind === 'string' && kind.endsWith('List') && 'items' in value) {
        if (!Array.isArray(value.items)) return void problems.push(`${where}: a ${kind} needs an items array`);
        value.items.forEach((item, i) => object(item, `/items/${i}`, doc, text, where));
      } else object(value, '', doc, text, where);
    });
  }

  function object(value: unknown, pointer: string, doc: Document, text: string, where: string): void {
    if (++objects > MAX_OBJECTS) {
      if (objects === MAX_OBJECTS + 1) problems.push(`more than ${MAX_OBJECTS} objects; at most ${MAX_OBJECTS}`);
      return;
    }
    const at = `${where}${pointer ? ` ${pointer}` : ''}`;
    const line = (p: string) => lineOf(doc, text, `${pointer}${p === '/' ? '' : p}`);
    const report = (subject: string, path: string, message: string) => {
      const l = line(path);
      problems.push(`${at}: ${subject}: ${path}${l ? ` (line ${l})` : ''}: ${message}`);
    };
    if (!isObj(value)) return void problems.push(`${at}: not a Kubernetes object (a map with apiVersion and kind)`);
    const { kind, apiVersion } = value;
    if ((kind === undefined || kind === null) && 'steps' in value)
      return void problems.push(
        `${at}: a scenario file (top-level steps), not a Kubernetes manifest: give it on its own, or name these manifests in its manifests:`,
      );
    if (typeof kind !== 'string' || kind === '') return report('an object', '/kind', 'Required value: kind');
    if (typeof apiVersion !== 'string' || apiVersion === '') return report(kind, '/apiVersion', 'Required value: apiVersion');
    const meta = isObj(value.metadata) ? value.metadata : {};
    const ns = typeof meta.namespace === 'string' && meta.namespace !== '' ? meta.namespace : defaultNs;
    const clusterScoped = kind === 'Namespace' || isClusterPolicyKind(apiVersion, kind);
    const subject = `${kind} ${typeof meta.name === 'string' ? (clusterScoped ? meta.name : `${ns}/${meta.name}`) : '(no name)'}`;
    const once = (id: string) => {
      if (seen.has(id)) return void report(subject, '/metadata/name', `Duplicate value: ${kind} ${id.split(' ')[1]} is also ${seen.get(id)}`);
      seen.set(id, at);
      return true;
    };
    const group = groupOf(apiVersion);

    if (makesPods(kind, apiVersion)) {
      const r = readWorkload(value, defaultNs);
      if ('problems' in r) return r.problems.forEach((p) => report(subject, p.path, p.message));
      const w = r.workload;
      if (!once(`${kind} ${w.namespace}/${w.name}`)) return;
      set.workloads.push({ ...w, origin: at });
      const what = `${at}: ${kind} ${w.namespace}/${w.name}`;
      if (w.hostNetwork) set.notes.push(`${what}: hostNetwork: true: NetworkPolicy does not apply to its pods; left out of the model`);
      if (w.networks)
        set.notes.push(`${what}: has multus networks (${MULTUS_NOTE(w.networks)}): NetworkPolicy covers only its cluster network; the others are not modelled`);
      if (!w.hostNetwork && w.ports.length === 0) set.notes.push(`${what}: declares no container ports: nothing probes it (it still probes the others)`);
      if (!w.hostNetwork && w.replicas === 0) set.notes.push(`${what}: replicas: 0: it makes no pods`);
    } else if (kind === 'NetworkPolicy' && group === 'networking.k8s.io') {
      // The API server puts a policy without a namespace in the one kubectl applies it to.
      const withNs = meta.namespace === undefined || meta.namespace === null ? { ...value, metadata: { ...meta, namespace: defaultNs } } : value;
      const r = checkPolicy(withNs);
      if ('errors' in r) return void problems.push(...fieldErrorLines(r.errors, line, `${at}: ${subject}: `));
      if (!once(`${kind} ${r.policy.metadata.namespace}/${r.policy.metadata.name}`)) return;
      set.policies.push({ policy: r.policy, origin: at });
    } else if (isClusterPolicyKind(apiVersion, kind)) {
      const cp = readClusterPolicy(
        value,
        {},
        (p, m) => report(subject, p, m),
        (w) => set.notes.push(`${at}: ${subject}: ${w}`),
      );
      if (!cp || !once(`${kind} ${cp.name}`)) return;
      set.clusterPolicies.push({ policy: cp, origin: at });
    } else if (kind === 'Namespace' && group === '') {
      const name = meta.name;
      if (typeof name !== 'string' || name === '') return report(subject, '/metadata/name', 'Required value: name');
      const errors = dns1123LabelErrors(name);
      if (errors.length > 0) return errors.forEach((m) => report(subject, '/metadata/name', `Invalid value: ${JSON.stringify(name)}: ${m}`));
      const labels = readLabels(meta.labels, '/metadata/labels', (p, m) => report(subject, p, m));
      if (labels === undefined || !once(`${kind} ${name}`)) return;
      if (labels[NAMESPACE_NAME_LABEL] !== undefined && labels[NAMESPACE_NAME_LABEL] !== name)
        return report(subject, `/metadata/labels/${pointerKey(NAMESPACE_NAME_LABEL)}`, `${NAMESPACE_NAME_LABEL} is always the namespace's name ("${name}")`);
      set.namespaces.set(name, { ...labels, [NAMESPACE_NAME_LABEL]: name });
    } else if (kind === 'Service' && group === '') {
      const s = readService(value, ns, (p, m) => report(subject, p, m));
      if (s && once(`${kind} ${ns}/${s.name}`)) set.services.push({ ...s, origin: at });
    } else {
      // A known kind from another API group (a CRD of the same name) is not what it seems: say which.
      const key = POD_KINDS[kind] || ['NetworkPolicy', 'Namespace', 'Service'].includes(kind) ? `${kind} (${apiVersion})` : kind;
      set.ignored.set(key, (set.ignored.get(key) ?? 0) + 1);
    }
  }

  if (problems.length > 0)
    throw new ManifestError(
      problems.length === 1
        ? problems[0]!
        : `${problems.length} problems:\n  ${problems.slice(0, 30).join('\n  ')}${problems.length > 30 ? `\n  … and ${problems.length - 30} more` : ''}`,
    );
  set.notes.push(...targetPortNotes(set));
  return set;
}

const MULTUS_NOTE = (networks: string) => (networks.length > 60 ? `${networks.slice(0, 57)}...` : networks);
const lineAt = (text: string, offset: number) => text.slice(0, offset).split('\n').length;

function readLabels(value: unknown, base: string, add: (path: string, message: string) => void): Record<string, string> | undefined {
  if (value === undefined || value === null) return {};
  if (!isObj(value)) return void add(base, 'must be a map of strings');
  const out: Record<string, string> = {};
  let ok = true;
  for (const [k, v] of Object.entries(value)) {
    const at = `${base}/${pointerKey(k)}`;
    if (typeof v !== 'string') {
      add(at, `Invalid value: ${JSON.stringify(v)}: label values are strings (quote it)`);
      ok = false;
      continue;
    }
    const errors = [...labelKeyErrors(k).map((m) => `label key: ${m}`), ...labelValueErrors(v).map((m) => `label value: ${m}`)];
    errors.forEach((m) => add(at, m));
    ok &&= errors.length === 0;
    out[k] = v;
  }
  return ok ? out : undefined;
}

function readService(value: Obj, namespace: string, add: (path: string, message: string) => void): Omit<Service, 'origin'> | undefined {
  const meta = value.metadata as Obj;
  if (typeof meta?.name !== 'string' || meta.name === '') return void add('/metadata/name', 'Required value: name');
  const spec = isObj(value.spec) ? value.spec : {};
  const selector = readLabels(spec.selector, '/spec/selector', add);
  const ports: ServicePort[] = [];
  let ok = selector !== undefined;
  if (spec.ports !== undefined && spec.ports !== null && !Array.isArray(spec.ports)) return void add('/spec/ports', 'must be a list');
  ((spec.ports as unknown[] | undefined) ?? []).forEach((p, i) => {
    const at = `/spec/ports/${i}`;
    if (!isObj(p)) return ((ok = false), add(at, 'must be a service port object'));
    if (typeof p.port !== 'number' || !Number.isInteger(p.port) || p.port < 1 || p.port > 65535)
      return ((ok = false), add(`${at}/port`, `Invalid value: ${JSON.stringify(p.port ?? null)}: must be between 1 and 65535, inclusive`));
    const target = p.targetPort ?? p.port;
    if (typeof target !== 'number' && typeof target !== 'string')
      return ((ok = false), add(`${at}/targetPort`, `Invalid value: ${JSON.stringify(target)}: a port number or a container port name`));
    ports.push({
      name: typeof p.name === 'string' ? p.name : '',
      port: p.port,
      targetPort: target,
      protocol: typeof p.protocol === 'string' ? p.protocol : 'TCP',
    });
  });
  return ok ? { namespace, name: meta.name, selector: selector!, ports } : undefined;
}

/** Service ports whose targetPort name no pod they select declares (kube-proxy would send nothing). */
function targetPortNotes(set: ManifestSet): string[] {
  const out: string[] = [];
  for (const s of set.services) {
    const selected = set.workloads.filter((w) => w.namespace === s.namespace && Object.keys(s.selector).length > 0 && matches(s.selector, w.labels));
    for (const p of s.ports) {
      if (typeof p.targetPort !== 'string' || selected.length === 0) continue;
      const missing = selected.filter((w) => !w.ports.some((np) => np.name === p.targetPort && np.protocol === p.protocol));
      if (missing.length > 0)
        out.push(
          `${s.origin}: Service ${s.namespace}/${s.name} port ${p.port}: targetPort "${p.targetPort}" is not a ${p.protocol} port name of ${missing.map((w) => `${w.kind} ${w.name}`).join(', ')}`,
        );
    }
  }
  return out;
}

const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

/** Where each Service port goes on the pods it selects, its targetPort name resolved: `shop/web 80→http=8080/TCP`. */
export function serviceTargets(set: ManifestSet): string[] {
  return set.services.flatMap((s) => {
    const selected = set.workloads.filter((w) => w.namespace === s.namespace && Object.keys(s.selector).length > 0 && matches(s.selector, w.labels));
    return s.ports.map((p) => {
      const named =
        typeof p.targetPort === 'string' ? selected.flatMap((w) => w.ports).find((np) => np.name === p.targetPort && np.protocol === p.protocol) : undefined;
      const to = typeof p.targetPort === 'string' ? `${p.targetPort}=${named ? named.port : '?'}` : String(p.targetPort);
      return `${s.namespace}/${s.name} ${p.port}→${to}/${p.protocol}`;
    });
  });
}

/** The pods the workloads make: one per workload, or each replica with `replicas`. */
function podCounts(set: ManifestSet, replicas: boolean): { w: SourcedWorkload; n: number }[] {
  return set.workloads.filter((w) => !w.hostNetwork).map((w) => ({ w, n: replicas ? w.replicas : Math.min(1, w.replicas) }));
}

const API_PORT = 9000;

/**
 * The pods of a manifest set as probes: each serves the ports its workload declares and (the
 * caller adds the cells) probes the others. Bounded before anything is made: the pod and the cell
 * counts are computed from the workloads and refused over the limits, with both numbers.
 */
export function manifestPods(
  set: ManifestSet,
  opts: { replicas?: boolean; maxPods: number; maxCells: number; why?: { pods: string; cells: string } },
): PodSpec[] {
  const counts = podCounts(set, opts.replicas ?? false);
  const pods = counts.reduce((n, c) => n + c.n, 0);
  const how = opts.replicas ? 'as many as each manifest asks (--replicas)' : 'one per workload';
  if (pods > opts.maxPods)
    throw new ManifestError(
      `the manifests make ${pods} pods (${how}); at most ${opts.maxPods}${opts.why ? ` ${opts.why.pods}` : ': each pod is a process on this machine'}`,
    );
  const cells = counts.reduce((n, c) => n + c.n * c.w.ports.length * (pods - 1), 0);
  if (cells > opts.maxCells)
    throw new ManifestError(
      `the manifests make ${cells} cells (${pods} pods probing every other pod's ports); at most ${opts.maxCells}${opts.why ? ` ${opts.why.cells}` : ': each is a check every probe interval'}`,
    );
  return counts.flatMap(({ w, n }) =>
    Array.from({ length: n }, (_, i) => {
      const name = opts.replicas ? `${w.name}-${i}` : w.name;
      let apiPort = API_PORT;
      while (w.ports.some((p) => p.port === apiPort)) apiPort++;
      return {
        id: `${w.namespace}/${name}`,
        namespace: w.namespace,
        name,
        kind: 'probe' as const,
        short: w.namespace === 'default' ? name : `${w.namespace}/${name}`,
        labels: { ...w.labels },
        apiPort,
        ports: w.ports.map((p): NamedPort => ({ ...p })),
        workload: `${w.kind} ${w.namespace}/${w.name}`,
      };
    }),
  );
}

/** What was read, in a few lines: what makes pods, what was ignored, and the notes. */
export function manifestSummary(set: ManifestSet, pods: readonly PodSpec[]): string[] {
  const byKind = countBy(set.workloads.map((w) => w.kind));
  const ignored = [...set.ignored].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const ignoredTotal = ignored.reduce((n, [, c]) => n + c, 0);
  const namespaces = new Set([...set.namespaces.keys(), ...pods.map((p) => p.namespace), ...set.policies.map((p) => p.policy.metadata.namespace)]);
  return [
    `manifests: ${plural(set.files, 'file')}: ${plural(set.workloads.length, 'workload')}${byKind ? ` (${byKind})` : ''} making ${plural(pods.length, 'pod')}, ${plural(set.policies.length, 'NetworkPolicy', 'NetworkPolicies')}${set.clusterPolicies.length > 0 ? `, ${plural(set.clusterPolicies.length, 'admin-tier policy', 'admin-tier policies')} (${set.clusterPolicies.map((c) => c.policy.id).join(', ')})` : ''}, ${plural(set.services.length, 'Service')}, ${plural(namespaces.size, 'namespace')}`,
    ...(set.services.length > 0 ? [`Services: ${serviceTargets(set).join(', ')}`] : []),
    ...(ignoredTotal > 0 ? [`ignored ${plural(ignoredTotal, 'object')}: ${ignored.map(([k, c]) => `${c} ${k}`).join(', ')}`] : []),
    ...set.notes,
  ];
}

function countBy(items: string[]): string {
  const m = new Map<string, number>();
  for (const i of items) m.set(i, (m.get(i) ?? 0) + 1);
  return [...m].map(([k, c]) => `${c} ${k}`).join(', ');
}
