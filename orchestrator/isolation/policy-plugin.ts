// The policy extension endpoint. Marathon has nothing under /v2/starmap, so these paths never
// collide with its API:
//   GET    /v2/starmap/policies        → 200 {policies: [policy…]} (sorted by id)
//   POST   /v2/starmap/policies        → 201 policy (409 when the id exists)
//   GET    /v2/starmap/policies/{id}   → 200 policy | 404
//   PUT    /v2/starmap/policies/{id}   → 201 created | 200 replaced (body: policy; id optional, must match)
//   DELETE /v2/starmap/policies/{id}   → 200 {id, deleted: true} | 404
//   GET    /v2/starmap/network         → 200 {gateway, tasks: [{taskId, appId, ip, netns, restricted, rules}]}
// Errors use Marathon's shapes: 422 {message: "Object is not valid", details: [{path, errors}]},
// 404 {message}, 400 {message} for a missing body. Writes answer once the rules are applied in every
// task namespace; the header Starmap-Enforcement says how that went (applied/unchanged/failed counts).
import type { FastifyInstance, FastifyReply } from 'fastify';
import { POLICY_ID_PATTERN, validatePolicy } from './policy.ts';
import type { PolicyEngine, SyncResult } from './policy-engine.ts';

export const POLICY_PATH = '/v2/starmap/policies';
export const NETWORK_PATH = '/v2/starmap/network';

export interface PolicyPluginOptions {
  engine: PolicyEngine;
}

function enforcement(reply: FastifyReply, s: SyncResult | undefined): void {
  if (s) void reply.header('Starmap-Enforcement', `applied=${s.applied.length} unchanged=${s.unchanged.length} failed=${s.failed.length}`);
}

function invalid(reply: FastifyReply, details: { path: string; errors: string[] }[]): FastifyReply {
  return reply.code(422).send({ message: 'Object is not valid', details });
}

function missingBody(reply: FastifyReply): FastifyReply {
  return reply.code(400).send({ message: 'Please specify data in JSON format', details: 'Request body is empty' });
}

function notFound(reply: FastifyReply, id: string): FastifyReply {
  return reply.code(404).send({ message: `Policy '${id}' does not exist` });
}

export async function policyPlugin(app: FastifyInstance, opts: PolicyPluginOptions): Promise<void> {
  const { engine } = opts;

  app.get(POLICY_PATH, async () => ({ policies: engine.list() }));

  app.post(POLICY_PATH, async (req, reply) => {
    if (req.body === undefined || req.body === null || req.body === '') return missingBody(reply);
    const v = validatePolicy(req.body);
    if ('errors' in v) return invalid(reply, v.errors);
    if (engine.get(v.policy.id)) return reply.code(409).send({ message: `Policy '${v.policy.id}' already exists: use PUT ${POLICY_PATH}/${v.policy.id} to replace it` });
    const r = await engine.put(v.policy);
    enforcement(reply, r.sync);
    return reply.code(201).send(v.policy);
  });

  app.get<{ Params: { id: string } }>(`${POLICY_PATH}/:id`, async (req, reply) => {
    const p = engine.get(req.params.id);
    return p ? p : notFound(reply, req.params.id);
  });

  app.put<{ Params: { id: string } }>(`${POLICY_PATH}/:id`, async (req, reply) => {
    const id = req.params.id;
    if (!POLICY_ID_PATTERN.test(id)) return invalid(reply, [{ path: '/id', errors: ['must be 1-128 letters, digits, dots, dashes or underscores, starting and ending with a letter or digit'] }]);
    if (req.body === undefined || req.body === null || req.body === '') return missingBody(reply);
    const v = validatePolicy(req.body, id);
    if ('errors' in v) return invalid(reply, v.errors);
    const r = await engine.put(v.policy);
    enforcement(reply, r.sync);
    return reply.code(r.created ? 201 : 200).send(v.policy);
  });

  app.delete<{ Params: { id: string } }>(`${POLICY_PATH}/:id`, async (req, reply) => {
    const r = await engine.delete(req.params.id);
    if (!r.deleted) return notFound(reply, req.params.id);
    enforcement(reply, r.sync);
    return { id: req.params.id, deleted: true };
  });

  app.get(NETWORK_PATH, async () => {
    const rules = new Map(engine.rules().map((r) => [r.taskId, r]));
    return {
      gateway: engine.gateway,
      tasks: engine.tasks().map((t) => {
        const r = rules.get(t.taskId);
        return {
          taskId: t.taskId,
          appId: t.appId,
          ip: t.ip,
          netns: t.netns,
          groups: t.groups,
          restricted: r?.restricted ?? false,
          allow: (r?.allow ?? []).map((a) => ({ from: a.sources === 'any' ? 'any' : [...a.sources].sort(), ports: a.ports ?? 'all', origin: a.origin })),
        };
      }),
    };
  });
}
