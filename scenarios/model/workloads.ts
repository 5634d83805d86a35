// The kinds that make pods, read as the API server would read their pod template: where the
// template is (a Pod is its own), how many replicas it asks for, the template's labels, the named
// ports of every container (and of sidecar init containers, `restartPolicy: Always`, which run for
// the pod's life), hostNetwork and multus network annotations. Pure: one decoded object in, a
// workload or field errors (JSON pointers into the object) out.
import type { NamedPort, Protocol } from '../../shared/netpol/types.ts';
import { dns1123LabelErrors, labelKeyErrors, labelValueErrors, portNameErrors } from '../../shared/netpol/names.ts';
import { pointerKey } from '../../shared/netpol/validate.ts';

interface KindInfo {
  /** API groups it is served from ('' is the core group, `v1`). */
  groups: readonly string[];
  /** Path of the pod template inside the object ([] for a Pod). */
  template: readonly string[];
  /** Path of the replica count, when the kind has one (default 1). */
  replicas?: readonly string[];
}

export const POD_KINDS: Readonly<Record<string, KindInfo>> = {
  Pod: { groups: [''], template: [] },
  ReplicationController: { groups: [''], template: ['spec', 'template'], replicas: ['spec', 'replicas'] },
  Deployment: { groups: ['apps', 'extensions'], template: ['spec', 'template'], replicas: ['spec', 'replicas'] },
  ReplicaSet: { groups: ['apps', 'extensions'], template: ['spec', 'template'], replicas: ['spec', 'replicas'] },
  StatefulSet: { groups: ['apps'], template: ['spec', 'template'], replicas: ['spec', 'replicas'] },
  // One per node; a model has no nodes, so one.
  DaemonSet: { groups: ['apps', 'extensions'], template: ['spec', 'template'] },
  Job: { groups: ['batch'], template: ['spec', 'template'], replicas: ['spec', 'parallelism'] },
  CronJob: { groups: ['batch'], template: ['spec', 'jobTemplate', 'spec', 'template'], replicas: ['spec', 'jobTemplate', 'spec', 'parallelism'] },
};

/** The annotation multus reads extra pod networks from; NetworkPolicy covers only the cluster network. */
export const MULTUS_NETWORKS = 'k8s.v1.cni.cncf.io/networks';

/** The API group of an apiVersion: `apps/v1` → apps, `v1` → ''. */
export function groupOf(apiVersion: unknown): string | undefined {
  if (typeof apiVersion !== 'string') return undefined;
  return apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
}

/** Whether the object is one of the kinds that make pods (by kind and API group). */
export function makesPods(kind: unknown, apiVersion: unknown): boolean {
  const info = typeof kind === 'string' ? POD_KINDS[kind] : undefined;
  const group = groupOf(apiVersion);
  return info !== undefined && group !== undefined && info.groups.includes(group);
}

export interface Workload {
  kind: string;
  namespace: string;
  name: string;
  /** The pod template's labels. */
  labels: Record<string, string>;
  /** Named container ports of the pod, protocol defaulted to TCP, each port/protocol once. */
  ports: NamedPort[];
  /** How many pods the manifest asks for. */
  replicas: number;
  hostNetwork: boolean;
  /** The multus networks annotation, when the pod template has one. */
  networks?: string;
}

export interface FieldProblem {
  /** JSON pointer into the object. */
  path: string;
  message: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const PROTOCOLS = new Set(['TCP', 'UDP', 'SCTP']);

/**
 * The workload one pod-making object describes. `namespace` is the one to use when its metadata
 * has none. Every problem is reported at once.
 */
export function readWorkload(value: Obj, namespace: string): { workload: Workload } | { problems: FieldProblem[] } {
  const problems: FieldProblem[] = [];
  const add = (path: string, message: string) => void problems.push({ path, message });
  const kind = String(value.kind);
  const info = POD_KINDS[kind]!;
  const meta = value.metadata;
  let name = '';
  let ns = namespace;
  if (!isObj(meta)) add('/metadata', 'Required value: metadata with a name');
  else {
    if (typeof meta.name !== 'string' || meta.name === '') add('/metadata/name', 'Required value: name or generateName is required');
    else {
      name = meta.name;
      // Pod names become Marathon id segments and host names (`<pod>.<namespace>`): a DNS label.
      for (const m of dns1123LabelErrors(name)) add('/metadata/name', `Invalid value: ${JSON.stringify(name)}: ${m} (Starmap names a pod after its workload)`);
    }
    if (meta.namespace !== undefined && meta.namespace !== null) {
      if (typeof meta.namespace !== 'string') add('/metadata/namespace', 'must be a string');
      else {
        ns = meta.namespace;
        for (const m of dns1123LabelErrors(ns)) add('/metadata/namespace', `Invalid value: ${JSON.stringify(ns)}: ${m}`);
      }
    }
  }

  let replicas = 1;
  if (info.replicas) {
    const r = getIn(value, info.replicas);
    const path = `/${info.replicas.join('/')}`;
    if (r !== undefined && r !== null) {
      if (typeof r !== 'number' || !Number.isInteger(r) || r < 0) add(path, `Invalid value: ${JSON.stringify(r)}: must be a non-negative integer`);
      else replicas = r;
    }
  }

  const base = info.template.length > 0 ? `/${info.template.join('/')}` : '';
  const template = info.template.length > 0 ? getIn(value, info.template) : value;
  const labels: Record<string, string> = {};
  let ports: NamedPort[] = [];
  let hostNetwork = false;
  let networks: string | undefined;
  if (!isObj(template)) add(base || '/', 'Required value: a pod template');
  else {
    const tmeta = template.metadata ?? {};
    if (!isObj(tmeta)) add(`${base}/metadata`, 'must be an object');
    else {
      const given = tmeta.labels ?? {};
      if (!isObj(given)) add(`${base}/metadata/labels`, 'must be a map of strings');
      else
        for (const [k, v] of Object.entries(given)) {
          const at = `${base}/metadata/labels/${pointerKey(k)}`;
          if (typeof v !== 'string') {
            add(at, `Invalid value: ${JSON.stringify(v)}: label values are strings (quote it)`);
            continue;
          }
          for (const m of labelKeyErrors(k)) add(at, `label key: ${m}`);
          for (const m of labelValueErrors(v)) add(at, `label value: ${m}`);
          labels[k] = v;
        }
      const annotations = tmeta.annotations;
      if (isObj(annotations) && typeof annotations[MULTUS_NETWORKS] === 'string' && annotations[MULTUS_NETWORKS] !== '')
        networks = annotations[MULTUS_NETWORKS];
    }
    const spec = template.spec;
    if (!isObj(spec)) add(`${base}/spec`, 'Required value: a pod spec');
    else {
      hostNetwork = spec.hostNetwork === true;
      ports = podPorts(spec, `${base}/spec`, add);
    }
  }
  if (problems.length > 0) return { problems };
  return { workload: { kind, namespace: ns, name, labels, ports, replicas, hostNetwork, ...(networks ? { networks } : {}) } };
}

/** The named ports of every container and sidecar init container of a pod spec. */
function podPorts(spec: Obj, base: string, add: (path: string, message: string) => void): NamedPort[] {
  const out: NamedPort[] = [];
  const names = new Map<string, string>();
  const containers = spec.containers;
  if (!Array.isArray(containers) || containers.length === 0) add(`${base}/containers`, 'Required value: at least one container');
  const lists: [string, unknown][] = [['containers', containers]];
  if (spec.initContainers !== undefined && spec.initContainers !== null) {
    if (!Array.isArray(spec.initContainers)) add(`${base}/initContainers`, 'must be a list');
    else lists.push(['initContainers', spec.initContainers]);
  }
  for (const [field, list] of lists) {
    if (!Array.isArray(list)) continue;
    list.forEach((c: unknown, i) => {
      const at = `${base}/${field}/${i}`;
      if (!isObj(c)) return add(at, 'must be a container object');
      // A plain init container has finished before the pod serves anything.
      if (field === 'initContainers' && c.restartPolicy !== 'Always') return;
      if (c.ports === undefined || c.ports === null) return;
      if (!Array.isArray(c.ports)) return add(`${at}/ports`, 'must be a list');
      c.ports.forEach((p: unknown, j) => {
        const pat = `${at}/ports/${j}`;
        if (!isObj(p)) return add(pat, 'must be a container port object');
        const port = p.containerPort;
        if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)
          return add(`${pat}/containerPort`, `Invalid value: ${JSON.stringify(port ?? null)}: must be between 1 and 65535, inclusive`);
        const protocol = p.protocol ?? 'TCP';
        if (typeof protocol !== 'string' || !PROTOCOLS.has(protocol))
          return add(`${pat}/protocol`, `Unsupported value: ${JSON.stringify(protocol)}: supported values: "SCTP", "TCP", "UDP"`);
        let name = '';
        if (p.name !== undefined && p.name !== null) {
          if (typeof p.name !== 'string') return add(`${pat}/name`, 'must be a string');
          const errors = portNameErrors(p.name);
          for (const m of errors) add(`${pat}/name`, `Invalid value: ${JSON.stringify(p.name)}: ${m}`);
          if (errors.length > 0) return;
          if (names.has(p.name)) return add(`${pat}/name`, `Duplicate value: ${JSON.stringify(p.name)} (also ${names.get(p.name)})`);
          names.set(p.name, pat);
          name = p.name;
        }
        const same = out.find((o) => o.port === port && o.protocol === protocol);
        if (same) {
          // The same port twice (two containers, or named once): one listener, keep the name.
          if (!same.name) same.name = name;
        } else out.push({ name, port, protocol: protocol as Protocol });
      });
    });
  }
  return out;
}

function getIn(value: unknown, path: readonly string[]): unknown {
  let v = value;
  for (const k of path) {
    if (!isObj(v)) return undefined;
    v = v[k];
  }
  return v;
}
