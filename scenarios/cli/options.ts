// What the scenario commands share: how an error is said (exit 2), the manifest options, and
// loading the scenario a command names.
import { parseExternalFlag, type ExternalHostDoc } from '../model/externals.ts';
import { applyAssertFile, readAssertFile } from '../model/assert-file.ts';
import { loadScenario, type LoadOptions } from '../model/load.ts';
import type { ResolvedScenario } from '../model/resolve.ts';
import { ScenarioError } from '../errors.ts';
import { DEFAULT_IMAGE } from '../run/kubernetes-manifests.ts';

/** Exit codes of `scenario run` and `scenario check` (docs/scenarios.md). */
export const EXIT = {
  pass: 0,
  fail: 1,
  badInput: 2,
  /** Nothing failed, but some judged cells were not proven (run: no enforcement; check: undecided). */
  computedOnly: 3,
} as const;

/** Says a bad input on stderr and exits 2 (bad input), as every command does. */
export function fail(message: string): never {
  process.stderr.write(`scenario: error: ${message}\n`);
  process.exit(EXIT.badInput);
}

/** Options of every command that takes manifests. */
export const manifestOptions = {
  namespace: { type: 'string', alias: 'n', describe: 'manifests: the namespace of objects that name none (default: default), as kubectl -n' },
  replicas: {
    type: 'boolean',
    default: false,
    describe: 'manifests: as many pods as each workload asks for, named <workload>-<n> (default: one per workload)',
  },
  external: {
    type: 'string',
    array: true,
    describe:
      'a host outside the pod network, external:<name> in cells: name=ADDRESS[:port/proto,...] (IPv4 outside the pod subnet; default 80/tcp); repeat for more',
  },
} as const;

/** The --external flags, read; exit 2 naming the flag that is wrong. */
export function externalFlags(values: unknown): ExternalHostDoc[] {
  const list = values === undefined ? [] : Array.isArray(values) ? values : [values];
  return list.map((v) => {
    const r = parseExternalFlag(String(v));
    if ('error' in r) fail(r.error);
    return r;
  });
}

export const loadOptions = (a: { readonly [flag: string]: unknown }): LoadOptions => {
  const externals = externalFlags(a.external);
  return {
    ...(typeof a.namespace === 'string' ? { namespace: a.namespace } : {}),
    ...(a.replicas === true ? { replicas: true } : {}),
    ...(externals.length > 0 ? { externals } : {}),
    ...(typeof a.netnsSubnet === 'string' ? { podSubnet: a.netnsSubnet } : {}),
  };
};

/** yargs reads a lone `-` (stdin) as an empty string. */
export const scenarioRef = (v: unknown): string => (v === '' || v === undefined ? '-' : String(v));

/** The scenario a command names, or exit 2 saying why it cannot be read. */
export function load(ref: string, opts: LoadOptions = {}): ResolvedScenario {
  try {
    return loadScenario(ref, opts);
  } catch (err) {
    if (err instanceof ScenarioError) fail(err.message);
    throw err;
  }
}

/** `--assert FILE` of check and run. */
export const assertOption = {
  assert: {
    type: 'string',
    describe: 'a YAML file of intents (allow:/deny: SOURCE -> DEST[:port]): a list for every step, or a map from step names to lists',
  },
} as const;

/** Adds `--assert FILE`'s intents to the scenarios; throws ScenarioError. */
export function addAssertFile(scenarios: readonly ResolvedScenario[], file: unknown): void {
  if (typeof file !== 'string') return;
  const af = readAssertFile(file);
  for (const s of scenarios) applyAssertFile(s, af);
}

/** load() with the bounds of a computed-only check, then `--assert FILE`, or exit 2 saying why. */
export function loadAsserted(ref: string, a: { readonly [flag: string]: unknown }): ResolvedScenario {
  const s = load(ref, { ...loadOptions(a), computedOnly: true });
  try {
    addAssertFile([s], a.assert);
  } catch (err) {
    if (err instanceof ScenarioError) fail(err.message);
    throw err;
  }
  return s;
}

/** `--image` of export and run --kubernetes (run/kubernetes-manifests.ts). */
export const imageOption = {
  image: {
    type: 'string',
    default: DEFAULT_IMAGE,
    describe: 'Kubernetes: the image of the probes and collectors (default: the release’s, see docs/distribution.md)',
  },
} as const;

/** The positional scenario of check and explain. */
export const scenarioPositional = {
  type: 'string',
  demandOption: true,
  describe: 'file, Kubernetes manifests (a file, a directory, - for stdin), or a built-in name',
} as const;
