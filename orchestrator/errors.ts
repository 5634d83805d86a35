// The orchestrator's request errors, with Marathon's bodies.
import type { Violation } from './state/app-definition/types.ts';

/** A request that fails: status + Marathon's body. Thrown by parsers, mapped by the error handler. */
export class ApiError extends Error {
  readonly statusCode: number;
  readonly body: Record<string, unknown>;
  readonly headers: Record<string, string>;
  constructor(statusCode: number, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    super(typeof body.message === 'string' ? body.message : `HTTP ${statusCode}`);
    this.statusCode = statusCode;
    this.body = body;
    this.headers = headers;
  }
}

export function invalidJson(details: Violation[] | string): ApiError {
  return new ApiError(400, { message: 'Invalid JSON', details });
}

export function notValid(details: Violation[]): ApiError {
  return new ApiError(422, { message: 'Object is not valid', details });
}
