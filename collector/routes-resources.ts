// `/resources`: the collector's resource set. POST adds (201), the same pair again is harmless
// (200), the same id with another url is a conflict (409: DELETE it first or PUT to replace);
// PUT /resources/{id} creates (201) or replaces (200); DELETE removes it and its cached response.
// Writes take a JSON body whatever its content type (as star); the app's guard (web-guard.ts)
// refuses them when a browser says they come from another site.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { crossSiteWrite } from '../shared/web-guard.ts';
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

/**
 * Why a write is refused as cross-site, or undefined when it may go on (shared/web-guard.ts): its
 * Origin is not the origin of the Host it was sent to, or Sec-Fetch-Site names another origin.
 * The Host itself is checked against the allow-list by the app's guard (web-guard.ts), which also
 * applies this to every write before any route's hooks.
 */
export function crossSite(req: FastifyRequest): string | undefined {
  return crossSiteWrite(req.headers, 'collector');
}

export const resourceRoutes: FastifyPluginAsync<ResourceRoutesOptions> = async (app, { store }) => {
  // star read a JSON body whatever its declared type, so scripts written for it send `curl -d`'s
  // application/x-www-form-urlencoded: every body here is parsed as JSON (fastify's own parser,
  // with its prototype-poisoning guard). The protection that refusing such types gave against
  // cross-site forms comes from the app's Origin check (web-guard.ts) instead.
  // A DELETE takes no body: an empty one is fine whatever header came with it.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (req, body, done) => {
    if (req.method === 'DELETE' && body === '') return done(null, undefined);
    return json(req, body as string, done);
  });
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
      if (b.id !== undefined && b.id !== id)
        throw new ResourceError(`field "id" ${JSON.stringify(b.id)} does not match the id in the path ${JSON.stringify(id)}`);
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
