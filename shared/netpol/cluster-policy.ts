// The admin tiers: ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2, one kind with `tier:
// Admin | Baseline`), and the v1alpha1 AdminNetworkPolicy and BaselineAdminNetworkPolicy that
// Calico before 3.32, OVN-Kubernetes and many repositories still use, read as the same tiers:
//   AdminNetworkPolicy          -> tier Admin, its priority; action Allow reads as Accept
//   BaselineAdminNetworkPolicy  -> tier Baseline, priority 1000 (it was the tier's only policy, so
//                                  it is the tier's last word; a v1alpha2 Baseline policy of the same
//                                  priority makes the order undefined, and reports say so)
//   ports: portNumber / portRange / namedPort -> protocols: tcp|udp|sctp destinationPort number /
//                                  range, destinationNamedPort
// Each kind is validated against its upstream CRD's schema (shared/netpol/crd/, through
// crd-schema.ts) plus the object metadata rules the API server applies to a cluster-scoped custom
// resource; what the API server accepts is accepted. Pure: no I/O.
import adminCrd from './crd/adminnetworkpolicies.v1alpha1.json' with { type: 'json' };
import baselineCrd from './crd/baselineadminnetworkpolicies.v1alpha1.json' with { type: 'json' };
import clusterCrd from './crd/clusternetworkpolicies.v1alpha2.json' with { type: 'json' };
import { validateStructural, type StructuralSchema } from './crd-schema.ts';
import { hasTemplate, placeholderFor } from './ip-template.ts';
import { dns1123SubdomainErrors, labelKeyErrors, labelValueErrors } from './names.ts';
import type { LabelSelector, Protocol } from './types.ts';
import { pointerKey, type FieldErrors } from './validate.ts';

export type Tier = 'Admin' | 'Baseline';
export type Action = 'Accept' | 'Deny' | 'Pass';
export type ClusterPolicyKind = 'ClusterNetworkPolicy' | 'AdminNetworkPolicy' | 'BaselineAdminNetworkPolicy';

export const CLUSTER_POLICY_KINDS: Record<string, { kind: ClusterPolicyKind; short: string; schema: StructuralSchema }> = {
  'policy.networking.k8s.io/v1alpha2 ClusterNetworkPolicy': { kind: 'ClusterNetworkPolicy', short: 'cnp', schema: clusterCrd.schema as StructuralSchema },
  'policy.networking.k8s.io/v1alpha1 AdminNetworkPolicy': { kind: 'AdminNetworkPolicy', short: 'anp', schema: adminCrd.schema as StructuralSchema },
  'policy.networking.k8s.io/v1alpha1 BaselineAdminNetworkPolicy': {
    kind: 'BaselineAdminNetworkPolicy',
    short: 'banp',
    schema: baselineCrd.schema as StructuralSchema,
  },
};

/** Is this apiVersion and kind one of the admin-tier kinds? */
export function isClusterPolicyKind(apiVersion: unknown, kind: unknown): boolean {
  return `${String(apiVersion)} ${String(kind)}` in CLUSTER_POLICY_KINDS;
}

export interface NamespacedPodSelector {
  namespaceSelector: LabelSelector;
  podSelector: LabelSelector;
}

export type ClusterSubject = { namespaces: LabelSelector } | { pods: NamespacedPodSelector };

export type ClusterPeer =
  { namespaces: LabelSelector } | { pods: NamespacedPodSelector } | { networks: string[] } | { nodes: LabelSelector } | { domainNames: string[] };

export type PortMatch = { number: number } | { range: { start: number; end: number } };

export type ClusterProtocol = { protocol: Protocol; port: PortMatch } | { namedPort: string };

export interface ClusterRule {
  name?: string;
  action: Action;
  peers: ClusterPeer[];
  /** Absent: every protocol and port. */
  protocols?: ClusterProtocol[];
}

/** A validated admin-tier policy in one form whatever its kind. */
export interface ClusterPolicy {
  /** `cnp/<name>`, `anp/<name>` or `banp/default`: how reports name it (cluster-scoped, known by name). */
  id: string;
  kind: ClusterPolicyKind;
  name: string;
  tier: Tier;
  priority: number;
  subject: ClusterSubject;
  ingress: ClusterRule[];
  egress: ClusterRule[];
}

export type ClusterPolicyValidation = { policy: ClusterPolicy; warnings: string[] } | { errors: FieldErrors[] };

/** The priority a BaselineAdminNetworkPolicy is given in the Baseline tier (see the top). */
export const BANP_PRIORITY = 1000;

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Object metadata of a cluster-scoped custom resource, as the API server checks it. */
function metadataErrors(meta: Json): FieldErrors[] {
  const out: FieldErrors[] = [];
  const add = (path: string, msg: string) => out.push({ path, errors: [msg] });
  const name = meta.name;
  if (typeof name !== 'string' || name === '') add('/metadata/name', 'Required value: name is required');
  else for (const e of dns1123SubdomainErrors(name)) add('/metadata/name', `Invalid value: ${JSON.stringify(name.slice(0, 300))}: ${e}`);
  for (const [key, map] of [
    ['labels', meta.labels],
    ['annotations', meta.annotations],
  ] as const) {
    if (map === undefined || map === null) continue;
    if (typeof map !== 'object' || Array.isArray(map)) {
      add(`/metadata/${key}`, `Invalid value: must be a map of strings`);
      continue;
    }
    for (const [k, v] of Object.entries(map)) {
      const at = `/metadata/${key}/${pointerKey(k)}`;
      for (const e of labelKeyErrors(k)) add(at, `Invalid value: ${JSON.stringify(k.slice(0, 100))}: ${e}`);
      if (typeof v !== 'string') add(at, 'Invalid value: must be a string');
      else if (key === 'labels') for (const e of labelValueErrors(v)) add(at, `Invalid value: ${JSON.stringify(v.slice(0, 100))}: ${e}`);
    }
  }
  return out;
}

/** Selectors the API server stores for a CRD but label matching cannot use (it then selects nothing). */
function selectorWarnings(sel: unknown, path: string): string[] {
  return arr(obj(sel).matchExpressions).flatMap((req, i) => {
    const r = obj(req);
    const op = r.operator;
    const values = arr(r.values);
    const at = `${path}/matchExpressions/${i}`;
    if (op !== 'In' && op !== 'NotIn' && op !== 'Exists' && op !== 'DoesNotExist')
      return [`${at}/operator: ${JSON.stringify(op)} is not a selector operator (In, NotIn, Exists, DoesNotExist): the selector selects nothing`];
    if ((op === 'In' || op === 'NotIn') && values.length === 0) return [`${at}/values: ${op} with no values: the selector selects nothing`];
    if ((op === 'Exists' || op === 'DoesNotExist') && values.length > 0) return [`${at}/values: ${op} takes no values: the selector selects nothing`];
    return [];
  });
}

const selector = (v: unknown): LabelSelector => {
  const s = obj(v);
  const out: LabelSelector = {};
  if (s.matchLabels !== undefined && s.matchLabels !== null) out.matchLabels = s.matchLabels as Record<string, string>;
  if (Array.isArray(s.matchExpressions)) out.matchExpressions = s.matchExpressions as LabelSelector['matchExpressions'];
  return out;
};

const namespacedPod = (v: unknown): NamespacedPodSelector => ({
  namespaceSelector: selector(obj(v).namespaceSelector),
  podSelector: selector(obj(v).podSelector),
});

function peer(v: unknown): ClusterPeer {
  const p = obj(v);
  if (p.namespaces !== undefined && p.namespaces !== null) return { namespaces: selector(p.namespaces) };
  if (p.pods !== undefined && p.pods !== null) return { pods: namespacedPod(p.pods) };
  if (Array.isArray(p.networks)) return { networks: p.networks as string[] };
  if (p.nodes !== undefined && p.nodes !== null) return { nodes: selector(p.nodes) };
  return { domainNames: arr(p.domainNames) as string[] };
}

/** v1alpha2 `protocols` entries. */
function protocolsV2(list: unknown): ClusterProtocol[] {
  return arr(list).map((entry) => {
    const e = obj(entry);
    if (typeof e.destinationNamedPort === 'string') return { namedPort: e.destinationNamedPort };
    const [proto, body] = (['tcp', 'udp', 'sctp'] as const).map((k) => [k, e[k]] as const).find(([, b]) => b !== undefined && b !== null)!;
    const port = obj(obj(body).destinationPort);
    const range = obj(port.range);
    return {
      protocol: proto.toUpperCase() as Protocol,
      port: port.range !== undefined ? { range: { start: range.start as number, end: range.end as number } } : { number: port.number as number },
    };
  });
}

/** v1alpha1 `ports` entries, as v1alpha2 protocols. */
function portsV1(list: unknown): ClusterProtocol[] {
  return arr(list).map((entry) => {
    const e = obj(entry);
    if (typeof e.namedPort === 'string') return { namedPort: e.namedPort };
    if (e.portRange !== undefined && e.portRange !== null) {
      const r = obj(e.portRange);
      return { protocol: ((r.protocol as Protocol | undefined) ?? 'TCP') as Protocol, port: { range: { start: r.start as number, end: r.end as number } } };
    }
    const p = obj(e.portNumber);
    return { protocol: ((p.protocol as Protocol | undefined) ?? 'TCP') as Protocol, port: { number: p.port as number } };
  });
}

function rules(list: unknown, peersKey: 'from' | 'to', v1: boolean): ClusterRule[] {
  return arr(list).map((item) => {
    const r = obj(item);
    const action = (r.action === 'Allow' ? 'Accept' : r.action) as Action;
    const protocolsField = v1 ? r.ports : r.protocols;
    const rule: ClusterRule = { action, peers: arr(r[peersKey]).map(peer) };
    if (typeof r.name === 'string' && r.name !== '') rule.name = r.name;
    if (protocolsField !== undefined && protocolsField !== null) rule.protocols = v1 ? portsV1(protocolsField) : protocolsV2(protocolsField);
    return rule;
  });
}

/**
 * Validates one admin-tier document (any of the three kinds) and gives it in the one form the
 * evaluator reads. Field errors carry JSON pointers, as validateNetworkPolicy's do.
 */
export function validateClusterPolicy(doc: unknown): ClusterPolicyValidation {
  const d = obj(doc);
  const entry = CLUSTER_POLICY_KINDS[`${String(d.apiVersion)} ${String(d.kind)}`];
  if (!entry)
    return {
      errors: [
        {
          path: '/kind',
          errors: [
            `Unsupported value: ${JSON.stringify(`${String(d.apiVersion)} ${String(d.kind)}`)}: supported values: ${Object.keys(CLUSTER_POLICY_KINDS)
              .map((k) => JSON.stringify(k))
              .join(', ')}`,
          ],
        },
      ],
    };
  const meta = obj(d.metadata);
  const errors = [...validateStructural(doc, entry.schema, new Set(['/metadata'])), ...metadataErrors(meta)];
  if (errors.length > 0) return { errors };
  const spec = obj(d.spec);
  const v1 = entry.kind !== 'ClusterNetworkPolicy';
  const subject = obj(spec.subject);
  const warnings = [
    ...selectorWarnings(subject.namespaces, '/spec/subject/namespaces'),
    ...selectorWarnings(obj(subject.pods).namespaceSelector, '/spec/subject/pods/namespaceSelector'),
    ...selectorWarnings(obj(subject.pods).podSelector, '/spec/subject/pods/podSelector'),
    ...(['ingress', 'egress'] as const).flatMap((dir) =>
      arr(spec[dir]).flatMap((r, i) =>
        arr(obj(r)[dir === 'ingress' ? 'from' : 'to']).flatMap((p, j) => {
          const at = `/spec/${dir}/${i}/${dir === 'ingress' ? 'from' : 'to'}/${j}`;
          const pp = obj(p);
          return [
            ...selectorWarnings(pp.namespaces, `${at}/namespaces`),
            ...selectorWarnings(pp.nodes, `${at}/nodes`),
            ...selectorWarnings(obj(pp.pods).namespaceSelector, `${at}/pods/namespaceSelector`),
            ...selectorWarnings(obj(pp.pods).podSelector, `${at}/pods/podSelector`),
          ];
        }),
      ),
    ),
  ];
  const name = meta.name as string;
  return {
    policy: {
      id: `${entry.short}/${name}`,
      kind: entry.kind,
      name,
      tier: entry.kind === 'AdminNetworkPolicy' ? 'Admin' : entry.kind === 'BaselineAdminNetworkPolicy' ? 'Baseline' : (spec.tier as Tier),
      priority: entry.kind === 'BaselineAdminNetworkPolicy' ? BANP_PRIORITY : (spec.priority as number),
      subject:
        subject.namespaces !== undefined && subject.namespaces !== null ? { namespaces: selector(subject.namespaces) } : { pods: namespacedPod(subject.pods) },
      ingress: rules(spec.ingress, 'from', v1),
      egress: rules(spec.egress, 'to', v1),
    },
    warnings,
  };
}

/**
 * validateClusterPolicy with `{{ip ns/pod}}` allowed in `networks` entries (Starmap's address
 * templates, as in NetworkPolicy ipBlocks: ip-template.ts): each is validated with its own stand-in
 * address (distinct, so that the list's set semantics still see two templates as two entries) and
 * kept as written in the policy, for the evaluator to substitute once the address is known.
 */
export function checkClusterPolicy(doc: unknown, opts: { templates?: boolean } = {}): ClusterPolicyValidation {
  if (!opts.templates) return validateClusterPolicy(doc);
  const written = new Map<string, string>();
  const copy = structuredClone(doc);
  let n = 0;
  for (const [dir, key] of [
    ['egress', 'to'],
    ['ingress', 'from'],
  ] as const) {
    arr(obj(obj(copy).spec)[dir]).forEach((rule, r) =>
      arr(obj(rule)[key]).forEach((p, j) => {
        const nets = obj(p).networks;
        if (!Array.isArray(nets)) return;
        nets.forEach((text: unknown, k) => {
          if (typeof text !== 'string' || !hasTemplate(text)) return;
          written.set(`/spec/${dir}/${r}/${key}/${j}/networks/${k}`, text);
          const i = n++;
          const standIn = placeholderFor(text).startsWith('2001:db8::')
            ? `2001:db8::${(i + 1).toString(16)}`
            : `192.0.${2 + Math.floor(i / 254)}.${(i % 254) + 1}`;
          nets[k] = text.replace(/^.*?(\/\d+\s*)?$/, (_m, prefix: string | undefined) => `${standIn}${prefix ?? ''}`);
        });
      }),
    );
  }
  const r = validateClusterPolicy(copy);
  if ('errors' in r || written.size === 0) return r;
  const policy = structuredClone(r.policy);
  for (const dir of ['egress', 'ingress'] as const)
    policy[dir].forEach((rule, i) =>
      rule.peers.forEach((p, j) => {
        if ('networks' in p)
          p.networks = p.networks.map((t, k) => written.get(`/spec/${dir}/${i}/${dir === 'egress' ? 'to' : 'from'}/${j}/networks/${k}`) ?? t);
      }),
    );
  return { policy, warnings: r.warnings };
}

/** The `{{ip ns/pod}}` references of a policy's networks, with their JSON pointers. */
export function clusterPolicyTemplates(policy: ClusterPolicy): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  for (const dir of ['egress', 'ingress'] as const)
    policy[dir].forEach((rule, i) =>
      rule.peers.forEach((p, j) => {
        if ('networks' in p)
          p.networks.forEach((t, k) => {
            if (hasTemplate(t)) out.push({ path: `/spec/${dir}/${i}/${dir === 'egress' ? 'to' : 'from'}/${j}/networks/${k}`, text: t });
          });
      }),
    );
  return out;
}
