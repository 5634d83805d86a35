// Validation of admin-tier policies in the orchestrator's bodies (pure): one document (PUT
// /v2/starmap/clusternetworkpolicies/{name} and its v1alpha1 siblings: cluster-policy-routes.ts) and
// the `clusterPolicies` part of POST /v2/starmap/changes. The validator is the scenarios' own
// (shared/netpol/cluster-policy.ts: the upstream CRD's schema and the API server's metadata rules).
import { CLUSTER_POLICY_KINDS, validateClusterPolicy } from '../../shared/netpol/cluster-policy.ts';
import { dns1123SubdomainErrors } from '../../shared/netpol/names.ts';
import type { FieldErrors } from '../../shared/netpol/validate.ts';
import type { StateWrite, StoredClusterPolicy } from './policy-store.ts';

export const CLUSTER_KINDS = Object.entries(CLUSTER_POLICY_KINDS).map(([key, v]) => ({ ...v, apiVersion: key.split(' ')[0]! }));

type Result<T> = { value: T } | { errors: FieldErrors[] };

export function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** One admin-tier document, validated as the API server would. */
export function validateClusterPolicyDoc(doc: unknown): Result<StoredClusterPolicy> {
  if (!isObj(doc)) return { errors: [{ path: '/', errors: ['must be an object (a ClusterNetworkPolicy, AdminNetworkPolicy or BaselineAdminNetworkPolicy)'] }] };
  const v = validateClusterPolicy(doc);
  return 'errors' in v ? { errors: v.errors } : { value: { doc, policy: v.policy } };
}

/** `cnp/<name>`, `anp/<name>`, `banp/<name>`. */
export function clusterPolicyIdErrors(id: string): string[] {
  const slash = id.indexOf('/');
  const short = id.slice(0, slash);
  if (slash < 0 || !CLUSTER_KINDS.some((k) => k.short === short)) return [`must be ${CLUSTER_KINDS.map((k) => `${k.short}/<name>`).join(', ')}`];
  return dns1123SubdomainErrors(id.slice(slash + 1)).map((m) => `name: ${m}`);
}

/** The `clusterPolicies` part of POST /v2/starmap/changes, into `w`; errors carry /clusterPolicies/… paths. */
export function validateClusterPolicyChanges(v: unknown, w: StateWrite, maxBatch: number): FieldErrors[] {
  const errors: FieldErrors[] = [];
  const add = (path: string, msg: string) => errors.push({ path, errors: [msg] });
  if (v === undefined) return errors;
  if (!isObj(v)) return [{ path: '/clusterPolicies', errors: ['must be an object {"put": [...], "delete": [...]}'] }];
  for (const k of Object.keys(v)) if (k !== 'put' && k !== 'delete') add(`/clusterPolicies/${k}`, 'unknown field (expected one of: put, delete)');
  const list = (key: 'put' | 'delete'): unknown[] => {
    const l = v[key] ?? [];
    if (!Array.isArray(l)) return (add(`/clusterPolicies/${key}`, 'must be an array'), []);
    if (l.length > maxBatch) return (add(`/clusterPolicies/${key}`, `at most ${maxBatch} entries per change`), []);
    return l;
  };
  const put: StoredClusterPolicy[] = [];
  const del: string[] = [];
  const seen = new Map<string, number>();
  list('put').forEach((doc, i) => {
    const r = validateClusterPolicyDoc(doc);
    if ('errors' in r) return errors.push(...r.errors.map((e) => ({ path: `/clusterPolicies/put/${i}${e.path === '/' ? '' : e.path}`, errors: e.errors })));
    const first = seen.get(r.value.policy.id);
    if (first !== undefined) return add(`/clusterPolicies/put/${i}`, `puts ${r.value.policy.id} again (also /clusterPolicies/put/${first})`);
    seen.set(r.value.policy.id, i);
    put.push(r.value);
  });
  list('delete').forEach((id, i) => {
    if (typeof id !== 'string') return add(`/clusterPolicies/delete/${i}`, 'must be a cluster policy id (cnp/<name>, anp/<name>, banp/<name>)');
    const msgs = clusterPolicyIdErrors(id);
    if (msgs.length) return errors.push({ path: `/clusterPolicies/delete/${i}`, errors: msgs });
    if (!del.includes(id)) del.push(id);
  });
  if (put.length > 0) w.putClusterPolicies = put;
  if (del.length > 0) w.deleteClusterPolicies = del;
  return errors;
}
