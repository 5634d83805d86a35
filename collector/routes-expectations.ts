// `/starmap/expectations`: a Starmap extension under a path star's collector never used (it has
// /, /responses, /resources, /status). A scenario runner PUTs the step in force and its expected
// cells with their reasons; the web UI GETs them (with an ETag, like /responses) and marks every
// cell where what it sees differs; DELETE removes them and the UI is as without. The body is
// bounded (EXPECTATIONS_BODY_LIMIT) and checked against the TypeBox schema (expectations.ts): bad
// input gets a 4xx JSON answer. Writes are refused from other sites, as for /resources.
import type { FastifyPluginAsync } from 'fastify';
import { EXPECTATIONS_BODY_LIMIT, Expectations, type ExpectationsDoc, type ExpectationStore } from './expectations.ts';
import { crossSite } from './routes-resources.ts';

export const EXPECTATIONS_PATH = '/starmap/expectations';

export interface ExpectationRoutesOptions {
  expectations: ExpectationStore;
}

export const expectationRoutes: FastifyPluginAsync<ExpectationRoutesOptions> = async (app, { expectations }) => {
  app.addHook('onRequest', async (req, reply) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return;
    const why = crossSite(req);
    if (why !== undefined) return reply.code(403).send({ message: `cross-site write refused: ${why}` });
  });

  app.get(EXPECTATIONS_PATH, async (req, reply) => {
    const body = expectations.body;
    void reply.header('cache-control', 'no-cache');
    if (body === undefined)
      return reply.code(404).send({ message: `no expectations published: a scenario runner PUTs them to ${EXPECTATIONS_PATH} while it runs a step` });
    const etag = `W/"e${expectations.version}"`;
    if (req.headers['if-none-match'] === etag) return reply.code(304).header('etag', etag).send();
    return reply.header('etag', etag).type('application/json; charset=utf-8').send(body);
  });

  app.put<{ Body: ExpectationsDoc }>(EXPECTATIONS_PATH, { bodyLimit: EXPECTATIONS_BODY_LIMIT, schema: { body: Expectations } }, async (req, reply) => {
    expectations.put(req.body);
    return reply
      .code(200)
      .send({ message: 'expectations stored', step: req.body.step, cells: req.body.cells.length, publishedAt: expectations.current!.publishedAt });
  });

  app.delete(EXPECTATIONS_PATH, async (_req, reply) => {
    const had = expectations.clear();
    return reply.code(had ? 200 : 404).send({ message: had ? 'expectations removed' : 'no expectations published' });
  });
};
