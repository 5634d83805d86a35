// The policy extension endpoints. Marathon has nothing under /v2/starmap, so these paths never
// collide with its API:
//   GET    /v2/starmap/policies                    → 200 {policies: [dialect documents and NetworkPolicy objects, sorted by id]}
//   POST   /v2/starmap/policies                    → 201 policy of either kind (409 when the id exists)
//   GET    /v2/starmap/policies/{id}               → 200 dialect policy | 404
//   PUT    /v2/starmap/policies/{id}               → 201 created | 200 replaced (dialect; body id optional, must match)
//   DELETE /v2/starmap/policies/{id}               → 200 {id, deleted: true} | 404
//   GET|PUT|DELETE /v2/starmap/policies/{namespace}/{name}: the same for a NetworkPolicy (metadata
//                                                    must agree with the path; missing parts are taken from it)
//   GET    /v2/starmap/network                     → 200 {gateway, tasks: [...]}: the rules in force, both directions
//   GET    /v2/starmap/drops                       → 200 {tasks: [...]}: packets each side's policies dropped
// Namespaces, pod labels and atomic batches: cluster-routes.ts; admin-tier policies: cluster-policy-routes.ts. Errors use Marathon's shapes: 422
// {message: "Object is not valid", details: [{path, errors}]}, 404 {message}, 400 {message} for a
// missing body, 422 naming the bound and the count for a write that would take a pod's ruleset past
// RULESET_LIMITS (render.ts; nothing is stored). Writes answer once the rules are applied in every
// task namespace; the header Starmap-Enforcement says how that went (applied/unchanged/failed
// counts), and a write stored but not enforced everywhere answers 202 (cluster-routes.ts).
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { NetworkPolicyObject } from '../../shared/netpol/types.ts';
import { dns1123LabelErrors, dns1123SubdomainErrors } from '../../shared/netpol/names.ts';
import { validateAnyPolicy } from './changes.ts';
import { CHANGES_PATH, NAMESPACES_PATH, PODS_PATH, clusterRoutes, requireBody, stored, storedReply, validated } from './cluster-routes.ts';
import { Conflict, InvalidObject, NotFound } from '../errors.ts';
import { mapOrchestratorErrors } from '../http/errors.ts';
import type { CompiledRule, Side } from './compile.ts';
import type { TierRule } from './compile-tiers.ts';
import { CLUSTER_POLICY_PATHS, clusterPolicyRoutes } from './cluster-policy-routes.ts';
import { POLICY_ID_PATTERN } from './policy.ts';
import type { PolicyEngine } from './policy-engine.ts';
import { isNetworkPolicyObject, policyId } from './policy-store.ts';

export const POLICY_PATH = '/v2/starmap/policies';
export const NETWORK_PATH = '/v2/starmap/network';
export const DROPS_PATH = '/v2/starmap/drops';
/** Every extension path (without --isolation=netns they answer 501). */
export const STARMAP_PATHS = [
  POLICY_PATH,
  `${POLICY_PATH}/*`,
  NETWORK_PATH,
  DROPS_PATH,
  NAMESPACES_PATH,
  `${NAMESPACES_PATH}/*`,
  PODS_PATH,
  `${PODS_PATH}/*`,
  CHANGES_PATH,
  ...Object.values(CLUSTER_POLICY_PATHS).flatMap((p) => [p, `${p}/*`]),
];

export interface PolicyPluginOptions {
  engine: PolicyEngine;
}

const ID_MESSAGE = 'must be 1-128 letters, digits, dots, dashes or underscores, starting and ending with a letter or digit';

function notFound(id: string): NotFound {
  return new NotFound(`Policy '${id}' does not exist`);
}

function portsJson(ports: CompiledRule['ports']) {
  if (ports === 'any') return 'all';
  return ports.flatMap((p) =>
    p.ranges ? p.ranges.map(([lo, hi]) => ({ protocol: p.protocol, port: lo, ...(hi !== lo ? { endPort: hi } : {}) })) : [{ protocol: p.protocol }],
  );
}

function peerJson(rule: CompiledRule) {
  const p = rule.peer;
  return p.kind === 'any' ? 'any' : p.kind === 'pods' ? { pods: p.pods, ips: p.ips } : { ipBlock: { cidr: p.cidr, except: p.except } };
}

function sideJson(side: Side) {
  const tier = (rules: TierRule[] | undefined) =>
    (rules ?? []).map((r) => ({ origin: r.origin, action: r.action, peer: peerJson(r), ports: portsJson(r.ports) }));
  return {
    isolated: side.isolated,
    ...(side.limit ? { limit: side.limit } : {}),
    ...(side.admin ? { admin: tier(side.admin) } : {}),
    rules: side.rules.map((r) => ({ origin: r.origin, peer: peerJson(r), ports: portsJson(r.ports) })),
    ...(side.baseline ? { baseline: tier(side.baseline) } : {}),
    ...(side.unenforced ? { unenforced: side.unenforced } : {}),
  };
}

/** The body of a NetworkPolicy PUT with what the path says filled in, or where it disagrees. */
function withPath(
  body: Record<string, unknown>,
  namespace: string,
  name: string,
): { doc: Record<string, unknown> } | { errors: { path: string; errors: string[] }[] } {
  const meta = body.metadata ?? {};
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return { doc: body }; // the validator says what is wrong
  const m = meta as Record<string, unknown>;
  const errors: { path: string; errors: string[] }[] = [];
  if (m.name !== undefined && m.name !== null && m.name !== name)
    errors.push({ path: '/metadata/name', errors: [`does not match the name in the path (${name})`] });
  if (m.namespace !== undefined && m.namespace !== null && m.namespace !== '' && m.namespace !== namespace)
    errors.push({ path: '/metadata/namespace', errors: [`does not match the namespace in the path (${namespace})`] });
  if (errors.length) return { errors };
  return { doc: { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', ...body, metadata: { ...m, name, namespace } } };
}

export async function policyPlugin(app: FastifyInstance, opts: PolicyPluginOptions): Promise<void> {
  const { engine } = opts;
  // The orchestrator's errors answered here too when the plugin runs on another app (tests).
  app.setErrorHandler(mapOrchestratorErrors);

  app.get(POLICY_PATH, async () => ({ policies: engine.list() }));

  app.post(POLICY_PATH, async (req, reply) => {
    const policy = validated(validateAnyPolicy(requireBody(req.body)));
    const id = policyId(policy);
    if (engine.get(id)) throw new Conflict(`Policy '${id}' already exists: use PUT ${POLICY_PATH}/${id} to replace it`);
    const r = await stored(() => engine.put(policy));
    return storedReply(reply, r.sync, 201, policy);
  });

  const get = (id: string) => {
    const p = engine.get(id);
    if (!p) throw notFound(id);
    return p;
  };
  app.get<{ Params: { id: string } }>(`${POLICY_PATH}/:id`, async (req) => get(req.params.id));

  app.put<{ Params: { id: string } }>(`${POLICY_PATH}/:id`, async (req, reply) => {
    const id = req.params.id;
    if (!POLICY_ID_PATTERN.test(id)) throw new InvalidObject([{ path: '/id', errors: [ID_MESSAGE] }]);
    const policy = validated(validateAnyPolicy(requireBody(req.body), id));
    if (isNetworkPolicyObject(policy))
      throw new InvalidObject([
        {
          path: '/kind',
          errors: [
            `a NetworkPolicy is written at ${POLICY_PATH}/{namespace}/{name} (here: ${POLICY_PATH}/${policy.metadata.namespace}/${policy.metadata.name})`,
          ],
        },
      ]);
    const r = await stored(() => engine.put(policy));
    return storedReply(reply, r.sync, r.created ? 201 : 200, policy);
  });

  const remove = async (id: string, reply: FastifyReply) => {
    const r = await stored(() => engine.delete(id));
    if (!r.deleted) throw notFound(id);
    return storedReply(reply, r.sync, 200, { id, deleted: true });
  };
  app.delete<{ Params: { id: string } }>(`${POLICY_PATH}/:id`, async (req, reply) => remove(req.params.id, reply));

  type NpParams = { Params: { namespace: string; name: string } };
  const npId = (p: { namespace: string; name: string }) => `${p.namespace}/${p.name}`;
  app.get<NpParams>(`${POLICY_PATH}/:namespace/:name`, async (req) => get(npId(req.params)));
  app.delete<NpParams>(`${POLICY_PATH}/:namespace/:name`, async (req, reply) => remove(npId(req.params), reply));
  app.put<NpParams>(`${POLICY_PATH}/:namespace/:name`, async (req, reply) => {
    const { namespace, name } = req.params;
    const pathErrors = [
      ...(dns1123LabelErrors(namespace).length
        ? [{ path: '/metadata/namespace', errors: dns1123LabelErrors(namespace).map((m) => `the namespace in the path: ${m}`) }]
        : []),
      ...(dns1123SubdomainErrors(name).length
        ? [{ path: '/metadata/name', errors: dns1123SubdomainErrors(name).map((m) => `the name in the path: ${m}`) }]
        : []),
    ];
    if (pathErrors.length) throw new InvalidObject(pathErrors);
    const body = requireBody(req.body);
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new InvalidObject([{ path: '/', errors: ['must be an object (a networking.k8s.io/v1 NetworkPolicy)'] }]);
    const filled = withPath(body as Record<string, unknown>, namespace, name);
    if ('errors' in filled) throw new InvalidObject(filled.errors);
    const policy = validated(validateAnyPolicy(filled.doc));
    const r = await stored(() => engine.put(policy));
    return storedReply(reply, r.sync, r.created ? 201 : 200, policy as NetworkPolicyObject);
  });

  app.get(NETWORK_PATH, async () => {
    const pods = new Map(engine.pods().map((p) => [p.taskId, p]));
    const rules = new Map(engine.rules().map((r) => [r.taskId, r]));
    return {
      gateway: engine.gateway,
      tasks: engine.tasks().map((t) => {
        const r = rules.get(t.taskId);
        const p = pods.get(t.taskId);
        return {
          taskId: t.taskId,
          appId: t.appId,
          namespace: p?.namespace,
          pod: p?.pod,
          ip: t.ip,
          netns: t.netns,
          labels: p?.labels ?? {},
          ports: p?.ports ?? [],
          groups: t.groups,
          restricted: r?.restricted ?? false,
          ingress: r ? sideJson(r.ingress) : { isolated: false, rules: [] },
          egress: r ? sideJson(r.egress) : { isolated: false, rules: [] },
          // The dialect-era summary of the ingress rules, kept for existing clients.
          allow: (r?.ingress.rules ?? []).map((a) => ({
            from: a.peer.kind === 'any' ? 'any' : a.peer.kind === 'pods' ? a.peer.ips : { cidr: a.peer.cidr, except: a.peer.except },
            ports: portsJson(a.ports),
            origin: a.origin,
          })),
        };
      }),
    };
  });

  app.get(DROPS_PATH, async () => ({ tasks: await engine.drops() }));

  await clusterRoutes(app, engine);
  await clusterPolicyRoutes(app, engine);
}
