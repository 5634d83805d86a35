// Upstream's ClusterNetworkPolicy conformance suite (kubernetes-sigs/network-policy-api@0eec1b0,
// conformance/tests/*.go) as data: the loader of scenarios/builtin/cnp-conformance/<ShortName>.yaml,
// the topology of conformance/base/manifests.yaml as a cluster model, and a scan of the Go sources
// (test/fixtures/network-policy-api/conformance/tests/) that says how many subtests and checks each
// test has, so that a transcription cannot drop one silently.
//
// The format, one upstream ConformanceTest per file:
//   shortName: CNPAdminTierEgressTCP       # upstream's ShortName, also the file's name
//   description: ...                       # upstream's Description
//   features: [SupportClusterNetworkPolicy, ...]   # upstream's Features (suite.<name>)
//   source: conformance/tests/<file>.go    # the Go file it comes from
//   commit: 0eec1b0                        # the upstream commit
//   manifests: [admin_tier/<file>.yaml]    # what the test applies, relative to conformance/base
//                                          # (on top of manifests.yaml, the topology)
//   subtests:                              # each t.Run, in upstream's order
//     - name: <t.Run's name>
//       changes: [<change>, ...]           # made before the subtest's first check, in order
//       checks:                            # each kubernetes.PokeServer, in upstream's order
//         - changes: [<change>, ...]       # optional: made just before this check (upstream
//                                          # changes things between the checks of one subtest)
//           from: <namespace>/<pod>        # the client pod
//           to: <namespace>/<pod>          # the server pod, or instead
//           toNode: <namespace>/<pod>      # the node a host-network pod runs on, reached at that
//                                          # pod's address (which is the node's): node peers
//           protocol: TCP | UDP | SCTP
//           port: <number>                 # or instead
//           hostNetworkPort: <index>       # upstream's s.HostNetworkPorts[index] (the suite's
//                                          # default range starts at 34345: HOST_NETWORK_PORTS)
//           connect: true | false          # upstream's shouldConnect
//           note: <text>                   # upstream's comments on the check, when they explain it
// A <change> is one of (changes accumulate: a later subtest sees what earlier ones did, as upstream
// mutates the cluster in place within a test; each test starts from its manifests again):
//   - apply: <a whole document>            # create or update: the full resulting ClusterNetworkPolicy
//                                          # or NetworkPolicy (a swap of rules is the whole policy
//                                          # with the rules swapped)
//   - delete: {kind, namespace?, name}     # delete that object
//   - namespaceLabels: {namespace, labels} # the namespace's labels replaced (kubernetes.io/metadata.name
//                                          # stays, as the API server keeps it)
// In documents, `{{ip <namespace>/<pod>}}` stands for that pod's address (upstream uses the pod's
// status.podIP; its mask is /32 for IPv4, which the model's addresses are).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LineCounter, parseAllDocuments, parseDocument, type Document } from 'yaml';
import type { Cluster } from '../../shared/netpol/evaluate.ts';
import { NAMESPACE_NAME_LABEL, nodeLabels, PROTOCOLS, type NamedPort, type PodInfo, type Protocol } from '../../shared/netpol/types.ts';
import { ROOT } from './process.ts';

export const UPSTREAM_DIR = join(ROOT, 'test/fixtures/network-policy-api');
export const CONFORMANCE_DIR = join(ROOT, 'scenarios/builtin/cnp-conformance');
export const UPSTREAM_COMMIT = '0eec1b0';

/** The suite's default host-network ports (conformance/utils/suite/suite.go: 8 ports from 34345). */
export const HOST_NETWORK_PORTS: readonly number[] = Array.from({ length: 8 }, (_, i) => 34345 + i);

export type Change =
  | { apply: Record<string, unknown> }
  | { delete: { kind: string; namespace?: string; name: string } }
  | { namespaceLabels: { namespace: string; labels: Record<string, string> } };

export interface Check {
  changes: Change[];
  from: string;
  /** The server pod, or for node peers the host-network pod whose node is the server. */
  to: string;
  toNode: boolean;
  protocol: Protocol;
  port: number;
  /** Set when upstream names the port as s.HostNetworkPorts[index]. */
  hostNetworkPort?: number;
  connect: boolean;
  note?: string;
  /** `<shortName>/<subtest index>/<check index>`. */
  id: string;
  /** `<file>:<line>` of the check in its YAML file. */
  at: string;
}

export interface Subtest {
  name: string;
  changes: Change[];
  checks: Check[];
}

export interface ConformanceTest {
  file: string;
  shortName: string;
  description: string;
  features: string[];
  source: string;
  commit: string;
  manifests: string[];
  subtests: Subtest[];
}

/** A transcription that does not follow the format: names the file, the field and its line. */
export class ConformanceFormatError extends Error {}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

class Reader {
  readonly #lines = new LineCounter();
  readonly doc: Document;
  readonly file: string;
  constructor(file: string, text: string) {
    this.file = file;
    this.doc = parseDocument(text, { lineCounter: this.#lines, prettyErrors: false });
    if (this.doc.errors.length > 0) throw new ConformanceFormatError(`${file}: ${this.doc.errors[0]!.message}`);
  }
  line(path: (string | number)[]): number {
    for (let n = path.length; n >= 0; n--) {
      const node = this.doc.getIn(path.slice(0, n), true) as { range?: [number, number] } | undefined;
      if (node?.range) return this.#lines.linePos(node.range[0]).line;
    }
    return 1;
  }
  fail(path: (string | number)[], message: string): never {
    const field = path
      .map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`))
      .join('')
      .replace(/^\./, '');
    throw new ConformanceFormatError(`${this.file}:${this.line(path)}: ${field || '<document>'}: ${message}`);
  }
  string(v: unknown, path: (string | number)[]): string {
    if (typeof v !== 'string' || v === '') this.fail(path, `must be a non-empty string, not ${JSON.stringify(v)}`);
    return v;
  }
  list(v: unknown, path: (string | number)[]): unknown[] {
    if (!Array.isArray(v)) this.fail(path, `must be a list`);
    return v;
  }
  object(v: unknown, path: (string | number)[]): Json {
    if (!isObj(v)) this.fail(path, `must be a mapping`);
    return v;
  }
  only(v: Json, keys: string[], path: (string | number)[]): void {
    for (const k of Object.keys(v)) if (!keys.includes(k)) this.fail([...path, k], `unknown field (known: ${keys.join(', ')})`);
  }
}

const POD_REF = /^[a-z0-9-]+\/[a-z0-9-]+$/;

function changes(r: Reader, v: unknown, path: (string | number)[]): Change[] {
  return r.list(v ?? [], path).map((c, i): Change => {
    const at = [...path, i];
    const o = r.object(c, at);
    const keys = Object.keys(o);
    if (keys.length !== 1) r.fail(at, `must have exactly one of apply, delete, namespaceLabels (has ${keys.join(', ') || 'none'})`);
    if ('apply' in o) {
      const d = r.object(o.apply, [...at, 'apply']);
      r.string(d.kind, [...at, 'apply', 'kind']);
      r.string(r.object(d.metadata, [...at, 'apply', 'metadata']).name, [...at, 'apply', 'metadata', 'name']);
      return { apply: d };
    }
    if ('delete' in o) {
      const d = r.object(o.delete, [...at, 'delete']);
      r.only(d, ['kind', 'namespace', 'name'], [...at, 'delete']);
      const out: Change = { delete: { kind: r.string(d.kind, [...at, 'delete', 'kind']), name: r.string(d.name, [...at, 'delete', 'name']) } };
      if (d.namespace !== undefined) out.delete.namespace = r.string(d.namespace, [...at, 'delete', 'namespace']);
      return out;
    }
    if ('namespaceLabels' in o) {
      const d = r.object(o.namespaceLabels, [...at, 'namespaceLabels']);
      r.only(d, ['namespace', 'labels'], [...at, 'namespaceLabels']);
      const labels = r.object(d.labels, [...at, 'namespaceLabels', 'labels']);
      for (const [k, val] of Object.entries(labels)) r.string(val, [...at, 'namespaceLabels', 'labels', k]);
      return { namespaceLabels: { namespace: r.string(d.namespace, [...at, 'namespaceLabels', 'namespace']), labels: labels as Record<string, string> } };
    }
    return r.fail([...at, keys[0]!], 'unknown change (known: apply, delete, namespaceLabels)');
  });
}

/** Reads one transcription file; throws ConformanceFormatError naming file, field and line. */
export function parseConformanceTest(file: string, text: string): ConformanceTest {
  const r: Reader = new Reader(file, text); // typed, so that r.fail's `never` narrows
  const top = r.object(r.doc.toJS(), []);
  r.only(top, ['shortName', 'description', 'features', 'source', 'commit', 'manifests', 'subtests'], []);
  const shortName = r.string(top.shortName, ['shortName']);
  const subtests = r.list(top.subtests, ['subtests']).map((s, si): Subtest => {
    const sp = ['subtests', si];
    const so = r.object(s, sp);
    r.only(so, ['name', 'changes', 'checks'], sp);
    return {
      name: r.string(so.name, [...sp, 'name']),
      changes: changes(r, so.changes, [...sp, 'changes']),
      checks: r.list(so.checks, [...sp, 'checks']).map((c, ci): Check => {
        const cp = [...sp, 'checks', ci];
        const co = r.object(c, cp);
        r.only(co, ['changes', 'from', 'to', 'toNode', 'protocol', 'port', 'hostNetworkPort', 'connect', 'note'], cp);
        const ref = (key: string) => {
          const v = r.string(co[key], [...cp, key]);
          if (!POD_REF.test(v)) r.fail([...cp, key], `must be <namespace>/<pod>, not ${JSON.stringify(v)}`);
          return v;
        };
        if ('to' in co === 'toNode' in co) r.fail(cp, 'must have exactly one of to, toNode');
        if ('port' in co === 'hostNetworkPort' in co) r.fail(cp, 'must have exactly one of port, hostNetworkPort');
        const protocol = co.protocol as Protocol;
        if (!PROTOCOLS.includes(protocol)) r.fail([...cp, 'protocol'], `must be one of ${PROTOCOLS.join(', ')}, not ${JSON.stringify(co.protocol)}`);
        let port: number;
        const check: Partial<Check> = {};
        if ('hostNetworkPort' in co) {
          const i = co.hostNetworkPort;
          if (typeof i !== 'number' || !Number.isInteger(i) || i < 0 || i >= HOST_NETWORK_PORTS.length)
            r.fail([...cp, 'hostNetworkPort'], `must be an index 0-${HOST_NETWORK_PORTS.length - 1} of the host-network ports`);
          port = HOST_NETWORK_PORTS[i]!;
          check.hostNetworkPort = i;
        } else {
          if (typeof co.port !== 'number' || !Number.isInteger(co.port) || co.port < 1 || co.port > 65535)
            r.fail([...cp, 'port'], 'must be a port number 1-65535');
          port = co.port;
        }
        if (typeof co.connect !== 'boolean') r.fail([...cp, 'connect'], 'must be true or false');
        return {
          changes: changes(r, co.changes, [...cp, 'changes']),
          from: ref('from'),
          to: ref('to' in co ? 'to' : 'toNode'),
          toNode: 'toNode' in co,
          protocol,
          port,
          ...check,
          connect: co.connect,
          ...(co.note !== undefined ? { note: r.string(co.note, [...cp, 'note']) } : {}),
          id: `${shortName}/${si}/${ci}`,
          at: `${file}:${r.line(cp)}`,
        };
      }),
    };
  });
  return {
    file,
    shortName,
    description: r.string(top.description, ['description']),
    features: r.list(top.features, ['features']).map((f, i) => r.string(f, ['features', i])),
    source: r.string(top.source, ['source']),
    commit: r.string(top.commit, ['commit']),
    manifests: r.list(top.manifests, ['manifests']).map((m, i) => r.string(m, ['manifests', i])),
    subtests,
  };
}

/** Every transcribed test, by file name order. */
export function loadConformanceTests(dir = CONFORMANCE_DIR): ConformanceTest[] {
  return readdirSync(dir)
    .filter((f) => /^CNP\w+\.yaml$/.test(f)) // beside them, the scenarios made from them (cnp-conformance-scenarios.ts)
    .sort()
    .map((f) => {
      const t = parseConformanceTest(f, readFileSync(join(dir, f), 'utf8'));
      if (`${t.shortName}.yaml` !== f) throw new ConformanceFormatError(`${f}:1: shortName: ${t.shortName} does not match the file's name`);
      return t;
    });
}

/** The documents of an upstream manifest (relative to conformance/base), its HostNetworkPorts templates rendered as the suite renders them. */
export function upstreamDocuments(rel: string): Record<string, unknown>[] {
  const text = readFileSync(join(UPSTREAM_DIR, 'conformance/base', rel), 'utf8').replace(/\{\{ index \.HostNetworkPorts (\d) \}\}/g, (_, i: string) =>
    String(HOST_NETWORK_PORTS[Number(i)]),
  );
  return parseAllDocuments(text)
    .map((d) => d.toJS() as unknown)
    .filter(isObj);
}

/**
 * The topology of manifests.yaml as a cluster model: its namespaces with their labels, and for each
 * StatefulSet the pods <name>-0 .. <name>-(replicas-1) with the template's labels and container
 * ports. Addresses are fixed: pods get 10.244.<namespace's position + 1>.<ordinal + 10>; host-network
 * pods have their node's address, 172.18.0.<ordinal + 2> (one node per replica: node-<ordinal>, with
 * the labels a kubelet gives a Linux node, kubernetes.io/os: linux among them).
 */
/** The node of host-network replica <ordinal> (upstream runs on kind: one node per centaur). */
export const conformanceNodeName = (ordinal: number): string => `node-${ordinal}`;

export function conformanceCluster(): Cluster {
  const docs = upstreamDocuments('manifests.yaml');
  const namespaces = docs
    .filter((d) => d.kind === 'Namespace')
    .map((d) => {
      const meta = d.metadata as { name: string; labels?: Record<string, string> };
      return { name: meta.name, labels: { ...meta.labels, [NAMESPACE_NAME_LABEL]: meta.name } };
    });
  const pods: PodInfo[] = docs
    .filter((d) => d.kind === 'StatefulSet')
    .flatMap((d) => {
      const meta = d.metadata as { name: string; namespace: string };
      const spec = d.spec as { replicas?: number; template: { metadata?: { labels?: Record<string, string> }; spec: Json } };
      const podSpec = spec.template.spec;
      const hostNetwork = podSpec.hostNetwork === true;
      const ports: NamedPort[] = (podSpec.containers as { ports?: { name?: string; containerPort: number; protocol?: Protocol }[] }[]).flatMap((c) =>
        (c.ports ?? []).filter((p) => p.name !== undefined).map((p) => ({ name: p.name!, port: p.containerPort, protocol: p.protocol ?? 'TCP' })),
      );
      const nsIndex = namespaces.findIndex((n) => n.name === meta.namespace);
      return Array.from({ length: spec.replicas ?? 1 }, (_, ordinal) => ({
        namespace: meta.namespace,
        name: `${meta.name}-${ordinal}`,
        labels: { ...spec.template.metadata?.labels },
        ip: hostNetwork ? `172.18.0.${ordinal + 2}` : `10.244.${nsIndex + 1}.${ordinal + 10}`,
        ports,
        ...(hostNetwork ? { hostNetwork: true, node: conformanceNodeName(ordinal) } : {}),
      }));
    });
  const nodeCount = Math.max(0, ...pods.filter((p) => p.hostNetwork).map((p) => Number(p.name.slice(p.name.lastIndexOf('-') + 1)) + 1));
  const nodes = Array.from({ length: nodeCount }, (_, i) => ({
    name: conformanceNodeName(i),
    labels: nodeLabels(conformanceNodeName(i)),
    ip: `172.18.0.${i + 2}`,
  }));
  return { namespaces, pods, nodes };
}

/** What the Go source of one ConformanceTest holds: its ShortName, Description, Features, Manifests and per t.Run the PokeServer checks by protocol. */
export interface GoTest {
  shortName: string;
  description: string;
  features: string[];
  manifests: string[];
  subtests: { name: string; checks: Record<Protocol, number> }[];
}

/**
 * A small regex scan of an upstream test file, independent of the transcription: each
 * `var X = suite.ConformanceTest{`, its fields, its `t.Run("...")` calls, and the protocol argument
 * of each `kubernetes.PokeServer(` call after them.
 */
export function scanGoTests(source: string): GoTest[] {
  const parts = source.split(/^var \w+ = suite\.ConformanceTest\{$/m).slice(1);
  return parts.map((body) => {
    const field = (re: RegExp) => re.exec(body)?.[1] ?? '';
    const subtests: GoTest['subtests'] = [];
    for (const m of body.matchAll(/t\.Run\("((?:[^"\\]|\\.)*)"|kubernetes\.PokeServer\([^"]*"[^"]*",\s*"[^"]*",\s*"(\w+)"/g)) {
      if (m[1] !== undefined) subtests.push({ name: m[1], checks: { TCP: 0, UDP: 0, SCTP: 0 } });
      else subtests[subtests.length - 1]!.checks[m[2]!.toUpperCase() as Protocol]++;
    }
    return {
      shortName: field(/ShortName:\s+"(\w+)"/),
      description: field(/Description:\s+"([^"]*)"/),
      features: [...field(/Features: \[\]suite\.SupportedFeature\{([^}]*)\}/).matchAll(/suite\.(\w+)/g)].map((f) => f[1]!),
      manifests: [...field(/Manifests: \[\]string\{([^}]*)\}/).matchAll(/"base\/([^"]+)"/g)].map((f) => f[1]!),
      subtests,
    };
  });
}

/** Every upstream test file's scan, keyed by its path (conformance/tests/<file>.go). */
export function upstreamGoTests(): Map<string, GoTest[]> {
  const dir = join(UPSTREAM_DIR, 'conformance/tests');
  return new Map(
    readdirSync(dir)
      .filter((f) => f.endsWith('.go'))
      .sort()
      .map((f) => [`conformance/tests/${f}`, scanGoTests(readFileSync(join(dir, f), 'utf8'))]),
  );
}
