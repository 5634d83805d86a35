// The auth endpoints' route schemas (orchestrator/auth/bodies.ts) and their one formatter: the
// first problem as DC/OS's 400 {message, code}, in the order the fields are listed.
import { describe, expect, it } from 'vitest';
import type { TSchema } from '@sinclair/typebox';
import { authSchemaCompiler, CreateUserBody, LoginBody, UidParams, UpdateUserBody } from '../../../orchestrator/auth/bodies.ts';
import { answerFor } from '../../../orchestrator/http/errors.ts';
import type { OrchestratorError } from '../../../orchestrator/errors.ts';

function check(schema: TSchema, data: unknown, httpPart = 'body'): unknown {
  const validate = authSchemaCompiler({ schema, httpPart, method: 'POST', url: '/' }) as (d: unknown) => { value?: unknown; error?: OrchestratorError };
  const r = validate(data);
  return r.error ? answerFor(r.error).body : r.value;
}

describe('auth bodies', () => {
  it('accepts what the handlers read, as given (no coercion)', () => {
    const body = { uid: 'admin', password: 'pw', exp: 0, extra: 1 };
    expect(check(LoginBody, body)).toBe(body);
    expect(check(CreateUserBody, { public_key: 'PEM', description: 'd' })).toEqual({ public_key: 'PEM', description: 'd' });
    expect(check(UpdateUserBody, {})).toEqual({});
  });

  it("answers the first problem with DC/OS's message and code", () => {
    const invalid = (message: string) => ({ message, code: 'ERR_INVALID_DATA' });
    expect(check(LoginBody, null)).toEqual(invalid('Request body must be a JSON object'));
    expect(check(LoginBody, [])).toEqual(invalid('Request body must be a JSON object'));
    expect(check(LoginBody, { uid: 5 })).toEqual(invalid("'uid' must be a string"));
    expect(check(LoginBody, { uid: 'u', password: null })).toEqual(invalid("'password' must be a string"));
    expect(check(LoginBody, { uid: 'u'.repeat(257) })).toEqual(invalid("'uid' is longer than 256 characters"));
    // exp comes first, whatever else is wrong.
    expect(check(LoginBody, { uid: 5, exp: 1.5 })).toEqual(invalid("'exp' must be an integer (Unix seconds)"));
    expect(check(LoginBody, { exp: '1700000000' })).toEqual(invalid("'exp' must be an integer (Unix seconds)"));
    expect(check(LoginBody, { exp: 2 ** 60 })).toEqual(invalid("'exp' must be an integer (Unix seconds)"));
    expect(check(CreateUserBody, { public_key: 1, password: 2 })).toEqual(invalid("'public_key' must be a string"));
    expect(check(UpdateUserBody, { description: 'd'.repeat(513) })).toEqual(invalid("'description' is longer than 512 characters"));
  });

  it('refuses a uid in the path that is not one', () => {
    expect(check(UidParams, { uid: 'bob.smith@x' }, 'params')).toEqual({ uid: 'bob.smith@x' });
    expect(check(UidParams, { uid: '-bob' }, 'params')).toEqual({
      message: 'Invalid uid: use 1-96 letters, digits, ".", "_", "-" or "@", starting with a letter or digit',
      code: 'ERR_INVALID_USER_ID',
    });
  });
});
