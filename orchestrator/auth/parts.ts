// What the auth modules share, made once by createAuth (routes.ts): the account store, the token
// service, the limits on password hashing and failed logins, and who each request's token names.
import type { DatabaseSync } from 'node:sqlite';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import type { Logger } from '../../shared/logger.ts';
import type { AccountStore } from './accounts.ts';
import { RateLimited } from '../errors.ts';
import { mapOrchestratorErrors } from '../http/errors.ts';
import { authSchemaCompiler } from './bodies.ts';
import type { ScryptCost } from './passwords.ts';
import type { LoginThrottle } from './login-throttle.ts';
import type { Gate } from './rate-limit.ts';
import type { TokenService } from './tokens.ts';

/** The WWW-Authenticate challenge of a 401 (DC/OS's scheme name). */
export const CHALLENGE = 'acsjwt';
export const MIN_PASSWORD_LENGTH = 8;

export interface AuthParts {
  db: DatabaseSync;
  log: Logger;
  accounts: AccountStore;
  tokens: TokenService;
  /** Password hashes in flight and waiting; beyond that 429. */
  gate: Gate;
  throttle: LoginThrottle;
  cost: ScryptCost;
  /** Clock in ms (tests). */
  now: () => number;
  /** The uid behind each authenticated request's token (authenticate.ts sets it). */
  uids: WeakMap<FastifyRequest, string>;
}

export function tooMany(ms: number, why: string): RateLimited {
  const secs = Math.max(1, Math.ceil(ms / 1000));
  return new RateLimited(`${why}; retry in ${secs} s`, secs, 'ERR_RATE_LIMITED');
}

const BODY_LIMIT = 64 * 1024;

/** A route's options with a body (and {uid}) checked against bodies.ts's schemas. */
export const withBody = (body: TSchema, params?: TSchema) => ({ bodyLimit: BODY_LIMIT, schema: { body, ...(params ? { params } : {}) } });

/**
 * Sets up a context of auth routes: bodies and the {uid} are checked against bodies.ts's schemas
 * before a handler runs; errors, thrown or found there, are answered by http/errors.ts whatever
 * app the routes are on.
 */
export function prepareAuthContext(app: FastifyInstance): void {
  app.setValidatorCompiler(authSchemaCompiler);
  app.setErrorHandler(mapOrchestratorErrors);
}

/** A handler's result as the answer: 204 for none, else `status` with it as JSON. */
export const answer =
  <T>(fn: (req: FastifyRequest, reply: FastifyReply) => Promise<T> | T, status = 200) =>
  async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const out = await fn(req, reply);
    if (out === undefined) return reply.code(204).send();
    return reply.code(status).send(out);
  };
