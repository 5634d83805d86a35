// The scenario file: which apps to deploy (probes, a collector, any other workload), which network
// policies exist, and the steps, each with the policies in force and the expected reachability.
// One TypeBox schema drives validation, the TypeScript types and the published JSON Schema
// (`scenario schema` prints it; scenarios/scenario.schema.json is the committed copy).
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { parseDocument } from 'yaml';

const Name = Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$', description: 'lowercase letters, digits and dashes (a Marathon id segment)' });
const Short = Type.String({ pattern: '^[A-Za-z0-9_-]{1,12}$', description: 'short label used in the truth tables' });
const Labels = Type.Record(Type.String({ pattern: '^[A-Za-z0-9._/-]{1,63}$' }), Type.String({ maxLength: 63 }), { description: 'app labels (Marathon labels)' });
const Port = Type.Integer({ minimum: 1, maximum: 65535 });

const Common = {
  name: Name,
  short: Type.Optional(Short),
  group: Type.Optional(Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$', description: 'sub-group of the scenario group, like a Kubernetes namespace' })),
  labels: Type.Optional(Labels),
  port: Type.Optional(Port),
};

export const ProbeApp = Type.Object(
  { ...Common, kind: Type.Literal('probe'), probes: Type.Array(Name, { description: 'apps this probe checks' }) },
  { additionalProperties: false },
);
export const CollectorApp = Type.Object(
  { ...Common, kind: Type.Literal('collector'), collects: Type.Array(Name, { description: 'probes whose /status it collects' }) },
  { additionalProperties: false },
);
export const WorkloadApp = Type.Object(
  {
    ...Common,
    kind: Type.Literal('app'),
    cmd: Type.String({ minLength: 1, description: 'shell command; $PORT0 is its port' }),
  },
  { additionalProperties: false },
);
export const App = Type.Union([ProbeApp, CollectorApp, WorkloadApp]);

const Selector = Type.Object(
  {
    labels: Type.Optional(Labels),
    group: Type.Optional(Type.String()),
  },
  { additionalProperties: false, description: 'selects apps whose labels include all of `labels` (and that are in `group` when given); empty selects all' },
);

export const Policy = Type.Object(
  {
    selector: Selector,
    ingress: Type.Array(
      Type.Object(
        {
          from: Type.Optional(Type.Array(Selector, { description: 'sources; absent = from anywhere' })),
          ports: Type.Optional(Type.Array(Type.Object({ port: Port, protocol: Type.Optional(Type.Union([Type.Literal('tcp'), Type.Literal('udp')])) }, { additionalProperties: false }))),
        },
        { additionalProperties: false },
      ),
      { description: 'allowed ingress (Kubernetes NetworkPolicy semantics); [] = deny all ingress to the selected apps' },
    ),
  },
  { additionalProperties: false },
);

const Verdict = Type.Union([Type.Literal('allow'), Type.Literal('deny')]);
export const Step = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    description: Type.Optional(Type.String()),
    policies: Type.Array(Type.String(), { description: 'names of the policies in force during this step' }),
    expect: Type.Object(
      {
        matrix: Type.Optional(Type.String({ description: "truth table: a header row of targets, then one row per source; '.' allowed, 'X' blocked, '-' not checked" })),
        edges: Type.Optional(Type.Array(Type.Object({ from: Type.String(), to: Type.String(), expect: Verdict }, { additionalProperties: false }))),
        default: Type.Optional(Verdict),
      },
      { additionalProperties: false },
    ),
    timeoutSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 3600 })),
  },
  { additionalProperties: false },
);

export const Scenario = Type.Object(
  {
    name: Name,
    description: Type.Optional(Type.String()),
    probeSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 60, description: 'probe interval (default 1)' })),
    timeoutSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 60, description: 'probe check timeout (default 0.5)' })),
    apps: Type.Array(App, { minItems: 1 }),
    policies: Type.Optional(Type.Record(Name, Policy)),
    steps: Type.Array(Step, { minItems: 1 }),
  },
  { additionalProperties: false, $id: 'https://starmap.invalid/scenario.schema.json', title: 'Starmap scenario' },
);

export type ScenarioDoc = Static<typeof Scenario>;
export type AppDoc = Static<typeof App>;
export type PolicyDoc = Static<typeof Policy>;
export type StepDoc = Static<typeof Step>;

export class ScenarioError extends Error {}

/** Parses YAML or JSON (JSON is YAML) and validates it; errors name the file, the path and the line. */
export function parseScenario(text: string, file = 'scenario'): ScenarioDoc {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ScenarioError(`${file}: not valid YAML/JSON: ${doc.errors.map((e) => e.message.split('\n')[0]).join('; ')}`);
  }
  const value: unknown = doc.toJS();
  if (!Value.Check(Scenario, value)) {
    const problems = explain(Scenario, value, '')
      .filter((e, i, all) => all.findIndex((o) => o.path === e.path) === i)
      .slice(0, 8)
      .map((e) => {
        const node = doc.getIn(e.path.split('/').filter(Boolean).map((p) => (/^\d+$/.test(p) ? Number(p) : p)), true) as { range?: [number, number] } | undefined;
        const line = node?.range ? ` (line ${text.slice(0, node.range[0]).split('\n').length})` : '';
        return `${e.path || '/'}${line}: ${e.message}`;
      });
    throw new ScenarioError(`${file}: invalid scenario:\n  ${problems.join('\n  ')}`);
  }
  checkReferences(value, file);
  return value;
}

/**
 * Validation errors, with unions resolved by their `kind` discriminator: "Expected union value"
 * says nothing, the errors of the branch the author meant say what is wrong.
 */
function explain(schema: TSchema, value: unknown, prefix: string): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  for (const e of Value.Errors(schema, value)) {
    const branches = (e.schema as { anyOf?: TSchema[] }).anyOf;
    const kind = (e.value as { kind?: unknown } | null)?.kind;
    const branch = branches?.find((b) => (b as { properties?: { kind?: { const?: unknown } } }).properties?.kind?.const === kind);
    if (branch) out.push(...explain(branch, e.value, prefix + e.path));
    else if (branches && typeof e.value === 'object' && e.value !== null && 'kind' in e.value) {
      const kinds = branches.map((b) => (b as { properties?: { kind?: { const?: unknown } } }).properties?.kind?.const).filter(Boolean);
      out.push({ path: `${prefix}${e.path}/kind`, message: `must be one of ${kinds.map((k) => JSON.stringify(k)).join(', ')}` });
    } else out.push({ path: prefix + e.path, message: e.message });
  }
  return out;
}

/** Cross-references the schema cannot express: unique names, known apps and policies. */
function checkReferences(s: ScenarioDoc, file: string): void {
  const problems: string[] = [];
  const names = new Set<string>();
  const shorts = new Set<string>();
  s.apps.forEach((a, i) => {
    if (names.has(a.name)) problems.push(`/apps/${i}/name: duplicate app name "${a.name}"`);
    names.add(a.name);
    const short = shortName(a);
    if (shorts.has(short)) problems.push(`/apps/${i}/short: duplicate short label "${short}"`);
    shorts.add(short);
  });
  s.apps.forEach((a, i) => {
    const refs = a.kind === 'probe' ? a.probes : a.kind === 'collector' ? a.collects : [];
    refs.forEach((r, j) => {
      if (!names.has(r)) problems.push(`/apps/${i}/${a.kind === 'probe' ? 'probes' : 'collects'}/${j}: unknown app "${r}"`);
    });
    if (a.kind === 'collector') {
      a.collects.forEach((r, j) => {
        const target = s.apps.find((x) => x.name === r);
        if (target && target.kind !== 'probe') problems.push(`/apps/${i}/collects/${j}: "${r}" is not a probe`);
      });
    }
  });
  const policies = new Set(Object.keys(s.policies ?? {}));
  s.steps.forEach((step, i) => {
    step.policies.forEach((p, j) => {
      if (!policies.has(p)) problems.push(`/steps/${i}/policies/${j}: unknown policy "${p}"`);
    });
    if (!step.expect.matrix && !step.expect.edges && !step.expect.default) problems.push(`/steps/${i}/expect: give a matrix, edges or a default`);
  });
  if (problems.length > 0) throw new ScenarioError(`${file}: invalid scenario:\n  ${problems.join('\n  ')}`);
}

/** The label of an app in the truth tables. */
export function shortName(app: Pick<AppDoc, 'name' | 'short'>): string {
  return app.short ?? app.name;
}
