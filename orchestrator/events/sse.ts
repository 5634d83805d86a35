// GET /v2/events: the event bus as server-sent events (Marathon's EventSourceServlet behaviour).
// Each client subscribes to the bus on attach and unsubscribes when its connection closes; the
// frame text of an event is built once and shared by every client. A client that reads too slowly
// is disconnected (see `maxOutstanding`): it reconnects and re-reads state, instead of silently
// missing events (Marathon 1.4) or making the server's memory grow without bound.
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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
  /** Bytes buffered for one client before it is disconnected, whatever the count (default 4 MiB). */
  maxBufferedBytes?: number;
  /** After the farewell comment, how long a slow client gets before its socket is destroyed (default 2 s). */
  closeGraceMs?: number;
}

const frameCache = new WeakMap<MarathonEvent, string>();

/** `event: <type>` CRLF `data: <one-line JSON>` CRLF CRLF. */
export function sseFrame(event: MarathonEvent): string {
  let frame = frameCache.get(event);
  if (frame === undefined) {
    frame = `event: ${event.eventType}\r\ndata: ${eventJson(event)}\r\n\r\n`;
    frameCache.set(event, frame);
  }
  return frame;
}

const lightFrameCache = new WeakMap<MarathonEvent, string>();

/**
 * The frame for `?plan-format=light` clients (Marathon ≥1.6): deployment events without
 * plan.original and plan.target, the two root-group snapshots that make them large.
 */
export function sseFrameLight(event: MarathonEvent): string {
  const plan = event.plan as Record<string, unknown> | undefined;
  if (!plan || typeof plan !== 'object' || (!('original' in plan) && !('target' in plan))) return sseFrame(event);
  let frame = lightFrameCache.get(event);
  if (frame === undefined) {
    const { original: _o, target: _t, ...light } = plan;
    frame = `event: ${event.eventType}\r\ndata: ${JSON.stringify({ ...event, plan: light })}\r\n\r\n`;
    lightFrameCache.set(event, frame);
  }
  return frame;
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
  close(reason: string): void;
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
  const clients = new Set<StreamClient>();

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
    const frameOf = planFormat === 'light' ? sseFrameLight : sseFrame;
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
    let closing = false;
    let graceTimer: NodeJS.Timeout | undefined;

    const write = (text: string) => {
      if (!res.write(text)) congested = true;
    };
    res.on('drain', () => {
      congested = false;
      outstanding = 0;
    });

    const client: StreamClient = {
      close(reason: string) {
        if (closing) return;
        closing = true;
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
          client.close(`disconnected: this client read too slowly (more than ${maxOutstanding} events outstanding); reconnect and re-read state`);
          return;
        }
      }
      write(frameOf(event));
      if (res.writableLength > maxBufferedBytes) {
        client.close(`disconnected: this client read too slowly (more than ${maxBufferedBytes} bytes outstanding); reconnect and re-read state`);
      }
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
