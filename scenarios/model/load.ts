// Finding and reading a scenario: a file (its manifests relative to it) or a built-in by name
// (its manifests from the built-in files). Errors are ScenarioErrors naming the file.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { isMap, parseAllDocuments } from 'yaml';
import { BUILTIN, BUILTIN_FILES, builtinNames } from './builtin.ts';
import { MAX_SCENARIO_BYTES, readScenario, ScenarioError } from './scenario-file.ts';
import { CHECK_LIMITS, type Limits } from './limits.ts';
import { resolveScenario, type ResolvedScenario } from './resolve.ts';
import { MAX_MANIFEST_VALUES, shapeProblem } from './yaml-bounds.ts';
import { isManifestDir, readManifestSources, readStdin } from './sources.ts';
import type { ExternalHostDoc } from './externals.ts';

/** How manifests are read: kubectl's --namespace for objects without one, --replicas. */
export interface LoadOptions {
  namespace?: string;
  replicas?: boolean;
  /** --external hosts (model/externals.ts), and the pod subnet they must be outside of. */
  externals?: ExternalHostDoc[];
  podSubnet?: string;
  /** Nothing will run on packets (scenario check): the higher bounds on pods and cells. */
  computedOnly?: boolean;
  /** Bounds of their own (scenario diff's, whose matrices compute more cells than check's), over computedOnly's. */
  limits?: Limits;
  /** Manifests with no scenario file: their cells left to model/deferred-cells.ts (scenario diff at scale). */
  deferManifestCells?: boolean;
}

/**
 * A scenario file (one document, a map with top-level steps and no kind) rather than Kubernetes
 * manifests. Only the document's structure is looked at (no alias is expanded).
 */
export function isScenarioText(text: string): boolean {
  // A text whose shape is past the bounds is not parsed here: the reader that takes it says why.
  if (shapeProblem(text, MAX_MANIFEST_VALUES)) return false;
  const docs = parseAllDocuments(text, { uniqueKeys: false });
  if (!Array.isArray(docs)) return false;
  const real = docs.filter((d) => d.contents !== null);
  const top = real.length === 1 ? real[0]!.contents : null;
  return isMap(top) && top.has('steps') && !top.has('kind');
}

const manifestIo = (opts: LoadOptions) => ({
  readFile: readManifest,
  manifests: (path: string) => readManifestSources(path),
  ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}),
  ...(opts.replicas ? { replicas: true } : {}),
  ...(opts.limits ? { limits: opts.limits } : opts.computedOnly ? { limits: CHECK_LIMITS } : {}),
  ...externalIo(opts),
});

const externalIo = (opts: LoadOptions) => ({
  ...(opts.externals ? { externals: opts.externals } : {}),
  ...(opts.podSubnet ? { podSubnet: opts.podSubnet } : {}),
});

/** The scenario name of a set of manifests: its file or directory name as a scenario name would be. */
export function manifestSetName(ref: string): string {
  return (
    (ref === '-' ? 'manifests' : basename(ref.replace(/\/+$/, '')).replace(/\.(ya?ml|json)$/, ''))
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 32)
      .replace(/-+$/, '') || 'manifests'
  );
}

/**
 * Manifests with no scenario file: their pods probe each other on every declared port, their
 * policies are in force, and the one step's expectation is what they compute.
 */
export function manifestScenario(ref: string, opts: LoadOptions = {}): ResolvedScenario {
  const name = manifestSetName(ref);
  const entry = ref === '-' ? '-' : basename(ref.replace(/\/+$/, ''));
  const file = ref === '-' ? '-' : ref.replace(/\/+$/, '');
  const parsed = {
    doc: { name, manifests: [entry], steps: [{ name: 'as-written', description: 'the policies of the manifests', expect: 'computed' as const }] },
    file,
    at: () => '',
  };
  try {
    return resolveScenario(parsed, { ...manifestIo(opts), ...(opts.deferManifestCells ? { deferManifestCells: true } : {}) });
  } catch (err) {
    // No scenario file to point into: the manifests' own messages, as they are.
    if (err instanceof ScenarioError)
      throw new ScenarioError(err.message.replace(/^[^\n]*: invalid scenario:\n {2}\/manifests: /, '').replace(/^[^\n]*: invalid scenario:/, `${file}:`));
    throw err;
  }
}

function readBounded(path: string): string {
  const size = statSync(path).size;
  if (size > MAX_SCENARIO_BYTES) throw Object.assign(new Error(`larger than ${MAX_SCENARIO_BYTES / 1024 / 1024} MiB`), { code: 'EFBIG' });
  return readFileSync(path, 'utf8');
}

/** A manifest file a scenario names, bounded as the scenario is (readScenario checks its own text). */
function readManifest(path: string): string {
  const text = readBounded(path);
  const problem = shapeProblem(text, MAX_MANIFEST_VALUES);
  if (problem) throw new Error(problem);
  return text;
}

export function loadScenario(ref: string, opts: LoadOptions = {}): ResolvedScenario {
  const builtin = BUILTIN[ref];
  if (builtin) {
    const readFile = (path: string) => {
      const text = BUILTIN_FILES[path];
      if (text === undefined) throw Object.assign(new Error(`no built-in file ${path}`), { code: 'ENOENT' });
      return text;
    };
    return resolveScenario(readScenario(readFile(builtin), builtin), { readFile, ...externalIo(opts) });
  }
  if (ref === '-') {
    let text: string;
    try {
      text = readStdin();
    } catch (err) {
      throw new ScenarioError((err as Error).message);
    }
    return isScenarioText(text) ? resolveScenario(readScenario(text, '-'), manifestIo(opts)) : manifestScenario('-', opts);
  }
  if (isManifestDir(ref)) return manifestScenario(ref, opts);
  if (!existsSync(ref)) throw new ScenarioError(`no scenario file ${JSON.stringify(ref)} and no built-in of that name (built-in: ${builtinNames()})`);
  let text: string;
  try {
    text = readBounded(ref);
  } catch (err) {
    throw new ScenarioError(`${ref}: cannot read: ${(err as Error).message}`);
  }
  if (!isScenarioText(text)) return manifestScenario(ref, opts);
  return resolveScenario(readScenario(text, ref), manifestIo(opts));
}

/**
 * One scenario, or a set: a built-in folder (`k8s-e2e`) or a directory, every scenario file in it
 * (YAML or JSON with top-level steps) in name order.
 */
export function loadTargets(ref: string, opts: LoadOptions = {}): { set?: string; scenarios: ResolvedScenario[] } {
  const isFile = ref === '-' || (existsSync(ref) && statSync(ref).isFile());
  if (BUILTIN[ref] || isFile) return { scenarios: [loadScenario(ref, opts)] };
  const prefix = `${ref.replace(/\/+$/, '')}/`;
  const builtins = Object.keys(BUILTIN)
    .filter((n) => n.startsWith(prefix))
    .sort();
  if (builtins.length > 0) return { set: ref.replace(/\/+$/, ''), scenarios: builtins.map((n) => loadScenario(n, externalIo(opts))) };
  if (existsSync(ref) && statSync(ref).isDirectory()) {
    const files = readdirSync(ref)
      .filter((f) => /\.(ya?ml|json)$/.test(f))
      .sort()
      .map((f) => join(ref, f))
      .filter((f) => statSync(f).isFile() && isScenarioText(readBounded(f)));
    // A directory without scenario files is a directory of manifests.
    if (files.length === 0) return { scenarios: [loadScenario(ref, opts)] };
    return { set: ref.replace(/\/+$/, ''), scenarios: files.map((f) => loadScenario(f, opts)) };
  }
  return { scenarios: [loadScenario(ref, opts)] };
}
