/* eslint-disable @typescript-eslint/no-explicit-any */
// Shared setup for the orchestrator auth tests: a real fastify server on loopback with the
// Marathon HTTP conventions, the auth routes in the orchestrator's two contexts (open and
// authenticated: orchestrator/http/contexts.ts), one protected route, a controllable
// clock, and a pino logger whose output is captured so tests can grep it for secrets.
import { Writable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import { REDACT_PATHS } from '../shared/logger.ts';
import { installMarathonHttp } from '../orchestrator/api/common.ts';
import { openDatabase } from '../orchestrator/state/db.ts';
import { createAuth, type Auth, type AuthOptions } from '../orchestrator/auth/routes.ts';
import { registerRouteContexts } from '../orchestrator/http/contexts.ts';
import { tempDir } from './helpers/process.ts';

export interface AuthServer {
  base: string;
  app: FastifyInstance;
  auth: Auth;
  dataDir: string;
  clock: { now: number };
  logs: () => string;
  close: () => Promise<void>;
  call: (
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ) => Promise<{ status: number; headers: Headers; body: any; text: string }>;
}

export const FAST_SCRYPT = { N: 2 ** 12, r: 8, p: 1 };

/** `https`: serve TLS with this key and certificate (PEM) instead of plain HTTP. */
export async function startAuthServer(opts: Partial<AuthOptions> & { dataDir?: string; https?: { key: string; cert: string } } = {}): Promise<AuthServer> {
  const dataDir = opts.dataDir ?? tempDir('orch-auth-');
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  });
  const logger = pino({ level: 'debug', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink);
  const db = openDatabase(dataDir);
  const clock = { now: Date.now() };
  let auth: Auth;
  try {
    auth = await createAuth({ db, dataDir, logger, adminPassword: 'admin-secret-pw-1', env: {}, scrypt: FAST_SCRYPT, now: () => clock.now, ...opts });
  } catch (err) {
    db.close();
    throw err;
  }
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: 8 * 1024 * 1024,
    forceCloseConnections: true,
    ...(opts.https ? { https: opts.https } : {}),
  }) as unknown as FastifyInstance;
  installMarathonHttp(app);
  await registerRouteContexts(app, {
    authenticate: auth.enabled ? auth.authenticate : undefined,
    open: async (open) => {
      await open.register(auth.publicRoutes);
      open.get('/ping', async (_req, reply) => reply.type('text/plain').send('pong'));
    },
    authenticated: async (guarded) => {
      await guarded.register(auth.accountRoutes);
      guarded.get('/v2/apps', async (req) => ({ apps: [], who: auth.uidOf(req) ?? null }));
    },
  });
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  const call: AuthServer['call'] = async (method, path, body, headers = {}) => {
    const init: RequestInit = { method, headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers } };
    if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
    const res = await fetch(`${base}${path}`, init);
    const text = await res.text();
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  };
  return {
    base,
    app,
    auth,
    dataDir,
    clock,
    call,
    logs: () => chunks.join(''),
    close: async () => {
      await app.close();
      db.close();
    },
  };
}
