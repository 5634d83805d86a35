// Validation of the bodies of the cluster endpoints (pure): a policy document of either kind, a
// label map, namespace and pod names, and POST /v2/starmap/changes, validated whole before any part
// of it is applied. Errors carry JSON pointer paths; within a batch they are prefixed with where
// the part sits (/policies/put/2/spec/ingress/0/ports/0/port).
import { dns1123LabelErrors, dns1123SubdomainErrors, labelKeyErrors, labelValueErrors } from '../../shared/netpol/names.ts';
import { pointerKey, validateNetworkPolicy, type FieldErrors } from '../../shared/netpol/validate.ts';
import { POLICY_ID_PATTERN, validatePolicy } from './policy.ts';
import { policyId, type AnyPolicy, type StateWrite } from './policy-store.ts';
import { validateClusterPolicyChanges } from './cluster-policy-changes.ts';

/** Bound on one label map (Kubernetes bounds labels by size; this is more than any real pod has). */
export const MAX_LABELS = 256;
/** Bounds on one batch. */
export const MAX_BATCH = { put: 1000, delete: 1000, namespaces: 1000, podLabels: 10_000, clusterPolicies: 1000 };

type Result<T> = { value: T } | { errors: FieldErrors[] };

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function prefixed(prefix: string, errors: FieldErrors[]): FieldErrors[] {
  return errors.map((e) => ({ path: e.path === '/' ? prefix || '/' : `${prefix}${e.path}`, errors: e.errors }));
}

/** A NetworkPolicy (it has apiVersion or kind) or a dialect policy document. */
export function validateAnyPolicy(doc: unknown, dialectId?: string): Result<AnyPolicy> {
  const v = isObj(doc) && ('apiVersion' in doc || 'kind' in doc) ? validateNetworkPolicy(doc) : validatePolicy(doc, dialectId);
  return 'errors' in v ? { errors: v.errors } : { value: v.policy };
}

/** Is this a policy id: namespace/name of a NetworkPolicy, or a dialect id? */
export function policyIdErrors(id: string): string[] {
  const slash = id.indexOf('/');
  if (slash < 0) return POLICY_ID_PATTERN.test(id) ? [] : ['is neither namespace/name nor a dialect policy id'];
  return [...dns1123LabelErrors(id.slice(0, slash)).map((m) => `namespace: ${m}`), ...dns1123SubdomainErrors(id.slice(slash + 1)).map((m) => `name: ${m}`)];
}

/** `namespace/pod` of the pod-labels API. */
export function podIdErrors(id: string): string[] {
  const slash = id.indexOf('/');
  if (slash < 0) return ['must be <namespace>/<pod>'];
  return [...dns1123LabelErrors(id.slice(0, slash)).map((m) => `namespace: ${m}`), ...dns1123SubdomainErrors(id.slice(slash + 1)).map((m) => `pod: ${m}`)];
}

/** A label map with Kubernetes' rules for keys and values. */
export function validateLabels(v: unknown, path: string): Result<Record<string, string>> {
  if (!isObj(v)) return { errors: [{ path, errors: ['must be an object of label keys to string values'] }] };
  const entries = Object.entries(v);
  if (entries.length > MAX_LABELS) return { errors: [{ path, errors: [`at most ${MAX_LABELS} labels`] }] };
  const errors: FieldErrors[] = [];
  for (const [k, val] of entries) {
    const msgs = [
      ...labelKeyErrors(k),
      ...(typeof val === 'string' ? labelValueErrors(val).map((m) => `Invalid value: ${JSON.stringify(val.slice(0, 100))}: ${m}`) : ['must be a string']),
    ];
    if (msgs.length) errors.push({ path: `${path}/${pointerKey(k)}`, errors: msgs });
  }
  return errors.length ? { errors } : { value: v as Record<string, string> };
}

/** `{labels: {...}}`, the body of the namespace and pod-labels PUTs. */
export function validateLabelsBody(body: unknown, prefix = ''): Result<Record<string, string>> {
  if (!isObj(body)) return { errors: [{ path: prefix || '/', errors: ['must be an object {"labels": {...}}'] }] };
  const unknown = Object.keys(body).filter((k) => k !== 'labels');
  if (unknown.length)
    return { errors: unknown.slice(0, 20).map((k) => ({ path: `${prefix}/${pointerKey(k)}`, errors: ['unknown field (expected: labels)'] })) };
  if (body.labels === undefined || body.labels === null) return { errors: [{ path: `${prefix}/labels`, errors: ['Required value'] }] };
  return validateLabels(body.labels, `${prefix}/labels`);
}

/**
 * POST /v2/starmap/changes:
 * {"policies": {"put": [doc…], "delete": [id…]}, "clusterPolicies": {"put": [doc…], "delete": ["cnp/<name>"…]},
 *  "namespaces": {name: {labels} | null}, "podLabels": {"ns/pod": {labels} | null}}
 */
export function validateChanges(body: unknown): Result<StateWrite> {
  const errors: FieldErrors[] = [];
  const add = (path: string, msg: string) => errors.push({ path, errors: [msg] });
  const w: StateWrite = { putPolicies: [], deletePolicies: [], namespaces: [], podLabels: [] };
  if (!isObj(body)) return { errors: [{ path: '/', errors: ['must be an object {"policies": {"put", "delete"}, "namespaces", "podLabels"}'] }] };
  for (const k of Object.keys(body))
    if (!['policies', 'clusterPolicies', 'namespaces', 'podLabels'].includes(k))
      add(`/${pointerKey(k)}`, 'unknown field (expected one of: policies, clusterPolicies, namespaces, podLabels)');
  errors.push(...validateClusterPolicyChanges(body.clusterPolicies, w, MAX_BATCH.clusterPolicies));

  const policies = body.policies ?? {};
  if (!isObj(policies)) add('/policies', 'must be an object {"put": [...], "delete": [...]}');
  else {
    for (const k of Object.keys(policies)) if (k !== 'put' && k !== 'delete') add(`/policies/${pointerKey(k)}`, 'unknown field (expected one of: put, delete)');
    const list = (key: 'put' | 'delete'): unknown[] => {
      const v = policies[key] ?? [];
      if (!Array.isArray(v)) return (add(`/policies/${key}`, 'must be an array'), []);
      if (v.length > MAX_BATCH[key]) return (add(`/policies/${key}`, `at most ${MAX_BATCH[key]} entries per change`), []);
      return v;
    };
    const seen = new Map<string, number>();
    list('put').forEach((doc, i) => {
      const v = validateAnyPolicy(doc);
      if ('errors' in v) return errors.push(...prefixed(`/policies/put/${i}`, v.errors));
      const id = policyId(v.value);
      const first = seen.get(id);
      if (first !== undefined) return add(`/policies/put/${i}`, `puts ${id} again (also /policies/put/${first})`);
      seen.set(id, i);
      w.putPolicies.push(v.value);
    });
    list('delete').forEach((id, i) => {
      if (typeof id !== 'string') return add(`/policies/delete/${i}`, 'must be a policy id (namespace/name or a dialect id)');
      const msgs = policyIdErrors(id);
      if (msgs.length) return errors.push({ path: `/policies/delete/${i}`, errors: msgs });
      if (!w.deletePolicies.includes(id)) w.deletePolicies.push(id);
    });
  }

  const labelMaps = (key: 'namespaces' | 'podLabels', keyErrors: (k: string) => string[], into: [string, Record<string, string> | null][]) => {
    const v = body[key] ?? {};
    if (!isObj(v)) return add(`/${key}`, 'must be an object of names to {"labels": {...}} or null');
    const entries = Object.entries(v);
    if (entries.length > MAX_BATCH[key]) return add(`/${key}`, `at most ${MAX_BATCH[key]} entries per change`);
    for (const [name, entry] of entries) {
      const path = `/${key}/${pointerKey(name)}`;
      const msgs = keyErrors(name);
      if (msgs.length) {
        errors.push({ path, errors: msgs });
        continue;
      }
      if (entry === null) {
        into.push([name, null]);
        continue;
      }
      const l = validateLabelsBody(entry, path);
      if ('errors' in l) errors.push(...l.errors);
      else into.push([name, l.value]);
    }
  };
  labelMaps('namespaces', dns1123LabelErrors, w.namespaces);
  labelMaps('podLabels', podIdErrors, w.podLabels);
  return errors.length ? { errors } : { value: w };
}
