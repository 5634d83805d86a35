// The auth endpoints' request shapes as route schemas (TypeBox), checked before a handler runs,
// and the one formatter that turns the first problem into DC/OS's answer: 400 {message, code}
// ("'uid' must be a string", "'password' is longer than 1024 characters", "Invalid uid: ...").
// The schemas are checked by TypeBox as written (no type coercion: `uid: 5` is refused, not read
// as "5"). What a schema cannot say (a login needs a uid and exactly one of password and token,
// `exp` in the future) the handlers check.
import type { FastifySchemaCompiler } from 'fastify';
import { type Static, type TObject, type TSchema, Type } from '@sinclair/typebox';
import { Value, type ValueError } from '@sinclair/typebox/value';
import { BadRequest } from '../errors.ts';
import { UID_RE } from './accounts.ts';
import { MAX_TOKEN_CHARS } from './tokens.ts';

export const MAX_PASSWORD_LENGTH = 1024;

const text = (maxLength: number) => Type.Optional(Type.String({ maxLength }));

/** The {uid} of /acs/api/v1/users/{uid}. */
export const UidParams = Type.Object({ uid: Type.String({ pattern: UID_RE.source }) });

export const LoginBody = Type.Object({
  // Checked first, as DC/OS does: when the token should expire (Unix seconds; 0 or null: the default lifetime).
  exp: Type.Optional(
    Type.Union([Type.Null(), Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER })], {
      errorMessage: "'exp' must be an integer (Unix seconds)",
    }),
  ),
  uid: text(256),
  password: text(MAX_PASSWORD_LENGTH),
  token: text(MAX_TOKEN_CHARS),
});
export type LoginBody = Static<typeof LoginBody>;

export const CreateUserBody = Type.Object({
  public_key: text(32 * 1024),
  password: text(MAX_PASSWORD_LENGTH),
  description: text(512),
});
export type CreateUserBody = Static<typeof CreateUserBody>;

export const UpdateUserBody = Type.Object({
  password: text(MAX_PASSWORD_LENGTH),
  description: text(512),
});
export type UpdateUserBody = Static<typeof UpdateUserBody>;

const INVALID_UID = 'Invalid uid: use 1-96 letters, digits, ".", "_", "-" or "@", starting with a letter or digit';

/** The answer to the first problem TypeBox found in a request part. */
function problem(part: string, e: ValueError): BadRequest {
  if (part === 'params') return new BadRequest(INVALID_UID, { code: 'ERR_INVALID_USER_ID' });
  const key = e.path.split('/')[1];
  if (key === undefined) return new BadRequest('Request body must be a JSON object', { code: 'ERR_INVALID_DATA' });
  // A union reports on itself; its own message (exp) says what is wanted.
  const own = (e.schema as { errorMessage?: string }).errorMessage;
  if (own) return new BadRequest(own, { code: 'ERR_INVALID_DATA' });
  const max = (e.schema as { maxLength?: number }).maxLength;
  if (typeof e.value === 'string' && max !== undefined && e.value.length > max)
    return new BadRequest(`'${key}' is longer than ${max} characters`, { code: 'ERR_INVALID_DATA' });
  return new BadRequest(`'${key}' must be a string`, { code: 'ERR_INVALID_DATA' });
}

/** Fastify's validator for these schemas: TypeBox's check, the first error as the answer. */
export const authSchemaCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const part = httpPart ?? 'body';
  return (data: unknown) => {
    if (Value.Check(schema, data)) return { value: data };
    const first = Value.Errors(schema as TObject, data).First();
    return { error: first ? problem(part, first) : new BadRequest('Request body must be a JSON object', { code: 'ERR_INVALID_DATA' }) };
  };
};
