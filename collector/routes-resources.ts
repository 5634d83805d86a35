// `/resources`: the collector's resource set. POST adds (201), the same pair again is harmless
// (200), the same id with another url is a conflict (409: DELETE it first or PUT to replace);
// PUT /resources/{id} creates (201) or replaces (200); DELETE removes it and its cached response.
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { noResourceMessage, ResourceError, validateId, validateResource, validateUrl, type PutResult, type Resource, type ResourceStore } from './resources.ts';

export interface ResourceRoutesOptions {
  store: ResourceStore;
}

const location = (r: Resource) => `/resources/${encodeURIComponent(r.id)}`;

function badRequest(reply: FastifyReply, err: unknown) {
  if (err instanceof ResourceError) return reply.code(400).send({ message: err.message });
  throw err;
}

/** The answer to a POST or PUT that stored (or already had) the resource: 201 if new, else 200. */
function saved(reply: FastifyReply, result: PutResult) {
  return reply
    .code(result.outcome === 'created' ? 201 : 200)
    .header('location', location(result.resource))
    .send({ resource: result.resource });
}

function notFound(reply: FastifyReply, id: string) {
  return reply.code(404).send({ message: noResourceMessage(id) });
}

export const resourceRoutes: FastifyPluginAsync<ResourceRoutesOptions> = async (app, { store }) => {
  app.get('/resources', async () => ({ resources: store.list() }));

  app.post('/resources', async (req, reply) => {
    let resource: Resource;
    try {
      resource = validateResource(req.body);
    } catch (err) {
      return badRequest(reply, err);
    }
    const result = store.add(resource);
    if (result.outcome === 'conflict') {
      return reply.code(409).send({
        message:
          `resource ${JSON.stringify(resource.id)} already exists with url ${JSON.stringify(result.resource.url)}: ` +
          `DELETE /resources/${encodeURIComponent(resource.id)} first, or PUT /resources/${encodeURIComponent(resource.id)} to replace its url`,
        resource: result.resource,
      });
    }
    return saved(reply, result);
  });

  app.get<{ Params: { id: string } }>('/resources/:id', async (req, reply) => {
    const resource = store.get(req.params.id);
    return resource ? { resource } : notFound(reply, req.params.id);
  });

  app.put<{ Params: { id: string } }>('/resources/:id', async (req, reply) => {
    let resource: Resource;
    try {
      const id = validateId(req.params.id);
      const body = req.body;
      if (body === null || typeof body !== 'object' || Array.isArray(body)) {
        throw new ResourceError('expected a JSON object {"url": "http://…"}');
      }
      const b = body as Record<string, unknown>;
      if (b.id !== undefined && b.id !== id) throw new ResourceError(`field "id" ${JSON.stringify(b.id)} does not match the id in the path ${JSON.stringify(id)}`);
      resource = { id, url: validateUrl(b.url) };
    } catch (err) {
      return badRequest(reply, err);
    }
    const result = store.put(resource);
    return saved(reply, result);
  });

  app.delete<{ Params: { id: string } }>('/resources/:id', async (req, reply) => {
    const removed = store.remove(req.params.id);
    return removed ? { resource: removed } : notFound(reply, req.params.id);
  });
};
