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
// Namespaces, pod labels and atomic batches: cluster-routes.ts. Errors use Marathon's shapes: 422
// {message: "Object is not valid", details: [{path, errors}]}, 404 {message}, 400 {message} for a
// missing body. Writes answer once the rules are applied in every task namespace; the header
// Starmap-Enforcement says how that went (applied/unchanged/failed counts).
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { NetworkPolicyObject } from '../../shared/netpol/types.ts';
import { dns1123LabelErrors, dns1123SubdomainErrors } from '../../shared/netpol/validate.ts';
import { validateAnyPolicy } from './changes.ts';
import { CHANGES_PATH, NAMESPACES_PATH, PODS_PATH, clusterRoutes, enforcement, invalid, isBodyMissing, missingBody, stored } from './cluster-routes.ts';
import type { CompiledRule, Side } from './compile.ts';
import { POLICY_ID_PATTERN } from './policy.ts';
import type { PolicyEngine } from './policy-engine.ts';
import { isNetworkPolicyObject, policyId } from './policy-store.ts';

export const POLICY_PATH = '/v2/starmap/policies';
export const NETWORK_PATH = '/v2/starmap/network';
export const DROPS_PATH = '/v2/starmap/drops';
/** Every extension path (without --isolation=netns they answer 501). */
export const STARMAP_PATHS = [POLICY_PATH, `${POLICY_PATH}/*`, NETWORK_PATH, DROPS_PATH, NAMESPACES_PATH, `${NAMESPACES_PATH}/*`, PODS_PATH, `${PODS_PATH}/*`, CHANGES_PATH];

export interface PolicyPluginOptions {
  engine: PolicyEngine;
}

const ID_MESSAGE = 'must be 1-128 letters, digits, dots, dashes or underscores, starting and ending with a letter or digit';

function notFound(id: string) {
  return { message: `Policy '${id}' does not exist` };
}

function portsJson(ports: CompiledRule['ports']) {
  if (ports === 'any') return 'all';
  return ports.flatMap((p) => (p.ranges ? p.ranges.map(([lo, hi]) => ({ protocol: p.protocol, port: lo, ...(hi !== lo ? { endPort: hi } : {}) })) : [{ protocol: p.protocol }]));
}

function peerJson(rule: CompiledRule) {
  const p = rule.peer;
  return p.kind === 'any' ? 'any' : p.kind === 'pods' ? { pods: p.pods, ips: p.ips } : { ipBlock: { cidr: p.cidr, except: p.except } };
}

function sideJson(side: Side) {
  return {
    isolated: side.isolated,
    ...(side.limit ? { limit: side.limit } : {}),
    rules: side.rules.map((r) => ({ origin: r.origin, peer: peerJson(r), ports: portsJson(r.ports) })),
  };
}

/** The body of a NetworkPolicy PUT with what the path says filled in, or where it disagrees. */
function withPath(body: Record<string, unknown>, namespace: string, name: string): { doc: Record<string, unknown> } | { errors: { path: string; errors: string[] }[] } {
  const meta = body.metadata ?? {};
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return { doc: body }; // the validator says what is wrong
  const m = meta as Record<string, unknown>;
  const errors: { path: string; errors: string[] }[] = [];
  if (m.name !== undefined && m.name !== null && m.name !== name) errors.push({ path: '/metadata/name', errors: [`does not match the name in the path (${name})`] });
  if (m.namespace !== undefined && m.namespace !== null && m.namespace !== '' && m.namespace !== namespace) errors.push({ path: '/metadata/namespace', errors: [`does not match the namespace in the path (${namespace})`] });
  if (errors.length) return { errors };
  return { doc: { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', ...body, metadata: { ...m, name, namespace } } };
}

export async function policyPlugin(app: FastifyInstance, opts: PolicyPluginOptions): Promise<void> {
  const { engine } = opts;

  app.get(POLICY_PATH, async () => ({ policies: engine.list() }));

  app.post(POLICY_PATH, async (req, reply) => {
    if (isBodyMissing(req.body)) return missingBody(reply);
    const v = validateAnyPolicy(req.body);
    if ('errors' in v) return invalid(reply, v.errors);
    const id = policyId(v.value);
    if (engine.get(id)) return reply.code(409).send({ message: `Policy '${id}' already exists: use PUT ${POLICY_PATH}/${id} to replace it` });
    const r = await stored(reply, () => engine.put(v.value));
    if (!r) return reply;
    enforcement(reply, r.sync);
    return reply.code(201).send(v.value);
  });

  app.get<{ Params: { id: string } }>(`${POLICY_PATH}/:id`, async (req, reply) => engine.get(req.params.id) ?? reply.code(404).send(notFound(req.params.id)));

  app.put<{ Params: { id: string } }>(`${POLICY_PATH}/:id`, async (req, reply) => {
    const id = req.params.id;
    if (!POLICY_ID_PATTERN.test(id)) return invalid(reply, [{ path: '/id', errors: [ID_MESSAGE] }]);
    if (isBodyMissing(req.body)) return missingBody(reply);
    const v = validateAnyPolicy(req.body, id);
    if ('errors' in v) return invalid(reply, v.errors);
    if (isNetworkPolicyObject(v.value)) return invalid(reply, [{ path: '/kind', errors: [`a NetworkPolicy is written at ${POLICY_PATH}/{namespace}/{name} (here: ${POLICY_PATH}/${v.value.metadata.namespace}/${v.value.metadata.name})`] }]);
    const r = await stored(reply, () => engine.put(v.value));
    if (!r) return reply;
    enforcement(reply, r.sync);
    return reply.code(r.created ? 201 : 200).send(v.value);
  });

  const remove = async (id: string, reply: FastifyReply) => {
    const r = await stored(reply, () => engine.delete(id));
    if (!r) return reply;
    if (!r.deleted) return reply.code(404).send(notFound(id));
    enforcement(reply, r.sync);
    return { id, deleted: true };
  };
  app.delete<{ Params: { id: string } }>(`${POLICY_PATH}/:id`, async (req, reply) => remove(req.params.id, reply));

  type NpParams = { Params: { namespace: string; name: string } };
  const npId = (p: { namespace: string; name: string }) => `${p.namespace}/${p.name}`;
  app.get<NpParams>(`${POLICY_PATH}/:namespace/:name`, async (req, reply) => engine.get(npId(req.params)) ?? reply.code(404).send(notFound(npId(req.params))));
  app.delete<NpParams>(`${POLICY_PATH}/:namespace/:name`, async (req, reply) => remove(npId(req.params), reply));
  app.put<NpParams>(`${POLICY_PATH}/:namespace/:name`, async (req, reply) => {
    const { namespace, name } = req.params;
    const pathErrors = [
      ...(dns1123LabelErrors(namespace).length ? [{ path: '/metadata/namespace', errors: dns1123LabelErrors(namespace).map((m) => `the namespace in the path: ${m}`) }] : []),
      ...(dns1123SubdomainErrors(name).length ? [{ path: '/metadata/name', errors: dns1123SubdomainErrors(name).map((m) => `the name in the path: ${m}`) }] : []),
    ];
    if (pathErrors.length) return invalid(reply, pathErrors);
    if (isBodyMissing(req.body)) return missingBody(reply);
    if (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body)) return invalid(reply, [{ path: '/', errors: ['must be an object (a networking.k8s.io/v1 NetworkPolicy)'] }]);
    const filled = withPath(req.body as Record<string, unknown>, namespace, name);
    if ('errors' in filled) return invalid(reply, filled.errors);
    const v = validateAnyPolicy(filled.doc);
    if ('errors' in v) return invalid(reply, v.errors);
    const r = await stored(reply, () => engine.put(v.value));
    if (!r) return reply;
    enforcement(reply, r.sync);
    return reply.code(r.created ? 201 : 200).send(v.value as NetworkPolicyObject);
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
          allow: (r?.ingress.rules ?? []).map((a) => ({ from: a.peer.kind === 'any' ? 'any' : a.peer.kind === 'pods' ? a.peer.ips : { cidr: a.peer.cidr, except: a.peer.except }, ports: portsJson(a.ports), origin: a.origin })),
        };
      }),
    };
  });

  app.get(DROPS_PATH, async () => ({ tasks: await engine.drops() }));

  await clusterRoutes(app, engine);
}
