// What a scenario file means, worked out once: the namespaces, the pods (the model shorthand
// expanded) with their labels and named ports, every cell the probes observe (source, destination,
// port, protocol), the policies (manifests read from their files, dialect policies read as
// NetworkPolicies) and, per step, the policies in force, the labels in force and the intended
// verdicts. Pods and policies may also come from Kubernetes manifests (`manifests:`, model/).
// Pure but for reading the manifest files, which the caller supplies (so built-in
// scenarios read theirs from the executable). Every problem is reported with its path and line.
// Over 400 lines: one pass over every part of a file, kept together because each check needs the
// others (pods before cells, namespaces before steps); readers of each input live in their own
// modules (model.ts, matrix.ts, dialect.ts, model/).
import { dirname, isAbsolute, join, normalize } from 'node:path';
import { cidrTexts, templateRefs } from '../../shared/netpol/ip-template.ts';
import { checkPolicy, loadManifests, ManifestError, type LoadedPolicy } from '../../shared/netpol/manifests.ts';
import { NAMESPACE_NAME_LABEL, objectId, type NamedPort, type NamespaceInfo, type NetworkPolicyObject, type Protocol } from '../../shared/netpol/types.ts';
import { labelKeyErrors, labelValueErrors } from '../../shared/netpol/names.ts';
import { dialectToNetworkPolicies } from './dialect.ts';
import type { ClusterPolicy } from '../../shared/netpol/cluster-policy.ts';
import {
  clusterCatalogAdd,
  clusterEntry,
  clusterTemplateProblems,
  isClusterPolicyKind,
  readClusterPolicy,
  type LoadedClusterPolicy,
} from './cluster-policies.ts';
import { directoryPolicies, manifestCells, manifestModel, type ManifestIo, type ManifestModel } from './scenario-manifests.ts';
import { POD_KINDS } from './workloads.ts';
import {
  coverageExternals,
  declaredExternals,
  DEFAULT_POD_SUBNET,
  EXTERNAL_NAMESPACE,
  externalCells,
  externalPod,
  externalsOf,
  type ExternalHostDoc,
} from './externals.ts';
import { applyStepManifests } from './step-manifests.ts';
import { policiesOfManifests } from './policy-files.ts';
import { stepWorkloadPods } from './step-workloads.ts';
import { intendedVerdicts, PodNames } from './matrix.ts';
import { ScenarioError, type ParsedScenario } from './scenario-file.ts';
import type { AppDoc, DialectPolicyDoc, ModelDoc, StepDoc } from './schema.ts';
import { applyAssertions, type StepAssertion } from './assertions.ts';
import { RUN_LIMITS, type Limits } from './limits.ts';
export { CHECK_LIMITS, MAX_CELLS, MAX_CELLS_COMPUTED, MAX_PODS, MAX_PODS_COMPUTED, RUN_LIMITS, type Limits } from './limits.ts';

export type CheckKind = 'http' | 'tcp' | 'udp' | 'sctp';

export interface Cell {
  key: string;
  from: string;
  to: string;
  port: number;
  protocol: Protocol;
  /** How it is observed: an HTTP GET of the target's API, a TCP connect, a UDP echo, or not at all (SCTP). */
  check: CheckKind;
}

export const cellKey = (from: string, to: string, port: number, protocol: Protocol): string => `${from}>${to}@${port}/${protocol}`;

export interface PodSpec {
  /** `namespace/name` */
  id: string;
  namespace: string;
  name: string;
  kind: AppDoc['kind'];
  short: string;
  labels: Record<string, string>;
  /** Where its HTTP API (probe, collector) or its main port (app) listens. */
  apiPort: number;
  /** Declared (named) container ports. */
  ports: NamedPort[];
  cmd?: string;
  /** `Kind namespace/name` of the workload a manifest-made pod comes from. */
  workload?: string;
  /** An external (model/externals.ts): its address outside the pod network; no policy selects it. */
  external?: string;
  /** An automatic external: the ipBlock it stands in. */
  covers?: string;
  /** The step whose manifests add it; no cell involving it is judged before (absent: from the start). */
  fromStep?: number;
}

export interface ResolvedStep {
  index: number;
  name: string;
  description?: string;
  /** The policies in force; ipBlocks may hold {{ip ns/pod}}. */
  policies: NetworkPolicyObject[];
  /** The admin-tier policies in force (absent: none); networks may hold {{ip ns/pod}}. */
  clusterPolicies?: ClusterPolicy[];
  /** Labels in force per namespace (with the name label) and per pod. */
  namespaceLabels: Record<string, Record<string, string>>;
  podLabels: Record<string, Record<string, string>>;
  /** Hand-written verdicts (cell key → allowed); null: `expect: computed`. */
  intended: Map<string, boolean> | null;
  /** Intents (`assert:`, --assert) with the cells behind each; their verdicts are in `intended`. */
  assertions?: StepAssertion[];
  /** Cells `intended` does not judge are judged against the computed verdict (intents with no matrix). */
  computedRest?: boolean;
  timeoutSeconds?: number;
  /** For --policy-hook: the dialect policies in force, by name, as the file wrote them. */
  dialect?: Record<string, DialectPolicyDoc>;
}

export interface ResolvedScenario {
  name: string;
  description?: string;
  file: string;
  probeSeconds: number;
  timeoutSeconds: number;
  namespaces: NamespaceInfo[];
  pods: PodSpec[];
  cells: Cell[];
  steps: ResolvedStep[];
  /** From `manifests:`: what was read, ignored and noted. */
  manifests?: string[];
}

export interface ResolveIo extends ManifestIo {
  /** Reads a manifest file; `path` is the scenario's directory joined with the `file:` entry. */
  readFile(path: string): string;
  /** --external flags, after the file's `externals:`. */
  externals?: ExternalHostDoc[];
  /** The run's pod subnet (--netns-subnet): externals must be outside it (default DEFAULT_POD_SUBNET). */
  podSubnet?: string;
  /** How many pods and cells it may make (default RUN_LIMITS). */
  limits?: Limits;
}

const DEFAULT_PORT = { probe: 9000, collector: 9001, app: 8080 } as const;
const TARGET = /^(?:([a-z0-9-]+)\/)?([a-z0-9-]+)(?::(?:(\d{1,5})(?:\/(tcp|udp|sctp))?|([a-z0-9-]+)))?$/i;

/** Problems said at most; the rest are counted. */
const MAX_PROBLEMS = 30;

class Problems {
  // Lines are looked up only for the problems that are said: finding one scans the text, and a
  // file of 100,000 duplicate steps would scan it 100,000 times.
  readonly list: { pointer: string; message: string }[] = [];
  /** What was read and ignored beside the problems (policies: - file: of manifests), said by check and run. */
  readonly notes: string[] = [];
  readonly parsed: ParsedScenario;
  constructor(parsed: ParsedScenario) {
    this.parsed = parsed;
  }
  add(pointer: string, message: string): void {
    this.list.push({ pointer, message });
  }
  labels(pointer: string, labels: Record<string, string> | undefined): void {
    for (const [k, v] of Object.entries(labels ?? {})) {
      const at = `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      for (const m of labelKeyErrors(k)) this.add(at, `label key: ${m}`);
      for (const m of labelValueErrors(v)) this.add(at, `label value: ${m}`);
    }
  }
  throwIfAny(): void {
    if (this.list.length === 0) return;
    const said = this.list.slice(0, MAX_PROBLEMS).map((p) => `${p.pointer}${this.parsed.at(p.pointer)}: ${p.message}`);
    const more = this.list.length - said.length;
    throw new ScenarioError(`${this.parsed.file}: invalid scenario:\n  ${said.join('\n  ')}${more > 0 ? `\n  … and ${more} more` : ''}`);
  }
}

function modelPods(m: ModelDoc): PodSpec[] {
  const ports: NamedPort[] = m.ports.flatMap((port) => m.protocols.map((protocol) => ({ name: `serve-${port}-${protocol.toLowerCase()}`, port, protocol })));
  let apiPort = DEFAULT_PORT.probe;
  while (m.ports.includes(apiPort)) apiPort++;
  return m.namespaces.flatMap((namespace) =>
    m.pods.map((name) => ({
      id: `${namespace}/${name}`,
      namespace,
      name,
      kind: 'probe' as const,
      short: `${namespace}/${name}`,
      labels: { pod: name },
      apiPort,
      ports,
    })),
  );
}

function appPod(a: AppDoc): PodSpec {
  const namespace = a.namespace ?? a.group ?? 'default';
  const apiPort = a.port ?? DEFAULT_PORT[a.kind];
  const ports = a.ports
    ? a.ports.map((p) => ({ name: p.name ?? '', port: p.port, protocol: p.protocol ?? 'TCP' }))
    : [{ name: 'http', port: apiPort, protocol: 'TCP' as const }];
  return {
    id: `${namespace}/${a.name}`,
    namespace,
    name: a.name,
    kind: a.kind,
    short: a.short ?? (namespace === 'default' ? a.name : `${namespace}/${a.name}`),
    labels: { ...(a.labels ?? {}) },
    apiPort,
    ports,
    ...(a.kind === 'app' ? { cmd: a.cmd } : {}),
  };
}

export function checkOf(to: PodSpec, port: number, protocol: Protocol): CheckKind {
  if (protocol === 'SCTP') return 'sctp';
  if (protocol === 'UDP') return 'udp';
  return port === to.apiPort && to.kind !== 'app' ? 'http' : 'tcp';
}

/** The cells a probe's `probes` entries and a collector's `collects` entries stand for. */
function cellsOf(pods: PodSpec[], apps: AppDoc[], model: ModelDoc | undefined, names: PodNames, problems: Problems): Cell[] {
  const cells = new Map<string, Cell>();
  const add = (from: PodSpec, to: PodSpec, port: number, protocol: Protocol) => {
    const key = cellKey(from.id, to.id, port, protocol);
    if (!cells.has(key)) cells.set(key, { key, from: from.id, to: to.id, port, protocol, check: checkOf(to, port, protocol) });
  };
  const byId = new Map(pods.map((p) => [p.id, p]));
  if (model) {
    const mine = pods.filter((p) => model.namespaces.includes(p.namespace) && model.pods.includes(p.name));
    for (const from of mine) for (const to of mine) if (from !== to) for (const np of to.ports) add(from, to, np.port, np.protocol);
  }
  apps.forEach((a, i) => {
    const from = byId.get(appPod(a).id)!;
    if (a.kind === 'probe') {
      a.probes.forEach((t, j) => {
        const at = `/apps/${i}/probes/${j}`;
        const m = TARGET.exec(t);
        const to = m ? names.resolve(m[1] ? `${m[1]}/${m[2]}` : m[2]!, from.namespace) : undefined;
        if (!m || !to) return problems.add(at, names.unknown(t.split(':')[0]!));
        const target = byId.get(to)!;
        if (m[5]) {
          const np = target.ports.find((p) => p.name === m[5]);
          if (!np) return problems.add(at, `${target.id} declares no port named "${m[5]}"`);
          add(from, target, np.port, np.protocol);
        } else if (m[3]) {
          const port = Number(m[3]);
          if (port < 1 || port > 65535) return problems.add(at, `port ${port} is outside 1-65535`);
          const protocols: Protocol[] = m[4]
            ? [m[4].toUpperCase() as Protocol]
            : [...new Set(target.ports.filter((p) => p.port === port).map((p) => p.protocol))];
          for (const protocol of protocols.length > 0 ? protocols : (['TCP'] as Protocol[])) add(from, target, port, protocol);
        } else for (const np of target.ports) add(from, target, np.port, np.protocol);
      });
    } else if (a.kind === 'collector') {
      a.collects.forEach((t, j) => {
        const to = names.resolve(t, from.namespace);
        const target = to ? byId.get(to) : undefined;
        if (!target) return problems.add(`/apps/${i}/collects/${j}`, names.unknown(t));
        if (target.kind !== 'probe') return problems.add(`/apps/${i}/collects/${j}`, `"${t}" is not a probe`);
        add(from, target, target.apiPort, 'TCP');
      });
    }
  });
  return [...cells.values()];
}

/** Manifests of one `policies` entry (a file, a List, or one policy), checked, with problems reported. */
function manifestsOf(
  entry: unknown,
  pointer: string,
  parsed: ParsedScenario,
  io: ResolveIo,
  problems: Problems,
  cluster: LoadedClusterPolicy[] = [],
): LoadedPolicy[] {
  if (entry && typeof entry === 'object' && 'file' in entry) {
    const rel = String((entry as { file: unknown }).file);
    const path = isAbsolute(rel) ? rel : normalize(join(dirname(parsed.file), rel));
    let text: string;
    try {
      text = io.readFile(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EISDIR' && io.manifests) {
        try {
          return directoryPolicies(path, io, cluster);
        } catch (e) {
          if (!(e instanceof ManifestError)) throw e;
          problems.add(`${pointer}/file`, e.message);
          return [];
        }
      }
      problems.add(`${pointer}/file`, `cannot read ${rel}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      return [];
    }
    try {
      return loadManifests(text, rel, { templates: true, other: clusterEntry(rel, cluster) });
    } catch (err) {
      // yaml throws a ReferenceError for an alias bomb, past the manifest reader's own errors.
      if (err instanceof ReferenceError && /alias/i.test(err.message))
        problems.add(`${pointer}/file`, `${rel}: its aliases (*name) expand too often (an alias bomb?)`);
      else if (err instanceof ManifestError) {
        // Manifests of every kind (a rendered chart): its policies, the rest ignored and counted.
        const taken = io.manifests ? policiesOfManifests(text, rel, io.namespace) : undefined;
        if (taken && 'policies' in taken) return (problems.notes.push(`${pointer.slice(1)}: ${taken.note}`), taken.policies);
        // Read as manifests, the file's own problems (not "a ConfigMap is no NetworkPolicy").
        problems.add(`${pointer}/file`, taken ? taken.error : err.message);
      } else throw err;
      return [];
    }
  }
  const kind = (entry as { kind?: unknown }).kind;
  const items = kind === 'List' || kind === 'NetworkPolicyList' ? ((entry as { items?: unknown }).items as unknown[] | undefined) : undefined;
  if (items !== undefined && !Array.isArray(items)) return (problems.add(pointer, `a ${String(kind)} needs an items array`), []);
  const out: LoadedPolicy[] = [];
  (items ?? [entry]).forEach((value, i) => {
    const at = items ? `${pointer}/items/${i}` : pointer;
    const k = (value as { kind?: unknown } | null)?.kind;
    if (isClusterPolicyKind((value as { apiVersion?: unknown } | null)?.apiVersion, k)) {
      const cp = readClusterPolicy(value, { templates: true }, (path, m) => problems.add(`${at}${path === '/' ? '' : path}`, m));
      if (cp) cluster.push({ policy: cp, origin: `${parsed.file} ${at}` });
      return;
    }
    if (k !== 'NetworkPolicy')
      return problems.add(
        at,
        `kind ${JSON.stringify(k ?? null)} is not a NetworkPolicy (networking.k8s.io/v1), a ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2) or an AdminNetworkPolicy / BaselineAdminNetworkPolicy (policy.networking.k8s.io/v1alpha1)`,
      );
    const r = checkPolicy(value, { templates: true });
    if ('errors' in r) for (const e of r.errors) for (const m of e.errors) problems.add(`${at}${e.path === '/' ? '' : e.path}`, m);
    else out.push({ policy: r.policy, origin: `${parsed.file} ${at}` });
  });
  return out;
}

export function resolveScenario(parsed: ParsedScenario, io: ResolveIo): ResolvedScenario {
  const { doc } = parsed;
  const problems = new Problems(parsed);
  const apps = doc.apps ?? [];
  const limits = io.limits ?? RUN_LIMITS;
  if (!doc.model && apps.length === 0 && !doc.manifests) problems.add('/', 'give apps, a model or both (or manifests)');
  let fromManifests: ManifestModel | undefined;
  if (doc.manifests) {
    try {
      fromManifests = manifestModel(doc.manifests, parsed.file, io, limits);
    } catch (err) {
      if (!(err instanceof ManifestError)) throw err;
      problems.add('/manifests', err.message);
    }
  }

  // Pods: the model's, then the apps, then the manifests'.
  const modelCount = doc.model ? modelPods(doc.model).length : 0;
  const pods = [...(doc.model ? modelPods(doc.model) : []), ...apps.map(appPod), ...(fromManifests?.pods ?? [])];
  // Workloads a step's manifests add: deployed with the rest, judged from that step on.
  let stepPods: PodSpec[] = [];
  try {
    stepPods = stepWorkloadPods(doc.steps, parsed.file, io, new Set(pods.flatMap((p) => (p.workload ? [p.workload] : []))), limits);
  } catch (err) {
    if (!(err instanceof ManifestError)) throw err;
    problems.add('/steps', err.message);
  }
  pods.push(...stepPods);
  if (fromManifests && pods.length === 0)
    problems.add(
      '/manifests',
      `the manifests (${doc.manifests!.join(', ')}) make no pods (${fromManifests.summary.slice(0, 2).join('; ')}); pods come from ${Object.keys(POD_KINDS).join(', ')}`,
    );
  const seen = new Map<string, string>();
  pods.forEach((p, i) => {
    const at = i < modelCount ? '/model' : i < modelCount + apps.length ? `/apps/${i - modelCount}` : '/manifests';
    if (seen.has(p.id)) problems.add(at, `duplicate pod "${p.id}" (also ${seen.get(p.id)})`);
    seen.set(p.id, at);
    const names = new Set<string>();
    p.ports.forEach((np, j) => {
      if (np.name && names.has(np.name)) problems.add(`${at}/ports/${j}/name`, `duplicate port name "${np.name}"`);
      names.add(np.name);
    });
  });
  apps.forEach((a, i) => problems.labels(`/apps/${i}/labels`, a.labels));
  const shorts = new Map<string, string>();
  pods.forEach((p) => {
    if (shorts.has(p.short) && shorts.get(p.short) !== p.id) problems.add('/apps', `duplicate short label "${p.short}" (${shorts.get(p.short)} and ${p.id})`);
    shorts.set(p.short, p.id);
  });
  // Externals: the declared ones now (expectations may name them), automatic ones once the steps' policies are known.
  const externalDecl = externalsOf(doc.externals);
  const podSubnet = io.podSubnet ?? DEFAULT_POD_SUBNET;
  const declaredExt = declaredExternals([...externalDecl.hosts, ...(io.externals ?? []).map((d, i) => ({ doc: d, at: `--external ${i + 1}` }))], podSubnet);
  for (const p of declaredExt.problems) problems.add(p.at, p.message);
  const addExternals = (list: typeof declaredExt.externals, at: string) => {
    const added = list.map(externalPod);
    for (const e of added)
      if (pods.some((p) => p.external === undefined && p.namespace === EXTERNAL_NAMESPACE && p.name === e.name))
        problems.add(at, `external "${e.name}" and pod ${EXTERNAL_NAMESPACE}/${e.name} would be one app: rename one`);
    pods.push(...added);
    return added;
  };
  const declaredPods = addExternals(declaredExt.externals, '/externals');
  if (pods.length > limits.maxPods) problems.add('/', `${pods.length} pods; at most ${limits.maxPods} ${limits.why.pods}`);
  problems.throwIfAny();
  const names = new PodNames(pods);
  const cells = cellsOf(pods, apps, doc.model, names, problems);
  const made = [...(fromManifests?.pods ?? []), ...stepPods];
  for (const c of manifestCells(made)) cells.push(c); // not push(...): a large set has more cells than call arguments may be
  cells.push(...externalCells(pods, declaredPods, checkOf));
  if (cells.length > limits.maxCells) problems.add('/', `${cells.length} cells; at most ${limits.maxCells} ${limits.why.cells}`);

  // Namespaces: declared, the model's, the pods', the policies' (below).
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

  // Policies: manifests by namespace/name, or dialect policies by name.
  const catalog = new Map<string, LoadedPolicy>();
  const clusterCatalog = new Map<string, LoadedClusterPolicy>();
  const checkClusterTemplates = (lc: LoadedClusterPolicy, at: string) => {
    for (const m of clusterTemplateProblems(lc.policy, (ref) => seen.has(ref))) problems.add(at, m);
  };
  const dialect = doc.policies && !Array.isArray(doc.policies) ? doc.policies : undefined;
  const checkTemplates = (lp: LoadedPolicy, at: string) => {
    for (const c of cidrTexts(lp.policy))
      for (const ref of templateRefs(c.text))
        if (!seen.has(ref)) problems.add(at, `${objectId(lp.policy.metadata)} ${c.path}: {{ip ${ref}}} names no pod of this scenario`);
  };
  if (Array.isArray(doc.policies)) {
    doc.policies.forEach((entry, i) => {
      const cluster: LoadedClusterPolicy[] = [];
      const nps = manifestsOf(entry, `/policies/${i}`, parsed, io, problems, cluster);
      for (const lc of cluster) {
        const dup = clusterCatalogAdd(clusterCatalog, lc, catalog.has(lc.policy.id));
        if (dup) problems.add(`/policies/${i}`, dup);
        checkClusterTemplates(lc, `/policies/${i}`);
      }
      for (const lp of nps) {
        const id = objectId(lp.policy.metadata);
        if (catalog.has(id)) problems.add(`/policies/${i}`, `policy ${id} is defined twice (also ${catalog.get(id)!.origin})`);
        catalog.set(id, lp);
        checkTemplates(lp, `/policies/${i}`);
        ensureNs(lp.policy.metadata.namespace);
      }
    });
  }
  for (const lc of fromManifests?.set.clusterPolicies ?? []) {
    const dup = clusterCatalogAdd(clusterCatalog, lc, catalog.has(lc.policy.id));
    if (dup) problems.add('/manifests', dup);
  }
  for (const lp of fromManifests?.policies ?? []) {
    const id = objectId(lp.policy.metadata);
    if (catalog.has(id)) problems.add('/manifests', `policy ${id} is defined twice (${lp.origin} and ${catalog.get(id)!.origin})`);
    catalog.set(id, lp);
    ensureNs(lp.policy.metadata.namespace);
  }
  if (dialect) for (const p of Object.values(dialect)) if (p.selector.group) ensureNs(p.selector.group);
  const nsNames = [...declared.keys()];
  const fromDialect = (name: string) => dialectToNetworkPolicies(name, dialect![name]!, nsNames);

  // Steps: policies and labels in force, intended verdicts.
  const nsLabels: Record<string, Record<string, string>> = Object.fromEntries(declared);
  const podLabels: Record<string, Record<string, string>> = Object.fromEntries(pods.map((p) => [p.id, p.labels]));
  // The manifests' policies are in force until a step says otherwise.
  let previous: { policies: NetworkPolicyObject[]; clusterPolicies: ClusterPolicy[]; dialect?: Record<string, DialectPolicyDoc> } = {
    policies: (fromManifests?.policies ?? []).map((lp) => lp.policy),
    clusterPolicies: (fromManifests?.set.clusterPolicies ?? []).map((lc) => lc.policy),
  };
  const steps = doc.steps.map((s: StepDoc, i): ResolvedStep => {
    const at = `/steps/${i}`;
    if (s.policies) {
      const inForce = new Map<string, NetworkPolicyObject>();
      const clusterInForce = new Map<string, ClusterPolicy>();
      const putCluster = (p: ClusterPolicy, where: string) => {
        if (clusterInForce.has(p.id)) problems.add(where, `policy ${p.id} is in force twice in this step`);
        clusterInForce.set(p.id, p);
      };
      const usedDialect: Record<string, DialectPolicyDoc> = {};
      const put = (p: NetworkPolicyObject, where: string) => {
        const id = objectId(p.metadata);
        if (inForce.has(id)) problems.add(where, `policy ${id} is in force twice in this step`);
        inForce.set(id, p);
      };
      s.policies.forEach((ref, j) => {
        const where = `${at}/policies/${j}`;
        if (typeof ref !== 'string') {
          const cluster: LoadedClusterPolicy[] = [];
          const nps = manifestsOf(ref, where, parsed, io, problems, cluster);
          for (const lc of cluster) {
            checkClusterTemplates(lc, where);
            clusterInForce.delete(lc.policy.id); // a step's own manifest replaces one of the same name
            putCluster(lc.policy, where);
          }
          for (const lp of nps) {
            checkTemplates(lp, where);
            ensureNs(lp.policy.metadata.namespace);
            const id = objectId(lp.policy.metadata);
            inForce.delete(id); // a step's own manifest replaces one of the same name
            put(lp.policy, where);
          }
        } else if (dialect?.[ref]) {
          usedDialect[ref] = dialect[ref];
          for (const p of fromDialect(ref)) put(p, where);
        } else if (catalog.has(ref)) put(catalog.get(ref)!.policy, where);
        else if (clusterCatalog.has(ref)) putCluster(clusterCatalog.get(ref)!.policy, where);
        else
          problems.add(
            where,
            `unknown policy "${ref}" (known: ${[...(dialect ? Object.keys(dialect) : [...catalog.keys(), ...clusterCatalog.keys()])].join(', ') || 'none'})`,
          );
      });
      previous = { policies: [...inForce.values()], clusterPolicies: [...clusterInForce.values()], ...(dialect ? { dialect: usedDialect } : {}) };
    }
    if (s.manifests) {
      const state = {
        policies: new Map(previous.policies.map((p) => [objectId(p.metadata), p])),
        clusterPolicies: new Map(previous.clusterPolicies.map((p) => [p.id, p])),
        pods,
        podLabels,
        namespaceLabels: nsLabels,
      };
      for (const [where, message] of applyStepManifests(s.manifests, parsed.file, io, state)) problems.add(`${at}/manifests${where}`, message);
      previous = { ...previous, policies: [...state.policies.values()], clusterPolicies: [...state.clusterPolicies.values()] };
    }
    for (const [ns, labels] of Object.entries(s.labels?.namespaces ?? {})) {
      if (!declared.has(ns)) problems.add(`${at}/labels/namespaces/${ns}`, `unknown namespace "${ns}" (known: ${nsNames.join(', ')})`);
      else if (labels === null) nsLabels[ns] = declared.get(ns)!;
      else {
        problems.labels(`${at}/labels/namespaces/${ns}`, labels);
        nsLabels[ns] = { ...labels, [NAMESPACE_NAME_LABEL]: ns };
      }
    }
    for (const [ref, labels] of Object.entries(s.labels?.pods ?? {})) {
      const id = names.resolve(ref);
      const where = `${at}/labels/pods/${ref.replace(/\//g, '~1')}`;
      if (!id) problems.add(where, names.unknown(ref));
      else if (labels === null) podLabels[id] = pods.find((p) => p.id === id)!.labels;
      else {
        problems.labels(where, labels);
        podLabels[id] = { ...labels };
      }
    }
    let intended: Map<string, boolean> | null = null;
    if (s.expect !== undefined && s.expect !== 'computed') {
      if (Object.keys(s.expect).length === 0) problems.add(`${at}/expect`, 'give `computed`, a matrix, per-port matrices, edges or a default');
      else {
        try {
          intended = intendedVerdicts(s.expect, cells, names);
        } catch (err) {
          problems.add(`${at}/expect`, (err as Error).message);
        }
      }
    }
    const step: ResolvedStep = {
      index: i,
      name: s.name,
      ...(s.description ? { description: s.description } : {}),
      policies: previous.policies,
      ...(previous.clusterPolicies.length > 0 ? { clusterPolicies: previous.clusterPolicies } : {}),
      namespaceLabels: { ...nsLabels },
      podLabels: { ...podLabels },
      intended,
      ...(s.timeoutSeconds ? { timeoutSeconds: s.timeoutSeconds } : {}),
      ...(previous.dialect ? { dialect: previous.dialect } : {}),
    };
    return step;
  });
  if (externalDecl.auto) {
    const inForce = [...new Set(steps.flatMap((s) => s.policies))];
    const auto = addExternals(coverageExternals(inForce, declaredExt.externals, podSubnet), '/externals');
    if (auto.length > 0) {
      cells.push(...externalCells(pods, auto, checkOf));
      if (pods.length > limits.maxPods)
        problems.add(
          '/',
          `${pods.length} pods (${auto.length} of them automatic externals: externals: {auto: false} leaves them out); at most ${limits.maxPods} ${limits.why.pods}`,
        );
      // Hand-written expectations read again with the new cells (a `default` judges them too).
      doc.steps.forEach((s, i) => {
        if (steps[i]!.intended === null || s.expect === undefined || s.expect === 'computed') return;
        try {
          steps[i]!.intended = intendedVerdicts(s.expect, cells, names);
        } catch {
          /* said in the first reading */
        }
      });
      if (cells.length > limits.maxCells)
        problems.add('/', `${cells.length} cells (with the automatic externals' cells); at most ${limits.maxCells} ${limits.why.cells}`);
    }
  }
  // Intents last: they may name the automatic externals, and the matrices above were read again with their cells.
  doc.steps.forEach((s, i) => {
    const statements = (s.assert ?? []).map((doc, j) => ({ doc, where: `/steps/${i}/assert/${j}`, source: `steps/${i}/assert/${j}` }));
    for (const p of applyAssertions({ pods, cells }, steps[i]!, statements).problems) problems.add(p.input.where, p.message);
  });
  const stepNames = new Set<string>();
  steps.forEach((s) => {
    if (stepNames.has(s.name)) problems.add(`/steps/${s.index}/name`, `duplicate step name "${s.name}"`);
    stepNames.add(s.name);
  });
  problems.throwIfAny();
  return {
    name: doc.name,
    ...(doc.description ? { description: doc.description } : {}),
    file: parsed.file,
    probeSeconds: doc.probeSeconds ?? 1,
    timeoutSeconds: doc.timeoutSeconds ?? 0.5,
    namespaces: [...declared].map(([name, labels]) => ({ name, labels })),
    pods,
    cells,
    steps,
    ...(fromManifests || problems.notes.length ? { manifests: [...(fromManifests?.summary ?? []), ...problems.notes] } : {}),
  };
}
