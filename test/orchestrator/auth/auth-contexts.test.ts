// The orchestrator's two route contexts (orchestrator/http/contexts.ts): whether a route needs a
// token is where it is registered, not whether its path is on a list. A path a global hook's
// allow-list opened (GET /ping, GET / for a browser) still needs a token when a route there is
// registered in the authenticated context, a route with a path no list names needs one too, and
// a path no route serves answers 401 without a token (404 with one).
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installMarathonHttp } from '../../../orchestrator/api/common.ts';
import { authHeader, loginWithPassword } from '../../../orchestrator/auth/client.ts';
import { createAuth } from '../../../orchestrator/auth/routes.ts';
import { registerRouteContexts } from '../../../orchestrator/http/contexts.ts';
import { openDatabase } from '../../../orchestrator/storage/db.ts';
import { FAST_SCRYPT } from '../../orchestrator-auth-setup.ts';
import { tempDir } from '../../helpers/process.ts';

const PASSWORD = 'contexts-admin-pw-1';
let app: FastifyInstance;
let base: string;
let close: () => Promise<void>;

beforeAll(async () => {
  const dataDir = tempDir('orch-auth-ctx-');
  const db = openDatabase(dataDir);
  const logger = pino({ level: 'silent' });
  const auth = await createAuth({ db, dataDir, logger, adminPassword: PASSWORD, env: {}, scrypt: FAST_SCRYPT });
  app = Fastify({ loggerInstance: logger }) as unknown as FastifyInstance;
  installMarathonHttp(app);
  await registerRouteContexts(app, {
    authenticate: auth.authenticate,
    open: async (open) => {
      await open.register(auth.publicRoutes);
      open.get('/v2/open-thing', async () => ({ open: true }));
    },
    authenticated: async (guarded) => {
      // Paths the allow-list of a global hook named as open, and one no list names.
      guarded.get('/ping', async () => ({ guarded: 'ping' }));
      guarded.get('/', async () => ({ guarded: 'root' }));
      guarded.get('/v2/starmap/new-thing', async () => ({ guarded: 'new' }));
    },
  });
  base = await app.listen({ host: '127.0.0.1', port: 0 });
  close = async () => {
    await app.close();
    db.close();
  };
});

afterAll(async () => {
  await close?.();
});

async function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; challenge: string | null; body: unknown }> {
  const res = await fetch(`${base}${path}`, { headers });
  const text = await res.text();
  return { status: res.status, challenge: res.headers.get('www-authenticate'), body: text ? (JSON.parse(text) as unknown) : undefined };
}

describe('route contexts', () => {
  it('requires a token on every route of the authenticated context, whatever its path', async () => {
    for (const [path, accept] of [
      ['/v2/starmap/new-thing', 'application/json'],
      ['/ping', '*/*'],
      ['/', 'text/html'],
    ] as const) {
      const r = await get(path, { accept });
      expect(r.status, path).toBe(401);
      expect(r.challenge, path).toBe('acsjwt');
      expect(r.body, path).toMatchObject({ code: 'ERR_MISSING_AUTH_HEADER' });
    }
    const token = await loginWithPassword(base, 'admin', PASSWORD);
    expect(await get('/v2/starmap/new-thing', authHeader(token))).toMatchObject({ status: 200, body: { guarded: 'new' } });
    expect(await get('/', { accept: 'text/html', ...authHeader(token) })).toMatchObject({ status: 200, body: { guarded: 'root' } });
  });

  it('leaves the open context open, and answers a path no route serves with 401 before 404', async () => {
    expect(await get('/v2/open-thing')).toMatchObject({ status: 200, body: { open: true } });
    expect((await get('/acs/api/v1/auth/jwks')).status).toBe(200);
    const unknown = await get('/v2/no-such-path');
    expect(unknown.status).toBe(401);
    expect(unknown.challenge).toBe('acsjwt');
    // A method the open login path does not take is no way around the token either.
    expect((await get('/acs/api/v1/auth/login')).status).toBe(401);
    const token = await loginWithPassword(base, 'admin', PASSWORD);
    expect((await get('/v2/no-such-path', authHeader(token))).status).toBe(404);
  });
});
