// `/responses`: the latest response per resource (star's shape, with Starmap's detail in the
// sibling `details` map; see responses.ts), with an ETag so that pollers can ask "anything new?"
// for the price of a 304. `/responses/example` is star's sample data in the same shape.
import type { FastifyPluginAsync } from 'fastify';
import { exampleDocument } from './example.ts';
import { noResourceMessage } from './resources.ts';
import { documentEnd, type ResponseCache } from './responses.ts';

export interface ResponseRoutesOptions {
  responses: ResponseCache;
}

const JSON_TYPE = 'application/json; charset=utf-8';

export const responseRoutes: FastifyPluginAsync<ResponseRoutesOptions> = async (app, { responses }) => {
  app.get('/responses', async (req, reply) => {
    const doc = responses.responsesDocument();
    const etag = `W/"r${doc.version}"`;
    if (req.headers['if-none-match'] === etag) return reply.code(304).header('etag', etag).header('cache-control', 'no-cache').send();
    // The cached bytes go out as they are, followed by the time of this answer: two writes in one
    // packet, no copy of a document that can hold megabytes (fastify would need one Buffer).
    const end = documentEnd();
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { etag, 'cache-control': 'no-cache', 'content-type': JSON_TYPE, 'content-length': doc.prefix.length + end.length });
    res.cork();
    res.write(doc.prefix);
    res.end(end);
  });

  app.get('/responses/example', async (_req, reply) => {
    return reply.type(JSON_TYPE).header('cache-control', 'no-cache').send(JSON.stringify(exampleDocument()));
  });

  app.get<{ Params: { id: string } }>('/responses/:id', async (req, reply) => {
    const body = responses.responseBody(req.params.id);
    if (body === undefined) return reply.code(404).send({ message: noResourceMessage(req.params.id) });
    return reply.type(JSON_TYPE).header('cache-control', 'no-cache').send(body);
  });
};
