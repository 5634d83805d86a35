// Shared pieces of the orchestrator's HTTP API: the error handler (http/errors.ts), JSON body parsing, cache
// headers (and the /marathon/ prefix on Location), query helpers (booleans, embed), and the label selector grammar.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasLabel } from '../state/labels.ts';
import { LIMITS, nestedDeeperThan } from '../state/bounds.ts';
import type { DeploymentResult } from '../deployer.ts';
import { BadRequest, MalformedJson, Unprocessable } from '../errors.ts';
import { orchestratorErrorHandler, sendError, uriNotFound } from '../http/errors.ts';
import { adminRouterPrefix } from '../http/admin-router.ts';
import { unsupportedType } from '../http/web-guard.ts';

/** Installs the JSON parser, cache headers, error handler and 404 handler on `app`. */
export function installMarathonHttp(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  // Bodies declared as anything but JSON never get here on a route (http/web-guard.ts answers 415).
  app.addContentTypeParser('*', { parseAs: 'string' }, (req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    // An empty body is no body (restart and other endpoints without one); requireBody() refuses it where one is needed.
    if (text.trim() === '') return done(null, undefined);
    // A body without a Content-Type is what a page elsewhere sends with fetch() and a typeless
    // Blob, without a preflight: JSON must say it is.
    if (req.headers['content-type'] === undefined && !req.is404) return done(unsupportedType(undefined) as unknown as FastifyError, undefined);
    let value: unknown;
    try {
      value = JSON.parse(text) as unknown; // V8's parser is iterative: depth costs it no stack
    } catch (err) {
      return done(new MalformedJson((err as Error).message) as unknown as FastifyError, undefined);
    }
    // Everything after parsing (validation, JSON.stringify when storing, group trees) may recurse:
    // a body nested 10,000 deep is refused here, once, before any of it runs.
    if (nestedDeeperThan(value, LIMITS.jsonDepth)) {
      return done(
        new MalformedJson(`nested too deep: more than ${LIMITS.jsonDepth} arrays and objects inside one another`) as unknown as FastifyError,
        undefined,
      );
    }
    done(null, value);
  });
  app.addHook('onSend', async (req, reply, payload) => {
    reply.header('Cache-Control', 'no-cache, no-store, must-revalidate');
    reply.header('Pragma', 'no-cache');
    reply.header('Expires', '0');
    // Asked under /marathon/ (http/admin-router.ts): a Location stays under it, as behind DC/OS's admin router.
    const prefix = adminRouterPrefix(req.originalUrl);
    const location = reply.getHeader('location');
    if (prefix !== '' && typeof location === 'string' && location.startsWith('/')) reply.header('location', `${prefix}${location}`);
    return payload;
  });
  app.setNotFoundHandler((req, reply) => {
    void sendError(reply, uriNotFound(req));
  });
  app.setErrorHandler(orchestratorErrorHandler);
}

// Marathon's 404 for a path no route serves (the page on / throws it too, from http/).
export { uriNotFound };

export function requireBody(body: unknown): unknown {
  if (body === undefined) throw new BadRequest('Please specify data in JSON format', { details: 'Request body is empty' });
  return body;
}

type Query = Record<string, string | string[] | undefined>;

export function q(req: FastifyRequest): Query {
  return (req.query ?? {}) as Query;
}

export function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[v.length - 1] : v;
}

export function many(v: string | string[] | undefined): string[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

/** Marathon's boolean query params: "true" (any case) is true, absent is the default. */
export function bool(v: string | string[] | undefined, dflt = false): boolean {
  const s = one(v);
  if (s === undefined) return dflt;
  if (s === '') return true;
  return s.toLowerCase() === 'true';
}

/** Resolves embed values (prefix apps./app./group.apps. optional and interchangeable). */
export function embeds(values: string[]): Set<string> {
  const out = new Set<string>();
  for (const raw of values.flatMap((v) => v.split(','))) {
    const v = raw.trim().replace(/^(group\.apps\.|apps\.|app\.)/, '');
    if (v === 'tasks') out.add('tasks').add('deployments');
    else if (v === 'failures') out.add('tasks').add('lastTaskFailure').add('deployments').add('counts');
    else if (['deployments', 'readiness', 'lastTaskFailure', 'counts', 'taskStats'].includes(v)) out.add(v);
  }
  return out;
}

export function sendDeployment(reply: FastifyReply, r: DeploymentResult, status = 200): FastifyReply {
  void reply.header('Marathon-Deployment-Id', r.deploymentId);
  return reply.code(status).send({ version: r.version, deploymentId: r.deploymentId });
}

/** True when the client asks for text/plain and not JSON (the task listings' text form). */
export function wantsText(req: FastifyRequest): boolean {
  const accept = req.headers.accept ?? '';
  return accept.includes('text/plain') && !accept.includes('application/json');
}

export function clientIp(req: FastifyRequest): string {
  return req.ip;
}

// ---------------------------------------------------------------------------------------------
// Label selector (api/v2/LabelSelector.scala): comma = AND; key | key==v | key!=v | key in (a,b) | key notin (a,b)

export type LabelSelector = (labels: Record<string, string>) => boolean;

export function parseLabelSelector(text: string): LabelSelector {
  // Own keys only: `constructor` or `toString` must not match an app without labels.
  const has = hasLabel;
  let i = 0;
  const fail = (): never => {
    throw new Unprocessable(`Can not parse label selector ${text}`);
  };
  const ws = () => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const term = (): string => {
    ws();
    let s = '';
    while (i < text.length) {
      const c = text[i]!;
      if (c === '\\' && i + 1 < text.length) {
        s += text[i + 1];
        i += 2;
      } else if (/[-A-Za-z0-9_.]/.test(c)) {
        s += c;
        i++;
      } else break;
    }
    if (s === '') fail();
    ws();
    return s;
  };
  const set = (): string[] => {
    ws();
    if (text[i] !== '(') fail();
    i++;
    const vals = [term()];
    while (text[i] === ',') {
      i++;
      vals.push(term());
    }
    if (text[i] !== ')') fail();
    i++;
    ws();
    return vals;
  };
  const preds: LabelSelector[] = [];
  for (;;) {
    const key = term();
    if (text.startsWith('==', i)) {
      i += 2;
      const v = term();
      preds.push((l) => has(l, key) && l[key] === v);
    } else if (text.startsWith('!=', i)) {
      i += 2;
      const v = term();
      preds.push((l) => has(l, key) && l[key] !== v);
    } else if (/^notin[\s(]/.test(text.slice(i))) {
      i += 5;
      const vs = set();
      preds.push((l) => has(l, key) && !vs.includes(l[key]!));
    } else if (/^in[\s(]/.test(text.slice(i))) {
      i += 2;
      const vs = set();
      preds.push((l) => has(l, key) && vs.includes(l[key]!));
    } else preds.push((l) => has(l, key));
    if (i >= text.length) break;
    if (text[i] !== ',') fail();
    i++;
  }
  return (labels) => preds.every((p) => p(labels));
}
