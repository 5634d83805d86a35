// The account routes (registered in the authenticated context, http/contexts.ts):
//   GET    /acs/api/v1/users          {array: [account...]}
//   GET    /acs/api/v1/users/{uid}    account
//   PUT    /acs/api/v1/users/{uid}    {public_key} (service account) | {password} (local) -> 201 account
//   PATCH  /acs/api/v1/users/{uid}    {password?, description?} -> 204
//   DELETE /acs/api/v1/users/{uid}    -> 204
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AccountStore, parseServicePublicKey, toJson, type Account } from './accounts.ts';
import { BadRequest, Conflict, NotFound } from '../errors.ts';
import { CreateUserBody, UidParams, UpdateUserBody } from './bodies.ts';
import { hashPassword } from './passwords.ts';
import { answer, MIN_PASSWORD_LENGTH, prepareAuthContext, tooMany, withBody, type AuthParts } from './parts.ts';

function checkNewPassword(pw: string): void {
  if (pw.length < MIN_PASSWORD_LENGTH) throw new BadRequest(`Password must be at least ${MIN_PASSWORD_LENGTH} characters long`, { code: 'ERR_INVALID_DATA' });
}

/** The {uid} of the path (checked by the route schema, UidParams). */
function uidParam(req: FastifyRequest): string {
  return (req.params as { uid: string }).uid;
}

function notFound(uid: string): NotFound {
  return new NotFound(`User with uid \`${uid}\` not found.`, 'ERR_UNKNOWN_USER_ID');
}

export function accountRoutes(parts: AuthParts): (app: FastifyInstance) => Promise<void> {
  const { db, log, accounts, gate, throttle, cost, now, uids } = parts;

  async function createUser(req: FastifyRequest): Promise<Record<string, unknown>> {
    const uid = uidParam(req);
    const { public_key: publicKey, password, description = '' } = req.body as CreateUserBody;
    if ((publicKey === undefined) === (password === undefined)) {
      throw new BadRequest("Send either 'public_key' (PEM, creates a service account) or 'password' (creates a local account)", { code: 'ERR_INVALID_DATA' });
    }
    if (accounts.get(uid)) throw new Conflict(`User with uid \`${uid}\` already exists.`, { code: 'ERR_USER_EXISTS' });
    const created = new Date(now()).toISOString();
    const accountId = AccountStore.newId();
    let account: Account;
    if (publicKey !== undefined) {
      const parsed = parseServicePublicKey(publicKey);
      if ('error' in parsed) throw new BadRequest(parsed.error, { code: 'ERR_INVALID_PUBLIC_KEY' });
      account = { uid, accountId, type: 'service', description, created, passwordHash: null, publicKeyPem: parsed.pem, fingerprint: parsed.fingerprint };
    } else {
      checkNewPassword(password ?? '');
      const ran = await gate.run(() => hashPassword(password ?? '', cost));
      if (!ran) throw tooMany(1000, 'Too many password operations in progress');
      account = { uid, accountId, type: 'local', description, created, passwordHash: ran.value, publicKeyPem: null, fingerprint: null };
    }
    if (!accounts.insert(account)) throw new Conflict(`User with uid \`${uid}\` already exists.`, { code: 'ERR_USER_EXISTS' });
    log.info({ uid, type: account.type, by: uids.get(req) }, 'account created');
    return toJson(account) as unknown as Record<string, unknown>;
  }

  async function updateUser(req: FastifyRequest): Promise<void> {
    const uid = uidParam(req);
    const { password, description } = req.body as UpdateUserBody;
    const account = accounts.get(uid);
    if (!account) throw notFound(uid);
    if (password !== undefined) {
      if (account.type !== 'local') throw new BadRequest('A service account has no password; it logs in with its key', { code: 'ERR_INVALID_DATA' });
      checkNewPassword(password);
      const ran = await gate.run(() => hashPassword(password, cost));
      if (!ran) throw tooMany(1000, 'Too many password operations in progress');
      accounts.setPasswordHash(uid, ran.value);
    }
    if (description !== undefined) db.prepare('UPDATE auth_accounts SET description = ? WHERE uid = ?').run(description, uid);
    log.info({ uid, by: uids.get(req), password: password !== undefined ? 'changed' : undefined }, 'account updated');
  }

  function deleteUser(req: FastifyRequest): void {
    const uid = uidParam(req);
    const account = accounts.get(uid);
    if (!account) throw notFound(uid);
    if (account.type === 'local' && accounts.countLocal() <= 1) {
      throw new Conflict(`Cannot delete \`${uid}\`: it is the last local account, and without one nobody could log in with a password`, {
        code: 'ERR_LAST_LOCAL_ACCOUNT',
      });
    }
    accounts.delete(uid);
    throttle.forget(uid);
    log.info({ uid, by: uids.get(req) }, 'account deleted');
  }

  return async (app) => {
    prepareAuthContext(app);
    const withUid = { schema: { params: UidParams } };
    app.get(
      '/acs/api/v1/users',
      answer(() => ({ array: accounts.list().map(toJson) })),
    );
    app.get(
      '/acs/api/v1/users/:uid',
      withUid,
      answer((req) => {
        const uid = uidParam(req);
        const a = accounts.get(uid);
        if (!a) throw notFound(uid);
        return toJson(a);
      }),
    );
    app.put('/acs/api/v1/users/:uid', withBody(CreateUserBody, UidParams), answer(createUser, 201));
    app.patch('/acs/api/v1/users/:uid', withBody(UpdateUserBody, UidParams), answer(updateUser));
    app.delete('/acs/api/v1/users/:uid', withUid, answer(deleteUser));
  };
}
