// HTTP server factory on fastify, shared by every agent: JSON errors (never an HTML page or an
// empty body), a JSON 404 for unknown routes, and graceful shutdown on SIGTERM and SIGINT.
import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyServerOptions } from 'fastify';
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

export function createServer(opts: ServerOptions): FastifyInstance {
  const app = Fastify({
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
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const { statusCode, body } = errorReply(err);
    if (statusCode >= 500) req.log.error({ err, url: req.url }, 'request failed');
    void reply.code(statusCode).send(body);
  });
  return app;
}

/** Listens and returns the base URL (with the real port when 0 was asked for). */
export async function listen(app: FastifyInstance, host: string, port: number): Promise<string> {
  await app.listen({ host, port, listenTextResolver: (address) => `http server listening at ${address}` });
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
 * while shutting down exits at once.
 */
export function closeOnSignals(app: FastifyInstance, logger: Logger, cleanup: () => Promise<void> = async () => {}): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) process.exit(130);
    closing = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.warn('shutdown took too long; exiting');
      process.exit(1);
    }, 10_000);
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
