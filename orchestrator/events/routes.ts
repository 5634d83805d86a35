// The orchestrator's event endpoints in one call: GET /v2/events (always) and
// /v2/eventSubscriptions (working with --event_subscriber http_callback, a 400 otherwise).
import type { DatabaseSync } from 'node:sqlite';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../../shared/logger.ts';
import type { EventBus } from './bus.ts';
import { registerEventStream, type EventStreamHandle, type EventStreamOptions } from './sse.ts';
import { CallbackDispatcher, SubscriptionStore, callbackUrlProblem, type DispatcherOptions } from './subscriptions.ts';
import { EventCatalogue } from './catalogue.ts';
import { BadRequest, InvalidObject } from '../errors.ts';
import { sendError } from '../http/errors.ts';

export const CALLBACKS_DISABLED_MESSAGE =
  'http event callback system is not running on this Marathon instance. Please re-start this instance with "--event_subscriber http_callback".';

export interface EventsOptions {
  bus: EventBus;
  /** The shared SQLite handle (orchestrator/storage/db.ts); needed only with http_callback. */
  db?: DatabaseSync | undefined;
  logger?: Logger | undefined;
  /** The --event_subscriber value; "http_callback" enables the subscriptions. */
  eventSubscriber?: string | undefined;
  /** --http_endpoints: subscribed at start (kept, like any subscription). */
  httpEndpoints?: string[] | undefined;
  stream?: Omit<EventStreamOptions, 'bus'>;
  callbacks?: Omit<DispatcherOptions, 'bus' | 'store' | 'logger'>;
}

export interface EventsHandle {
  stream: EventStreamHandle;
  /** Present when callbacks are enabled. */
  dispatcher?: CallbackDispatcher | undefined;
  store?: SubscriptionStore | undefined;
}

function queryUrl(req: FastifyRequest): string | undefined {
  const raw = (req.query as Record<string, string | string[] | undefined> | undefined)?.callbackUrl;
  return Array.isArray(raw) ? raw[raw.length - 1] : raw;
}

// These routes are registered on the app they are given (its hooks apply), whatever its error
// handler: errors are answered here, through the one mapper.
function invalidUrl(reply: FastifyReply, problem: string): FastifyReply {
  return sendError(reply, new InvalidObject([{ path: '/callbackUrl', errors: [problem] }]));
}

/**
 * Registers the event routes directly on `app` (so hooks of `app`, e.g. authentication, apply) and
 * returns handles; the dispatcher is closed by app.close().
 */
export function registerEvents(app: FastifyInstance, opts: EventsOptions): EventsHandle {
  const stream = registerEventStream(app, { bus: opts.bus, logger: opts.logger, ...opts.stream });
  const enabled = opts.eventSubscriber === 'http_callback';
  if (!enabled) {
    const disabled = async (_req: FastifyRequest, reply: FastifyReply) => sendError(reply, new BadRequest(CALLBACKS_DISABLED_MESSAGE));
    app.post('/v2/eventSubscriptions', disabled);
    app.get('/v2/eventSubscriptions', disabled);
    app.delete('/v2/eventSubscriptions', disabled);
    return { stream };
  }
  if (!opts.db) throw new Error('registerEvents: --event_subscriber http_callback needs the database (opts.db)');
  const store = new SubscriptionStore(opts.db);
  for (const url of opts.httpEndpoints ?? []) {
    const problem = callbackUrlProblem(url);
    if (problem) throw new Error(`--http_endpoints: ${problem}`);
    store.add(url);
  }
  const dispatcher = new CallbackDispatcher({ bus: opts.bus, store, logger: opts.logger, ...opts.callbacks });
  const events = new EventCatalogue(opts.bus);
  app.addHook('onClose', async () => dispatcher.close());

  app.post('/v2/eventSubscriptions', async (req, reply) => {
    const url = queryUrl(req);
    const problem = callbackUrlProblem(url);
    if (problem || url === undefined) return invalidUrl(reply, problem ?? 'callbackUrl is required');
    store.add(url);
    dispatcher.add(url);
    const event = events.subscribe({ clientIp: req.ip, callbackUrl: url });
    return reply.code(200).send({ callbackUrl: url, clientIp: req.ip, eventType: 'subscribe_event', timestamp: event.timestamp });
  });
  app.get('/v2/eventSubscriptions', async (_req, reply) => reply.code(200).send({ callbackUrls: store.list() }));
  app.delete('/v2/eventSubscriptions', async (req, reply) => {
    const url = queryUrl(req);
    if (url === undefined || url.trim() === '') return invalidUrl(reply, 'callbackUrl is required: pass ?callbackUrl=<the subscribed URL>');
    store.remove(url);
    dispatcher.remove(url);
    const event = events.unsubscribe({ clientIp: req.ip, callbackUrl: url });
    return reply.code(200).send({ callbackUrl: url, clientIp: req.ip, eventType: 'unsubscribe_event', timestamp: event.timestamp });
  });
  return { stream, dispatcher, store };
}
