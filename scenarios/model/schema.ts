// The scenario file's schema. One TypeBox schema drives validation, the TypeScript types and the
// published JSON Schema (`scenario schema` prints it; scenarios/model/scenario.schema.json is the
// committed copy). What the schema cannot say (references between parts, label syntax, the
// manifests themselves) is checked in model.ts and resolve.ts.
//
// The parts map one to one to Kubernetes objects, so that a scenario can later drive a real
// cluster: `namespaces` are Namespaces, `apps` (and the `model` shorthand) are Pods with their
// labels and named container ports, `policies` are NetworkPolicy manifests.
import { type Static, Type } from '@sinclair/typebox';
import { Externals } from './externals.ts';

const DNS_LABEL = '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$';
const Name = Type.String({ pattern: DNS_LABEL, description: 'lowercase letters, digits and dashes, at most 63 (a Kubernetes name and a Marathon id segment)' });
const ScenarioName = Type.String({
  pattern: '^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$',
  description: 'lowercase letters, digits and dashes, at most 32 (a Marathon id segment)',
});
const Short = Type.String({ pattern: '^[A-Za-z0-9_/.-]{1,12}$', description: 'short label used in the truth tables' });
const Labels = Type.Record(Type.String({ pattern: '^[A-Za-z0-9._/-]{1,253}$' }), Type.String({ maxLength: 63 }), {
  description: 'labels (Kubernetes syntax: [prefix/]name keys, values up to 63 characters)',
});
const Port = Type.Integer({ minimum: 1, maximum: 65535 });
const Protocol = Type.Union([Type.Literal('TCP'), Type.Literal('UDP'), Type.Literal('SCTP')]);
export const PORT_KEY = '^[0-9]{1,5}/(TCP|UDP|SCTP)$';

export const Namespace = Type.Object(
  { labels: Type.Optional(Labels) },
  { additionalProperties: false, description: 'a namespace; it also gets kubernetes.io/metadata.name: <name>, as in Kubernetes' },
);

const ContainerPort = Type.Object(
  {
    name: Type.Optional(
      Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$', description: 'IANA service name, as a container port name (at most 15)' }),
    ),
    port: Port,
    protocol: Type.Optional(Protocol),
  },
  { additionalProperties: false, description: 'a named container port (protocol default TCP); policies may name it' },
);

const Target = Type.String({
  pattern: '^([a-z0-9-]+/)?[a-z0-9-]+(:([0-9]{1,5}(/(TCP|UDP|SCTP|tcp|udp|sctp))?|[a-z0-9-]{1,15}))?$',
  description: "a pod to check: 'pod' or 'namespace/pod', optionally ':port[/PROTOCOL]' or ':port-name'; without a port, every container port it declares",
});

const Common = {
  name: Name,
  short: Type.Optional(Short),
  namespace: Type.Optional(Name),
  group: Type.Optional(Type.String({ pattern: DNS_LABEL, description: 'alias of namespace' })),
  labels: Type.Optional(Labels),
  port: Type.Optional(Port),
  ports: Type.Optional(Type.Array(ContainerPort, { maxItems: 64, description: 'named container ports (default: its port, TCP, named http)' })),
  hostNetwork: Type.Optional(
    Type.Boolean({ description: "on its node's network (its node's address): no NetworkPolicy selects it; admin-tier nodes peers match it" }),
  ),
  node: Type.Optional(
    Type.String({ pattern: DNS_LABEL, description: 'the node it runs on (one of nodes:); needed for a hostNetwork pod when there are several' }),
  ),
};

export const Node = Type.Object(
  { name: Type.String({ pattern: DNS_LABEL, description: 'the node name (kubernetes.io/hostname)' }), labels: Type.Optional(Labels) },
  {
    additionalProperties: false,
    description: 'a node; it has kubernetes.io/hostname: <name>, kubernetes.io/os: linux and kubernetes.io/arch: amd64 unless its labels say otherwise',
  },
);

export const ProbeApp = Type.Object(
  { ...Common, kind: Type.Literal('probe'), probes: Type.Array(Target, { description: 'what this probe checks' }) },
  { additionalProperties: false },
);
export const CollectorApp = Type.Object(
  { ...Common, kind: Type.Literal('collector'), collects: Type.Array(Name, { description: 'probes whose /status it collects' }) },
  { additionalProperties: false },
);
export const WorkloadApp = Type.Object(
  { ...Common, kind: Type.Literal('app'), cmd: Type.String({ minLength: 1, description: 'shell command; $PORT0 is its port' }) },
  { additionalProperties: false },
);
export const App = Type.Union([ProbeApp, CollectorApp, WorkloadApp]);

export const ModelShorthand = Type.Object(
  {
    namespaces: Type.Array(Name, { minItems: 1, maxItems: 16 }),
    pods: Type.Array(Name, { minItems: 1, maxItems: 16 }),
    ports: Type.Array(Port, { minItems: 1, maxItems: 8 }),
    protocols: Type.Array(Protocol, { minItems: 1, maxItems: 3 }),
  },
  {
    additionalProperties: false,
    description:
      'the upstream e2e model: every pod ns/pod labelled pod: <pod>, serving every port on every protocol as serve-<port>-<protocol lowercased>, probing every other pod on every port and protocol',
  },
);

// The dialect: Starmap's own small policy language (ingress only), kept for existing scenarios.
const Selector = Type.Object(
  { labels: Type.Optional(Labels), group: Type.Optional(Type.String()) },
  {
    additionalProperties: false,
    description: 'selects apps whose labels include all of `labels` (and that are in namespace `group` when given); empty selects all',
  },
);
export const DialectPolicy = Type.Object(
  {
    selector: Selector,
    ingress: Type.Array(
      Type.Object(
        {
          from: Type.Optional(Type.Array(Selector, { description: 'sources; absent = from anywhere' })),
          ports: Type.Optional(
            Type.Array(
              Type.Object({ port: Port, protocol: Type.Optional(Type.Union([Type.Literal('tcp'), Type.Literal('udp')])) }, { additionalProperties: false }),
            ),
          ),
        },
        { additionalProperties: false },
      ),
      { description: 'allowed ingress (Kubernetes NetworkPolicy semantics); [] = deny all ingress to the selected apps' },
    ),
  },
  { additionalProperties: false },
);

const FileRef = Type.Object(
  { file: Type.String({ minLength: 1, description: 'manifest file, relative to the scenario file' }) },
  { additionalProperties: false },
);
const Manifest = Type.Object(
  { apiVersion: Type.String(), kind: Type.String() },
  { additionalProperties: true, description: 'a networking.k8s.io/v1 NetworkPolicy (or List) as kubectl takes it; validated as the API server does' },
);
export const PolicyEntry = Type.Union([FileRef, Manifest]);

const Verdict = Type.Union([Type.Literal('allow'), Type.Literal('deny')]);
const Matrix = Type.String({ description: "truth table: a header row of destinations, then one row per source; '.' allowed, 'X' blocked, '-' not judged" });
const HandWritten = Type.Intersect(
  [
    Type.Object({
      matrix: Type.Optional(Matrix),
      edges: Type.Optional(
        Type.Array(
          Type.Object(
            { from: Type.String(), to: Type.String(), port: Type.Optional(Type.String({ pattern: PORT_KEY })), expect: Verdict },
            { additionalProperties: false },
          ),
        ),
      ),
      default: Type.Optional(Verdict),
    }),
    Type.Record(Type.String({ pattern: PORT_KEY }), Matrix, { additionalProperties: true }),
  ],
  {
    unevaluatedProperties: false,
    description: "hand-written: `matrix`/`edges`/`default` for every port, '<port>/<PROTOCOL>' matrices for one; what is not given is not judged",
  },
);
export const Expectation = Type.Union([Type.Literal('computed', { description: "the evaluator's verdict for every cell is the expectation" }), HandWritten]);

export const Statement = Type.Object(
  {
    allow: Type.Optional(Type.String({ minLength: 1 })),
    deny: Type.Optional(Type.String({ minLength: 1 })),
    except: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 64 })),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description:
      "an intent: allow: or deny: 'SOURCE -> DESTINATION[:port]'; sets are *, ns/*, a pod, a label selector (namespace=shop,app=web) or external:<name>; except: sets taken out of both sides",
  },
);

const LabelChanges = Type.Object(
  {
    namespaces: Type.Optional(Type.Record(Name, Type.Union([Labels, Type.Null()]))),
    pods: Type.Optional(Type.Record(Type.String({ pattern: '^([a-z0-9-]+/)?[a-z0-9-]+$' }), Type.Union([Labels, Type.Null()]))),
  },
  {
    additionalProperties: false,
    description: 'label maps that replace the current ones from this step on (null: back to the declared labels); pods keep running',
  },
);

export const Step = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128 }),
    description: Type.Optional(Type.String()),
    policies: Type.Optional(
      Type.Array(Type.Union([Type.String({ minLength: 1 }), PolicyEntry]), {
        description:
          "the policies in force during this step: 'namespace/name' of a manifest, a dialect policy's name, or a manifest (or file:) for this step only; absent: the previous step's",
      }),
    ),
    labels: Type.Optional(LabelChanges),
    manifests: Type.Optional(
      Type.Object(
        {
          apply: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 64 })),
          delete: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 64 })),
        },
        {
          additionalProperties: false,
          description:
            "manifests applied and deleted from this step on, as kubectl apply -f / delete -f: NetworkPolicies added, replaced or removed; a workload's new pod-template labels (a rollout); a Namespace's new labels (files relative to the scenario file)",
        },
      ),
    ),
    expect: Type.Optional(Expectation),
    assert: Type.Optional(Type.Array(Statement, { maxItems: 256, description: 'intents judged like a matrix (docs/scenarios.md "Intents")' })),
    timeoutSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 3600 })),
  },
  { additionalProperties: false },
);

export const Scenario = Type.Object(
  {
    name: ScenarioName,
    description: Type.Optional(Type.String()),
    probeSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 60, description: 'probe interval (default 1)' })),
    timeoutSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 60, description: 'probe check timeout (default 0.5)' })),
    namespaces: Type.Optional(Type.Record(Name, Namespace)),
    model: Type.Optional(ModelShorthand),
    apps: Type.Optional(Type.Array(App, { description: 'the pods: probes, collectors and other workloads' })),
    manifests: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        maxItems: 64,
        description:
          'Kubernetes manifests (files, directories read recursively, - for stdin; relative to the scenario file): their workloads are pods that probe each other on every declared port, their NetworkPolicies are in force from the first step',
      }),
    ),
    policies: Type.Optional(
      Type.Union([
        Type.Array(PolicyEntry, { description: 'NetworkPolicy manifests, inline or from files' }),
        Type.Record(Name, DialectPolicy, { description: "Starmap's policy dialect, by name" }),
      ]),
    ),
    externals: Type.Optional(Externals),
    nodes: Type.Optional(
      Type.Array(Node, { minItems: 1, maxItems: 16, description: 'the cluster nodes (default: one, starmap-node-0); hostNetwork pods run on them' }),
    ),
    steps: Type.Array(Step, { minItems: 1 }),
  },
  { additionalProperties: false, $id: 'https://starmap.invalid/scenario.schema.json', title: 'Starmap scenario' },
);

export type ScenarioDoc = Static<typeof Scenario>;
export type AppDoc = Static<typeof App>;
export type DialectPolicyDoc = Static<typeof DialectPolicy>;
export type StepDoc = Static<typeof Step>;
export type ExpectationDoc = Static<typeof Expectation>;
export type ModelDoc = Static<typeof ModelShorthand>;
export type NodeDoc = Static<typeof Node>;
