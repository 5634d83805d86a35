// HTTP server factory on fastify, shared by every agent: JSON errors (never an HTML page or an
// empty body), a JSON 404 for unknown routes, and graceful shutdown on SIGTERM and SIGINT.
import { EventEmitter } from 'node:events';
import type { Server } from 'node:http';
import { BoundSocket, isIP } from 'node:net';
import type { BuildCompilerFromPool } from '@fastify/ajv-compiler';
import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { drainRequest } from './lingering-close.ts';
import type { Logger } from './logger.ts';

export interface ServerOptions {
  logger: Logger;
  /** Largest accepted request body in bytes (default 1 MiB). */
  bodyLimit?: number;
  /** Extra fastify options (e.g. a custom querystring parser). */
  fastify?: Partial<FastifyServerOptions>;
}

/** Turns any thrown error into a 4xx JSON answer where the client is at fault, else a logged 500. */
export function errorReply(err: FastifyError): { statusCode: number; body: { message: string; code?: string } } {
  const code = err.code;
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { statusCode: 413, body: { message: `request body is larger than the limit`, code } };
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return { statusCode: 415, body: { message: 'unsupported content type: send application/json', code } };
  if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return { statusCode: 400, body: { message: 'request body is empty: send a JSON document', code } };
  if (code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err instanceof SyntaxError) {
    return { statusCode: 400, body: { message: `request body is not valid JSON: ${err.message}`, code: 'INVALID_JSON' } };
  }
  if (err.validation) return { statusCode: 400, body: { message: `invalid request: ${err.message}`, code: 'INVALID_REQUEST' } };
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) return { statusCode: status, body: { message: err.message, ...(code ? { code } : {}) } };
  return { statusCode: 500, body: { message: 'internal error' } };
}

/**
 * Route validators: one pool of Ajv instances for every app of the process (fastify makes one per
 * app), and each route's schema compiled when the route is first asked to validate, not before the
 * app can listen. Compiling the collector's schemas, and Ajv's meta-schema with the first of them,
 * took ~50 ms of its start (bench/startup.bench.ts); now the first request of a route pays its part.
 * Ajv itself (@fastify/ajv-compiler) loads with the first validation of the process: the probe has no
 * schema at all, and no program's first answer needs one. That one validation is asynchronous
 * (fastify awaits a validator that returns a promise); every later one is synchronous.
 * The validator keeps Ajv's contract with fastify: it returns a boolean and leaves `errors` on itself.
 */
type Validate = ((data: unknown) => boolean | Promise<boolean>) & { errors?: unknown };
type Compile = (route: unknown) => Validate;
let ajvPool: BuildCompilerFromPool | undefined;
let loadingAjv: Promise<BuildCompilerFromPool> | undefined;
const loadAjv = () => (loadingAjv ??= import('@fastify/ajv-compiler').then(({ AjvCompiler }) => (ajvPool = AjvCompiler())));

const validators = ((...pool: Parameters<BuildCompilerFromPool>) => {
  let compile: Compile | undefined;
  return (route: unknown): Validate => {
    let validate: Validate | undefined;
    // Runs once Ajv is loaded (ajvPool is set).
    const run = (data: unknown) => {
      validate ??= (compile ??= ajvPool!(...pool) as Compile)(route);
      const valid = validate(data);
      lazy.errors = validate.errors;
      return valid;
    };
    const lazy: Validate = (data) => (ajvPool ? run(data) : loadAjv().then(() => run(data)));
    return lazy;
  };
}) as unknown as BuildCompilerFromPool;

/**
 * No route declares a response schema, so fastify never needs fast-json-stringify, which it would
 * otherwise load for every app (with its own copy of Ajv: ~190 KiB of code evaluated before listen).
 * A route that declared one would be serialised by JSON.stringify, without the schema's filtering.
 */
const serializers = () => () => (data: unknown) => JSON.stringify(data);

/** Fastify's schemaController option with the two above: every server of Starmap uses it (the orchestrator's too). */
export const schemaController = { compilersFactory: { buildValidator: validators, buildSerializer: serializers } };

export function createServer(opts: ServerOptions): FastifyInstance {
  const app = Fastify({
    schemaController,
    loggerInstance: opts.logger,
    // Per-request logs would dominate a probe polled many times a second; errors are logged below.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: opts.bodyLimit ?? 1024 * 1024,
    forceCloseConnections: true,
    return503OnClosing: true,
    ...opts.fastify,
  });
  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).send({ message: `not found: ${req.method} ${req.url.split('?')[0]}` });
  });
  app.setErrorHandler(async (err: FastifyError, req, reply) => {
    const { statusCode, body } = errorReply(err);
    if (statusCode >= 500) req.log.error({ err, url: req.url }, 'request failed');
    // A body over the limit is refused from its headers: read the rest first (shared/lingering-close.ts).
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' && !(await drainRequest(req.raw))) void reply.header('connection', 'close');
    return reply.code(statusCode).send(body);
  });
  return app;
}

/**
 * Fastify options that give an app a stand-in for its HTTP server, for a program's warm-up at build
 * time (shared/multicall.ts, scripts/lib/warm-code-cache.ts): the routes, schemas and hooks are built
 * and made ready without opening a port. Such an app never listens.
 */
export function withoutSocket(): Partial<FastifyServerOptions> {
  const standIn = Object.assign(new EventEmitter(), {
    listening: false,
    address: () => null,
    setTimeout: () => standIn,
    closeAllConnections: () => undefined,
    closeIdleConnections: () => undefined,
    close: (done?: () => void) => done?.(),
  });
  return { serverFactory: () => standIn as unknown as Server };
}

/**
 * Listens and returns the base URL (with the real port when 0 was asked for).
 *
 * An IP address is bound with net.BoundSocket, which the server adopts. Given a host, Node's
 * listen() looks it up first, even an IP literal, and then tests each address with its IPv6
 * pattern, whose first use compiles a large regular expression: ~4 ms of every start
 * (bench/startup.bench.ts). A name is looked up as before (fastify listens on each address of
 * `localhost`). Binding fails (EADDRINUSE, EADDRNOTAVAIL) as listen() did, with the same codes.
 */
export async function listen(app: FastifyInstance, host: string, port: number): Promise<string> {
  await app.ready(); // a plugin that fails to load leaves no socket bound
  const handle = isIP(host) !== 0 ? new BoundSocket({ host, port }) : undefined;
  await app.listen({ host, port, ...(handle ? { handle } : {}), listenTextResolver: (address) => `http server listening at ${address}` });
  const addr = app.server.address();
  const realPort = typeof addr === 'object' && addr ? addr.port : port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return `http://${shownHost}:${realPort}`;
}

/**
 * Listens like listen(), but a failure (port in use, bad address) ends the program with exit code 1
 * and a message naming the flags, instead of a stack trace; `cleanup` runs first.
 */
export async function listenOrExit(
  app: FastifyInstance,
  program: string,
  host: string,
  port: number,
  cleanup: () => Promise<unknown> = async () => undefined,
): Promise<string> {
  try {
    return await listen(app, host, port);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    process.stderr.write(`${program}: error: cannot listen on --http-address=${host} --http-port=${port}: ${e.code ?? e.message}\n`);
    await cleanup().catch(() => undefined); // what was set up before listening (the orchestrator's isolation bridge)
    process.exit(1);
  }
}

/**
 * Closes the server and runs `cleanup` on SIGTERM or SIGINT, then exits 0. A second signal
 * while shutting down exits at once; a shutdown still running after `forceAfterMs` exits 1.
 */
export function closeOnSignals(app: FastifyInstance, logger: Logger, cleanup: () => Promise<void> = async () => {}, forceAfterMs = 10_000): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) process.exit(130);
    closing = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.warn('shutdown took too long; exiting');
      process.exit(1);
    }, forceAfterMs);
    force.unref();
    Promise.allSettled([cleanup(), app.close()]).then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
