// The orchestrator's errors: what went wrong, in the domain's words. None carries an HTTP status;
// http/errors.ts is the one place that turns them into answers (Marathon's shapes for the Marathon
// API, DC/OS IAM's {message, code} for login and accounts). Parsers, planners and managers throw
// these; plugins throw them too instead of building error replies.

/** One problem found in a body: where (`/portDefinitions(0)/port`) and what (Marathon's words). The one name of this shape. */
export interface Violation {
  path: string;
  errors: string[];
}

export abstract class OrchestratorError extends Error {
  /** DC/OS IAM's error code (ERR_...), for the auth endpoints; Marathon's errors have none. */
  readonly code: string | undefined;
  constructor(message: string, code?: string) {
    super(message);
    this.code = code;
  }
}

/** A body that is not the JSON the endpoint reads: unparseable, or fields of the wrong type. */
export class MalformedJson extends OrchestratorError {
  readonly details: Violation[] | string;
  constructor(details: Violation[] | string) {
    super('Invalid JSON');
    this.details = details;
  }
}

/** A well-formed object that breaks the resource's rules, each violation with its path. */
export class InvalidObject extends OrchestratorError {
  readonly details: Violation[];
  constructor(details: Violation[]) {
    super('Object is not valid');
    this.details = details;
  }
}

/** A request that cannot be served as asked: no body, options that exclude each other, a bad id. */
export class BadRequest extends OrchestratorError {
  readonly details: string | undefined;
  constructor(message: string, opts: { details?: string; code?: string } = {}) {
    super(message, opts.code);
    this.details = opts.details;
  }
}

/** A request that is understood but refused as it stands (a selector that does not parse, no free port). */
export class Unprocessable extends OrchestratorError {}

/** What the request names does not exist. */
export class NotFound extends OrchestratorError {}

/** The request collides with what exists: an id taken, or deployments holding the apps it changes. */
export class Conflict extends OrchestratorError {
  /** The deployments in the way (Marathon lists them so that a client can wait or force). */
  readonly deployments: { id: string }[] | undefined;
  constructor(message: string, opts: { deployments?: { id: string }[]; code?: string } = {}) {
    super(message, opts.code);
    this.deployments = opts.deployments;
  }
}

/** Not now: the orchestrator (or its store) cannot take the request yet; nothing was changed. */
export class Unavailable extends OrchestratorError {
  readonly retryAfterSeconds: number | undefined;
  constructor(message: string, retryAfterSeconds?: number) {
    super(message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * A request refused for where it comes from, whoever sends it: a Host outside the allow-list (DNS
 * rebinding), or a write a page on another site made a browser send (http/web-guard.ts).
 */
export class Forbidden extends OrchestratorError {}

/** A body that is not declared as JSON (Marathon's resources consume application/json only). */
export class UnsupportedMediaType extends OrchestratorError {}

/** This orchestrator does not do that (policies without --isolation=netns). */
export class NotSupported extends OrchestratorError {}

/** The resource exists but not in the form asked (GET /v2/events without Accept: text/event-stream). */
export class WrongForm extends OrchestratorError {}

/** No valid credentials: a missing or bad token, a failed login. `challenge` is the WWW-Authenticate value. */
export class Unauthenticated extends OrchestratorError {
  readonly challenge: string;
  constructor(message: string, code: string, challenge: string) {
    super(message, code);
    this.challenge = challenge;
  }
}

/** Too many attempts: the client is to wait `retryAfterSeconds`. */
export class RateLimited extends OrchestratorError {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number, code: string) {
    super(message, code);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
