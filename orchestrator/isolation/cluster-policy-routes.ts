// The admin-tier policies as resources of their own, one path per kind, shaped like the
// NetworkPolicy routes (policy-routes.ts) but cluster-scoped (known by name):
//   GET    /v2/starmap/clusternetworkpolicies          → 200 {items: [documents, sorted by name]}
//   GET    /v2/starmap/clusternetworkpolicies/{name}   → 200 document | 404
//   PUT    /v2/starmap/clusternetworkpolicies/{name}   → 201 created | 200 replaced (apiVersion and kind may be left out;
//                                                        metadata.name must agree with the path)
//   DELETE /v2/starmap/clusternetworkpolicies/{name}   → 200 {id, deleted: true} | 404
//   the same under /v2/starmap/adminnetworkpolicies and /v2/starmap/baselineadminnetworkpolicies
//   (policy.networking.k8s.io/v1alpha1, read as the same tiers: shared/netpol/cluster-policy.ts).
// In POST /v2/starmap/changes they are `clusterPolicies: {put: [document…], delete: ["cnp/<name>"…]}`
// (cluster-policy-changes.ts). Validation is the scenarios' own (validateClusterPolicy:
// the upstream CRD's schema and the API server's metadata rules), 422 naming the field. The
// orchestrator never reads the tiered evaluator (shared/netpol/tiers.ts): compile-tiers.ts is its own.
import type { FastifyInstance } from 'fastify';
import type { ClusterPolicyKind } from '../../shared/netpol/cluster-policy.ts';
import { dns1123SubdomainErrors } from '../../shared/netpol/names.ts';
import type { FieldErrors } from '../../shared/netpol/validate.ts';
import { CLUSTER_KINDS as KINDS, isObj, validateClusterPolicyDoc } from './cluster-policy-changes.ts';
import { requireBody, stored, storedReply, validated } from './cluster-routes.ts';
import type { PolicyEngine } from './policy-engine.ts';
import type { StateWrite } from './policy-store.ts';
import { InvalidObject, NotFound } from '../errors.ts';

export const CLUSTER_POLICY_PATHS: Record<ClusterPolicyKind, string> = {
  ClusterNetworkPolicy: '/v2/starmap/clusternetworkpolicies',
  AdminNetworkPolicy: '/v2/starmap/adminnetworkpolicies',
  BaselineAdminNetworkPolicy: '/v2/starmap/baselineadminnetworkpolicies',
};

const write = (w: Partial<StateWrite>): StateWrite => ({ putPolicies: [], deletePolicies: [], namespaces: [], podLabels: [], ...w });

export async function clusterPolicyRoutes(app: FastifyInstance, engine: PolicyEngine): Promise<void> {
  for (const kind of KINDS) {
    const base = CLUSTER_POLICY_PATHS[kind.kind];
    type Params = { Params: { name: string } };
    const idOf = (name: string) => `${kind.short}/${name}`;
    const missing = (name: string) => new NotFound(`${kind.kind} '${name}' does not exist`);

    app.get(base, async () => ({
      items: engine
        .clusterPolicies()
        .filter((p) => p.policy.kind === kind.kind)
        .map((p) => p.doc),
    }));

    app.get<Params>(`${base}/:name`, async (req) => {
      const p = engine.clusterPolicy(idOf(req.params.name));
      if (!p) throw missing(req.params.name);
      return p.doc;
    });

    app.put<Params>(`${base}/:name`, async (req, reply) => {
      const { name } = req.params;
      const nameErrors = dns1123SubdomainErrors(name);
      if (nameErrors.length) throw new InvalidObject([{ path: '/metadata/name', errors: nameErrors.map((m) => `the name in the path: ${m}`) }]);
      const body = requireBody(req.body);
      if (!isObj(body)) throw new InvalidObject([{ path: '/', errors: [`must be an object (a ${kind.apiVersion} ${kind.kind})`] }]);
      const meta = body.metadata ?? {};
      if (!isObj(meta)) throw new InvalidObject([{ path: '/metadata', errors: ['must be an object'] }]);
      if (meta.name !== undefined && meta.name !== null && meta.name !== name)
        throw new InvalidObject([{ path: '/metadata/name', errors: [`does not match the name in the path (${name})`] }]);
      const errors: FieldErrors[] = [];
      if (body.apiVersion !== undefined && body.apiVersion !== kind.apiVersion)
        errors.push({ path: '/apiVersion', errors: [`must be ${kind.apiVersion} at ${base}/{name}`] });
      if (body.kind !== undefined && body.kind !== kind.kind) errors.push({ path: '/kind', errors: [`must be ${kind.kind} at ${base}/{name}`] });
      if (errors.length) throw new InvalidObject(errors);
      const doc = { ...body, apiVersion: kind.apiVersion, kind: kind.kind, metadata: { ...meta, name } };
      const p = validated(validateClusterPolicyDoc(doc));
      const r = await stored(() => engine.apply(write({ putClusterPolicies: [p] })));
      return storedReply(reply, r.sync, r.created.length > 0 ? 201 : 200, p.doc);
    });

    app.delete<Params>(`${base}/:name`, async (req, reply) => {
      const id = idOf(req.params.name);
      if (!engine.clusterPolicy(id)) throw missing(req.params.name);
      const r = await stored(() => engine.apply(write({ deleteClusterPolicies: [id] })));
      return storedReply(reply, r.sync, 200, { id, deleted: true });
    });
  }
}
