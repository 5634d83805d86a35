// GET /ping, Marathon's liveness answer, open to anyone (the public context, contexts.ts; the
// Host check lets it through too: web-guard.ts): "pong" in the type the client asks for.
import type { FastifyInstance } from 'fastify';

export function pingRoute(app: FastifyInstance): void {
  app.get('/ping', async (req, reply) => {
    const accept = (req.headers.accept ?? '*/*').toLowerCase();
    if (accept.includes('text/plain') || accept.includes('text/*') || accept.includes('*/*') || accept.includes('text/html') || accept === '')
      return reply.type('text/plain').send('pong');
    if (accept.includes('application/json')) return reply.type('application/json').send('"pong"');
    return reply.code(204).send();
  });
}
