// The orchestrator's event bus: the one place every state change is announced. Producers call
// `publish`; the SSE stream (/v2/events), HTTP callback subscriptions and internal watchers
// (deployments waiting for tasks, for instance) subscribe. Delivery is synchronous and in order
// to each listener; a listener that throws is logged and does not disturb the others.
import type { Logger } from '../../shared/logger.ts';

/** Every event has an eventType and an ISO timestamp with milliseconds (Marathon's format). */
export interface MarathonEvent {
  eventType: string;
  timestamp: string;
  [field: string]: unknown;
}

export type EventListener = (event: MarathonEvent) => void;

export class EventBus {
  readonly #listeners = new Set<EventListener>();
  readonly #logger: Logger | undefined;

  constructor(logger?: Logger) {
    this.#logger = logger;
  }

  /** Publishes an event; `timestamp` defaults to now. Returns the event as delivered. */
  publish(eventType: string, fields: Record<string, unknown> = {}, timestamp = new Date().toISOString()): MarathonEvent {
    const event: MarathonEvent = { ...fields, eventType, timestamp };
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (err) {
        this.#logger?.error({ err, eventType }, 'event listener failed');
      }
    }
    return event;
  }

  /** Subscribes; returns the function that unsubscribes. */
  subscribe(listener: EventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }
}
