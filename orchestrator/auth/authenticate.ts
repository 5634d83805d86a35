// The onRequest hook that requires `Authorization: token=<token>` (or `Bearer <token>`). It holds
// no list of open paths: it is registered only in the authenticated fastify context
// (http/contexts.ts), so every route there needs a token and no route elsewhere does.
import type { onRequestAsyncHookHandler } from 'fastify';
import { Unauthenticated } from '../errors.ts';
import { sendError } from '../http/errors.ts';
import { CHALLENGE, type AuthParts } from './parts.ts';
import { MAX_TOKEN_CHARS, TokenError } from './tokens.ts';

/** Extracts the token from `token=<t>` (DC/OS) or `Bearer <t>`; undefined when absent/malformed. */
export function tokenFromHeader(value: string | string[] | undefined): string | undefined {
  if (typeof value !== 'string' || value.length > MAX_TOKEN_CHARS + 16) return undefined;
  const m = /^\s*(?:token=|bearer\s+)([A-Za-z0-9_\-.]+)\s*$/i.exec(value);
  return m?.[1];
}

export function makeAuthenticate({ accounts, tokens, uids }: Pick<AuthParts, 'accounts' | 'tokens' | 'uids'>): onRequestAsyncHookHandler {
  const verifyToken = async (token: string): Promise<string> => {
    const { uid, accountId } = await tokens.verify(token);
    // The account must be the very one the token was issued to, not a later one with the same uid.
    const account = accounts.get(uid);
    if (!account || accountId === undefined || account.accountId !== accountId)
      throw new TokenError('Authorization token belongs to an account that no longer exists');
    return uid;
  };
  return async function authenticate(req, reply) {
    const raw = req.headers.authorization;
    const token = tokenFromHeader(raw);
    if (token === undefined) {
      const msg =
        raw === undefined
          ? 'Authentication required: send the header "Authorization: token=<token>" (get a token from POST /acs/api/v1/auth/login)'
          : 'Malformed Authorization header: expected "token=<token>" or "Bearer <token>"';
      return sendError(reply, new Unauthenticated(msg, raw === undefined ? 'ERR_MISSING_AUTH_HEADER' : 'ERR_INVALID_AUTH_HEADER', CHALLENGE));
    }
    try {
      uids.set(req, await verifyToken(token));
    } catch (err) {
      const msg = err instanceof TokenError ? err.message : 'Authorization token is invalid';
      return sendError(reply, new Unauthenticated(msg, 'ERR_INVALID_TOKEN', CHALLENGE));
    }
  };
}
