// The one mapper from the orchestrator's errors to HTTP answers (orchestrator/http/errors.ts):
// Marathon's shapes for the Marathon API, DC/OS's {message, code} for login and accounts.
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import {
  BadRequest,
  Conflict,
  InvalidObject,
  MalformedJson,
  NotFound,
  NotSupported,
  RateLimited,
  Unauthenticated,
  Unavailable,
  Unprocessable,
  WrongForm,
} from '../../../orchestrator/errors.ts';
import { answerFor, orchestratorErrorHandler } from '../../../orchestrator/http/errors.ts';

const details = [{ path: '/cmd', errors: ['must not be empty'] }];

describe('error answers', () => {
  it("gives each error Marathon's status and body", () => {
    expect(answerFor(new MalformedJson(details))).toEqual({ status: 400, body: { message: 'Invalid JSON', details }, headers: {} });
    expect(answerFor(new MalformedJson('Unexpected token'))).toEqual({
      status: 400,
      body: { message: 'Invalid JSON', details: 'Unexpected token' },
      headers: {},
    });
    expect(answerFor(new InvalidObject(details))).toEqual({ status: 422, body: { message: 'Object is not valid', details }, headers: {} });
    expect(answerFor(new BadRequest('Please specify data in JSON format', { details: 'Request body is empty' }))).toEqual({
      status: 400,
      body: { message: 'Please specify data in JSON format', details: 'Request body is empty' },
      headers: {},
    });
    expect(answerFor(new Unprocessable('Can not parse label selector x'))).toEqual({
      status: 422,
      body: { message: 'Can not parse label selector x' },
      headers: {},
    });
    expect(answerFor(new NotFound("App '/a' does not exist"))).toEqual({ status: 404, body: { message: "App '/a' does not exist" }, headers: {} });
    expect(answerFor(new Conflict('locked', { deployments: [{ id: 'd1' }] }))).toEqual({
      status: 409,
      body: { message: 'locked', deployments: [{ id: 'd1' }] },
      headers: {},
    });
    expect(answerFor(new Conflict('exists'))).toEqual({ status: 409, body: { message: 'exists' }, headers: {} });
    expect(answerFor(new WrongForm('stream'))).toMatchObject({ status: 405 });
    expect(answerFor(new NotSupported('no isolation'))).toMatchObject({ status: 501, body: { message: 'no isolation' } });
    expect(answerFor(new Unavailable('recovering', 5))).toEqual({ status: 503, body: { message: 'recovering' }, headers: { 'Retry-After': '5' } });
    expect(answerFor(new Unavailable('not stored'))).toEqual({ status: 503, body: { message: 'not stored' }, headers: {} });
  });

  it("adds DC/OS's code and the auth headers", () => {
    expect(answerFor(new Unauthenticated('no token', 'ERR_MISSING_AUTH_HEADER', 'acsjwt'))).toEqual({
      status: 401,
      body: { message: 'no token', code: 'ERR_MISSING_AUTH_HEADER' },
      headers: { 'WWW-Authenticate': 'acsjwt' },
    });
    expect(answerFor(new RateLimited('slow down', 3, 'ERR_RATE_LIMITED'))).toEqual({
      status: 429,
      body: { message: 'slow down', code: 'ERR_RATE_LIMITED' },
      headers: { 'Retry-After': '3' },
    });
    expect(answerFor(new BadRequest("'uid' is required", { code: 'ERR_INVALID_DATA' }))).toEqual({
      status: 400,
      body: { message: "'uid' is required", code: 'ERR_INVALID_DATA' },
      headers: {},
    });
    expect(answerFor(new NotFound('no user', 'ERR_UNKNOWN_USER_ID')).body).toEqual({ message: 'no user', code: 'ERR_UNKNOWN_USER_ID' });
  });

  it('answers thrown errors through the handler; anything else is a 500 without details', async () => {
    const app = Fastify({ logger: false });
    app.setErrorHandler(orchestratorErrorHandler);
    app.get('/conflict', async () => {
      throw new Conflict('locked', { deployments: [{ id: 'd1' }] });
    });
    app.get('/recovering', async () => {
      throw new Unavailable('recovering', 5);
    });
    app.get('/bug', async () => {
      throw new TypeError('x is undefined');
    });
    const conflict = await app.inject({ url: '/conflict' });
    expect([conflict.statusCode, conflict.json()]).toEqual([409, { message: 'locked', deployments: [{ id: 'd1' }] }]);
    const recovering = await app.inject({ url: '/recovering' });
    expect([recovering.statusCode, recovering.headers['retry-after']]).toEqual([503, '5']);
    const bug = await app.inject({ url: '/bug' });
    expect([bug.statusCode, bug.json()]).toEqual([500, { message: 'An unexpected error occurred' }]);
    await app.close();
  });
});
