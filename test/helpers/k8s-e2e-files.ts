// Reads the scenario files of the built-in k8s-e2e set (scenarios/builtin/k8s-e2e/) on their own
// terms, without the scenario runner: the model, the manifests, the steps, every expectation
// matrix and the upstream Go statements quoted above it. The k8s-e2e tests use this to check the
// files against the upstream code (test/helpers/upstream-reachability.ts), against the Kubernetes
// schemas and, once it exists, against the evaluator.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isMap, isScalar, parseDocument, type Document } from 'yaml';
import { ROOT } from './process.ts';

export const K8S_E2E_DIR = join(ROOT, 'scenarios', 'builtin', 'k8s-e2e');

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
  spec: Record<string, unknown>;
}

export interface Expectation {
  port: number;
  protocol: 'TCP' | 'UDP' | 'SCTP';
  /** The matrix as written: header of destinations, one row per source. */
  matrix: string;
  /** The comment lines right above the `port/PROTOCOL:` key, `#` removed. */
  quoted: string[];
  /** 1-based line of the key, for messages. */
  line: number;
}

export interface E2eStep {
  name: string;
  /** The policies in force: by `namespace/name` from the scenario's list, or inline (an update). */
  policies: (string | Manifest)[];
  labels?: { namespaces?: Record<string, Record<string, string>>; pods?: Record<string, Record<string, string>> };
  expect: Expectation[];
}

export interface E2eFile {
  file: string;
  name: string;
  description: string;
  model: { namespaces: string[]; pods: string[]; ports: number[]; protocols: string[] };
  policies: Manifest[];
  steps: E2eStep[];
  /** The upstream It("…") this file renders, from its header comment. */
  upstreamIt: string;
  text: string;
}

export function e2eFileNames(): string[] {
  return readdirSync(K8S_E2E_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
}

export function loadE2eFile(file: string): E2eFile {
  const text = readFileSync(join(K8S_E2E_DIR, file), 'utf8');
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
  const js = doc.toJS() as Omit<E2eFile, 'file' | 'steps' | 'upstreamIt' | 'text'> & {
    steps: (Omit<E2eStep, 'expect'> & { expect: Record<string, string> })[];
  };
  const lines = text.split('\n');
  const it = /^#\s+It\("(.*)"\)$/m.exec(text);
  return {
    ...js,
    file,
    text,
    upstreamIt: it ? it[1]! : '',
    steps: js.steps.map((step, i) => ({ ...step, expect: expectations(doc, lines, i, file) })),
  };
}

function expectations(doc: Document, lines: string[], stepIndex: number, file: string): Expectation[] {
  const node = doc.getIn(['steps', stepIndex, 'expect'], true);
  if (!isMap(node)) throw new Error(`${file}: steps/${stepIndex}/expect is not a map`);
  return node.items.map((pair) => {
    const key = isScalar(pair.key) ? String(pair.key.value) : '';
    const m = /^(\d+)\/(TCP|UDP|SCTP)$/.exec(key);
    if (!m) throw new Error(`${file}: steps/${stepIndex}/expect: key "${key}" is not port/PROTOCOL`);
    const offset = isScalar(pair.key) && pair.key.range ? pair.key.range[0] : 0;
    const line = lineOf(lines, offset);
    const quoted: string[] = [];
    for (let j = line - 2; j >= 0 && /^\s*#/.test(lines[j]!); j--) quoted.unshift(lines[j]!.replace(/^\s*#\s?/, ''));
    const value = isScalar(pair.value) ? String(pair.value.value) : '';
    return { port: Number(m[1]), protocol: m[2] as Expectation['protocol'], matrix: value, quoted, line };
  });
}

function lineOf(lines: string[], offset: number): number {
  let seen = 0;
  for (let i = 0; i < lines.length; i++) {
    seen += lines[i]!.length + 1;
    if (seen > offset) return i + 1;
  }
  return lines.length;
}

/** A matrix as a map from source to destination to '.', 'X' or '-', with its header and rows as written. */
export function readMatrix(matrix: string): { columns: string[]; rows: string[]; cells: Map<string, Map<string, string>> } {
  const lines = matrix
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const header = lines[0]!.split(/\s+/);
  const columns = header.slice(1);
  const cells = new Map<string, Map<string, string>>();
  const rows: string[] = [];
  for (const line of lines.slice(1)) {
    const [from, ...values] = line.split(/\s+/);
    rows.push(from!);
    if (values.length !== columns.length) throw new Error(`row ${from}: ${values.length} cells for ${columns.length} columns`);
    cells.set(from!, new Map(columns.map((c, i) => [c, values[i]!])));
  }
  return { columns, rows, cells };
}

/** Every pod `ns/pod` of a model, in the upstream order (namespaces outer, pods inner). */
export function modelPods(model: E2eFile['model']): string[] {
  return model.namespaces.flatMap((ns) => model.pods.map((p) => `${ns}/${p}`));
}

/** `{{ip ns/pod}}` placeholders of a manifest, replaced by the addresses given. */
export function withAddresses<T>(manifest: T, ipOf: (pod: string) => string): T {
  return JSON.parse(JSON.stringify(manifest).replace(/\{\{ip ([a-z0-9-]+\/[a-z0-9-]+)\}\}/g, (_, pod: string) => ipOf(pod))) as T;
}

/** The namespaces and pods of a file's model as they stand at each step (labels carry over). */
export interface StepState {
  step: E2eStep;
  namespaces: { name: string; labels: Record<string, string> }[];
  pods: {
    namespace: string;
    name: string;
    labels: Record<string, string>;
    ip: string;
    ports: { name: string; port: number; protocol: 'TCP' | 'UDP' | 'SCTP' }[];
  }[];
  /** The manifests in force, `{{ip ns/pod}}` replaced. */
  policies: Manifest[];
}

export function stepStates(f: E2eFile, ipOf: (pod: string) => string): StepState[] {
  const nsLabels = new Map(f.model.namespaces.map((n) => [n, { 'kubernetes.io/metadata.name': n } as Record<string, string>]));
  const podLabels = new Map(modelPods(f.model).map((p) => [p, { pod: p.split('/')[1]! } as Record<string, string>]));
  const byId = new Map(f.policies.map((m) => [`${m.metadata.namespace}/${m.metadata.name}`, m]));
  return f.steps.map((step) => {
    for (const [ns, labels] of Object.entries(step.labels?.namespaces ?? {})) nsLabels.set(ns, labels);
    for (const [pod, labels] of Object.entries(step.labels?.pods ?? {})) podLabels.set(pod, labels);
    const ports = f.model.ports.flatMap((port) =>
      f.model.protocols.map((protocol) => ({ name: `serve-${port}-${protocol.toLowerCase()}`, port, protocol: protocol as 'TCP' | 'UDP' | 'SCTP' })),
    );
    return {
      step,
      namespaces: [...nsLabels].map(([name, labels]) => ({ name, labels })),
      pods: modelPods(f.model).map((id) => ({ namespace: id.split('/')[0]!, name: id.split('/')[1]!, labels: podLabels.get(id)!, ip: ipOf(id), ports })),
      policies: step.policies.map((p) => withAddresses(typeof p === 'string' ? byId.get(p)! : p, ipOf)),
    };
  });
}
