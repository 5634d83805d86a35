// `/responses`: the latest response per resource, served from cached JSON text, with an ETag so
// that pollers can ask "anything new?" for the price of a 304. `/responses/example` is star's
// sample data.
import type { FastifyPluginAsync } from 'fastify';
import { exampleResponses } from './example.ts';
import { noResourceMessage } from './resources.ts';
import type { ResponseCache } from './responses.ts';

export interface ResponseRoutesOptions {
  responses: ResponseCache;
}

const JSON_TYPE = 'application/json; charset=utf-8';

export const responseRoutes: FastifyPluginAsync<ResponseRoutesOptions> = async (app, { responses }) => {
  app.get('/responses', async (req, reply) => {
    // Read `doc.body` only on the 200 path: it is a getter that copies the whole document.
    const doc = responses.responsesDocument();
    const etag = `W/"r${doc.version}"`;
    reply.header('etag', etag).header('cache-control', 'no-cache');
    if (req.headers['if-none-match'] === etag) return reply.code(304).send();
    return reply.type(JSON_TYPE).send(doc.body);
  });

  app.get('/responses/example', async (_req, reply) => {
    return reply.type(JSON_TYPE).header('cache-control', 'no-cache').send(JSON.stringify({ responses: exampleResponses(), generatedAt: new Date().toISOString() }));
  });

  app.get<{ Params: { id: string } }>('/responses/:id', async (req, reply) => {
    const text = responses.responseJson(req.params.id);
    if (text === undefined) return reply.code(404).send({ message: noResourceMessage(req.params.id) });
    return reply.type(JSON_TYPE).header('cache-control', 'no-cache').send(text);
  });
};
