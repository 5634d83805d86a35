// What the collector refuses for where a request comes from (shared/web-guard.ts says why): a Host
// outside the allow-list gets 403 on every path but GET /healthz (health checks name the host as
// they like, and it tells nothing), before anything else, so that a DNS-rebinding page can neither
// read the UI's data nor write; a write (POST, PUT, DELETE) whose Origin is not the collector's own,
// or whose Sec-Fetch-Site names another origin, gets 403 whatever its body. The collector reads any
// body as JSON, as star did (routes-resources.ts): this is what keeps a page elsewhere from using
// that. Answers are the collector's {message}.
import type { FastifyInstance } from 'fastify';
import { crossSiteWrite, foreignHost, type HostAllowList } from '../shared/web-guard.ts';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function guardCollector(app: FastifyInstance, hosts: HostAllowList): void {
  app.addHook('onRequest', async (req, reply) => {
    const read = READS.has(req.method);
    if (!(read && req.url.split('?', 1)[0] === '/healthz')) {
      const why = foreignHost(req.headers, hosts, 'collector');
      if (why !== undefined) return reply.code(403).send({ message: why });
    }
    if (read) return;
    const why = crossSiteWrite(req.headers, 'collector', hosts);
    if (why !== undefined)
      return reply
        .code(403)
        .send({ message: `cross-site write refused: ${why}; send it from the collector's own page or without an Origin header (curl, scripts)` });
  });
}
