// Route validation in every Starmap server (shared/http-server.ts): Ajv loads with the first
// validation of the process, which fastify awaits; that first answer and every later one are the
// same, for valid and invalid requests, in the body and the querystring.
import { describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createServer } from '../shared/http-server.ts';
import { createLogger } from '../shared/logger.ts';

function app(): FastifyInstance {
  const server = createServer({ logger: createLogger({ name: 'test', destination: { write: () => undefined } }) });
  server.post(
    '/things',
    { schema: { body: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 } }, additionalProperties: false } } },
    async (req) => ({ got: req.body }),
  );
  server.get('/count', { schema: { querystring: { type: 'object', properties: { n: { type: 'integer', minimum: 1 } } } } }, async (req) => ({
    n: (req.query as { n?: number }).n,
  }));
  return server;
}

describe('route validation', () => {
  it('answers the first validated request of the process as every later one', async () => {
    const server = app();
    const bad = { method: 'POST' as const, url: '/things', payload: { name: '' } };
    const first = await server.inject(bad);
    expect(first.statusCode).toBe(400);
    const again = await server.inject(bad);
    expect(again.statusCode).toBe(400);
    expect(first.json()).toEqual(again.json());
    expect(first.json()).toMatchObject({ code: 'INVALID_REQUEST' });
    expect((first.json() as { message: string }).message).toContain('name');

    const good = await server.inject({ method: 'POST', url: '/things', payload: { name: 'x' } });
    expect(good.statusCode).toBe(200);
    expect(good.json()).toEqual({ got: { name: 'x' } });
    await server.close();
  });

  it('compiles each route on its first request, coercing querystrings, in a second app of the same process', async () => {
    const server = app();
    expect((await server.inject({ method: 'GET', url: '/count?n=3' })).json()).toEqual({ n: 3 });
    const bad = await server.inject({ method: 'GET', url: '/count?n=0' });
    expect(bad.statusCode).toBe(400);
    expect((bad.json() as { message: string }).message).toContain('>= 1');
    await server.close();
  });
});
