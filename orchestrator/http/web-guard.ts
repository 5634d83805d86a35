// What the orchestrator refuses for where a request comes from (shared/web-guard.ts says why), as
// hooks on the whole app, in this order:
//   onRequest, before the auth hook:  403 for a Host outside the allow-list (DNS rebinding), except
//                                     GET /ping (liveness checks name a host as they like, and it
//                                     answers "pong" to anyone);
//   preParsing, after the auth hook:  403 for a write whose Origin or Sec-Fetch-Site names another
//                                     site; 415 for a write whose body is declared as anything but
//                                     application/json (any parameters), as Marathon's resources
//                                     consume JSON only; a form, text/plain or a typeless body was
//                                     read as JSON before, so a page elsewhere could create an app.
// A write without a body and without a Content-Type (curl -X POST …/restart, DELETE) goes on; one
// with a body but no Content-Type is refused by the body parser (api/common.ts), which sees the
// body. A refused request's body is never read. Errors are the domain's (errors.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { crossSiteWrite, foreignHost, quoted, type HostAllowList } from '../../shared/web-guard.ts';
import { Forbidden, UnsupportedMediaType } from '../errors.ts';

const READS = new Set(['GET', 'HEAD']);

/** True for a Content-Type of JSON: application/json with or without parameters, in any case. */
export function isJsonType(type: string): boolean {
  return type.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
}

export function unsupportedType(type: string | undefined): UnsupportedMediaType {
  const given = type === undefined ? 'a body without a Content-Type' : `Content-Type ${quoted(type)}`;
  return new UnsupportedMediaType(`Unsupported Media Type: send the body as JSON with Content-Type: application/json (got ${given})`);
}

const isLiveness = (req: FastifyRequest) => READS.has(req.method) && req.url.split('?', 1)[0] === '/ping';

/** The Host hook; install before the auth hook, so that a foreign Host learns nothing else. */
export function guardHosts(app: FastifyInstance, hosts: HostAllowList): void {
  app.addHook('onRequest', async (req) => {
    if (isLiveness(req)) return;
    const why = foreignHost(req.headers, hosts, 'orchestrator');
    if (why !== undefined) throw new Forbidden(why);
  });
}

/** The write hook: cross-site writes, then the body's declared type. */
export function guardWrites(app: FastifyInstance, hosts: HostAllowList): void {
  app.addHook('preParsing', async (req, _reply, payload) => {
    if (READS.has(req.method)) return payload;
    const why = crossSiteWrite(req.headers, 'orchestrator', hosts);
    if (why !== undefined)
      throw new Forbidden(`Cross-site request refused: ${why}; a page on another site cannot write here (clients that are not browsers send no Origin)`);
    // A path no route serves is answered 404 whatever the body.
    const type = req.headers['content-type'];
    if (type !== undefined && !req.is404 && !isJsonType(type)) throw unsupportedType(type);
    return payload;
  });
}
