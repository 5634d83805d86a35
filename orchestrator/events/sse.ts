// GET /v2/events: the event bus as server-sent events (Marathon's EventSourceServlet behaviour).
// Each client subscribes to the bus on attach and unsubscribes when its connection closes. An
// event's frame is serialised once (per plan format) and encoded once, and the same bytes are
// written to every client: deployment events carry the root group twice (as Marathon 1.4's do),
// and written as a string each client's socket encoded the whole text again and kept its own copy
// of what it could not send at once (200 clients made every write 5.7x slower, and at 1,000 apps
// every client was cut off). A client that reads too slowly is disconnected (see `maxOutstanding`)
// with a log line: it reconnects and re-reads state, instead of silently missing events (Marathon
// 1.4) or making the server's memory grow without bound.
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../../shared/logger.ts';
import type { EventBus, MarathonEvent } from './bus.ts';
import { eventJson } from './json.ts';
import { EventCatalogue } from './catalogue.ts';
import { WrongForm } from '../errors.ts';
import { sendError } from '../http/errors.ts';

export interface EventStreamOptions {
  bus: EventBus;
  /** A bare CRLF is written this often so proxies keep the stream open (default 10 s, like Jetty). */
  heartbeatMs?: number;
  /**
   * Events a client may have outstanding beyond the socket's own buffer before it is disconnected
   * (default 1000; Marathon's --event_stream_max_outstanding_messages is 50, but events published
   * in the same tick all count as outstanding, so a healthy client would be cut off by a burst).
   */
  maxOutstanding?: number;
  /**
   * Bytes still buffered for one client when an event comes, beyond which it is disconnected,
   * whatever the count (default 4 MiB). Bytes of events written since the event loop last turned
   * do not count (no client can read in between): one deployment event, or a burst of them, larger
   * than this does not cut off a client that had read everything before it. Memory stays bounded
   * all the same: the frames are shared by every client, not copied for each.
   */
  maxBufferedBytes?: number;
  /** After the farewell comment, how long a slow client gets before its socket is destroyed (default 2 s). */
  closeGraceMs?: number;
  /** Where disconnections of slow clients are logged. */
  logger?: Logger | undefined;
  /**
   * An event as one line of JSON (default eventJson, whose text the callback subscriptions share);
   * tests count its calls.
   */
  serialise?: (event: MarathonEvent) => string;
}

export type PlanFormat = 'full' | 'light';

/**
 * An event's SSE frames, `event: <type>` CRLF `data: <one-line JSON>` CRLF CRLF, as bytes: built at
 * the first client that needs one and shared by all (weakly keyed: nothing is kept once the event
 * is gone). The light frame (`?plan-format=light`, Marathon ≥1.6) leaves out plan.original and
 * plan.target, the two root-group snapshots that make deployment events large; events without
 * them share the full frame.
 */
export class FrameCache {
  readonly #serialise: (event: MarathonEvent) => string;
  readonly #full = new WeakMap<MarathonEvent, Buffer>();
  readonly #light = new WeakMap<MarathonEvent, Buffer>();

  constructor(serialise: (event: MarathonEvent) => string = eventJson) {
    this.#serialise = serialise;
  }

  frame(event: MarathonEvent, format: PlanFormat): Buffer {
    const plan = event.plan as Record<string, unknown> | undefined;
    const heavy = plan !== null && typeof plan === 'object' && ('original' in plan || 'target' in plan);
    const cache = format === 'light' && heavy ? this.#light : this.#full;
    let frame = cache.get(event);
    if (frame === undefined) {
      let shown = event;
      if (cache === this.#light) {
        const { original: _o, target: _t, ...light } = plan!;
        shown = { ...event, plan: light };
      }
      frame = Buffer.from(`event: ${event.eventType}\r\ndata: ${this.#serialise(shown)}\r\n\r\n`);
      cache.set(event, frame);
    }
    return frame;
  }
}

/** True when the Accept header names text/event-stream (with q > 0). `*\/*` alone is not enough. */
export function acceptsEventStream(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(',').some((part) => {
    const [type, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (type !== 'text/event-stream') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

function eventTypes(query: unknown): Set<string> {
  const raw = (query as Record<string, string | string[] | undefined> | undefined)?.event_type;
  const values = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  return new Set(values.map((v) => v.trim()).filter((v) => v !== ''));
}

interface StreamClient {
  /** Ends the stream with `reason` as a comment; `slow` (what was outstanding) logs the cut-off. */
  close(reason: string, slow?: Record<string, number>): void;
}

export interface EventStreamHandle {
  /** Streams currently attached. */
  readonly clientCount: number;
}

/**
 * Registers GET /v2/events on `app`. A normal route: onRequest hooks (authentication) run first.
 * Returns a handle for monitoring.
 */
export function registerEventStream(app: FastifyInstance, opts: EventStreamOptions): EventStreamHandle {
  const bus = opts.bus;
  const events = new EventCatalogue(bus);
  const heartbeatMs = opts.heartbeatMs ?? 10_000;
  const maxOutstanding = opts.maxOutstanding ?? 1000;
  const maxBufferedBytes = opts.maxBufferedBytes ?? 4 * 1024 * 1024;
  const closeGraceMs = opts.closeGraceMs ?? 2_000;
  const frames = new FrameCache(opts.serialise);
  const clients = new Set<StreamClient>();
  // The turn of the event loop events are being written in: bumped once the loop has turned.
  let turn = 0;
  let turnEnding = false;
  const currentTurn = () => {
    if (!turnEnding) {
      turnEnding = true;
      setImmediate(() => {
        turn++;
        turnEnding = false;
      });
    }
    return turn;
  };

  app.addHook('preClose', async () => {
    // Open streams would keep server.close() waiting forever.
    for (const c of [...clients]) c.close('server shutting down');
  });

  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    if (!acceptsEventStream(req.headers.accept)) {
      // 405 as Marathon (Jetty's EventSourceServlet falls through to "method not supported"),
      // which clients written for it expect; the body says what to send instead.
      return sendError(
        reply,
        new WrongForm(
          'HTTP method GET is not supported by this URL without the header "Accept: text/event-stream": GET /v2/events is a server-sent event stream',
        ),
      );
    }
    const filter = eventTypes(req.query);
    const planFormat = (req.query as Record<string, unknown> | undefined)?.['plan-format'];
    const format: PlanFormat = planFormat === 'light' ? 'light' : 'full';
    const remoteAddress = req.ip;
    reply.hijack();
    // The client may have left while earlier hooks (authentication) ran: no 'close' would follow.
    if (req.raw.socket.destroyed) return;
    const res: ServerResponse = reply.raw;
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=UTF-8',
      'Cache-Control': 'no-cache, no-store, must-revalidate',
      Pragma: 'no-cache',
      Expires: '0',
      // nginx and similar proxies would otherwise buffer the stream.
      'X-Accel-Buffering': 'no',
    });
    res.flushHeaders();
    req.raw.socket.setNoDelay(true);
    req.raw.socket.setTimeout(0);

    let congested = false;
    let outstanding = 0;
    let writtenInTurn = 0;
    let writtenTurn = -1;
    let closing = false;
    let graceTimer: NodeJS.Timeout | undefined;

    const write = (bytes: string | Buffer) => {
      if (!res.write(bytes)) congested = true;
    };
    res.on('drain', () => {
      congested = false;
      outstanding = 0;
    });

    const client: StreamClient = {
      close(reason: string, slow?: Record<string, number>) {
        if (closing) return;
        closing = true;
        if (slow) opts.logger?.warn({ remoteAddress, ...slow }, `event stream: ${reason}`);
        unsubscribe();
        clearInterval(heartbeat);
        if (res.destroyed || res.writableEnded) return;
        // A comment line: ignored by SSE parsers, readable by a person with curl.
        res.end(`: ${reason}\r\n\r\n`);
        graceTimer = setTimeout(() => res.destroy(), closeGraceMs);
        graceTimer.unref();
      },
    };

    const heartbeat = setInterval(() => {
      if (!closing) write('\r\n');
    }, heartbeatMs);
    heartbeat.unref();

    res.on('close', () => {
      closing = true;
      unsubscribe();
      clearInterval(heartbeat);
      if (graceTimer) clearTimeout(graceTimer);
      if (clients.delete(client)) {
        events.streamDetached({ remoteAddress });
      }
    });
    res.on('error', () => res.destroy());

    clients.add(client);
    const unsubscribe = bus.subscribe((event) => {
      if (closing) return;
      if (filter.size > 0 && !filter.has(event.eventType)) return;
      if (congested) {
        outstanding++;
        if (outstanding > maxOutstanding) {
          client.close(`disconnected: this client read too slowly (more than ${maxOutstanding} events outstanding); reconnect and re-read state`, {
            outstandingEvents: outstanding,
            outstandingBytes: res.writableLength,
          });
          return;
        }
      }
      const now = currentTurn();
      if (writtenTurn !== now) {
        writtenTurn = now;
        writtenInTurn = 0;
      }
      if (res.writableLength - writtenInTurn > maxBufferedBytes) {
        client.close(`disconnected: this client read too slowly (more than ${maxBufferedBytes} bytes outstanding); reconnect and re-read state`, {
          outstandingEvents: outstanding,
          outstandingBytes: res.writableLength,
        });
        return;
      }
      const frame = frames.frame(event, format);
      writtenInTurn += frame.length;
      write(frame);
    });
    // Subscribed first, so the client sees its own attach event (subject to its filter).
    events.streamAttached({ remoteAddress });
  };

  app.get('/v2/events', { exposeHeadRoute: false }, handler);

  return {
    get clientCount() {
      return clients.size;
    },
  };
}
