// The one mapper from the orchestrator's errors (../errors.ts) to HTTP answers, and the error
// handler built on it. Marathon's shapes: 400 {message: "Invalid JSON", details}, 422 {message:
// "Object is not valid", details: [{path, errors}]}, 409 {message, deployments: [{id}]}, 404, 403
// and 415 {message}; the auth endpoints add DC/OS IAM's `code`. Anything else a handler throws is fastify's
// (413 for a body too large, its own 4xx) or a bug: logged, and answered 500 without details.
import { drainRequest } from '../../shared/lingering-close.ts';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import {
  BadRequest,
  Conflict,
  Forbidden,
  InvalidObject,
  MalformedJson,
  NotFound,
  NotSupported,
  OrchestratorError,
  RateLimited,
  Unauthenticated,
  Unavailable,
  Unprocessable,
  UnsupportedMediaType,
  WrongForm,
} from '../errors.ts';

export interface HttpAnswer {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

function statusOf(err: OrchestratorError): number {
  if (err instanceof MalformedJson || err instanceof BadRequest) return 400;
  if (err instanceof Unauthenticated) return 401;
  if (err instanceof Forbidden) return 403;
  if (err instanceof NotFound) return 404;
  // Marathon's event stream answers 405 (Jetty's "method not supported") when it is not asked for a stream.
  if (err instanceof WrongForm) return 405;
  if (err instanceof Conflict) return 409;
  if (err instanceof UnsupportedMediaType) return 415;
  if (err instanceof InvalidObject || err instanceof Unprocessable) return 422;
  if (err instanceof RateLimited) return 429;
  if (err instanceof NotSupported) return 501;
  if (err instanceof Unavailable) return 503;
  return 500;
}

/** The answer for an orchestrator error. */
export function answerFor(err: OrchestratorError): HttpAnswer {
  const body: Record<string, unknown> = { message: err.message };
  const headers: Record<string, string> = {};
  if (err instanceof MalformedJson || err instanceof InvalidObject) body.details = err.details;
  if (err instanceof BadRequest && err.details !== undefined) body.details = err.details;
  if (err instanceof Conflict && err.deployments) body.deployments = err.deployments;
  if (err.code !== undefined) body.code = err.code;
  if (err instanceof Unauthenticated) headers['WWW-Authenticate'] = err.challenge;
  if ((err instanceof RateLimited || err instanceof Unavailable) && err.retryAfterSeconds !== undefined) headers['Retry-After'] = String(err.retryAfterSeconds);
  return { status: statusOf(err), body, headers };
}

/** Marathon's 404 for a path no route serves. */
export function uriNotFound(req: FastifyRequest): NotFound {
  return new NotFound(`URI not found: ${req.url.split('?')[0]}`);
}

export function sendError(reply: FastifyReply, err: OrchestratorError): FastifyReply {
  const { status, body, headers } = answerFor(err);
  for (const [k, v] of Object.entries(headers)) void reply.header(k, v);
  return reply.code(status).send(body);
}

/** The orchestrator's error handler: its own errors mapped, fastify's 4xx as {message}, the rest 500. */
export async function orchestratorErrorHandler(err: FastifyError | OrchestratorError, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  if (err instanceof OrchestratorError) return sendError(reply, err);
  const code = (err as FastifyError).code;
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    // Refused from its headers: the rest of the body is read first (shared/lingering-close.ts).
    if (!(await drainRequest(req.raw))) void reply.header('connection', 'close');
    return reply.code(413).send({ message: 'Request body is too large' });
  }
  if (err instanceof SyntaxError) return sendError(reply, new MalformedJson(err.message));
  const status = (err as FastifyError).statusCode ?? 500;
  if (status >= 400 && status < 500) return reply.code(status).send({ message: err.message });
  req.log.error({ err, url: req.url }, 'request failed');
  return reply.code(500).send({ message: 'An unexpected error occurred' });
}

/**
 * For a plugin that may also be registered on an app with another error handler (tests do): maps
 * the orchestrator's errors and passes anything else on to the parent context's handler.
 */
export function mapOrchestratorErrors(err: FastifyError | OrchestratorError, _req: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (err instanceof OrchestratorError) return sendError(reply, err);
  throw err;
}
